//! The child's seccomp filter: an allow-list. Every syscall not named here fails with `EPERM`,
//! for every thread, from the moment [`install`] returns until the child exits.
//!
//! What a run needs was surveyed, not guessed: the Python coverage script of
//! `tests/it/sandbox.rs` (`python_that_agents_need_works`), plus `print`, `re`, file externals,
//! a memory-limit and a recursion-limit script, ran under `strace -f -o trace cairn run x.pym`;
//! the lines of the child's threads after its `seccomp(...)` call are the run's syscalls. They
//! were: `read` (fd 0), `write` (fd 1 and 2), `mmap`, `munmap`, `mremap`, `mprotect`,
//! `madvise`, `brk`, `futex`, `sigaltstack`, `rt_sigprocmask`, `sched_getaffinity`,
//! `exit`, `exit_group`; and, on the error paths, `openat` of `/proc/self/cgroup` and
//! `/proc/sys/vm/overcommit_memory` (the standard library's probes, which handle `EPERM`), and
//! `tgkill` and `rt_sigaction` for `abort()`. Without `rt_sigaction`, the standard library's
//! SIGSEGV handler cannot reset itself and an abort spins forever (seen in the survey: in a new
//! pid namespace the child is pid 1, which drops its own SIGABRT, so abort ends in a fault).
//! Clocks are read through the vDSO, with the syscalls allowed as a
//! fallback. The rest of the list is what the allocator and threads may need on other paths
//! (`sched_yield`, `rt_sigreturn`, `restart_syscall`, `getrandom`, `getpid`, `gettid`).
//!
//! Arguments are pinned where a syscall could reach beyond the child: `read` only from its
//! stdin, `write` only to its stdout and stderr, signals only to its own pid,
//! `sched_getaffinity` only of itself. Nothing opens, creates, changes or names a file,
//! socket, process, key, namespace or device.
//!
//! `tests/it/sandbox.rs` keeps this honest both ways: the coverage script fails when a needed
//! syscall is missing, and the syscall probe (`child_syscall_probe_is_denied`) fails when a
//! dangerous one is allowed.

#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
pub fn install() -> Result<(), String> {
    use seccompiler::{BpfProgram, SeccompAction, SeccompCmpArgLen as Len, SeccompCmpOp as Op, SeccompCondition as Cond, SeccompFilter, SeccompRule, TargetArch};
    use std::collections::BTreeMap;
    #[cfg(target_arch = "x86_64")]
    let arch = TargetArch::x86_64;
    #[cfg(target_arch = "aarch64")]
    let arch = TargetArch::aarch64;

    let err = |e: seccompiler::BackendError| e.to_string();
    // One rule per allowed value of the first argument.
    let arg0_in = |values: &[u64]| -> Result<Vec<SeccompRule>, String> {
        values.iter().map(|&v| SeccompRule::new(vec![Cond::new(0, Len::Qword, Op::Eq, v).map_err(err)?]).map_err(err)).collect()
    };
    let me = std::process::id() as u64;

    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for n in [
        libc::SYS_mmap, libc::SYS_munmap, libc::SYS_mremap, libc::SYS_mprotect, libc::SYS_madvise, libc::SYS_brk,
        libc::SYS_futex, libc::SYS_sched_yield, libc::SYS_sigaltstack, libc::SYS_rt_sigprocmask, libc::SYS_rt_sigreturn, libc::SYS_rt_sigaction,
        libc::SYS_restart_syscall, libc::SYS_clock_gettime, libc::SYS_clock_getres, libc::SYS_gettimeofday,
        libc::SYS_clock_nanosleep, libc::SYS_nanosleep, libc::SYS_getrandom, libc::SYS_getpid, libc::SYS_gettid,
        libc::SYS_exit, libc::SYS_exit_group,
    ] {
        rules.insert(n, Vec::new());
    }
    rules.insert(libc::SYS_read, arg0_in(&[0])?);
    rules.insert(libc::SYS_write, arg0_in(&[1, 2])?);
    rules.insert(libc::SYS_writev, arg0_in(&[1, 2])?);
    rules.insert(libc::SYS_kill, arg0_in(&[me])?);
    rules.insert(libc::SYS_tgkill, arg0_in(&[me])?);
    rules.insert(libc::SYS_sched_getaffinity, arg0_in(&[0])?);

    let filter = SeccompFilter::new(rules, SeccompAction::Errno(libc::EPERM as u32), SeccompAction::Allow, arch).map_err(|e| e.to_string())?;
    let program: BpfProgram = filter.try_into().map_err(err)?;
    seccompiler::apply_filter_all_threads(&program).map_err(|e| e.to_string())
}

#[cfg(not(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64"))))]
pub fn install() -> Result<(), String> {
    Err("seccomp is not available on this platform".into())
}
