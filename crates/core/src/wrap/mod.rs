//! `cairn wrap -- CMD`: any agent CLI runs unmodified in a confined copy-on-write view of the
//! project ([`crate::runbox::wrap`]), and whatever it writes becomes a proposal. The session
//! is an agent (provider `wrap`) from the start; its written layer, kept on disk in
//! `$CAIRN_HOME/runs/wrap-<id>/`, is synced into the agent's overlay while CMD runs (so ghost
//! text grows as the agent works), once more when CMD ends, and by [`recover`] when
//! `cairn wrap` itself was killed: nothing written is lost.

use crate::error::{Error, Result};
use crate::externals::{Applied, Staged};
use crate::lifecycle::State;
use crate::orchestrator::{this_worker, worker_alive};
use crate::project::Project;
use crate::runbox::{self, Exit, Written};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub mod env;
pub mod state;

/// How often the written layer is looked at while CMD runs.
const SYNC_EVERY: Duration = Duration::from_millis(250);

/// One `cairn wrap`.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub argv: Vec<String>,
    /// The task's description (default: the command).
    pub task: Option<String>,
    /// Continue this wrap session's proposal.
    pub agent: Option<String>,
    /// `--network`: `proxy`, `none` or `host` (default: `[wrap] network`).
    pub network: Option<String>,
    /// Working directory, relative to the project root.
    pub cwd: String,
    /// The user's home (for `~` in `[wrap]` paths, and what the agent sees of it).
    pub home: Option<PathBuf>,
    /// `cairn wrap`'s standard streams (the user's terminal), from the edge.
    pub streams: Option<std::sync::Arc<runbox::pty::Streams>>,
}

/// How a wrap session ended.
#[derive(Debug, Clone)]
pub struct Finished {
    pub agent: String,
    pub exit: Exit,
    /// Paths the proposal changes.
    pub changed: usize,
    /// Connections the proxy refused (`host:port`), for the user to allow one.
    pub denied: Vec<String>,
}

/// The session's directory.
fn dir_of(project: &Project, agent: &str) -> PathBuf {
    project.home.dir.join("runs").join(format!("wrap-{agent}"))
}

/// Starts (or resumes) the session's agent; returns its id, printed before CMD starts.
pub fn begin(project: &Project, opts: &Options) -> Result<String> {
    if opts.argv.is_empty() {
        return Err(Error::Usage("cairn wrap needs a command: cairn wrap -- CMD ARGS...".into()));
    }
    // No re-index of the whole tree here (it would cost ~0.3 s at 100k files): each sync
    // brings the index up to date for exactly the paths the session touches.
    recover(project)?;
    let mut bin = project.bin()?;
    match &opts.agent {
        Some(prefix) => {
            let id = bin.resolve(prefix)?;
            bin.wrap_resume(&id, this_worker(), &worker_alive)?;
            Ok(id)
        }
        None => {
            let task = opts.task.clone().unwrap_or_else(|| opts.argv.join(" "));
            bin.wrap_begin(&task, this_worker())
        }
    }
}

/// Runs CMD for agent `agent` (from [`begin`]) to its end, syncing as it goes; the proposal
/// is `reviewing` afterwards with the exit status recorded.
pub fn run(project: &Project, agent: &str, opts: &Options) -> Result<Finished> {
    let dir = dir_of(project, agent);
    // A resumed session starts from its proposal, staged below the new layer.
    let changes = crate::review::diff::changes(project, agent)?;
    let staged = crate::tasks::exec::staged(&changes);
    let req = request(project, opts)?;
    let mut seen = BTreeMap::new();
    let mut sync_error = None;
    let exit = runbox::wrap::run(project, &dir, &changes, &req, SYNC_EVERY, &mut || {
        if let Err(e) = sync(project, agent, &staged, &dir, &mut seen) {
            sync_error.get_or_insert(e);
        }
    });
    let ran = match exit {
        Ok(ran) => ran,
        Err(e) => {
            // Nothing ran: the proposal goes (back) to review as it was, saying why.
            let _ = finish(project, agent, &staged, &dir, &mut seen, "the wrap session could not start");
            return Err(e);
        }
    };
    let exit = ran.exit;
    let network = if matches!(req.network, runbox::wrap::Network::Host) { "; network: host (opted in)" } else { "" };
    let changed = finish(project, agent, &staged, &dir, &mut seen, &format!("`{}` {exit}{network}", opts.argv.join(" ")))?;
    if let Some(e) = sync_error {
        return Err(e);
    }
    Ok(Finished { agent: agent.to_string(), exit, changed, denied: ran.denied })
}

