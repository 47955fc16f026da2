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
use std::process::Stdio;
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
    for d in ["stage", "rw/upper", "rw/work", "box"] {
        std::fs::create_dir_all(dir.join(d)).map_err(|e| Error::io(dir.join(d), e))?;
    }
    super::stage::stage(&dir.join("stage"), changes)?;
    let spec = spec_for(project, dir, req)?;
    let _ = std::fs::remove_file(spec.result_file());
    let mut child = super::launch::start(project, &spec, [Stdio::inherit(), Stdio::inherit(), Stdio::inherit()], None)?;
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
    let home = project.env.get("HOME").map(PathBuf::from).filter(|h| h.is_absolute()).unwrap_or_else(|| PathBuf::from("/root"));
    let (dirs, files): (Vec<PathBuf>, Vec<PathBuf>) = req.hide.iter().cloned().partition(|p| p.is_dir());
    let mut hidden_dirs = super::hidden_dirs(project);
    hidden_dirs.extend(dirs);
    let mut hidden_files: Vec<PathBuf> = super::HIDDEN_FILES.iter().map(PathBuf::from).collect();
    hidden_files.extend(files);
    // The home copy-on-write (less what `hide` names), and the command's own installation.
    let read_paths = installation(req.argv.first().map_or("", String::as_str), &project.env);
    let (workspace_masks, cwd) = super::workspace_paths(project, req.cwd)?;
    let read_only = [".git", ".jj", ".cairn.toml"].iter().map(|p| project.root.join(p)).collect();
    Ok(Spec {
        parent_pid: std::process::id() as i32,
        root: project.root.clone(),
        dir: dir.to_path_buf(),
        cmd: req.argv.join(" "),
        cwd,
        env,
        system: super::SYSTEM.iter().map(PathBuf::from).collect(),
        home: home.clone(),
        hidden_dirs,
        hidden_files,
        read_paths,
        workspace_masks,
        host_network: req.host_network,
        timeout_ms: 0,
        max_memory_mb: 0,
        max_processes: 0,
        capture: false,
        capture_limits: super::capture_limits(project),
        wrap: Some(Wrap { argv: req.argv.to_vec(), writable: req.writable.clone(), read_only, host_terminal: true, home_lower: Some(home.clone()) }),
    })
}

/// The directories a program needs besides the system's: where `name` (looked up on `PATH`)
/// really lives, and, for a script, where its interpreter does (`#!/usr/bin/env node` →
/// node's). Each is the installation's root: the directory above a `bin/`, or an npm
/// package's directory; nothing under the system directories (already visible).
fn installation(name: &str, env: &crate::project::HostEnv) -> Vec<PathBuf> {
    let path = env.get("PATH").unwrap_or("/usr/bin:/bin");
    let lookup = |n: &str| -> Option<PathBuf> {
        if n.contains('/') {
            return Some(PathBuf::from(n));
        }
        path.split(':').map(|d| Path::new(d).join(n)).find(|p| p.is_file())
    };
    let mut out: Vec<PathBuf> = Vec::new();
    let mut todo: Vec<PathBuf> = lookup(name).into_iter().collect();
    while let Some(found) = todo.pop() {
        // The link itself may sit in another installation's `bin/` (npm's shims).
        for p in [Some(found.clone()), std::fs::canonicalize(&found).ok()].into_iter().flatten() {
            if let Some(root) = install_root(&p) {
                if !out.contains(&root) && !super::SYSTEM.iter().any(|s| root.starts_with(s)) {
                    out.push(root);
                }
            }
        }
        if out.len() > 8 {
            break;
        }
        if let Some(interp) = shebang(&found) {
            if let Some(p) = lookup(&interp) {
                if !out.iter().any(|o| p.starts_with(o)) || std::fs::canonicalize(&p).is_ok_and(|c| !out.iter().any(|o| c.starts_with(o))) {
                    todo.push(p);
                }
            }
        }
    }
    out
}

/// The installation a program file belongs to: its npm package, else the parent of its
/// `bin/`, else its directory.
fn install_root(p: &Path) -> Option<PathBuf> {
    let comps: Vec<_> = p.components().collect();
    if let Some(i) = comps.iter().position(|c| c.as_os_str() == "node_modules") {
        let scoped = comps.get(i + 1).is_some_and(|c| c.as_os_str().to_string_lossy().starts_with('@'));
        let end = (i + if scoped { 3 } else { 2 }).min(comps.len());
        return Some(comps[..end].iter().collect());
    }
    let dir = p.parent()?;
    match dir.file_name() {
        Some(n) if n == "bin" => dir.parent().map(Path::to_path_buf),
        _ => Some(dir.to_path_buf()),
    }
}

/// The interpreter a script names on its first line (`env`'s argument, or the path).
fn shebang(p: &Path) -> Option<String> {
    let mut head = [0u8; 256];
    let n = std::io::Read::read(&mut std::fs::File::open(p).ok()?, &mut head).ok()?;
    let line = head[..n].strip_prefix(b"#!")?;
    let line = String::from_utf8_lossy(line.split(|b| *b == b'\n').next()?).into_owned();
    let mut words = line.split_whitespace();
    let first = words.next()?;
    if first.ends_with("/env") {
        words.find(|w| !w.starts_with('-')).map(str::to_string)
    } else {
        Some(first.to_string())
    }
}
