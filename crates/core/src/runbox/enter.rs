//! The confined side of a run (`cairn-confine`, or `cairn __confine`): builds the boundary and
//! runs the command in it. Three processes:
//!
//! 1. this process: dies with `cairn` (parent-death signal), decides the identity (as root:
//!    idmapped clones of root's trees, see [`super::ids`]), starts pid 1 in new user, mount,
//!    pid, ipc, uts and (unless `network = "host"`) net namespaces and writes its id maps
//!    from outside, lets go of the output and of the done pipe (the parent learns the end
//!    from pid 1, not from this process, whose exit comes after the namespaces' teardown),
//!    and mirrors the exit of
//! 2. pid 1 of the new pid namespace: builds the view ([`super::view`]), forks the
//!    command, reaps, enforces the timeout, kills everything left when the command ends
//!    (all of the namespace dies with it), streams the written layer back and records how the
//!    command ended;
//! 3. the command ([`super::command`]): never host root, in a nested user and mount namespace
//!    (every mount below is locked, so it cannot be undone from inside), in a session of its
//!    own without a terminal, with no capabilities, no new privileges, rlimits, a seccomp
//!    filter, a cleared environment, `sh -c <cmd>`.
//!
//! Both helpers are non-dumpable, so the command cannot read their memory or `/proc` entries.
//! Runs single-threaded from `main` before anything else starts (fork after threads is unsafe).

use super::spec::{Ended, Spec};
use super::ids::Ids;
use super::sys::dumpable;
use std::io::Write as _;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};

/// Entry point of `cairn-confine` and `cairn __confine`; returns the process exit code.
pub fn main() -> i32 {
    let spec: Spec = match super::launch::read_spec() {
        Ok(s) => s,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "cairn-confine: {e}");
            return 125;
        }
    };
    let result = spec.result_file();
    match outer(&spec) {
        Ok(code) => code,
        Err(e) => {
            write_result(&result, &Ended { setup_error: Some(e), ..Default::default() });
            125
        }
    }
}

pub(super) fn write_result(path: &std::path::Path, ended: &Ended) {
    if let Ok(json) = serde_json::to_vec(ended) {
        let _ = std::fs::write(path, json);
    }
}