/// The boundary of a session: the network, the environment, the home and what else it reads.
fn request<'a>(project: &Project, opts: &'a Options) -> Result<runbox::wrap::Request<'a>> {
    let w = &project.config.wrap;
    let home = opts.home.clone().filter(|h| h.is_absolute()).unwrap_or_else(|| PathBuf::from("/root"));
    let expand = |list: &[String]| list.iter().map(|p| runbox::expand(p, &home, &project.root)).collect::<Vec<_>>();
    let network = match opts.network.as_deref().unwrap_or(w.network.as_str()) {
        "proxy" => runbox::wrap::Network::Proxy { allow_hosts: w.allow_hosts.clone(), host_ports: w.host_ports.clone() },
        "none" => runbox::wrap::Network::None,
        "host" => runbox::wrap::Network::Host,
        other => return Err(Error::Usage(format!("--network takes proxy, none or host, not {other:?}"))),
    };
    let layer = state_layer(project, &opts.argv[0]);
    let hide = expand(&w.hide);
    let read_paths = expand(&w.read_paths);
    let mut shown = w.home.clone();
    shown.extend(read_paths.iter().filter_map(|p| p.strip_prefix(&home).ok()).map(|p| p.to_string_lossy().into_owned()));
    let home_plan = runbox::home_plan(&home, &shown, &w.state, &hide, &layer);
    let mut env = env::allowed(&project.env.0, &w.env);
    env.retain(|(k, _)| k != "HOME");
    env.push(("HOME".into(), home.to_string_lossy().into_owned()));
    let streams = match &opts.streams {
        Some(s) => runbox::pty::Streams { stdin: dup(&s.stdin)?, stdout: dup(&s.stdout)?, stderr: dup(&s.stderr)? },
        None => {
            let null = |w: bool| std::fs::OpenOptions::new().read(!w).write(w).open("/dev/null").map(std::os::fd::OwnedFd::from).map_err(|e| Error::io("/dev/null", e));
            runbox::pty::Streams { stdin: null(false)?, stdout: null(true)?, stderr: null(true)? }
        }
    };
    Ok(runbox::wrap::Request { argv: &opts.argv, cwd: &opts.cwd, network, env, home, home_plan, hide, read_paths, streams })
}

fn dup(fd: &std::os::fd::OwnedFd) -> Result<std::os::fd::OwnedFd> {
    fd.try_clone().map_err(|e| Error::Sandbox(format!("the agent's terminal: {e}")))
}

/// The copy-on-write layer of an agent CLI's state: one per command name (`claude`,
/// `codex`, ...), kept across sessions under `$CAIRN_HOME/wrap-state/`.
pub fn state_layer(project: &Project, program: &str) -> PathBuf {
    let base = Path::new(program).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let name: String = base.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') { c } else { '_' }).collect();
    let name = if name.is_empty() || name.starts_with('.') { format!("_{name}") } else { name };
    project.home.dir.join("wrap-state").join(name)
}

