//! Preview sessions (`cairn preview`, `:CairnPreview`): the agent's version of the project,
//! opened as a copy-on-write confined view, with the same boundary as a `cairn wrap` session
//! ([`crate::runbox::wrap`]): overlayfs over the project at its own path, the proposal staged
//! as a layer (only the changed files are written: opening costs O(proposal), never O(tree)),
//! never host root, seccomp, its own namespaces and a terminal of its own relayed from the
//! user's. The user's editor (or shell) runs inside; so do the commands the user starts there,
//! which run the agent's code: the environment is an allow-list without keys, the home
//! deny-by-default and copy-on-write, the network a loopback of its own (only `ports`
//! forwarded from the host's 127.0.0.1 to it, see [`crate::runbox::dial`]).
//!
//! The session's directory `$CAIRN_HOME/workspaces/<id>/` holds the staged proposal and the
//! written layer while it is open (a lock file says so). When it ends, what the user wrote is
//! thrown away, unless the session amends: then the layer joins the proposal through the
//! same sync as a wrap session's ([`crate::wrap::amend`]), as its next revision.
//!
//! In a jj project whose agent has a live change, the preview is a jj workspace on that
//! change instead (`crate::jj::preview`).

use crate::error::{Error, Result};
use crate::lifecycle::State;
use crate::project::Project;
use crate::runbox::{self, pty::Streams, Exit};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What `cairn preview` found to open.
#[derive(Debug, Clone, Serialize)]
pub struct Materialized {
    /// The jj workspace, or the session's directory.
    pub path: PathBuf,
    /// Files of the proposal (the layer a session stages; nothing else is written).
    pub written: usize,
    /// A jj workspace (a real directory to open), not a session.
    pub jj: bool,
}

/// Prepares agent `id`'s preview: its diff in `$CAIRN_HOME/previews/<id>.diff`, and in a jj
/// project whose agent has a live change, its jj workspace. Nothing of the tree is copied.
pub fn materialize(project: &Project, id: &str) -> Result<Materialized> {
    let changes = crate::review::changes(project, id)?;
    write_preview_diff(project, &changes, id)?;
    if let Some(path) = crate::jj::preview(project, id)? {
        return Ok(Materialized { path, written: 0, jj: true });
    }
    if project.existing_overlay(id)?.is_none() {
        return Err(Error::NoProposal(id.to_string()));
    }
    Ok(Materialized { path: project.home.workspace(id), written: changes.len(), jj: false })
}

/// `$CAIRN_HOME/previews/<id>.diff`: the proposal's diff, for the preview pane.
fn write_preview_diff(project: &Project, changes: &[crate::review::diff::FileChange], id: &str) -> Result<()> {
    let previews = project.home.previews();
    std::fs::create_dir_all(&previews).map_err(|e| Error::io(&previews, e))?;
    let dpath = previews.join(format!("{}.diff", crate::paths::id_part(id)));
    std::fs::write(&dpath, crate::review::unified(changes)).map_err(|e| Error::io(&dpath, e))
}

/// One preview session.
#[derive(Debug, Clone, Default)]
pub struct Session {
    /// What runs inside: the editor and its arguments, or a shell.
    pub argv: Vec<String>,
    /// What the user writes joins the proposal when the session ends.
    pub amend: bool,
    /// Ports of the view's loopback forwarded to the host's 127.0.0.1.
    pub ports: Vec<u16>,
    /// Working directory, relative to the project root.
    pub cwd: String,
    /// The user's home (what the session sees of it: `[wrap] home` and the editor's own).
    pub home: Option<PathBuf>,
    /// The user's terminal, from the edge.
    pub streams: Option<Arc<Streams>>,
}

/// How a session ended.
#[derive(Debug, Clone)]
pub struct Closed {
    pub exit: Exit,
    /// Paths the user wrote (or deleted) in the view.
    pub written: Vec<String>,
    /// They joined the proposal.
    pub amended: bool,
}

/// The home entries a preview shows besides `[wrap] home`: the editor's configuration and
/// plugins, read-only. Never in a session that amends: what runs there (the agent's
/// Makefile) could copy them into the proposal.
const EDITOR_HOME: [&str; 3] = [".config/nvim", ".local/share/nvim", ".vimrc"];

/// Runs a preview session of agent `id` to its end; `tick` is called about every 250 ms with
/// the session's terminal.
pub fn session(project: &Project, id: &str, s: &Session, tick: &mut dyn FnMut(&runbox::pty::Console)) -> Result<Closed> {
    if s.argv.is_empty() {
        return Err(Error::Usage("a preview needs a command to run (the editor or a shell)".into()));
    }
    let state = project.bin()?.get(id)?.state;
    if s.amend && !amendable(state) {
        return Err(Error::IllegalTransition { id: id.to_string(), from: state.to_string(), action: "amend its proposal (it must be reviewing or undone)".into() });
    }
    let dir = project.home.workspace(id);
    let _lock = lock(&dir)?;
    clear(&dir)?;
    let changes = crate::review::changes(project, id)?;
    write_preview_diff(project, &changes, id)?;
    let staged = crate::tasks::exec::staged(&changes);
    let req = request(project, id, s, &dir)?;
    let ran = runbox::wrap::run(project, &dir, &changes, &req, Duration::from_millis(250), tick)?;
    let upper = runbox::wrap::upper(&dir);
    let written: Vec<String> = runbox::scan(&upper, runbox::capture_limits(project)).map_err(|e| Error::io(&upper, e))?.iter().map(|w| w.path().to_string()).collect();
    let mut amended = false;
    if s.amend && !written.is_empty() {
        let now = project.bin()?.get(id)?.state;
        if !amendable(now) {
            return Err(Error::Preview(format!("agent {id} is {now} now: what you wrote did not join its proposal; it is kept in {}", upper.display())));
        }
        amended = crate::wrap::amend(project, id, &staged, &dir)?;
    }
    // The session's confined side may still be on its way out (its layers mounted).
    runbox::settle();
    clear(&dir)?;
    Ok(Closed { exit: ran.exit, written, amended })
}

