//! A confined run whose command talks with the parent while it runs: an agent script on
//! CPython (`[sandbox] interpreter = "cpython"`). The command's stdout is one end of a unix
//! stream socket (the sandbox's JSON-lines protocol both ways, [`crate::sandbox::protocol`]);
//! its stderr is the output's tail; its stdin is `/dev/null` as for every run. The boundary,
//! the staging of the proposal and the capture of what it wrote are [`super::run`]'s.

use super::spec::Spec;
use super::{cgroup, launch, spec_for, stage, tail, Outcome, Request, KILL_GRACE};
use crate::error::{Error, Result};
use crate::project::Project;
use crate::review::diff::FileChange;
use std::fs::File;
use std::process::Stdio;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A started run: its socket, and what [`Streamed::finish`] needs to end it.
pub struct Streamed {
    dir: stage::RunDir,
    spec: Spec,
    side: launch::Started,
    started: Instant,
    timeout: Duration,
    network: String,
    /// The parent's end of the command's stdout (read and write).
    pub socket: Option<File>,
    output: JoinHandle<(Vec<u8>, u64)>,
}

/// Starts `req` in a run workspace of the project with `changes` on top.
pub fn start(project: &Project, changes: &[FileChange], req: &Request) -> Result<Streamed> {
    use rustix::net::{socketpair, AddressFamily, SocketFlags, SocketType};
    let started = Instant::now();
    let dir = stage::RunDir::create(project)?;
    stage::stage(&dir.path.join("stage"), changes)?;
    let spec = spec_for(project, &dir.path, req)?;
    let (ours, theirs) = socketpair(AddressFamily::UNIX, SocketType::STREAM, SocketFlags::CLOEXEC, None).map_err(|e| Error::Sandbox(format!("socketpair: {e}")))?;
    let (r, w) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).map_err(|e| Error::Sandbox(format!("pipe: {e}")))?;
    let side = launch::start(project, &spec, [Stdio::null(), Stdio::from(theirs), Stdio::from(w)], None)?;
    let keep = project.config.run.max_output_bytes as usize;
    let output = std::thread::spawn(move || tail(File::from(r), keep));
    let network = project.config.run.network.clone();
    Ok(Streamed { dir, spec, side, started, timeout: req.timeout, network, socket: Some(File::from(ours)), output })
}

impl Streamed {
    /// The process to kill to end the run (its whole tree goes with it).
    pub fn pid(&self) -> i32 {
        self.side.pid()
    }

    /// Waits for the run's end (killed from outside past its timeout and a grace), and reads
    /// how it ended and what it wrote. A run that could not build its boundary is an error: a
    /// script never runs unconfined.
    pub fn finish(mut self) -> Result<Outcome> {
        drop(self.socket.take());
        let limit = (self.started + self.timeout + KILL_GRACE).saturating_duration_since(Instant::now());
        self.side.wait_ended(limit);
        let (output, output_dropped) = self.output.join().map_err(|_| Error::Internal("the output reader of a run panicked".into()))?;
        let (ended, exiting) = self.side.finish(&self.spec.result_file());
        // Killed before pid 1 could stream the layer back: nothing was captured.
        let written = if self.spec.capture && ended.setup_error.is_none() { super::capture::read(&self.spec.capture_file()).unwrap_or_default() } else { Vec::new() };
        let (dir, cgroups) = (self.dir, ended.cgroups.clone());
        exiting.then(move || {
            cgroup::remove(&cgroups);
            drop(dir);
        });
        if let Some(e) = &ended.setup_error {
            return Err(Error::Sandbox(format!("the confined run could not start: {e} (see `cairn doctor` and :help cairn-runs)")));
        }
        if let Some(e) = ended.capture_error.as_ref().filter(|_| self.spec.capture) {
            return Err(Error::Sandbox(format!("the script ran ({}), but what it wrote could not be read back: {e}", ended.exit())));
        }
        let exit = ended.exit();
        Ok(Outcome { exit, output, output_dropped, duration: self.started.elapsed(), written, network: self.network, unconfined: None, budget: ended.budget })
    }
}
