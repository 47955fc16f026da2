//! Process confinement of the sandbox child, applied in two steps. None of it depends on the
//! Python side: a script that defeats every check of the interpreter still meets all of it.
//!
//! - [`early`], before the interpreter exists: close inherited descriptors; no new privileges;
//!   when started as root, drop to an unprivileged uid and gid with no supplementary groups;
//!   new user, pid, ipc, uts and net namespaces where the kernel allows (in a new pid
//!   namespace the process forks once, and the first process only waits and mirrors the
//!   second's exit); die with the parent; on Linux, a Landlock ruleset that grants no file
//!   system or network access at all.
//! - [`lock`], once the interpreter is built and the run's limits are known: rlimits (address
//!   space, CPU, no processes, few descriptors, file size 0, no core dumps), the heap cap of
//!   [`super::alloc`], and the allow-list seccomp filter of [`crate::confine::filter`] on every
//!   thread.
//!
//! What could be applied is reported in [`Applied`]: kernels differ, and a missing layer is
//! shown by the self-test ([`super::probe`]) and `:checkhealth cairn` instead of failing runs.

use crate::sandbox::protocol::{ChildMsg, ScriptError, Start};
use crate::lifecycle::ErrorKind;
use serde::{Deserialize, Serialize};

/// Room for the interpreter itself (binary, thread stacks) on top of `max_memory_mb` in the
/// address-space limit. The heap cap of the allocator is the precise bound; this is a backstop.
const ADDRESS_SPACE_OVERHEAD_MB: u64 = 1024;

/// The unprivileged identity a child started as root runs as (`nobody`/`nogroup`).
const UNPRIVILEGED_ID: u32 = 65534;

/// What confinement could be applied (kernels differ).
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct Applied {
    pub landlock: String,
    pub seccomp: bool,
    /// Real, effective and saved uid after [`early`].
    pub uid: u32,
    pub gid: u32,
    /// Supplementary groups after [`early`].
    pub groups: usize,
    /// How the identity was set: "unchanged (not root)", "dropped to 65534", or the failure.
    pub identity: String,
    /// The namespaces the child is in (of user, pid, ipc, uts, net).
    pub namespaces: Vec<String>,
    /// Namespaces that could not be created, with the reason; empty when all were.
    pub namespaces_missing: String,
}

/// Step one, before the interpreter and before any thread: descriptors, privileges,
/// identity, namespaces, parent-death signal and Landlock.
pub fn early() -> Applied {
    let parent = rustix::process::getppid();
    close_inherited_fds();
    let mut applied = Applied::default();
    // SAFETY: prctl(PR_SET_NO_NEW_PRIVS) only restricts this process.
    #[allow(unsafe_code)]
    unsafe {
        libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    }
    #[cfg(target_os = "linux")]
    {
        let root = rustix::process::geteuid().is_root();
        // As root, the namespaces that need privilege are created first (no user namespace
        // needed), then the identity is dropped; otherwise a user namespace makes them possible.
        let mut ns = if root { namespaces::enter(false) } else { namespaces::Entered::default() };
        applied.identity = if root { drop_identity() } else { "unchanged (not root)".into() };
        ns = ns.or(|| namespaces::enter(true));
        if !ns.user {
            // Root made the others without one; a user namespace of its own still takes away
            // whatever capabilities remain towards the host's.
            ns.user = namespaces::enter_user();
        }
        applied.namespaces = ns.names();
        applied.namespaces_missing = ns.missing();
        if ns.pid {
            namespaces::become_pid_one();
        }
    }
    applied.uid = rustix::process::getuid().as_raw();
    applied.gid = rustix::process::getgid().as_raw();
    // SAFETY: getgroups(0, NULL) only counts this process's supplementary groups.
    #[allow(unsafe_code)]
    let groups = unsafe { libc::getgroups(0, std::ptr::null_mut()) };
    applied.groups = groups.max(0) as usize;
    let _ = rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL));
    // A parent that died before the line above sent no signal: the child ends now.
    #[cfg(target_os = "linux")]
    namespaces::end_if_parent_gone(parent);
    applied.landlock = landlock_all();
    applied
}

