//! The one way the confined side starts: `cairn __confine` with an empty environment, `/` as
//! its working directory, the spec written into a pipe on its descriptor 3 (never a file: it
//! holds the command's environment, API keys included for a wrapped agent), and, for a wrap
//! session, one end of a unix socket on descriptor 4 over which pid 1 hands out the listeners
//! it made inside the session's network namespace ([`super::net`]).

use super::spec::Spec;
use crate::error::{Error, Result};
use crate::project::Project;
use std::io::Write;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};

/// Where the confined side finds the spec, and its end of the control socket.
pub const SPEC_FD: i32 = 3;
pub const CONTROL_FD: i32 = 4;

/// Starts `cairn __confine` for `spec` with the given standard streams; `control`: the
/// confined side's end of the control socket.
pub fn start(project: &Project, spec: &Spec, stdio: [Stdio; 3], control: Option<OwnedFd>) -> Result<Child> {
    let (r, w) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).map_err(|e| Error::Sandbox(format!("pipe: {e}")))?;
    let json = serde_json::to_vec(spec)?;
    let [stdin, stdout, stderr] = stdio;
    let (r_fd, c_fd) = (r.as_raw_fd(), control.as_ref().map(|c| c.as_raw_fd()));
    let mut cmd = Command::new(&project.exe);
    cmd.arg("__confine").env_clear().current_dir("/").stdin(stdin).stdout(stdout).stderr(stderr);
    #[allow(unsafe_code)]
    // SAFETY: between fork and exec only dup2 (async-signal-safe) onto fixed descriptors; the
    // duplicates do not have close-on-exec.
    unsafe {
        cmd.pre_exec(move || {
            // Copies above 9 first, so that neither target can be the other's source.
            let high = |fd: i32| libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 10);
            let (r2, c2) = (high(r_fd), c_fd.map(high));
            if r2 < 0 || c2.is_some_and(|c| c < 0) || libc::dup2(r2, SPEC_FD) < 0 || c2.is_some_and(|c| libc::dup2(c, CONTROL_FD) < 0) {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = cmd.spawn().map_err(|e| Error::Sandbox(format!("cannot start {}: {e}", project.exe.display())))?;
    drop(r);
    drop(control);
    // A spec larger than the pipe's buffer is written while the child reads it.
    std::thread::spawn(move || {
        let mut w = std::fs::File::from(w);
        let _ = w.write_all(&json);
    });
    Ok(child)
}

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
