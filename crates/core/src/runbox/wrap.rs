//! The boundary of a wrap session (`cairn wrap`, see [`crate::wrap`]): the same confined side
//! as a run, with what an agent CLI needs — the user's terminal, the network unless refused,
//! its own config and session state writable in place, the environment passed through but
//! Cairn's own — and the written layer on disk in the session's directory, where the parent
//! reads it while the agent works and after a crash.

use super::spec::{Ended, Spec, Wrap};
use super::Exit;
use crate::error::{Error, Result};
use crate::project::Project;
use crate::review::diff::FileChange;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// One wrap session's boundary.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    pub argv: &'a [String],
    /// Working directory, relative to the project root.
    pub cwd: &'a str,
    pub host_network: bool,
    /// Host paths hidden (credentials).
    pub hide: Vec<PathBuf>,
    /// Host paths writable in place (the agent's own state).
    pub writable: Vec<PathBuf>,
}

/// The written layer of the wrap session in `dir` (whiteouts and all, as overlayfs keeps it).
pub fn upper(dir: &Path) -> PathBuf {
    dir.join("rw").join("upper")
}

/// Runs the session in `dir` (created if needed, kept afterwards: the caller removes it once
/// the layer is in the proposal), calling `tick` about every `every` while it runs.
pub fn run(project: &Project, dir: &Path, changes: &[FileChange], req: &Request, every: Duration, tick: &mut dyn FnMut()) -> Result<Exit> {
    for d in ["stage", "rw/upper", "rw/work", "merged"] {
        std::fs::create_dir_all(dir.join(d)).map_err(|e| Error::io(dir.join(d), e))?;
    }
    super::stage::stage(&dir.join("stage"), changes)?;
    let spec = spec_for(project, dir, req)?;
    let spec_file = Spec::file(dir);
    std::fs::write(&spec_file, serde_json::to_vec(&spec)?).map_err(|e| Error::io(&spec_file, e))?;
    let _ = std::fs::remove_file(spec.result_file());
    let mut child = Command::new(&project.exe)
        .arg("__confine")
        .arg(&spec_file)
        .env_clear()
        .current_dir("/")
        .stdin(Stdio::inherit())
        .stdout(Stdio::inherit())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| Error::Sandbox(format!("cannot start {}: {e}", project.exe.display())))?;
    // Woken by the child's exit (its pidfd), else every `every` for a tick.
    let pidfd = rustix::process::Pid::from_raw(child.id() as i32).and_then(|p| rustix::process::pidfd_open(p, rustix::process::PidfdFlags::empty()).ok());
    loop {
        if child.try_wait().map_err(|e| Error::Sandbox(format!("wait: {e}")))?.is_some() {
            break;
        }
        tick();
        match &pidfd {
            Some(fd) => {
                let mut fds = [rustix::event::PollFd::new(fd, rustix::event::PollFlags::IN)];
                let timeout = rustix::event::Timespec::try_from(every).ok();
                let _ = rustix::event::poll(&mut fds, timeout.as_ref());
            }
            None => std::thread::sleep(every),
        }
    }
    let ended: Option<Ended> = std::fs::read(spec.result_file()).ok().and_then(|b| serde_json::from_slice(&b).ok());
    let ended = ended.unwrap_or(Ended { signal: Some(libc::SIGKILL), ..Default::default() });
    if let Some(e) = ended.setup_error {
        return Err(Error::Sandbox(format!("the wrap session could not start: {e} (see `cairn doctor` and :help cairn-wrap)")));
    }
    Ok(match (ended.code, ended.signal) {
        (Some(c), _) => Exit::Code(c),
        (None, s) => Exit::Signal(s.unwrap_or(libc::SIGKILL)),
    })
}

fn spec_for(project: &Project, dir: &Path, req: &Request) -> Result<Spec> {
    // Everything but Cairn's own variables.
    let env: Vec<(String, String)> = project.env.0.iter().filter(|(k, _)| !k.starts_with("CAIRN_")).cloned().collect();
    let mut masks: Vec<PathBuf> = ["/tmp", "/var/tmp"].iter().map(PathBuf::from).collect();
    masks.push(project.home.dir.clone());
    let (dirs, files): (Vec<PathBuf>, Vec<PathBuf>) = req.hide.iter().cloned().partition(|p| p.is_dir());
    masks.extend(dirs);
    let mut hidden_files: Vec<PathBuf> = super::HIDDEN.iter().map(PathBuf::from).collect();
    hidden_files.extend(files);
    let (workspace_masks, cwd) = super::workspace_paths(project, req.cwd)?;
    let read_only = [".git", ".jj", ".cairn.toml"].iter().map(|p| project.root.join(p)).collect();
    Ok(Spec {
        parent_pid: std::process::id() as i32,
        root: project.root.clone(),
        dir: dir.to_path_buf(),
        cmd: req.argv.join(" "),
        cwd,
        env,
        masks,
        hidden_files,
        read_paths: Vec::new(),
        workspace_masks,
        host_network: req.host_network,
        timeout_ms: 0,
        max_memory_mb: 0,
        max_processes: 0,
        capture: false,
        wrap: Some(Wrap { argv: req.argv.to_vec(), writable: req.writable.clone(), read_only }),
    })
}
