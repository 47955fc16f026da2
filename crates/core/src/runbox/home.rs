//! A wrapped agent's home: deny-by-default, copy-on-write, and never the real one.
//!
//! The parent decides ([`plan`]) from the real home: which entries the agent sees (`[wrap]
//! home`, its own state, read paths under the home) and which are hidden (everything else,
//! plus `[wrap] hide` inside what is seen). Pid 1 builds it ([`build`]):
//!
//! - the home is an overlay: lower layers are a *mask* (an overlay whiteout for every hidden
//!   entry, on the view's tmpfs), the CLI's saved state files, and the real home; the upper
//!   layer is scratch on the tmpfs, thrown away with the session;
//! - each state directory (`~/.claude`, `~/.codex`, ...) is an overlay of its own over the
//!   real one, whose upper layer is kept on disk in the CLI's layer
//!   (`$CAIRN_HOME/wrap-state/<cli>/dirs/`), across sessions and crashes;
//! - each state file (`~/.claude.json`) is read through the saved copy (or the real file),
//!   and pid 1 saves the session's version into the layer (`files/`) when the command ends;
//! - a file Cairn generates in place of the user's (`~/.gitconfig` without credentials, see
//!   `wrap::gitconfig`) lies in the same layer as the saved state files, above the real home.
//!
//! Why not one overlay of the whole home with its upper in the layer: `$CAIRN_HOME` usually
//! lies inside the home, and overlayfs refuses layers inside one another.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// What pid 1 needs to build the home.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Plan {
    /// The real home.
    pub real: PathBuf,
    /// Entries of the real home to hide (relative to it).
    pub hidden: Vec<String>,
    /// State directories (relative): shown copy-on-write, their writes kept in the layer.
    pub state_dirs: Vec<String>,
    /// State files (relative): read through, the session's version saved in the layer.
    pub state_files: Vec<String>,
    /// The CLI's layer (`$CAIRN_HOME/wrap-state/<cli>`).
    pub layer: PathBuf,
    /// Files generated in place of the user's (relative path, content).
    pub generated: Vec<(String, String)>,
}

/// The layer's directory for state entry `rel` (`/` escaped, so that entries never nest).
pub fn entry_dir(layer: &Path, kind: &str, rel: &str) -> PathBuf {
    layer.join(kind).join(entry_name(rel))
}

/// A state entry's name in the layer: its path with `/` escaped ([`entry_path`] undoes it).
pub fn entry_name(rel: &str) -> String {
    rel.replace('%', "%25").replace('/', "%2F")
}

/// The path a layer entry's name stands for.
pub fn entry_path(name: &str) -> String {
    name.replace("%2F", "/").replace("%25", "%")
}

/// Does `name` match a pattern (a trailing `*` matches names with that prefix)?
fn matches(pattern: &str, name: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => pattern == name,
    }
}

/// The plan for the real home `real` (see the module docs). `shown` and `state` are paths
/// relative to the home (patterns: a trailing `*` in the last component); `hide` absolute;
/// `generated`: files shown in place of the user's (relative path, content).
pub fn plan(real: &Path, shown: &[String], state: &[String], hide: &[PathBuf], layer: &Path, generated: Vec<(String, String)>) -> Plan {
    let rel = |p: &String| p.trim_start_matches("~/").trim_matches('/').to_string();
    let shown: Vec<String> = shown.iter().map(rel).filter(|s| !s.is_empty()).collect();
    let state_patterns: Vec<String> = state.iter().map(rel).filter(|s| !s.is_empty()).collect();
    let mut state_dirs = Vec::new();
    let mut state_files = Vec::new();
    for pattern in &state_patterns {
        let (parent, last) = pattern.rsplit_once('/').unwrap_or(("", pattern));
        let names: Vec<String> = if last.ends_with('*') {
            let mut n: Vec<String> = std::fs::read_dir(real.join(parent)).into_iter().flatten().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).filter(|n| matches(last, n)).collect();
            n.sort();
            n
        } else {
            vec![last.to_string()]
        };
        for name in names {
            let r = if parent.is_empty() { name } else { format!("{parent}/{name}") };
            let real_kind = std::fs::symlink_metadata(real.join(&r)).map(|m| m.is_dir());
            let saved_dir = entry_dir(layer, "dirs", &r).is_dir();
            // A missing entry is made as what its name says: a name with a dot-extension a
            // file (`.claude.json`), else a directory.
            let is_dir = real_kind.unwrap_or(saved_dir || !r.rsplit('/').next().unwrap_or("").contains(".json"));
            if is_dir { state_dirs.push(r) } else { state_files.push(r) }
        }
    }
    let visible: Vec<String> = shown.iter().chain(&state_dirs).chain(&state_files).cloned().chain(generated.iter().map(|(p, _)| p.clone())).collect();
    let mut hidden = Vec::new();
    walk(real, "", &visible, &mut hidden);
    for h in hide.iter().filter_map(|h| h.strip_prefix(real).ok()) {
        let h = h.to_string_lossy().into_owned();
        if !h.is_empty() && real.join(&h).symlink_metadata().is_ok() && !hidden.iter().any(|x| h == *x || h.starts_with(&format!("{x}/"))) {
            hidden.push(h);
        }
    }
    Plan { real: real.to_path_buf(), hidden, state_dirs, state_files, layer: layer.to_path_buf(), generated }
}

