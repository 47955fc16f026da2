//! The self-test (`cairn __sandbox --selftest`): confines this process by the same code path
//! as a run ([`confine::early`], then [`confine::lock`]) and then tries, with raw syscalls,
//! each thing a child must not be able to do. The report says what was applied and what each
//! attempt returned, so a test (and `:checkhealth cairn`) can prove the boundary on this
//! kernel rather than trust it.
//!
//! The parent may name a bystander process and a file on one stdin line ([`Target`]): the
//! signal, priority and limit probes aim at that process, the file probes at that file.

use super::confine::{self, Applied};
use crate::sandbox::protocol::Start;
use serde::{Deserialize, Serialize};
use std::io::BufRead;

/// What the probes aim at.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Target {
    /// A bystander process (pid in the parent's namespace).
    pub pid: i32,
    /// A file outside the sandbox.
    pub path: String,
}

/// What [`selftest`] observed.
#[derive(Debug, Serialize, Deserialize)]
pub struct SelfTest {
    pub applied: Applied,
    /// Environment variables the child saw.
    pub env: Vec<String>,
    /// Open file descriptors before the filter.
    pub fds: Vec<i32>,
    /// Each probe after confinement: `(syscall, outcome)`, where the outcome is the error
    /// name (`EPERM`, ...) or `succeeded`.
    pub probes: Vec<(String, String)>,
}

impl SelfTest {
    /// The outcome of one probe.
    pub fn outcome(&self, name: &str) -> Option<&str> {
        self.probes.iter().find(|(n, _)| n == name).map(|(_, o)| o.as_str())
    }
}

/// Confines this process exactly like a sandbox child and reports what is still possible.
pub fn selftest() -> SelfTest {
    let env: Vec<String> = std::env::vars_os().map(|(k, _)| k.to_string_lossy().into_owned()).collect();
    let mut line = String::new();
    let _ = std::io::stdin().lock().read_line(&mut line);
    let target: Target = serde_json::from_str(&line).unwrap_or_default();
    finish(target, confine::early(), env)
}

/// The self-test of a child forked by the zygote ([`super::zygote`]): confined early by the
/// zygote, it reads its target and goes on as [`selftest`].
pub fn forked(applied: Applied) -> SelfTest {
    let env: Vec<String> = std::env::vars_os().map(|(k, _)| k.to_string_lossy().into_owned()).collect();
    let mut line = String::new();
    let _ = std::io::stdin().lock().read_line(&mut line);
    finish(serde_json::from_str(&line).unwrap_or_default(), applied, env)
}

fn finish(target: Target, mut applied: Applied, env: Vec<String>) -> SelfTest {
    // The directory listing itself holds one descriptor while it runs.
    let fds: Vec<i32> = std::fs::read_dir("/proc/self/fd")
        .map(|rd| rd.flatten().filter_map(|e| e.file_name().to_str()?.parse().ok()).collect())
        .unwrap_or_default();
    let start = Start { source: String::new(), filename: String::new(), inputs: Default::default(), max_recursion: 1000, max_memory_mb: 100, timeout_seconds: 60, seed: 0, now_ns: 0 };
    confine::lock(&start, &mut applied);
    SelfTest { applied, env, fds, probes: probes(&target) }
}

