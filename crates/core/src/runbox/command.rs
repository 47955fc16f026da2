//! The command of a run (process 3 of [`super::enter`]): started by pid 1 once the file
//! system is built, waited for with the timeout, and everything else reaped.

use super::sys::{check, cstr, map_ids, os_err};
use super::spec::{Ended, Spec};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

/// How often pid 1 wakes during a run to reap orphans and look at the clock.
const REAP_EVERY: Duration = Duration::from_millis(200);

/// Forks the command; returns its pid. Failures of the child's own steps end it with 125
/// and a line on its stderr (the run's output).
#[allow(unsafe_code)]
pub(super) fn start(spec: &Spec, ids: &super::ids::Ids, shares: &super::budget::Shares, cgroup: bool) -> Result<libc::pid_t, String> {
    let (sh, argv_s) = match &spec.wrap {
        Some(w) => (cstr(find_program(w.argv.first().map_or("", String::as_str), spec))?, w.argv.iter().map(cstr).collect::<Result<Vec<_>, _>>()?),
        None => (cstr("/bin/sh")?, vec![cstr("sh")?, cstr("-c")?, cstr(&spec.cmd)?]),
    };
    let envp_s: Vec<_> = spec.env.iter().map(|(k, v)| cstr(format!("{k}={v}"))).collect::<Result<_, _>>()?;
    let mut argv: Vec<*const libc::c_char> = argv_s.iter().map(|c| c.as_ptr()).collect();
    argv.push(std::ptr::null());
    let mut envp: Vec<*const libc::c_char> = envp_s.iter().map(|c| c.as_ptr()).collect();
    envp.push(std::ptr::null());
    let (uid, gid) = ids.command();
    // SAFETY: fork in a single-threaded process.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(os_err("fork"));
    }
    if pid > 0 {
        return Ok(pid);
    }
    let err = match lock_down(spec, uid, gid, shares, cgroup) {
        // SAFETY: execve with NUL-terminated arrays that live until the call.
        Ok(()) => unsafe {
            libc::execve(sh.as_ptr(), argv.as_ptr(), envp.as_ptr());
            os_err(&format!("exec {}", sh.to_string_lossy()))
        },
        Err(e) => e,
    };
    let line = format!("cairn: the confined run could not start: {err}\n");
    // SAFETY: a last line on stderr, then leave without running any destructor.
    unsafe {
        libc::write(2, line.as_ptr() as *const libc::c_void, line.len());
        libc::_exit(125)
    }
}

fn rlimit(res: rustix::process::Resource, value: u64) {
    let limit = rustix::process::Rlimit { current: Some(value), maximum: Some(value) };
    let _ = rustix::process::setrlimit(res, limit);
}

/// The command's own confinement, in the forked child before `exec`, in this order: its
/// identity (as root: 65534, host `nobody`), a nested user and mount namespace (every mount
/// pid 1 made is now locked together, so no unmount can uncover what the view hides), its
/// own session without a terminal (runs), limits, no capabilities, no new privileges, a new
/// session keyring, Landlock's scopes, and the seccomp filter last.
#[allow(unsafe_code)]
fn lock_down(spec: &Spec, uid: u32, gid: u32, shares: &super::budget::Shares, cgroup: bool) -> Result<(), String> {
    use rustix::process::Resource;
    // SAFETY: setresgid/setresuid on this single-threaded child (groups were dropped by
    // process 1 as root; an ordinary user maps only itself).
    unsafe {
        check(libc::setresgid(gid, gid, gid) as _, "set the command's group")?;
        check(libc::setresuid(uid, uid, uid) as _, "set the command's user")?;
    }
    super::sys::dumpable(true)?;
    // SAFETY: unshare on this (single-threaded) process.
    check(unsafe { libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS) } as _, "nested namespaces")?;
    map_ids(uid, gid)?;
    // A session of its own: no terminal but the session's own pty (a wrap session's), made
    // its controlling terminal here.
    // SAFETY: setsid and TIOCSCTTY on this process's own descriptor 0.
    check(unsafe { libc::setsid() } as _, "a session of its own")?;
    if spec.wrap.as_ref().is_some_and(|w| w.pty) {
        // SAFETY: as above.
        check(unsafe { libc::ioctl(0, libc::TIOCSCTTY, 0) } as _, "the session's terminal")?;
    }
    if spec.wrap.is_none() {
        let mb = 1024 * 1024;
        // Without a cgroup, each process's slice (see `budget`): its stack and its data
        // (private writable memory; shared anonymous memory is refused by the filter, which
        // this limit does not count). Address space a runtime only reserves (V8, the JVM) is
        // not memory and stays free, up to the whole budget: no process reserves more, with
        // a cgroup too (an allocation past it fails at once, rather than the cgroup killing
        // the run when it is touched).
        if shares.per_process > 0 {
            let stack = (shares.per_process / 4).min(super::budget::STACK);
            rlimit(Resource::Stack, stack);
            rlimit(Resource::Data, shares.per_process - stack);
        }
        rlimit(Resource::As, spec.max_memory_mb * mb);
        rlimit(Resource::Fsize, spec.max_memory_mb * mb);
        rlimit(Resource::Nofile, shares.files);
        rlimit(Resource::Core, 0);
    }
    // Counted per user in the run's namespaces: the command's tree only (never host root, so
    // the kernel's exemption of uid 0 does not apply). A pids cgroup counts it too, where
    // there is one.
    if shares.processes > 0 {
        rlimit(Resource::Nproc, shares.processes);
    }
    // The helpers ignore the terminal's signals (they belong to the command): back to the
    // defaults, which exec would otherwise keep.
    for sig in [libc::SIGINT, libc::SIGQUIT, libc::SIGTSTP, libc::SIGTTIN, libc::SIGTTOU] {
        // SAFETY: resetting a disposition in this single-threaded child.
        unsafe { libc::signal(sig, libc::SIG_DFL) };
    }
    let cwd = cstr(&spec.cwd)?;
    drop_capabilities()?;
    // SAFETY: chdir, prctl, keyctl and close_range on this process.
    unsafe {
        check(libc::chdir(cwd.as_ptr()) as _, &format!("cd {}", spec.cwd.display()))?;
        check(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) as _, "no new privileges")?;
        // A new, empty session keyring (KEYCTL_JOIN_SESSION_KEYRING): nothing of cairn's.
        libc::syscall(libc::SYS_keyctl, 1, std::ptr::null::<libc::c_char>());
        libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32);
    }
    if spec.wrap.is_none() {
        let null = std::fs::File::open("/dev/null").map_err(|e| format!("/dev/null: {e}"))?;
        // SAFETY: dup2 onto descriptor 0; the File closes its own descriptor.
        check(unsafe { libc::dup2(null.as_raw_fd(), 0) } as _, "stdin")?;
    }
    scopes();
    let table = crate::confine::filter::Commands { mounts: spec.wrap.is_some(), memfd: cgroup || spec.wrap.is_some(), buffers: spec.wrap.is_none() };
    crate::confine::filter::install(crate::confine::filter::Table::Commands(table)).map_err(|e| format!("seccomp filter: {e}"))
}

