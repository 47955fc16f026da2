//! Small helpers of the confined side: libc results as `Result<_, String>` (the confined
//! side reports failures as text in the run's result), C strings, the id maps of a new user
//! namespace.

use std::ffi::CString;

/// An error of a step, as `what: errno text`.
pub(super) fn os_err(what: &str) -> String {
    format!("{what}: {}", std::io::Error::last_os_error())
}

/// `Ok` when a libc call returned 0 (or more), else the error named by `what`.
pub(super) fn check(rc: libc::c_long, what: &str) -> Result<(), String> {
    if rc < 0 { Err(os_err(what)) } else { Ok(()) }
}

pub(super) fn cstr(s: impl AsRef<std::ffi::OsStr>) -> Result<CString, String> {
    use std::os::unix::ffi::OsStrExt;
    CString::new(s.as_ref().as_bytes()).map_err(|_| "a path holds a NUL byte".to_string())
}

/// Maps the caller's uid and gid onto themselves in the user namespace just entered.
pub(super) fn map_ids(uid: u32, gid: u32) -> Result<(), String> {
    let write = |file: &str, text: String| std::fs::write(file, text).map_err(|e| format!("user namespace ({file}): {e}"));
    write("/proc/self/setgroups", "deny".into())?;
    write("/proc/self/uid_map", format!("{uid} {uid} 1\n"))?;
    write("/proc/self/gid_map", format!("{gid} {gid} 1\n"))
}


/// Non-dumpable (see the docs of `enter`), or again dumpable: a non-dumpable process cannot
/// write its own id maps (its `/proc` files belong to root).
#[allow(unsafe_code)]
pub(super) fn dumpable(on: bool) -> Result<(), String> {
    // SAFETY: prctl on this process only.
    check(unsafe { libc::prctl(libc::PR_SET_DUMPABLE, on as libc::c_ulong, 0, 0, 0) } as _, "dumpable flag")
}

/// Brings up `lo` in this process's (new) network namespace, and names the host `cairn-run`
/// in its own uts namespace.
#[allow(unsafe_code)]
pub(super) fn loopback_up() -> Result<(), String> {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    // SAFETY: a datagram socket for the interface ioctls, closed by OwnedFd.
    let sock = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    check(sock as _, "loopback socket")?;
    // SAFETY: we own the new descriptor.
    let sock = unsafe { OwnedFd::from_raw_fd(sock) };
    // SAFETY: ifreq is plain data; zeroed is a valid value.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (i, b) in b"lo".iter().enumerate() {
        req.ifr_name[i] = *b as libc::c_char;
    }
    // SAFETY: SIOCGIFFLAGS/SIOCSIFFLAGS on a valid socket and ifreq.
    unsafe {
        if libc::ioctl(sock.as_raw_fd(), libc::SIOCGIFFLAGS, &mut req) < 0 {
            return Err(os_err("loopback flags"));
        }
        req.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
        if libc::ioctl(sock.as_raw_fd(), libc::SIOCSIFFLAGS, &req) < 0 {
            return Err(os_err("loopback up"));
        }
    }
    Ok(())
}

/// Names the host `cairn-run` in the run's own uts namespace.
#[allow(unsafe_code)]
pub(super) fn hostname() {
    let name = b"cairn-run";
    // SAFETY: sethostname with a buffer of the length passed, in our own uts namespace.
    unsafe { libc::sethostname(name.as_ptr() as *const libc::c_char, name.len()) };
}

/// A close-on-exec pipe: (read end, write end).
pub(super) fn pipe() -> Result<(std::os::fd::OwnedFd, std::os::fd::OwnedFd), String> {
    rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).map_err(|e| format!("pipe: {e}"))
}