/// Process 1 of the list above.
#[allow(unsafe_code)]
fn outer(spec: &Spec) -> Result<i32, String> {
    die_with_parent()?;
    ignore_terminal_signals();
    if rustix::process::getppid().map(|p| p.as_raw_nonzero().get()) != Some(spec.parent_pid) {
        return Err("cairn exited before the run started".into());
    }
    let mut trees = vec![spec.root.clone(), spec.stage()];
    trees.extend(spec.read_paths.iter().cloned());
    // The home whole: its state directories are reached inside that clone.
    if let Some(h) = spec.wrap.as_ref().and_then(|w| w.home.as_ref()) {
        trees.push(h.real.clone());
    }
    let ids = super::ids::prepare(&trees)?;
    // Before anything forks: every process of the run is in the run's cgroup.
    let joined = match &spec.wrap {
        None => super::cgroup::join(&spec.dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(), spec.max_memory_mb, spec.max_processes, spec.no_cgroup),
        Some(w) => {
            let shares = super::budget::Shares { processes: spec.max_processes, tmpfs_mb: w.max_tmp_mb, ..Default::default() };
            let how = format!("no memory budget (a wrap session is the user's own agent); {} processes, a {} MiB tmpfs", spec.max_processes, w.max_tmp_mb);
            super::cgroup::Joined { dirs: Vec::new(), how, shares }
        }
    };
    let mut flags = libc::CLONE_NEWUSER | libc::CLONE_NEWNS | libc::CLONE_NEWPID | libc::CLONE_NEWIPC | libc::CLONE_NEWUTS;
    if !spec.host_network {
        flags |= libc::CLONE_NEWNET;
    }
    // The pipe tells pid 1 whether this process is still there (see `pid_one`); the other,
    // that its id maps are written.
    let (alive_r, alive_w) = super::sys::pipe()?;
    let (mapped_r, mapped_w) = super::sys::pipe()?;
    let pid = super::ids::clone_into(flags)?;
    if pid == 0 {
        drop((alive_w, mapped_w));
        let mut b = [0u8; 1];
        // SAFETY: one byte from our pipe; none (the parent failed) ends this process.
        if unsafe { libc::read(mapped_r.as_raw_fd(), b.as_mut_ptr() as *mut libc::c_void, 1) } != 1 {
            // SAFETY: leaving before anything was built.
            unsafe { libc::_exit(125) };
        }
        drop(mapped_r);
        let code = match pid_one(spec, alive_r, &ids, &joined) {
            Ok(code) => code,
            Err(e) => {
                write_result(&spec.result_file(), &Ended { setup_error: Some(e), cgroups: joined.dirs.clone(), ..Default::default() });
                125
            }
        };
        // The result is written: the parent may go on now. (Left to the exit, these would
        // close only after the namespaces' teardown.)
        release_streams();
        // SAFETY: leaving the namespace's init; the kernel kills whatever is left in it.
        unsafe { libc::_exit(code) };
    }
    drop((alive_r, mapped_r));
    let mapped = super::ids::map(&ids, pid);
    if mapped.is_ok() {
        // SAFETY: one byte to pid 1 (or none: it ends on the hang-up).
        unsafe { libc::write(mapped_w.as_raw_fd(), b"m".as_ptr() as *const libc::c_void, 1) };
    }
    drop(mapped_w);
    dumpable(false)?;
    if let Err(e) = mapped {
        mirror(pid);
        return Err(e);
    }
    release_streams();
    Ok(mirror(pid))
}

/// Lets go of the output and of the done pipe: the outer process once pid 1 runs, pid 1 once
/// the result is written. The parent then takes the run's end at once: files still open at
/// `exit` close only after the namespaces' teardown (a millisecond or more).
#[allow(unsafe_code)]
fn release_streams() {
    if let Ok(null) = std::fs::OpenOptions::new().read(true).write(true).open("/dev/null") {
        for fd in 0..3 {
            // SAFETY: dup2 onto this process's own standard descriptors.
            unsafe { libc::dup2(null.as_raw_fd(), fd) };
        }
    }
    // SAFETY: closing the done pipe's end, which nothing else here owns.
    unsafe { libc::close(super::launch::DONE_FD) };
}

/// Waits for `pid` and returns an exit code that says how it ended.
#[allow(unsafe_code)]
fn mirror(pid: libc::pid_t) -> i32 {
    let mut status = 0;
    // SAFETY: waiting for our own child.
    while unsafe { libc::waitpid(pid, &mut status, 0) } < 0 {
        if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return 125;
        }
    }
    if libc::WIFEXITED(status) { libc::WEXITSTATUS(status) } else { 128 + libc::WTERMSIG(status) }
}

/// Ctrl-C, Ctrl-\ and Ctrl-Z at the terminal are for the command (a wrapped agent), not for
/// the helpers between it and `cairn` (the command restores the defaults).
#[allow(unsafe_code)]
fn ignore_terminal_signals() {
    for sig in [libc::SIGINT, libc::SIGQUIT, libc::SIGTSTP, libc::SIGTTIN, libc::SIGTTOU] {
        // SAFETY: setting a disposition in this single-threaded process.
        unsafe { libc::signal(sig, libc::SIG_IGN) };
    }
}

/// SIGKILL when the thread that started us ends.
fn die_with_parent() -> Result<(), String> {
    rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL)).map_err(|e| format!("parent-death signal: {e}"))
}