/// setgroups([]), then gid, then uid, all three of real/effective/saved.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn drop_identity() -> String {
    let id = UNPRIVILEGED_ID;
    // SAFETY: plain syscalls on this process's credentials, before any thread exists.
    let rc = unsafe {
        if libc::setgroups(0, std::ptr::null()) != 0 {
            -1
        } else if libc::setresgid(id, id, id) != 0 {
            -2
        } else if libc::setresuid(id, id, id) != 0 {
            -3
        } else {
            0
        }
    };
    match rc {
        0 => format!("dropped to uid/gid {id}"),
        n => format!("failed to drop root (step {}): {}", -n, std::io::Error::last_os_error()),
    }
}

#[cfg(target_os = "linux")]
mod namespaces {
    /// Which namespaces `unshare` created.
    #[derive(Debug, Default, Clone, Copy)]
    pub struct Entered {
        pub user: bool,
        pub pid: bool,
        pub ipc: bool,
        pub uts: bool,
        pub net: bool,
        errno: i32,
    }

    const KINDS: [(&str, libc::c_int); 4] = [("pid", libc::CLONE_NEWPID), ("ipc", libc::CLONE_NEWIPC), ("uts", libc::CLONE_NEWUTS), ("net", libc::CLONE_NEWNET)];

    impl Entered {
        fn all(&self) -> bool {
            self.pid && self.ipc && self.uts && self.net
        }
        /// `self` when it has every namespace, else the result of `other` merged in.
        pub fn or(self, other: impl FnOnce() -> Entered) -> Entered {
            if self.all() {
                return self;
            }
            let o = other();
            Entered { user: self.user || o.user, pid: self.pid || o.pid, ipc: self.ipc || o.ipc, uts: self.uts || o.uts, net: self.net || o.net, errno: o.errno }
        }
        pub fn names(&self) -> Vec<String> {
            let flags = [("user", self.user), ("pid", self.pid), ("ipc", self.ipc), ("uts", self.uts), ("net", self.net)];
            flags.iter().filter(|(_, on)| *on).map(|(n, _)| n.to_string()).collect()
        }
        pub fn missing(&self) -> String {
            let flags = [("pid", self.pid), ("ipc", self.ipc), ("uts", self.uts), ("net", self.net)];
            let missing: Vec<&str> = flags.iter().filter(|(_, on)| !*on).map(|(n, _)| *n).collect();
            if missing.is_empty() {
                return String::new();
            }
            format!("{} ({})", missing.join(", "), std::io::Error::from_raw_os_error(self.errno))
        }
    }

    /// Unshares all four namespaces at once (with a user namespace when `user`), else each
    /// one alone.
    #[allow(unsafe_code)]
    pub fn enter(user: bool) -> Entered {
        let extra = if user { libc::CLONE_NEWUSER } else { 0 };
        let all = KINDS.iter().fold(extra, |acc, (_, f)| acc | f);
        let mut e = Entered::default();
        // SAFETY: unshare only changes this process's namespaces; no thread exists yet.
        if unsafe { libc::unshare(all) } == 0 {
            return Entered { user, pid: true, ipc: true, uts: true, net: true, errno: 0 };
        }
        e.errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
        // SAFETY: as above.
        if user && unsafe { libc::unshare(libc::CLONE_NEWUSER) } != 0 {
            return e;
        }
        e.user = user;
        for (name, flag) in KINDS {
            // SAFETY: as above.
            let ok = unsafe { libc::unshare(flag) } == 0;
            match name {
                "pid" => e.pid = ok,
                "ipc" => e.ipc = ok,
                "uts" => e.uts = ok,
                _ => e.net = ok,
            }
        }
        e
    }

    /// A user namespace alone.
    #[allow(unsafe_code)]
    pub fn enter_user() -> bool {
        // SAFETY: as in `enter`.
        unsafe { libc::unshare(libc::CLONE_NEWUSER) == 0 }
    }

    /// The read end of the pipe of [`become_pid_one`] in its child; -1 elsewhere.
    static PARENT_ALIVE: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(-1);

