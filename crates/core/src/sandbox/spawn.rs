//! Starting a sandbox child: the one way it is done, for a run, for the pool and for the
//! self-test.

use crate::error::{Error, Result};
use super::child::probe::{SelfTest, Target};
use std::io::Write;
use std::path::Path;
use std::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command, Stdio};

/// The one way a sandbox child is started: cleared environment, `/` as its working directory
/// (it can open nothing anyway: see [`super::child::confine`]), only the three protocol pipes.
pub(super) fn command(exe: &Path, guards: bool) -> Command {
    let mut cmd = Command::new(exe);
    cmd.arg("__sandbox");
    if !guards {
        cmd.arg("--no-guards");
    }
    cmd.env_clear().current_dir("/").stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd
}

/// A started child with its pipes.
pub(super) struct Spawned {
    pub(super) child: Child,
    pub(super) stdin: ChildStdin,
    pub(super) stdout: ChildStdout,
    pub(super) stderr: ChildStderr,
}

pub(super) fn spawn(exe: &Path, guards: bool) -> Result<Spawned> {
    let mut child = command(exe, guards).spawn().map_err(|e| Error::Sandbox(format!("cannot start {}: {e}", exe.display())))?;
    match (child.stdin.take(), child.stdout.take(), child.stderr.take()) {
        (Some(stdin), Some(stdout), Some(stderr)) => Ok(Spawned { child, stdin, stdout, stderr }),
        _ => {
            let _ = child.kill();
            let _ = child.wait();
            Err(Error::Sandbox("child pipes missing".into()))
        }
    }
}

/// Starts a child exactly as a run does, in self-test mode, aims its probes at `target`, and
/// returns its report.
pub fn selftest(exe: &Path, target: &Target) -> Result<SelfTest> {
    let start_err = |e: std::io::Error| Error::Sandbox(format!("cannot start {}: {e}", exe.display()));
    let mut cmd = command(exe, true);
    cmd.arg("--selftest");
    let mut child = cmd.spawn().map_err(start_err)?;
    if let Some(mut stdin) = child.stdin.take() {
        let _ = writeln!(stdin, "{}", serde_json::to_string(target)?);
    }
    let out = child.wait_with_output().map_err(start_err)?;
    serde_json::from_slice(&out.stdout).map_err(|e| Error::Sandbox(format!("selftest output: {e}: {}", String::from_utf8_lossy(&out.stdout))))
}

