//! The one seccomp module of every confinement room. Two tables, built with `seccompiler`:
//!
//! - [`Table::Child`], the sandbox child's *allow-list*: every syscall not named fails with
//!   `EPERM`, on every thread (TSYNC), from the moment it is installed until the child exits.
//! - [`Table::Commands`], the *deny-list* of whatever a confined run, a check or a wrapped
//!   agent executes: a general-purpose process tree (shells, compilers, test runners) must
//!   keep most of the kernel, but never the surfaces that reach past its namespaces or that
//!   carry most kernel exploits.
//!
//! Both stack a hand-built prelude on x86_64 ([`x32_prelude`]): x32 syscall numbers
//! (`nr | 0x4000_0000`) share `AUDIT_ARCH_X86_64`, so a table keyed by number would let them
//! through; the prelude answers them `ENOSYS`. Foreign architectures (ia32 `int 0x80`) are
//! killed by seccompiler's own arch check.
//!
//! ## The child's allow-list, and how it was surveyed
//! The Python coverage script of `tests/it/sandbox.rs` (`python_that_agents_need_works`), plus
//! `print`, `re`, file externals, a memory-limit and a recursion-limit script, ran under
//! `strace -f`; the lines of the child's threads after its `seccomp(...)` call are the run's
//! syscalls: `read` (fd 0), `write` (fd 1 and 2), `mmap`, `munmap`, `mremap`, `mprotect`,
//! `madvise`, `brk`, `futex`, `sigaltstack`, `rt_sigprocmask`, `sched_getaffinity`, `exit`,
//! `exit_group`; on the error paths `openat` of `/proc/self/cgroup` and
//! `/proc/sys/vm/overcommit_memory` (probes that handle `EPERM`), and `tgkill` and
//! `rt_sigaction` for `abort()` (without `rt_sigaction` the standard library's SIGSEGV handler
//! cannot reset itself and an abort spins). Clocks are read through the vDSO, with the
//! syscalls allowed as a fallback; the rest is what the allocator and threads may need
//! (`sched_yield`, `rt_sigreturn`, `restart_syscall`, `getrandom`, `getpid`, `gettid`).
//! Arguments are pinned where a syscall could reach beyond the child: `read` only from its
//! stdin, `write` only to its stdout and stderr, signals only to its own pid.
//!
//! ## The commands' deny-list
//! Compared with the anchors (BOUNDARY.md): Codex denies io_uring, ptrace and process_vm_*;
//! Flatpak and bubblewrap's tests deny `TIOCSTI` with a 32-bit masked compare
//! (CVE-2017-5226, CVE-2019-10063); Docker's default profile denies keyrings, bpf,
//! perf_event_open, userfaultfd, kexec, modules, `open_by_handle_at`, clock and swap
//! changes. This table is the union, plus `TIOCLINUX` (console injection) and `AF_VSOCK`
//! sockets (a network namespace does not cover vsock: in a VM it reaches the host). The
//! mount family is denied to runs; a wrapped agent keeps it (see [`Commands::mounts`]) so an
//! agent CLI's own sandbox (bubblewrap inside Codex) can build its namespaces — every mount
//! Cairn made is locked by the nested user namespace either way.
//!
//! `tests/it/sandbox.rs` (the child's probe) and `tests/it/boundary.rs` (the commands' probe)
//! keep both tables honest: a needed syscall missing fails ordinary work, a dangerous one
//! allowed fails its probe row.

/// Which table to install.
#[derive(Debug, Clone, Copy)]
pub enum Table {
    /// The sandbox child: allow-list, all threads.
    Child,
    /// A command and its whole process tree: deny-list, this thread (before `exec`).
    Commands(Commands),
}

/// Options of the commands' table.
#[derive(Debug, Clone, Copy, Default)]
pub struct Commands {
    /// Leave `mount`, `unshare` and friends to the command (an agent's own sandbox).
    pub mounts: bool,
    /// Leave `memfd_create`, `shmget` and shared anonymous mappings to the command: only
    /// where a cgroup counts their pages (a memfd written without a mapping, or a segment
    /// left behind, escapes every per-process limit; a shared mapping escapes the data
    /// limit).
    pub memfd: bool,
    /// Keep kernel buffers at their defaults, as a run's budget counts them
    /// (`runbox::budget`): a socket's size requests (`SO_SNDBUF`, `SO_RCVBUF`) answered 0 and
    /// ignored, a pipe's resize (`F_SETPIPE_SZ`) refused.
    pub buffers: bool,
}