/// Landlock's scopes where the kernel has them (ABI 6): no abstract unix socket and no
/// signal outside the command's own domain, whatever the network (`network = "host"`
/// shares the host's abstract sockets otherwise). Best effort: older kernels lack them.
fn scopes() {
    use landlock::{Ruleset, RulesetAttr, Scope};
    let _ = Ruleset::default().scope(Scope::AbstractUnixSocket | Scope::Signal).and_then(|r| r.create()).and_then(|r| r.restrict_self());
}

/// Empties the bounding, ambient, inheritable, permitted and effective sets: what `exec`
/// gives a uid-0 process is then nothing.
#[allow(unsafe_code)]
fn drop_capabilities() -> Result<(), String> {
    for cap in 0..64 {
        // SAFETY: prctl on this process; EINVAL past the last capability ends the loop.
        if unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) } < 0 {
            if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL) {
                break;
            }
            return Err(os_err("drop capabilities (bounding set)"));
        }
    }
    #[repr(C)]
    struct Header {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    let header = Header { version: 0x2008_0522, pid: 0 };
    let data = [Data { effective: 0, permitted: 0, inheritable: 0 }; 2];
    // SAFETY: prctl, and capset with a v3 header and two data words.
    unsafe {
        libc::prctl(libc::PR_CAP_AMBIENT, libc::PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
        check(libc::syscall(libc::SYS_capset, &header as *const Header, data.as_ptr()), "drop capabilities")?;
    }
    Ok(())
}

/// `name` when it holds a `/`, else the first executable `name` on the command's `PATH`.
fn find_program(name: &str, spec: &Spec) -> String {
    if name.contains('/') {
        return name.to_string();
    }
    let path = spec.env.iter().find(|(k, _)| k == "PATH").map_or("/usr/bin:/bin", |(_, v)| v.as_str());
    path.split(':')
        .map(|d| std::path::Path::new(d).join(name))
        .find(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file() && std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o111 != 0))
        .map_or(name.to_string(), |p| p.to_string_lossy().into_owned())
}

/// Waits for the command, reaping orphans meanwhile; kills everything at the timeout (none
/// when `timeout_ms` is 0).
#[allow(unsafe_code)]
pub(super) fn wait(pid: libc::pid_t, timeout_ms: u64) -> Ended {
    let deadline = Instant::now() + Duration::from_millis(if timeout_ms == 0 { u64::MAX / 4 } else { timeout_ms });
    // SAFETY: pidfd_open of our own child; -1 falls back to plain sleeps.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    // SAFETY: we own the new descriptor.
    let pidfd = (pidfd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(pidfd as i32) });
    loop {
        let mut status = 0;
        loop {
            // SAFETY: reaping any child of pid 1, without blocking.
            let got = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
            if got == pid {
                return if libc::WIFEXITED(status) { Ended { code: Some(libc::WEXITSTATUS(status)), ..Default::default() } } else { Ended { signal: Some(libc::WTERMSIG(status)), ..Default::default() } };
            }
            if got <= 0 {
                break;
            }
        }
        let now = Instant::now();
        if now >= deadline {
            // SAFETY: pid 1 killing its namespace.
            unsafe { libc::kill(-1, libc::SIGKILL) };
            return Ended { timed_out: true, signal: Some(libc::SIGKILL), ..Default::default() };
        }
        let wait = REAP_EVERY.min(deadline - now).as_millis() as i32;
        match &pidfd {
            Some(fd) => {
                let mut p = [libc::pollfd { fd: fd.as_raw_fd(), events: libc::POLLIN, revents: 0 }];
                // SAFETY: poll on our own descriptor.
                unsafe { libc::poll(p.as_mut_ptr(), 1, wait) };
            }
            None => std::thread::sleep(Duration::from_millis(wait as u64)),
        }
    }
}

/// Reaps every child left (all were just killed).
#[allow(unsafe_code)]
pub(super) fn reap_all() {
    let mut status = 0;
    // SAFETY: blocking waits for our own (dying) children until none is left.
    while unsafe { libc::waitpid(-1, &mut status, 0) } > 0 {}
}