    /// Once the parent-death signal is armed: ends this process if its parent is already
    /// gone. The child of [`become_pid_one`] asks the pipe (its end closed); any other, its
    /// parent pid (no longer `parent`, the one it started with).
    #[allow(unsafe_code)]
    pub fn end_if_parent_gone(parent: Option<rustix::process::Pid>) {
        let fd = PARENT_ALIVE.swap(-1, std::sync::atomic::Ordering::SeqCst);
        if fd < 0 {
            if rustix::process::getppid() != parent {
                // SAFETY: leaving at once; nothing to clean up.
                unsafe { libc::_exit(3) };
            }
            return;
        }
        let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
        // SAFETY: polling one descriptor of ours without waiting, then closing it.
        unsafe {
            let ready = libc::poll(&mut p, 1, 0);
            libc::close(fd);
            if ready > 0 && p.revents & (libc::POLLHUP | libc::POLLIN) != 0 {
                libc::_exit(3);
            }
        }
    }

    /// A new pid namespace holds only the children of the process that created it: fork once.
    /// The child (pid 1 of the namespace) returns and becomes the sandbox; this process only
    /// waits and ends the way the child ended, so the parent sees one process with the
    /// child's exit status, and killing this process kills the child (parent-death signal).
    #[allow(unsafe_code)]
    pub fn become_pid_one() {
        // The child learns whether this process still lives from a pipe only this one writes
        // to: its parent-death signal is armed later, and a parent killed before that (a client
        // gone as the run starts) would leave it running, an orphan (pid 1 of its namespace
        // sees no parent pid).
        let parent = rustix::process::getppid();
        let mut alive = [-1i32; 2];
        // SAFETY: pipe2 fills the two descriptors it creates.
        if unsafe { libc::pipe2(alive.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            alive = [-1, -1];
        }
        // SAFETY: fork in a process that has no other thread yet (see `early`).
        let pid = unsafe { libc::fork() };
        if pid <= 0 {
            // The child, or a failed fork (then this process runs the sandbox itself).
            // SAFETY: closing the write end this process does not use (a no-op for -1).
            unsafe { libc::close(alive[1]) };
            PARENT_ALIVE.store(if pid == 0 { alive[0] } else { -1 }, std::sync::atomic::Ordering::SeqCst);
            return;
        }
        let _ = rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL));
        // SAFETY: the read end is the child's; `alive[1]` stays open until this process ends.
        unsafe { libc::close(alive[0]) };
        if rustix::process::getppid() != parent {
            // Orphaned before the signal was armed: the child goes too.
            // SAFETY: killing our own child, then leaving at once.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::_exit(3);
            }
        }
        // SAFETY: the pipes now belong to the child; closing our copies makes end-of-file on
        // them mean that the child is gone.
        unsafe {
            libc::close(0);
            libc::close(1);
            libc::close(2);
        }
        let mut status = 0;
        // SAFETY: waiting for our only child.
        while unsafe { libc::waitpid(pid, &mut status, 0) } < 0 {
            if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                // SAFETY: leaving at once; nothing to clean up.
                unsafe { libc::_exit(3) };
            }
        }
        if libc::WIFSIGNALED(status) {
            let sig = libc::WTERMSIG(status);
            // SAFETY: restore the default action and end by the same signal.
            unsafe {
                libc::signal(sig, libc::SIG_DFL);
                libc::raise(sig);
            }
        }
        // SAFETY: as above.
        unsafe { libc::_exit(if libc::WIFEXITED(status) { libc::WEXITSTATUS(status) } else { 3 }) };
    }
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
    rlimit(Resource::Nproc, 0);
    let over = ChildMsg::Done {
        result: None,
        error: Some(ScriptError { kind: ErrorKind::Memory, message: format!("exceeded max_memory_mb = {}", start.max_memory_mb) }),
    };
    let mut line = serde_json::to_vec(&over).unwrap_or_default();
    line.push(b'\n');
    super::alloc::set_cap(super::alloc::live() + (start.max_memory_mb * mb) as usize, line);
    applied.seccomp = crate::confine::filter::install(crate::confine::filter::Table::Child).is_ok();
}