/// `ioctl` requests that type into, or take over, a terminal.
const TIOCSTI: u64 = 0x5412;
const TIOCLINUX: u64 = 0x541C;
const AF_VSOCK: u64 = 40;
const AF_KEY: u64 = 15;

/// Installs `table` on this process (the child's on every thread).
#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
pub fn install(table: Table) -> Result<(), String> {
    let program = build(table)?;
    match table {
        // The allow-list already refuses every number it does not name, x32's included.
        Table::Child => seccompiler::apply_filter_all_threads(&program).map_err(|e| e.to_string()),
        Table::Commands(c) => {
            for p in prelude(c) {
                seccompiler::apply_filter(&p).map_err(|e| e.to_string())?;
            }
            if c.buffers {
                seccompiler::apply_filter(&buffer_sizes()?).map_err(|e| e.to_string())?;
            }
            seccompiler::apply_filter(&program).map_err(|e| e.to_string())
        }
    }
}

#[cfg(not(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64"))))]
pub fn install(_table: Table) -> Result<(), String> {
    Err("seccomp is not available on this platform".into())
}

/// The table's program (without the prelude).
#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
pub fn build(table: Table) -> Result<seccompiler::BpfProgram, String> {
    use seccompiler::{SeccompAction, SeccompFilter};
    #[cfg(target_arch = "x86_64")]
    let arch = seccompiler::TargetArch::x86_64;
    #[cfg(target_arch = "aarch64")]
    let arch = seccompiler::TargetArch::aarch64;
    let eperm = SeccompAction::Errno(libc::EPERM as u32);
    let filter = match table {
        Table::Child => SeccompFilter::new(child_rules()?, eperm, SeccompAction::Allow, arch),
        Table::Commands(c) => SeccompFilter::new(command_rules(c)?, SeccompAction::Allow, eperm, arch),
    };
    filter.map_err(|e| e.to_string())?.try_into().map_err(|e: seccompiler::BackendError| e.to_string())
}

type Rules = std::collections::BTreeMap<i64, Vec<seccompiler::SeccompRule>>;

fn rule(arg: u8, len: seccompiler::SeccompCmpArgLen, op: seccompiler::SeccompCmpOp, value: u64) -> Result<seccompiler::SeccompRule, String> {
    let cond = seccompiler::SeccompCondition::new(arg, len, op, value).map_err(|e| e.to_string())?;
    seccompiler::SeccompRule::new(vec![cond]).map_err(|e| e.to_string())
}

fn child_rules() -> Result<Rules, String> {
    use seccompiler::{SeccompCmpArgLen as Len, SeccompCmpOp as Op};
    // One rule per allowed value of the first argument.
    let arg0_in = |values: &[u64]| values.iter().map(|&v| rule(0, Len::Qword, Op::Eq, v)).collect::<Result<Vec<_>, _>>();
    let me = std::process::id() as u64;
    let mut rules = Rules::new();
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
    Ok(rules)
}

/// Syscalls no confined command gets, whatever its arguments.
pub const DENIED: &[(&str, i64)] = &[
    ("io_uring_setup", libc::SYS_io_uring_setup),
    ("io_uring_enter", libc::SYS_io_uring_enter),
    ("io_uring_register", libc::SYS_io_uring_register),
    ("userfaultfd", libc::SYS_userfaultfd),
    ("bpf", libc::SYS_bpf),
    ("perf_event_open", libc::SYS_perf_event_open),
    ("keyctl", libc::SYS_keyctl),
    ("add_key", libc::SYS_add_key),
    ("request_key", libc::SYS_request_key),
    ("kexec_load", libc::SYS_kexec_load),
    ("kexec_file_load", libc::SYS_kexec_file_load),
    ("init_module", libc::SYS_init_module),
    ("finit_module", libc::SYS_finit_module),
    ("delete_module", libc::SYS_delete_module),
    ("ptrace", libc::SYS_ptrace),
    ("process_vm_readv", libc::SYS_process_vm_readv),
    ("process_vm_writev", libc::SYS_process_vm_writev),
    ("open_by_handle_at", libc::SYS_open_by_handle_at),
    ("name_to_handle_at", libc::SYS_name_to_handle_at),
    ("acct", libc::SYS_acct),
    ("swapon", libc::SYS_swapon),
    ("swapoff", libc::SYS_swapoff),
    ("reboot", libc::SYS_reboot),
    ("syslog", libc::SYS_syslog),
    ("settimeofday", libc::SYS_settimeofday),
    ("clock_settime", libc::SYS_clock_settime),
    ("clock_adjtime", libc::SYS_clock_adjtime),
    ("adjtimex", libc::SYS_adjtimex),
    ("quotactl", libc::SYS_quotactl),
    ("fanotify_init", libc::SYS_fanotify_init),
    ("lookup_dcookie", libc::SYS_lookup_dcookie),
    ("vhangup", libc::SYS_vhangup),
    #[cfg(target_arch = "x86_64")]
    ("iopl", libc::SYS_iopl),
    #[cfg(target_arch = "x86_64")]
    ("ioperm", libc::SYS_ioperm),
];

