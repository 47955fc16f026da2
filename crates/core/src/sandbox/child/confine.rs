//! Process confinement of the sandbox child, applied in two steps:
//!
//! - [`early`], before the interpreter exists: die with the parent; on Linux, a Landlock
//!   ruleset that grants no file system or network access (where the kernel has Landlock).
//! - [`lock`], once the interpreter is built and the run's limits are known: rlimits
//!   (address space, CPU, open files, file size 0, no core dumps), the heap cap of
//!   [`super::alloc`], and a seccomp filter that makes opening files, sockets, exec, fork and
//!   other host-reaching syscalls fail with `EPERM`, for every thread.
//!
//! [`selftest`] runs the same steps and then tries those syscalls, so a test can prove the
//! filter is in force in a real child.

use crate::lifecycle::ErrorKind;
use crate::sandbox::protocol::{ChildMsg, ScriptError, Start};
use serde::{Deserialize, Serialize};

/// Room for the interpreter itself (binary, thread stacks) on top of `max_memory_mb` in the
/// address-space limit. The heap cap of the allocator is the precise bound; this is a backstop.
const ADDRESS_SPACE_OVERHEAD_MB: u64 = 1024;

/// What confinement could be applied (kernels differ).
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct Applied {
    pub landlock: String,
    pub seccomp: bool,
}

/// Step one, before the interpreter: close inherited descriptors, parent-death signal and
/// Landlock.
pub fn early() -> Applied {
    close_inherited_fds();
    let _ = rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL));
    Applied { landlock: landlock_all(), seccomp: false }
}

/// Closes every descriptor above stderr: whatever the parent's parent leaked (an editor, a
/// test harness) must not be readable or writable from the sandbox, where seccomp still allows
/// `read` and `write`.
#[allow(unsafe_code)]
fn close_inherited_fds() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: close_range(3, ~0, 0) closes descriptors this process does not use: nothing
        // above stderr has been opened yet at this point of the child's start.
        let rc = unsafe { libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32) };
        if rc == 0 {
            return;
        }
    }
    let fds: Vec<i32> = std::fs::read_dir("/proc/self/fd")
        .or_else(|_| std::fs::read_dir("/dev/fd"))
        .map(|rd| rd.flatten().filter_map(|e| e.file_name().to_str()?.parse().ok()).collect())
        .unwrap_or_default();
    for fd in fds.into_iter().filter(|&fd| fd > 2) {
        // SAFETY: as above; a descriptor that was the directory listing is already closed and
        // close() then fails harmlessly with EBADF.
        unsafe { libc::close(fd) };
    }
}

#[cfg(target_os = "linux")]
fn landlock_all() -> String {
    use landlock::{Access, AccessFs, AccessNet, Ruleset, RulesetAttr, RulesetStatus, ABI};
    let abi = ABI::V5;
    let result = Ruleset::default()
        .handle_access(AccessFs::from_all(abi))
        .and_then(|r| r.handle_access(AccessNet::from_all(abi)))
        .and_then(|r| r.create())
        .and_then(|r| r.restrict_self());
    match result {
        Ok(s) => match s.ruleset {
            RulesetStatus::FullyEnforced => "enforced".into(),
            RulesetStatus::PartiallyEnforced => "partially enforced".into(),
            RulesetStatus::NotEnforced => "not supported by this kernel".into(),
        },
        Err(e) => format!("failed: {e}"),
    }
}

#[cfg(not(target_os = "linux"))]
fn landlock_all() -> String {
    "not available on this platform".into()
}

fn rlimit(res: rustix::process::Resource, value: u64) {
    let limit = rustix::process::Rlimit { current: Some(value), maximum: Some(value) };
    let _ = rustix::process::setrlimit(res, limit);
}

/// Step two, with the run's limits: rlimits, heap cap, seccomp (all threads).
pub fn lock(start: &Start, applied: &mut Applied) {
    use rustix::process::Resource;
    let mb = 1024 * 1024;
    rlimit(Resource::As, (start.max_memory_mb + ADDRESS_SPACE_OVERHEAD_MB) * mb);
    rlimit(Resource::Cpu, start.timeout_seconds + 2);
    rlimit(Resource::Nofile, 16);
    rlimit(Resource::Fsize, 0);
    rlimit(Resource::Core, 0);
    let over = ChildMsg::Done {
        result: None,
        error: Some(ScriptError { kind: ErrorKind::Memory, message: format!("exceeded max_memory_mb = {}", start.max_memory_mb) }),
    };
    let mut line = serde_json::to_vec(&over).unwrap_or_default();
    line.push(b'\n');
    super::alloc::set_cap(super::alloc::live() + (start.max_memory_mb * mb) as usize, line);
    applied.seccomp = seccomp().is_ok();
}

