//! Starting a sandbox child: the one way it is done, for a run, for the pool and for the
//! self-test.

use crate::error::{Error, Result};
use std::path::Path;
use std::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command, Stdio};

/// The one way a sandbox child is started: cleared environment, `/` as its working directory
/// (it can open nothing anyway: see [`super::child::confine`]), only the three protocol pipes.
pub(super) fn command(exe: &Path) -> Command {
    let mut cmd = Command::new(exe);
    cmd.arg("__sandbox").env_clear().current_dir("/").stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd
}

/// A started child with its pipes.
pub(super) struct Spawned {
    pub(super) child: Child,
    pub(super) stdin: ChildStdin,
    pub(super) stdout: ChildStdout,
    pub(super) stderr: ChildStderr,
}

pub(super) fn spawn(exe: &Path) -> Result<Spawned> {
    let mut child = command(exe).spawn().map_err(|e| Error::Sandbox(format!("cannot start {}: {e}", exe.display())))?;
    match (child.stdin.take(), child.stdout.take(), child.stderr.take()) {
        (Some(stdin), Some(stdout), Some(stderr)) => Ok(Spawned { child, stdin, stdout, stderr }),
        _ => {
            let _ = child.kill();
            let _ = child.wait();
            Err(Error::Sandbox("child pipes missing".into()))
        }
    }
}

/// Starts a child exactly as a run does, in self-test mode, and returns its report.
pub fn selftest(exe: &Path) -> Result<super::child::confine::SelfTest> {
    let mut cmd = command(exe);
    cmd.arg("--selftest");
    let out = cmd.output().map_err(|e| Error::Sandbox(format!("cannot start {}: {e}", exe.display())))?;
    serde_json::from_slice(&out.stdout).map_err(|e| Error::Sandbox(format!("selftest output: {e}: {}", String::from_utf8_lossy(&out.stdout))))
}