/// The mount family: denied to runs, left to a wrapped agent's own sandbox.
pub const MOUNTS: &[(&str, i64)] = &[
    ("mount", libc::SYS_mount),
    ("umount2", libc::SYS_umount2),
    ("pivot_root", libc::SYS_pivot_root),
    ("open_tree", libc::SYS_open_tree),
    ("move_mount", libc::SYS_move_mount),
    ("fsopen", libc::SYS_fsopen),
    ("fsconfig", libc::SYS_fsconfig),
    ("fsmount", libc::SYS_fsmount),
    ("fspick", libc::SYS_fspick),
    ("mount_setattr", libc::SYS_mount_setattr),
    ("setns", libc::SYS_setns),
    ("unshare", libc::SYS_unshare),
];

/// Memory that outlives the process that touched it and that no per-process limit counts:
/// anonymous files and System V segments.
pub const MEMFD: &[(&str, i64)] = &[("memfd_create", libc::SYS_memfd_create), ("memfd_secret", 447), ("shmget", libc::SYS_shmget)];

/// The `CLONE_NEW*` flags `clone` takes (`CLONE_NEWTIME` shares its bit with the exit signal
/// there; `clone3`, which could take it, is refused whole: see [`prelude`]).
const NAMESPACE_FLAGS: [u64; 7] = [
    libc::CLONE_NEWNS as u64, libc::CLONE_NEWUSER as u64, libc::CLONE_NEWPID as u64, libc::CLONE_NEWNET as u64,
    libc::CLONE_NEWIPC as u64, libc::CLONE_NEWUTS as u64, libc::CLONE_NEWCGROUP as u64,
];

fn command_rules(c: Commands) -> Result<Rules, String> {
    use seccompiler::{SeccompCmpArgLen as Len, SeccompCmpOp as Op};
    let mut rules = Rules::new();
    for (_, n) in DENIED.iter().chain(if c.mounts { &[][..] } else { MOUNTS }).chain(if c.memfd { &[][..] } else { MEMFD }) {
        rules.insert(*n, Vec::new());
    }
    // The request is an `unsigned int`: compare its low 32 bits only, so bits above cannot
    // make a different number of the same request (CVE-2019-10063).
    let low = |v| rule(1, Len::Dword, Op::MaskedEq(0xffff_ffff), v);
    rules.insert(libc::SYS_ioctl, vec![low(TIOCSTI)?, low(TIOCLINUX)?]);
    if !c.mounts {
        // `clone` with any namespace flag is `unshare` by another name: one rule per bit.
        let bit = |b: u64| rule(0, Len::Qword, Op::MaskedEq(b), b);
        rules.insert(libc::SYS_clone, NAMESPACE_FLAGS.iter().map(|b| bit(*b)).collect::<Result<_, _>>()?);
    }
    rules.insert(libc::SYS_socket, vec![rule(0, Len::Dword, Op::Eq, AF_VSOCK)?, rule(0, Len::Dword, Op::Eq, AF_KEY)?]);
    rules.insert(libc::SYS_socketpair, vec![rule(0, Len::Dword, Op::Eq, AF_VSOCK)?]);
    if !c.memfd {
        // A shared anonymous mapping (`MAP_SHARED` or `MAP_SHARED_VALIDATE` with
        // `MAP_ANONYMOUS`): shmem that no data limit counts.
        let shared_anonymous = (libc::MAP_SHARED | libc::MAP_ANONYMOUS) as u64;
        rules.insert(libc::SYS_mmap, vec![rule(3, Len::Dword, Op::MaskedEq(shared_anonymous), shared_anonymous)?]);
    }
    if c.buffers {
        rules.insert(libc::SYS_fcntl, vec![rule(1, Len::Dword, Op::Eq, libc::F_SETPIPE_SZ as u64)?]);
    }
    Ok(rules)
}