/// Entries under `dir` (relative `rel`) that no visible path names or leads to: hidden.
fn walk(real: &Path, rel: &str, visible: &[String], hidden: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(real.join(rel)) else { return };
    let mut names: Vec<String> = entries.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    for name in names {
        let path = if rel.is_empty() { name.clone() } else { format!("{rel}/{name}") };
        if visible.iter().any(|v| *v == path) {
            continue;
        }
        let leads = visible.iter().any(|v| v.starts_with(&format!("{path}/")));
        if leads && real.join(&path).symlink_metadata().is_ok_and(|m| m.is_dir()) {
            walk(real, &path, visible, hidden);
        } else {
            hidden.push(path);
        }
    }
}

/// The whiteout of `rel` in the mask layer at `mask`.
pub(super) fn whiteout(mask: &Path, rel: &str) -> Result<(), String> {
    let p = mask.join(rel);
    if let Some(parent) = p.parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("home mask: {e}"))?;
    }
    rustix::fs::mknodat(rustix::fs::CWD, &p, rustix::fs::FileType::CharacterDevice, rustix::fs::Mode::empty(), 0).map_err(|e| format!("home mask ({rel}): {e}"))
}

/// Saves the session's version of each state file from the home's scratch layer `upper`
/// into the CLI's layer (pid 1, after the command; `layer` reached through a descriptor's
/// path). A file the session did not change is left as it was.
pub(super) fn save_state_files(plan: &Plan, upper: std::os::fd::BorrowedFd<'_>, layer_files: &Path) {
    for rel in &plan.state_files {
        let Some(mut from) = open_beneath(upper, rel) else { continue };
        let to = layer_files.join(entry_name(rel));
        let tmp = to.with_extension("cairn-tmp");
        let copied = std::fs::File::create(&tmp).and_then(|mut t| std::io::copy(&mut from, &mut t));
        if copied.is_ok() {
            let _ = std::fs::rename(&tmp, &to);
        }
    }
}

/// The regular file `rel` under `dir` (at most 16 MiB), every component opened without
/// following a symlink: the command wrote this layer, and pid 1 holds descriptors (the home
/// whole, as root) that a link through `/proc/self/fd` would reach.
fn open_beneath(dir: std::os::fd::BorrowedFd<'_>, rel: &str) -> Option<std::io::Take<std::fs::File>> {
    use rustix::fs::{openat, FileType, Mode, OFlags};
    let parts: Vec<&str> = rel.split('/').filter(|c| !c.is_empty()).collect();
    let (name, dirs) = parts.split_last()?;
    if parts.iter().any(|c| *c == "." || *c == "..") {
        return None;
    }
    let mut at: Option<std::os::fd::OwnedFd> = None;
    for d in dirs {
        let base = at.as_ref().map_or(dir, |f| std::os::fd::AsFd::as_fd(f));
        at = Some(openat(base, *d, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC, Mode::empty()).ok()?);
    }
    let base = at.as_ref().map_or(dir, |f| std::os::fd::AsFd::as_fd(f));
    let fd = openat(base, *name, OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC, Mode::empty()).ok()?;
    let st = rustix::fs::fstat(&fd).ok()?;
    const MAX: u64 = 16 << 20;
    (FileType::from_raw_mode(st.st_mode) == FileType::RegularFile && (st.st_size as u64) <= MAX).then(|| std::io::Read::take(std::fs::File::from(fd), MAX))
}

#[cfg(test)]
mod tests {
    use super::open_beneath;
    use std::io::Read;

    /// A state file is read from the layer the command wrote only through directories of that
    /// layer: a symlink anywhere on its path (to pid 1's descriptors, to the home) is not
    /// followed.
    #[test]
    fn a_state_file_is_never_read_through_a_symlink() {
        let t = std::path::Path::new("/tmp").join(format!("cairn-home-test-{}", std::process::id()));
        let (layer, elsewhere) = (t.join("layer"), t.join("elsewhere/tool"));
        std::fs::create_dir_all(layer.join(".config/mine")).unwrap();
        std::fs::create_dir_all(&elsewhere).unwrap();
        std::fs::write(layer.join(".config/mine/state.json"), "ours").unwrap();
        std::fs::write(elsewhere.join("state.json"), "secret").unwrap();
        std::os::unix::fs::symlink(&elsewhere, layer.join(".config/tool")).unwrap();
        std::os::unix::fs::symlink(elsewhere.join("state.json"), layer.join(".config/mine/link.json")).unwrap();
        let dir = std::fs::File::open(&layer).unwrap();
        let dir = std::os::fd::AsFd::as_fd(&dir);
        let mut ours = String::new();
        open_beneath(dir, ".config/mine/state.json").unwrap().read_to_string(&mut ours).unwrap();
        assert_eq!(ours, "ours");
        for rel in [".config/tool/state.json", ".config/mine/link.json", ".config/mine/../tool/state.json", "missing/state.json"] {
            assert!(open_beneath(dir, rel).is_none(), "{rel} was opened");
        }
        let _ = std::fs::remove_dir_all(&t);
    }
}