#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
fn seccomp() -> Result<(), String> {
    use seccompiler::{BpfProgram, SeccompAction, SeccompFilter, TargetArch};
    use std::collections::BTreeMap;
    #[cfg(target_arch = "x86_64")]
    let arch = TargetArch::x86_64;
    #[cfg(target_arch = "aarch64")]
    let arch = TargetArch::aarch64;
    let mut denied: Vec<i64> = vec![
        libc::SYS_openat, libc::SYS_openat2, libc::SYS_open_by_handle_at, libc::SYS_name_to_handle_at,
        libc::SYS_socket, libc::SYS_socketpair, libc::SYS_connect, libc::SYS_bind, libc::SYS_listen, libc::SYS_accept,
        libc::SYS_accept4, libc::SYS_execve, libc::SYS_execveat, libc::SYS_clone, libc::SYS_clone3, libc::SYS_ptrace,
        libc::SYS_process_vm_readv, libc::SYS_process_vm_writev, libc::SYS_kill, libc::SYS_mount, libc::SYS_umount2,
        libc::SYS_pivot_root, libc::SYS_chroot, libc::SYS_unshare, libc::SYS_setns, libc::SYS_mknodat,
        libc::SYS_unlinkat, libc::SYS_renameat, libc::SYS_renameat2, libc::SYS_mkdirat, libc::SYS_linkat,
        libc::SYS_symlinkat, libc::SYS_fchmodat, libc::SYS_fchownat, libc::SYS_truncate, libc::SYS_bpf,
        libc::SYS_perf_event_open, libc::SYS_io_uring_setup, libc::SYS_userfaultfd, libc::SYS_keyctl,
        libc::SYS_add_key, libc::SYS_request_key, libc::SYS_init_module, libc::SYS_finit_module,
        libc::SYS_delete_module, libc::SYS_reboot, libc::SYS_kexec_load, libc::SYS_memfd_create,
        libc::SYS_personality, libc::SYS_acct, libc::SYS_swapon, libc::SYS_swapoff, libc::SYS_setuid,
        libc::SYS_setgid, libc::SYS_setreuid, libc::SYS_setregid, libc::SYS_setresuid, libc::SYS_setresgid,
        libc::SYS_setgroups, libc::SYS_quotactl, libc::SYS_fanotify_init, libc::SYS_prctl,
    ];
    #[cfg(target_arch = "x86_64")]
    denied.extend([
        libc::SYS_open, libc::SYS_creat, libc::SYS_fork, libc::SYS_vfork, libc::SYS_unlink, libc::SYS_rename,
        libc::SYS_mkdir, libc::SYS_rmdir, libc::SYS_link, libc::SYS_symlink, libc::SYS_chmod, libc::SYS_chown,
        libc::SYS_lchown, libc::SYS_mknod, libc::SYS_uselib, libc::SYS_ioperm, libc::SYS_iopl,
    ]);
    let rules: BTreeMap<i64, Vec<seccompiler::SeccompRule>> = denied.into_iter().map(|n| (n, Vec::new())).collect();
    let filter = SeccompFilter::new(rules, SeccompAction::Allow, SeccompAction::Errno(libc::EPERM as u32), arch)
        .map_err(|e| e.to_string())?;
    let program: BpfProgram = filter.try_into().map_err(|e: seccompiler::BackendError| e.to_string())?;
    seccompiler::apply_filter_all_threads(&program).map_err(|e| e.to_string())
}

#[cfg(not(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64"))))]
fn seccomp() -> Result<(), String> {
    Err("seccomp is not available on this platform".into())
}

/// What [`selftest`] observed.
#[derive(Debug, Serialize, Deserialize)]
pub struct SelfTest {
    pub applied: Applied,
    /// Environment variables the child saw.
    pub env: Vec<String>,
    /// Open file descriptors before the filter.
    pub fds: Vec<i32>,
    /// Outcome of each forbidden action after the filter: the error, or "succeeded".
    pub open_file: String,
    pub create_file: String,
    pub socket: String,
    pub spawn: String,
}

fn outcome<T>(r: std::io::Result<T>) -> String {
    match r {
        Ok(_) => "succeeded".into(),
        Err(e) => e.to_string(),
    }
}

/// Confines this process exactly like a sandbox child and reports what is still possible.
pub fn selftest() -> SelfTest {
    let env: Vec<String> = std::env::vars_os().map(|(k, _)| k.to_string_lossy().into_owned()).collect();
    close_inherited_fds();
    // The directory listing itself holds one descriptor while it runs; it is not inherited.
    let fds: Vec<i32> = std::fs::read_dir("/proc/self/fd")
        .map(|rd| rd.flatten().filter_map(|e| e.file_name().to_str()?.parse().ok()).collect())
        .unwrap_or_default();
    let mut applied = early();
    let start = Start {
        source: String::new(),
        filename: String::new(),
        inputs: Default::default(),
        max_recursion: 1000,
        max_memory_mb: 100,
        timeout_seconds: 60,
    };
    lock(&start, &mut applied);
    SelfTest {
        applied,
        env,
        fds,
        open_file: outcome(std::fs::File::open("/etc/hostname")),
        create_file: outcome(std::fs::File::create("/tmp/cairn-selftest-created")),
        socket: outcome(std::net::TcpStream::connect("127.0.0.1:9")),
        spawn: outcome(std::process::Command::new("/bin/true").status()),
    }
}
