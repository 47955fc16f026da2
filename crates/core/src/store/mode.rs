//! The mode a proposal's file lands with in the user's tree (accept, hunk accept, and the
//! diff that shows it), as git gives one on checkout: what a proposal carries of a mode is its
//! executable bit; the rest is the user's. A new file gets 0666 or 0777 less the process's
//! umask (0644 or 0755 under the usual 022); an existing file keeps its permissions, only its
//! executable bit following the proposal (set where the file can be read, less the umask).
//! So an agent's 0777 or 0666 never lands group- or world-writable, and an edit never widens
//! a file the user keeps private.

/// The mode `rel` lands with: the proposal's `proposed` over the file there now (`current`,
/// `None`: no file), under `umask`. Never setuid, setgid or sticky.
pub fn landing(proposed: u32, current: Option<u32>, umask: u32) -> u32 {
    let exec = proposed & 0o100 != 0;
    match current.map(|c| c & 0o777) {
        None => (if exec { 0o777 } else { 0o666 }) & !umask,
        Some(cur) if exec == (cur & 0o100 != 0) => cur,
        Some(cur) if exec => cur | 0o100 | ((cur & 0o044) >> 2 & !umask),
        Some(cur) => cur & !0o111,
    }
}

/// This process's umask (read once: from `/proc/self/status`, else set and put back).
pub fn umask() -> u32 {
    static UMASK: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *UMASK.get_or_init(|| {
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        let read = status.lines().find_map(|l| l.strip_prefix("Umask:")).and_then(|v| u32::from_str_radix(v.trim(), 8).ok());
        read.unwrap_or_else(|| {
            let old = rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o022));
            rustix::process::umask(old);
            old.as_raw_mode()
        }) & 0o777
    })
}

#[cfg(test)]
mod tests {
    use super::landing;

    #[test]
    fn modes_land_as_git_checks_them_out() {
        // (proposed, current, umask) -> landed
        let rows: &[(u32, Option<u32>, u32, u32)] = &[
            (0o777, None, 0o022, 0o755),
            (0o666, None, 0o022, 0o644),
            (0o600, None, 0o022, 0o644),
            (0o4755, None, 0o022, 0o755),
            (0o777, None, 0o077, 0o700),
            (0o644, None, 0o002, 0o664),
            (0o777, Some(0o644), 0o022, 0o755),
            (0o666, Some(0o644), 0o022, 0o644),
            (0o644, Some(0o600), 0o022, 0o600),
            (0o755, Some(0o600), 0o022, 0o700),
            (0o644, Some(0o755), 0o022, 0o644),
            (0o777, Some(0o775), 0o022, 0o775),
            (0o755, Some(0o6755), 0o022, 0o755),
        ];
        for &(proposed, current, umask, want) in rows {
            assert_eq!(landing(proposed, current, umask), want, "{proposed:o} over {current:?} under {umask:o}");
        }
    }
}