/// The last sync, the proposal to `reviewing`, the session's directory removed.
fn finish(project: &Project, agent: &str, staged: &Staged, dir: &Path, seen: &mut BTreeMap<String, Stamp>, how: &str) -> Result<usize> {
    sync(project, agent, staged, dir, seen)?;
    let overlay = project.overlay(agent)?;
    let paths = overlay.paths()?;
    let summary = format!("wrap: {how}; {} path(s) changed", paths.len());
    overlay.kv_set("submission", &serde_json::json!({ "summary": summary, "changed_files": paths.iter().map(|(p, _)| p).collect::<Vec<_>>() }).to_string())?;
    if project.bin()?.get(agent)?.state == State::Executing {
        crate::orchestrator::submit(project, &mut project.bin()?, agent, &overlay, true, serde_json::json!({ "wrap": how }))?;
    }
    let _ = std::fs::remove_dir_all(dir);
    Ok(paths.len())
}

/// Completes every wrap session whose `cairn wrap` died: what its layer holds joins the
/// proposal, which goes to `reviewing`. Returns the agents recovered.
pub fn recover(project: &Project) -> Result<Vec<String>> {
    let orphans = project.bin()?.wrap_orphans(&worker_alive)?;
    for id in &orphans {
        let changes = crate::review::diff::changes(project, id)?;
        let staged = crate::tasks::exec::staged(&changes);
        finish(project, id, &staged, &dir_of(project, id), &mut BTreeMap::new(), "interrupted (its `cairn wrap` ended first); what it wrote is kept")?;
    }
    Ok(orphans)
}

/// Size, modification time and mode of an entry of the layer (what a sync compares).
type Stamp = (u64, i64, i64, u32);

fn stamp(m: &std::fs::Metadata) -> Stamp {
    use std::os::unix::fs::MetadataExt;
    (m.len(), m.mtime(), m.mtime_nsec(), m.mode())
}

/// Brings the agent's overlay in line with the layer: entries new or changed since the last
/// sync are applied, entries gone are put back to where the session started.
fn sync(project: &Project, agent: &str, staged: &Staged, dir: &Path, seen: &mut BTreeMap<String, Stamp>) -> Result<()> {
    let upper = runbox::wrap::upper(dir);
    if !upper.is_dir() {
        return Ok(());
    }
    let now = stamps(&upper)?;
    if now == *seen {
        return Ok(());
    }
    let written: Vec<Written> = runbox::scan(&upper, runbox::capture_limits(project)).map_err(|e| Error::io(&upper, e))?;
    let fresh: Vec<Written> = written.into_iter().filter(|w| now.get(w.path()) != seen.get(w.path())).collect();
    let gone: Vec<String> = seen.keys().filter(|p| !now.contains_key(*p)).cloned().collect();
    let mut ignore = crate::paths::IgnoreRules::new(&project.root);
    // The bases recorded for these paths must be the tree's current files.
    let touched: Vec<String> = fresh.iter().map(|w| w.path().to_string()).chain(gone.iter().cloned()).collect();
    crate::sync::sync_paths(project, &mut ignore, &touched)?;
    crate::tasks::sessions::with_agent_host(project, agent, |host| {
        for path in &gone {
            host.revert_written(path, staged)?;
        }
        host.apply_written(&fresh, staged, &mut ignore, &mut Applied::default())
    })?;
    *seen = now;
    Ok(())
}


/// The stamp of every entry of the layer, by path.
fn stamps(upper: &Path) -> Result<BTreeMap<String, Stamp>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![(upper.to_path_buf(), String::new())];
    while let Some((dir, rel)) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&dir) else { continue };
        for e in rd.flatten() {
            let Some(name) = e.file_name().to_str().map(str::to_string) else { continue };
            if crate::paths::ALWAYS_SKIPPED.contains(&name.as_str()) {
                continue;
            }
            let path = if rel.is_empty() { name } else { format!("{rel}/{name}") };
            let Ok(meta) = std::fs::symlink_metadata(e.path()) else { continue };
            if meta.is_dir() {
                stack.push((e.path(), path.clone()));
            }
            out.insert(path, stamp(&meta));
        }
    }
    Ok(out)
}