/// Can the user amend a proposal in this state (no agent works on it)?
fn amendable(state: State) -> bool {
    matches!(state, State::Reviewing | State::Undone)
}

/// The session's boundary: as a wrap session's, with the preview's environment, home and
/// network.
fn request<'a>(project: &Project, id: &str, s: &'a Session, dir: &Path) -> Result<runbox::wrap::Request<'a>> {
    let w = &project.config.wrap;
    let home = s.home.clone().filter(|h| h.is_absolute()).unwrap_or_else(|| PathBuf::from("/root"));
    let expand = |list: &[String]| list.iter().map(|p| runbox::expand(p, &home, &project.root)).collect::<Vec<_>>();
    let hide = expand(&w.hide);
    let mut read_paths = expand(&w.read_paths);
    if !s.amend {
        read_paths.extend(EDITOR_HOME.iter().map(|e| home.join(e)));
    }
    let mut shown = w.home.clone();
    shown.extend(read_paths.iter().filter_map(|p| p.strip_prefix(&home).ok()).map(|p| p.to_string_lossy().into_owned()));
    let generated = crate::wrap::gitconfig::files(project, &home, &shown);
    let home_plan = runbox::home_plan(&home, &shown, &[], &hide, &dir.join("home-layer"), generated);
    let mut env = crate::wrap::env::for_preview(&project.env.0);
    env.retain(|(k, _)| k != "HOME");
    env.push(("HOME".into(), home.to_string_lossy().into_owned()));
    // The editor's plugin knows it is in a preview (no host of its own; decisions relayed).
    env.push(("CAIRN_PREVIEW".into(), id.to_string()));
    let network = if s.ports.is_empty() { runbox::wrap::Network::None } else { runbox::wrap::Network::Forward { ports: s.ports.clone() } };
    let streams = match &s.streams {
        Some(st) => Streams { stdin: dup(&st.stdin)?, stdout: dup(&st.stdout)?, stderr: dup(&st.stderr)? },
        None => return Err(Error::Preview("a preview needs the user's terminal".into())),
    };
    Ok(runbox::wrap::Request { argv: &s.argv, cwd: &s.cwd, network, env, home, home_plan, hide, read_paths, streams })
}

fn dup(fd: &std::os::fd::OwnedFd) -> Result<std::os::fd::OwnedFd> {
    fd.try_clone().map_err(|e| Error::Preview(format!("the terminal: {e}")))
}

/// How long a new session waits for the one it replaces (a reused tmux pane) to let go.
const LOCK_WAIT: Duration = Duration::from_secs(5);

/// The session's lock (`<dir>/lock`): one session per agent at a time, and GC leaves a
/// locked directory alone.
fn lock(dir: &Path) -> Result<std::fs::File> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let _ = std::fs::set_permissions(dir, std::os::unix::fs::PermissionsExt::from_mode(0o700));
    let path = dir.join("lock");
    let file = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(&path).map_err(|e| Error::io(&path, e))?;
    let deadline = Instant::now() + LOCK_WAIT;
    loop {
        match rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => return Ok(file),
            Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            Err(_) => return Err(Error::Busy(format!("a preview of this agent is open ({})", dir.display()))),
        }
    }
}

/// Is a session open in `dir` (its lock held)?
fn in_use(dir: &Path) -> bool {
    let Ok(file) = std::fs::OpenOptions::new().write(true).open(dir.join("lock")) else { return false };
    rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive).is_err()
}

/// Empties a session's directory but for its lock (what a session left: thrown away).
fn clear(dir: &Path) -> Result<()> {
    let Ok(rd) = std::fs::read_dir(dir) else { return Ok(()) };
    for e in rd.flatten() {
        if e.file_name() != "lock" {
            runbox::remove_tree(&e.path())?;
        }
    }
    Ok(())
}


/// Removes agent `id`'s preview: its jj workspace (forgotten in jj first), or what a session
/// left, and its diff. An open session is left alone.
pub fn remove(project: &Project, id: &str) -> Result<()> {
    crate::jj::forget_preview(project, id);
    let dir = project.home.workspace(id);
    if in_use(&dir) {
        return Ok(());
    }
    runbox::remove_tree(&dir)?;
    let _ = std::fs::remove_file(project.home.previews().join(format!("{}.diff", crate::paths::id_part(id))));
    Ok(())
}

/// The previews GC may trim: every directory under `$CAIRN_HOME/workspaces/` but the open
/// sessions', newest first.
pub fn collectable(project: &Project) -> Vec<String> {
    let Ok(rd) = std::fs::read_dir(project.home.workspaces()) else { return Vec::new() };
    let mut spaces: Vec<(std::time::SystemTime, String)> = rd
        .flatten()
        .filter(|e| !in_use(&e.path()))
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.file_name().to_str()?.to_string())))
        .collect();
    spaces.sort_by(|a, b| b.cmp(a));
    spaces.into_iter().map(|(_, id)| id).collect()
}
