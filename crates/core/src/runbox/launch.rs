//! The one way the confined side starts: `cairn-confine` (or `cairn __confine`) with an empty
//! environment, `/` as its working directory, the spec written into a pipe on its descriptor
//! 3 (never a file: it holds the command's environment, API keys included for a wrapped
//! agent), a pipe on descriptor 5 that only pid 1 keeps (its hang-up is the run's end), and,
//! for a wrap session, one end of a unix socket on descriptor 4 over which pid 1 hands out
//! the listeners it made inside the session's network namespace ([`super::net`]).
//!
//! And the one way it ends: the parent reads the result once pid 1 is gone; the rest (the
//! namespaces' teardown, then a run's cgroup and directory) happens in the background, and
//! [`settle`] waits for it before the process exits.

use super::spec::{Ended, Spec};
use crate::error::{Error, Result};
use crate::project::Project;
use std::io::Write;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Where the confined side finds the spec, and its end of the control socket.
pub const SPEC_FD: i32 = 3;
pub const CONTROL_FD: i32 = 4;
/// The write end of the pipe that tells the parent pid 1 has ended ([`Started::ended`]).
pub const DONE_FD: i32 = 5;

/// Starts the confined side for `spec` with the given standard streams; `control`: the
/// confined side's end of the control socket.
pub fn start(project: &Project, spec: &Spec, stdio: [Stdio; 3], control: Option<OwnedFd>) -> Result<Started> {
    let (r, w) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).map_err(|e| Error::Sandbox(format!("pipe: {e}")))?;
    let (done, done_w) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).map_err(|e| Error::Sandbox(format!("pipe: {e}")))?;
    let json = serde_json::to_vec(spec)?;
    let [stdin, stdout, stderr] = stdio;
    let (r_fd, d_fd, c_fd) = (r.as_raw_fd(), done_w.as_raw_fd(), control.as_ref().map(|c| c.as_raw_fd()));
    let mut cmd = helper(&project.exe);
    cmd.env_clear();
    cmd.current_dir("/").stdin(stdin).stdout(stdout).stderr(stderr);
    #[allow(unsafe_code)]
    // SAFETY: between fork and exec only fcntl and dup2 (async-signal-safe) onto fixed
    // descriptors; the duplicates do not have close-on-exec.
    unsafe {
        cmd.pre_exec(move || {
            // Copies above 9 first, so that no target can be another's source.
            let high = |fd: i32| libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 10);
            let (r2, d2, c2) = (high(r_fd), high(d_fd), c_fd.map(high));
            if r2 < 0 || d2 < 0 || c2.is_some_and(|c| c < 0) || libc::dup2(r2, SPEC_FD) < 0 || libc::dup2(d2, DONE_FD) < 0 || c2.is_some_and(|c| libc::dup2(c, CONTROL_FD) < 0) {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = cmd.spawn().map_err(|e| Error::Sandbox(format!("cannot start {}: {e}", cmd.get_program().to_string_lossy())))?;
    drop((r, done_w, control));
    // A spec larger than the pipe's buffer is written while the child reads it.
    std::thread::spawn(move || {
        let mut w = std::fs::File::from(w);
        let _ = w.write_all(&json);
    });
    Ok(Started { child, done })
}

/// A started confined side.
pub struct Started {
    child: Child,
    /// Hangs up when pid 1 is gone (or the side ended before it existed): only pid 1 keeps
    /// the other end, and the command never has it.
    done: OwnedFd,
}

impl Started {
    /// The process to kill to end the run (its whole tree goes with it).
    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Has pid 1 ended (waiting up to `timeout`)?
    pub fn ended(&self, timeout: Duration) -> bool {
        use rustix::event::{poll, PollFd, PollFlags, Timespec};
        let mut fds = [PollFd::new(&self.done, PollFlags::IN)];
        let timeout = Timespec::try_from(timeout).ok();
        matches!(poll(&mut fds, timeout.as_ref()), Ok(n) if n > 0)
    }

    /// Waits for pid 1's end, killing the whole side once `limit` has passed.
    pub fn wait_ended(&self, limit: Duration) {
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            // Past the limit: killed, then looked at again every 100 ms until pid 1 is gone.
            if self.ended(if left.is_zero() { Duration::from_millis(100) } else { left.min(Duration::from_secs(1)) }) {
                return;
            }
            if Instant::now() >= deadline {
                self.kill();
            }
        }
    }

    pub fn kill(&self) {
        if let Some(pid) = rustix::process::Pid::from_raw(self.pid()) {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
        }
    }

    /// Reads how the command ended, once [`Started::ended`]. The rest of the side's exit (its
    /// namespaces' teardown, a millisecond) is left to [`Exiting::then`]. Without a result
    /// (pid 1 died first) everything is waited for here.
    pub fn finish(mut self, result: &Path) -> (Ended, Exiting) {
        let ended: Option<Ended> = std::fs::read(result).ok().and_then(|b| serde_json::from_slice(&b).ok());
        match ended {
            Some(ended) => (ended, Exiting { child: Some(self.child) }),
            None => {
                let _ = self.child.wait();
                (Ended { signal: Some(libc::SIGKILL), ..Default::default() }, Exiting { child: None })
            }
        }
    }
}

/// A confined side whose pid 1 has ended, on its way out.
pub struct Exiting {
    child: Option<Child>,
}

impl Exiting {
    /// Runs `after` (a run's cgroup and directory removed) once the side has exited, in the
    /// background; [`settle`] waits for it.
    pub fn then(self, after: impl FnOnce() + Send + 'static) {
        let Some(mut child) = self.child else { return after() };
        let handle = std::thread::spawn(move || {
            let _ = child.wait();
            after();
        });
        if let Ok(mut pending) = PENDING.lock() {
            pending.retain(|h| !h.is_finished());
            pending.push(handle);
        }
    }
}

/// Tear-downs still going on in the background (see [`Started::finish`]).
static PENDING: std::sync::Mutex<Vec<std::thread::JoinHandle<()>>> = std::sync::Mutex::new(Vec::new());

/// Waits for every confined side's tear-down still going on: what a process calls before it
/// exits, so that no run's cgroup or directory is left behind.
pub fn settle() {
    let pending = PENDING.lock().map(|mut p| std::mem::take(&mut *p)).unwrap_or_default();
    for h in pending {
        let _ = h.join();
    }
}

/// The confined side's program: `cairn-confine` beside `exe` (it links none of the
/// interpreter: a start costs about a millisecond less), else `exe __confine`.
fn helper(exe: &std::path::Path) -> Command {
    let small = exe.with_file_name(HELPER);
    if small.is_file() {
        return Command::new(small);
    }
    let mut cmd = Command::new(exe);
    cmd.arg("__confine");
    cmd
}

/// The file name of the confined side's own binary.
const HELPER: &str = "cairn-confine";

/// The confined side: reads the spec from descriptor 3 (and closes it).
pub fn read_spec() -> std::result::Result<Spec, String> {
    use std::io::Read;
    use std::os::fd::FromRawFd;
    // SAFETY: descriptor 3 is the spec pipe `start` put there; taken once, at start.
    #[allow(unsafe_code)]
    let mut f = unsafe { std::fs::File::from_raw_fd(SPEC_FD) };
    let mut buf = Vec::new();
    f.read_to_end(&mut buf).map_err(|e| format!("cannot read the spec (descriptor {SPEC_FD}): {e}"))?;
    serde_json::from_slice(&buf).map_err(|e| format!("the spec is not valid: {e}"))
}