/// The filter that answers a socket's buffer size requests 0 without doing them (a program
/// that sets them goes on with the default buffers its budget counts).
#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
fn buffer_sizes() -> Result<seccompiler::BpfProgram, String> {
    use seccompiler::{SeccompAction, SeccompCmpArgLen as Len, SeccompCmpOp as Op, SeccompCondition, SeccompFilter, SeccompRule};
    #[cfg(target_arch = "x86_64")]
    let arch = seccompiler::TargetArch::x86_64;
    #[cfg(target_arch = "aarch64")]
    let arch = seccompiler::TargetArch::aarch64;
    let size = |name: i32| -> Result<SeccompRule, String> {
        let level = SeccompCondition::new(1, Len::Dword, Op::Eq, libc::SOL_SOCKET as u64).map_err(|e| e.to_string())?;
        let opt = SeccompCondition::new(2, Len::Dword, Op::Eq, name as u64).map_err(|e| e.to_string())?;
        SeccompRule::new(vec![level, opt]).map_err(|e| e.to_string())
    };
    let mut rules = Rules::new();
    rules.insert(libc::SYS_setsockopt, vec![size(libc::SO_SNDBUF)?, size(libc::SO_RCVBUF)?]);
    let filter = SeccompFilter::new(rules, SeccompAction::Allow, SeccompAction::Errno(0), arch).map_err(|e| e.to_string())?;
    filter.try_into().map_err(|e: seccompiler::BackendError| e.to_string())
}

/// x32 numbers answered `ENOSYS` (x86_64 only; see the module docs); and for runs, `clone3`
/// answered `ENOSYS` too: its flags (namespaces) are in memory, which seccomp cannot read, and
/// `ENOSYS` sends glibc and the runtimes back to `clone`, whose flags the table checks.
fn prelude(c: Commands) -> Vec<seccompiler::BpfProgram> {
    let mut out = Vec::new();
    #[cfg(target_arch = "x86_64")]
    out.push(x32_prelude());
    if !c.mounts {
        out.push(enosys(libc::SYS_clone3 as u32));
    }
    out
}

/// A filter answering syscall `nr` (native arch) with `ENOSYS` and allowing the rest.
fn enosys(nr: u32) -> seccompiler::BpfProgram {
    use seccompiler::sock_filter as I;
    vec![
        I { code: 0x20, jt: 0, jf: 0, k: 0 },
        I { code: 0x15, jt: 0, jf: 1, k: nr },
        I { code: 0x06, jt: 0, jf: 0, k: 0x0005_0000 | libc::ENOSYS as u32 },
        I { code: 0x06, jt: 0, jf: 0, k: 0x7fff_0000 },
    ]
}

#[cfg(target_arch = "x86_64")]
pub fn x32_prelude() -> seccompiler::BpfProgram {
    use seccompiler::sock_filter as I;
    const LD_W_ABS: u16 = 0x20;
    const JEQ_K: u16 = 0x15;
    const JGE_K: u16 = 0x35;
    const RET_K: u16 = 0x06;
    const AUDIT_ARCH_X86_64: u32 = 0xC000_003E;
    const RET_ERRNO: u32 = 0x0005_0000;
    const RET_ALLOW: u32 = 0x7fff_0000;
    vec![
        I { code: LD_W_ABS, jt: 0, jf: 0, k: 4 },
        I { code: JEQ_K, jt: 0, jf: 3, k: AUDIT_ARCH_X86_64 },
        I { code: LD_W_ABS, jt: 0, jf: 0, k: 0 },
        I { code: JGE_K, jt: 0, jf: 1, k: 0x4000_0000 },
        I { code: RET_K, jt: 0, jf: 0, k: RET_ERRNO | libc::ENOSYS as u32 },
        I { code: RET_K, jt: 0, jf: 0, k: RET_ALLOW },
    ]
}
