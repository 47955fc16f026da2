//! Starting a sandbox child: the one way it is done, for a run, for the pool (whose zygote is
//! started here too) and for the self-test.

use crate::error::{Error, Result};
use super::child::probe::{SelfTest, Target};
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Arc;

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

/// A started child with its pipes: a process of its own, or a fork of the zygote.
pub(super) struct Spawned {
    pub(super) proc: Proc,
    pub(super) stdin: File,
    pub(super) stdout: File,
    pub(super) stderr: File,
}

/// The process of a run, and how to stop it and learn how it ended.
pub(super) enum Proc {
    /// Started by us (`cairn __sandbox`): ours to kill and wait for.
    Own(Child),
    /// Forked by the zygote: killed through its pidfd; the zygote reaps it and writes the raw
    /// wait status into `status`.
    Forked { pidfd: Arc<OwnedFd>, status: File },
}

/// Stops a run's process from any thread (the watchdog's and the serving one's).
#[derive(Clone)]
pub(super) enum Killer {
    Pid(i32),
    Pidfd(Arc<OwnedFd>),
}

impl Killer {
    pub(super) fn kill(&self) {
        match self {
            Killer::Pid(pid) => {
                if let Some(pid) = rustix::process::Pid::from_raw(*pid) {
                    let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
                }
            }
            Killer::Pidfd(fd) => {
                let _ = rustix::process::pidfd_send_signal(fd.as_fd(), rustix::process::Signal::KILL);
            }
        }
    }
}

impl Proc {
    pub(super) fn killer(&self) -> Killer {
        match self {
            Proc::Own(child) => Killer::Pid(child.id() as i32),
            Proc::Forked { pidfd, .. } => Killer::Pidfd(pidfd.clone()),
        }
    }

    /// Waits for the process to end.
    pub(super) fn wait(&mut self) -> Result<ExitStatus> {
        match self {
            Proc::Own(child) => child.wait().map_err(|e| Error::Sandbox(format!("wait: {e}"))),
            Proc::Forked { status, .. } => {
                let mut raw = [0u8; 4];
                // End of file without a status: the zygote died first (and took the child along).
                match status.read_exact(&mut raw) {
                    Ok(()) => Ok(ExitStatus::from_raw(i32::from_le_bytes(raw))),
                    Err(_) => Ok(ExitStatus::from_raw(libc::SIGKILL)),
                }
            }
        }
    }
}

pub(super) fn spawn(exe: &Path, guards: bool) -> Result<Spawned> {
    let mut child = command(exe, guards).spawn().map_err(|e| Error::Sandbox(format!("cannot start {}: {e}", exe.display())))?;
    match (child.stdin.take(), child.stdout.take(), child.stderr.take()) {
        (Some(stdin), Some(stdout), Some(stderr)) => {
            let file = |fd: OwnedFd| File::from(fd);
            Ok(Spawned { proc: Proc::Own(child), stdin: file(stdin.into()), stdout: file(stdout.into()), stderr: file(stderr.into()) })
        }
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