#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn probes(t: &Target) -> Vec<(String, String)> {
    use libc::{c_long, syscall};
    use std::ffi::CString;
    let path = CString::new(t.path.clone()).unwrap_or_default();
    let p = path.as_ptr() as c_long;
    let pid = t.pid as c_long;
    let sigkill = libc::SIGKILL as c_long;
    let name = CString::new("user.cairn").unwrap_or_default();
    let host = b"cairn-pwned";
    let limit = [0u64; 2];
    let argv = [p as *const libc::c_char, std::ptr::null()];
    let mut calls: Vec<(&str, c_long, [c_long; 6])> = vec![
        ("kill", libc::SYS_kill, [pid, sigkill, 0, 0, 0, 0]),
        ("tgkill", libc::SYS_tgkill, [pid, pid, sigkill, 0, 0, 0]),
        ("pidfd_open", libc::SYS_pidfd_open, [pid, 0, 0, 0, 0, 0]),
        ("pidfd_send_signal", libc::SYS_pidfd_send_signal, [3, sigkill, 0, 0, 0, 0]),
        ("fchmodat", libc::SYS_fchmodat, [libc::AT_FDCWD as c_long, p, 0o7777, 0, 0, 0]),
        ("fchmodat2", libc::SYS_fchmodat2, [libc::AT_FDCWD as c_long, p, 0o7777, 0, 0, 0]),
        ("fchownat", libc::SYS_fchownat, [libc::AT_FDCWD as c_long, p, 65534, 65534, 0, 0]),
        ("utimensat", libc::SYS_utimensat, [libc::AT_FDCWD as c_long, p, 0, 0, 0, 0]),
        ("setxattr", libc::SYS_setxattr, [p, name.as_ptr() as c_long, p, 1, 0, 0]),
        ("truncate", libc::SYS_truncate, [p, 0, 0, 0, 0, 0]),
        ("prlimit64", libc::SYS_prlimit64, [pid, libc::RLIMIT_NOFILE as c_long, limit.as_ptr() as c_long, 0, 0, 0]),
        ("setpriority", libc::SYS_setpriority, [libc::PRIO_PROCESS as c_long, pid, 19, 0, 0, 0]),
        ("sethostname", libc::SYS_sethostname, [host.as_ptr() as c_long, host.len() as c_long, 0, 0, 0, 0]),
        ("shmget", libc::SYS_shmget, [libc::IPC_PRIVATE as c_long, 4096, (libc::IPC_CREAT | 0o600) as c_long, 0, 0, 0]),
        ("msgget", libc::SYS_msgget, [libc::IPC_PRIVATE as c_long, (libc::IPC_CREAT | 0o600) as c_long, 0, 0, 0, 0]),
        ("semget", libc::SYS_semget, [libc::IPC_PRIVATE as c_long, 1, (libc::IPC_CREAT | 0o600) as c_long, 0, 0, 0]),
        ("ptrace", libc::SYS_ptrace, [libc::PTRACE_ATTACH as c_long, pid, 0, 0, 0, 0]),
        ("mount", libc::SYS_mount, [p, p, 0, libc::MS_BIND as c_long, 0, 0]),
        ("bpf", libc::SYS_bpf, [0, 0, 0, 0, 0, 0]),
        ("perf_event_open", libc::SYS_perf_event_open, [0, 0, -1, -1, 0, 0]),
        ("io_uring_setup", libc::SYS_io_uring_setup, [1, 0, 0, 0, 0, 0]),
        ("userfaultfd", libc::SYS_userfaultfd, [0, 0, 0, 0, 0, 0]),
        ("keyctl", libc::SYS_keyctl, [0, 0, 0, 0, 0, 0]),
        ("personality", libc::SYS_personality, [0xffff_ffff, 0, 0, 0, 0, 0]),
        ("unshare", libc::SYS_unshare, [libc::CLONE_NEWNS as c_long, 0, 0, 0, 0, 0]),
        ("openat", libc::SYS_openat, [libc::AT_FDCWD as c_long, p, libc::O_RDONLY as c_long, 0, 0, 0]),
        ("socket", libc::SYS_socket, [libc::AF_INET as c_long, libc::SOCK_STREAM as c_long, 0, 0, 0, 0]),
        ("execve", libc::SYS_execve, [p, argv.as_ptr() as c_long, 0, 0, 0, 0]),
        ("clone", libc::SYS_clone, [libc::SIGCHLD as c_long, 0, 0, 0, 0, 0]),
        ("clone3", libc::SYS_clone3, [0, 0, 0, 0, 0, 0]),
        ("write to fd 3", libc::SYS_write, [3, host.as_ptr() as c_long, 1, 0, 0, 0]),
        ("read from fd 3", libc::SYS_read, [3, limit.as_ptr() as c_long, 0, 0, 0, 0]),
    ];
    #[cfg(target_arch = "x86_64")]
    calls.extend([
        ("open", libc::SYS_open, [p, libc::O_RDONLY as c_long, 0, 0, 0, 0]),
        ("chmod", libc::SYS_chmod, [p, 0o7777, 0, 0, 0, 0]),
        ("fork", libc::SYS_fork, [0; 6]),
    ]);
    calls
        .into_iter()
        .map(|(n, nr, a)| {
            // SAFETY: every pointer argument points to live, initialized memory of this frame
            // or is null; a syscall that should have been denied but forked ends its child at
            // once without running anything.
            let rc = unsafe { syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]) };
            if rc == 0 && matches!(n, "clone" | "fork") {
                // SAFETY: the (unexpected) child leaves immediately.
                unsafe { libc::_exit(0) };
            }
            let outcome = if rc >= 0 { "succeeded".to_string() } else { errno_name(std::io::Error::last_os_error().raw_os_error().unwrap_or(0)) };
            (n.to_string(), outcome)
        })
        .collect()
}

#[cfg(not(target_os = "linux"))]
fn probes(_: &Target) -> Vec<(String, String)> {
    Vec::new()
}

fn errno_name(e: i32) -> String {
    match e {
        libc::EPERM => "EPERM".into(),
        libc::EACCES => "EACCES".into(),
        libc::ENOSYS => "ENOSYS".into(),
        libc::ESRCH => "ESRCH".into(),
        libc::EBADF => "EBADF".into(),
        libc::EINVAL => "EINVAL".into(),
        libc::EFAULT => "EFAULT".into(),
        n => format!("errno {n}"),
    }
}