/// Process 2: pid 1 of the run's namespace. Its result file is opened first, so that even a
/// failure to build the boundary is reported after the run's directory is hidden.
#[allow(unsafe_code)]
fn pid_one(spec: &Spec, alive: OwnedFd, ids: &Ids, joined: &super::cgroup::Joined) -> Result<i32, String> {
    // Through a detached copy of the run's directory: files open for writing on a mount of the
    // tree would keep it from turning read-only, and the directory is hidden later.
    let dir = super::mounts::clone_tree(&spec.dir, false)?;
    let open = |name: &str| {
        use rustix::fs::{Mode, OFlags};
        rustix::fs::openat(&dir, name, OFlags::WRONLY | OFlags::CREATE | OFlags::TRUNC | OFlags::CLOEXEC, Mode::from_raw_mode(0o600)).map(std::fs::File::from).map_err(|e| format!("{name}: {e}"))
    };
    let mut result = open(super::spec::RESULT)?;
    let capture = open(super::spec::CAPTURE)?;
    let mut ended = match confined(spec, alive, capture, ids, joined) {
        Ok(ended) => ended,
        Err(e) => Ended { setup_error: Some(e), ..Default::default() },
    };
    ended.budget = joined.how.clone();
    ended.cgroups = joined.dirs.clone();
    let _ = result.write_all(&serde_json::to_vec(&ended).unwrap_or_default());
    Ok(match (&ended.setup_error, ended.code) {
        (Some(_), _) => 125,
        (None, Some(code)) => code,
        (None, None) => 128 + ended.signal.unwrap_or(libc::SIGKILL),
    })
}

#[allow(unsafe_code)]
fn confined(spec: &Spec, alive: OwnedFd, capture: std::fs::File, ids: &Ids, joined: &super::cgroup::Joined) -> Result<Ended, String> {
    die_with_parent()?;
    dumpable(false)?;
    let mut poll = [libc::pollfd { fd: alive.as_raw_fd(), events: libc::POLLIN, revents: 0 }];
    // SAFETY: poll on our own descriptor, no wait. The write end is held only by process 1:
    // a hang-up means it is already gone, and the death signal may have been missed.
    if unsafe { libc::poll(poll.as_mut_ptr(), 1, 0) } != 0 {
        return Err("cairn exited before the run started".into());
    }
    drop(alive);
    let built = super::view::build(spec, ids, &joined.shares)?;
    if let Some(listen) = spec.wrap.as_ref().and_then(|w| w.listen.as_ref()) {
        // SAFETY: descriptor 4 is the control socket `launch` put there; taken once.
        let control = unsafe { OwnedFd::from_raw_fd(super::launch::CONTROL_FD) };
        super::net::hand_out(listen, control.as_fd())?;
    } else if let Some(w) = spec.wrap.as_ref().filter(|w| !w.dial.is_empty()) {
        // SAFETY: as above (a session has the listeners or the dialer, never both).
        let control = unsafe { OwnedFd::from_raw_fd(super::launch::CONTROL_FD) };
        super::dial::start_dialer(&w.dial, control)?;
    }
    let pid = super::command::start(spec, ids, &joined.shares, !joined.dirs.is_empty())?;
    let mut ended = super::command::wait(pid, spec.timeout_ms);
    // SAFETY: pid 1 signalling every other process of its own namespace.
    unsafe { libc::kill(-1, libc::SIGKILL) };
    super::command::reap_all();
    if let (Some(plan), Some((scratch, files))) = (spec.wrap.as_ref().and_then(|w| w.home.as_ref()), &built.home_save) {
        let at = |fd: &OwnedFd| std::path::PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd()));
        super::home::save_state_files(plan, scratch.as_fd(), &at(files));
    }
    if spec.capture {
        // After the command: a failure here is the run's, never "could not start" (which
        // `[run] allow_unconfined` would answer by running the command again, unconfined).
        if let Err(e) = super::capture::write(&built.upper, capture, spec.capture_limits) {
            ended.capture_error = Some(e);
        }
    }
    Ok(ended)
}
