//! `cairn wrap -- CMD`: any agent CLI runs unmodified in a confined copy-on-write view of the
//! project ([`crate::runbox::wrap`]), and whatever it writes becomes a proposal. The session
//! is an agent (provider `wrap`) from the start; its written layer, kept on disk in
//! `$CAIRN_HOME/runs/wrap-<id>/`, is synced into the agent's overlay while CMD runs (so ghost
//! text grows as the agent works), once more when CMD ends, and by [`recover`] when
//! `cairn wrap` itself was killed: nothing written is lost.
//!
//! The review loop of a live session: an interactive agent whose output has gone quiet after
//! changing files has ended its turn; its proposal goes to review while it waits at its
//! prompt (the session keeps it). What it writes next starts the next revision. A hunk the
//! user rejected stays in the agent's own files (the kernel does not let an overlay's layers
//! change under a mounted view) and out of the proposal: the feedback `cairn revise` types into
//! its terminal tells it so.

use crate::error::{Error, Result};
use crate::externals::{Applied, Staged};
use crate::lifecycle::State;
use crate::orchestrator::{this_worker, worker_alive};
use crate::project::Project;
use crate::runbox::{self, Exit, Written};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

mod argv;
pub use argv::{command_line, command_text, recorded};
pub mod env;
pub(crate) mod gitconfig;
mod live;
use live::Live;
pub mod name;
pub mod state;
mod turns;
pub use turns::TurnEnds;

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
    /// The edge says exactly when a turn ends (`cairn acp`), see [`TurnEnds`].
    pub turns: Option<std::sync::Arc<TurnEnds>>,
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
    project.home.dir.join("runs").join(format!("wrap-{}", crate::paths::id_part(agent)))
}

/// Starts (or resumes) the session's agent; returns its id, printed before CMD starts.
pub fn begin(project: &Project, opts: &Options) -> Result<String> {
    if opts.argv.is_empty() && opts.agent.is_none() {
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
            crate::jj::started(project, &id);
            Ok(id)
        }
        None => {
            // Its name: `--task`, a one-shot line's prompt, else the command line until the user
            // types a first prompt to it (`name`).
            let task = name::given(opts.task.as_deref(), &opts.argv).map(name::bounded).or_else(|| name::prompt(&opts.argv)).unwrap_or_else(|| command_text(&opts.argv));
            let id = bin.wrap_begin(&task, this_worker())?;
            argv::save(&dir_of(project, &id), &opts.argv)?;
            crate::jj::started(project, &id);
            Ok(id)
        }
    }
}

/// The overlay key of the session's command line (what `cairn wrap --agent ID` re-runs).
pub(crate) const ARGV: &str = "wrap_argv";

/// Runs CMD for agent `agent` (from [`begin`]) to its end, syncing as it goes; the proposal
/// is `reviewing` afterwards with the exit status recorded. While CMD runs, an interactive
/// agent whose turn ended goes to review and back to work (the next revision) when it writes
/// again; feedback sent by `cairn revise` is typed into its terminal.
pub fn run(project: &Project, agent: &str, opts: &Options) -> Result<Finished> {
    let dir = dir_of(project, agent);
    let argv = match &opts.agent {
        Some(_) => command_line(project, agent, &opts.argv)?,
        None => opts.argv.clone(),
    };
    let opts = &Options { argv, ..opts.clone() };
    // A resumed session starts from its proposal, staged below the new layer.
    let changes = crate::review::diff::changes(project, agent)?;
    let staged = crate::tasks::exec::staged(&changes);
    let req = request(project, opts)?;
    // The CLI's state layer is this session's while it runs (`cairn wrap state`).
    let _state = state::hold(&req.home_plan.layer)?;
    // Named by the first task typed to it, unless named already (`--task`, `-p`, resumed).
    let named = name::given(opts.task.as_deref(), &opts.argv).is_some() || opts.agent.is_some() || name::prompt(&opts.argv).is_some();
    let mut live = Live { seen: BTreeMap::new(), turn_mark: None, named, turns: opts.turns.clone() };
    let mut sync_error = None;
    let exit = runbox::wrap::run(project, &dir, &changes, &req, SYNC_EVERY, &mut |console| {
        if let Err(e) = live.step(project, agent, &staged, &dir, console) {
            tracing::warn!(agent, "wrap sync: {e}");
            sync_error.get_or_insert(e);
        }
    });
    if let Some(t) = &opts.turns {
        t.close();
    }
    let ran = match exit {
        Ok(ran) => ran,
        Err(e) => {
            // Nothing ran: the proposal goes (back) to review as it was, saying why.
            let _ = finish(project, agent, &staged, &dir, &mut live.seen, "the wrap session could not start");
            return Err(e);
        }
    };
    let exit = ran.exit;
    let network = if matches!(req.network, runbox::wrap::Network::Host) { "; network: host (opted in)" } else { "" };
    // The command line may carry delivered feedback: its first line names it.
    let shown: String = crate::display::escape_line(command_text(&opts.argv).lines().next().unwrap_or("")).chars().take(200).collect();
    let changed = finish(project, agent, &staged, &dir, &mut live.seen, &format!("`{shown}` {exit}{network}"))?;
    if let Some(e) = sync_error {
        return Err(e);
    }
    Ok(Finished { agent: agent.to_string(), exit, changed, denied: ran.denied })
}

/// What `cairn wrap` refuses before starting `opts`, else notes (see [`runbox::wrap::check`]).
pub fn check(project: &Project, opts: &Options) -> Result<Vec<String>> {
    let Some(_) = opts.argv.first() else { return Ok(Vec::new()) };
    runbox::wrap::check(project, &request(project, opts)?)
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
    // The CLI's own layer: the program run through wrappers (`env A=1 claude`, `sh -c 'claude'`).
    let program = runbox::chain::program(&opts.argv, &home);
    let layer = state::state_layer(project, &program);
    let hide = expand(&w.hide);
    let read_paths = expand(&w.read_paths);
    // What the line's package runners need of the home (`uv run`: its Pythons and cache).
    let mut shown: Vec<String> = w.home.iter().cloned().chain(runbox::chain::home_needs(&opts.argv, &home).into_iter().map(String::from)).collect();
    shown.extend(read_paths.iter().filter_map(|p| p.strip_prefix(&home).ok()).map(|p| p.to_string_lossy().into_owned()));
    let search = project.env.get("PATH").unwrap_or("/usr/bin:/bin").to_string();
    let mut env = env::allowed(&project.env.0, &w.env, &state::cli_of(&program, &project.root, &search));
    let generated = gitconfig::files(project, &home, &shown);
    let home_plan = runbox::home_plan(&home, &shown, &state::state_of(&program, &project.root, &search, &w.state), &hide, &layer, generated);
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

/// The live agent's turn ended with changes: its proposal goes to review; the session keeps it.
fn turn_ended(project: &Project, agent: &str) -> Result<()> {
    submit(project, agent, "turn ended, waiting at its prompt")?;
    project.bin()?.keep_worker(agent, this_worker())
}

/// The proposal to review with a summary saying `how` the session got there; returns how
/// many paths it changes.
fn submit(project: &Project, agent: &str, how: &str) -> Result<usize> {
    let overlay = project.overlay(agent)?;
    argv::record(&overlay, &dir_of(project, agent))?;
    let paths = overlay.paths()?;
    // Its name first (headers and lists cut the end), unless it is the command `how` shows.
    let task = project.bin()?.get(agent)?.task;
    let argv: Vec<String> = overlay.kv_get(ARGV)?.and_then(|s| serde_json::from_str(&s).ok()).unwrap_or_default();
    let lead = if task != command_text(&argv) { format!("{} — ", name::bounded(&task)) } else { String::new() };
    let summary = format!("{lead}wrap: {how}; {} path(s) changed", paths.len());
    overlay.kv_set("submission", &serde_json::json!({ "summary": summary, "changed_files": paths.iter().map(|(p, _)| p).collect::<Vec<_>>() }).to_string())?;
    crate::orchestrator::submit(project, &mut project.bin()?, agent, &overlay, true, serde_json::json!({ "wrap": how }))?;
    Ok(paths.len())
}

/// The last sync, the proposal to `reviewing`, the session's directory removed.
fn finish(project: &Project, agent: &str, staged: &Staged, dir: &Path, seen: &mut BTreeMap<String, Stamp>, how: &str) -> Result<usize> {
    sync(project, agent, staged, dir, seen, false)?;
    let state = project.bin()?.get(agent)?.state;
    let mut changed = 0;
    let nothing = state == State::Executing && project.existing_overlay(agent)?.map_or(Ok(true), |o| o.paths().map(|p| p.is_empty()))?;
    if nothing {
        // Nothing to review: the session ends there, never a default target of an accept.
        let message = format!("wrap: {how}; finished (nothing proposed)");
        project.bin()?.transition(agent, State::Rejected, "finish", crate::store::bin::TransitionExtra { message: Some(&message), ..Default::default() })?;
        crate::jj::sync_locked(project, agent);
        project.archive_overlay(agent)?;
    } else if matches!(state, State::Executing | State::Submitting) {
        // (`submitting`: a turn's end that failed halfway is finished here.)
        changed = submit(project, agent, how)?;
    } else if let Some(o) = project.existing_overlay(agent)? {
        changed = o.paths()?.len();
    }
    // A turn that went to review kept the session's worker: the session is over now.
    project.bin()?.release_worker(agent)?;
    // The session's confined side may still be on its way out (its layers mounted).
    runbox::settle();
    let _ = runbox::remove_tree(dir);
    Ok(changed)
}

/// Completes every wrap session whose `cairn wrap` died: what its layer holds joins the
/// proposal, which goes to `reviewing`. Returns the agents recovered.
pub fn recover(project: &Project) -> Result<Vec<String>> {
    recover_in(project, &project.bin()?)
}

/// [`recover`], looking for orphans through `bin` (a connection the caller holds).
pub fn recover_in(project: &Project, bin: &crate::store::bin::Bin) -> Result<Vec<String>> {
    let orphans = bin.wrap_orphans(&worker_alive)?;
    for id in &orphans {
        if !matches!(project.bin()?.get(id)?.state, State::Executing | State::Submitting) {
            // Its turn was under review (or decided) when `cairn wrap` died: the session is over,
            // and the decision stands (what the layer holds beyond it was never the agent's
            // turn's end: the agent files rejected hunks too).
            project.bin()?.release_worker(id)?;
            let _ = runbox::remove_tree(&dir_of(project, id));
            continue;
        }
        let changes = crate::review::diff::changes(project, id)?;
        let staged = crate::tasks::exec::staged(&changes);
        finish(project, id, &staged, &dir_of(project, id), &mut BTreeMap::new(), "interrupted (its `cairn wrap` ended first); what it wrote is kept")?;
    }
    Ok(orphans)
}

/// Size, modification time and mode of an entry of the layer (what a sync compares).
type Stamp = runbox::Stamp;

/// Brings the agent's overlay in line with the layer: entries new or changed since the last
/// sync are applied, entries gone are put back to where the session started. A proposal
/// that was decided meanwhile (reviewed, accepted, rejected, undone) starts its next revision
/// first: the live agent went on working. `live`: the session is running (an ended one's
/// last writes go to review as they are). Returns whether anything changed.
fn sync(project: &Project, agent: &str, staged: &Staged, dir: &Path, seen: &mut BTreeMap<String, Stamp>, live: bool) -> Result<bool> {
    sync_as(project, agent, staged, dir, seen, live, "the agent wrote again after its turn")
}

/// A preview session's written layer (in `dir`, as [`runbox::wrap::upper`] keeps it, over
/// `staged`) joins agent `agent`'s proposal as the user's amendment: the same sync as a wrap
/// session's, recorded as the proposal's next revision. Returns whether anything changed.
pub(crate) fn amend(project: &Project, agent: &str, staged: &Staged, dir: &Path) -> Result<bool> {
    sync_as(project, agent, staged, dir, &mut BTreeMap::new(), false, "amended by the user in a preview")
}

/// [`sync`], a decided proposal's next revision saying `why`.
fn sync_as(project: &Project, agent: &str, staged: &Staged, dir: &Path, seen: &mut BTreeMap<String, Stamp>, live: bool, why: &str) -> Result<bool> {
    let upper = runbox::wrap::upper(dir);
    if !upper.is_dir() {
        return Ok(false);
    }
    let now = stamps(&upper)?;
    if now == *seen {
        return Ok(false);
    }
    let written: Vec<Written> = runbox::scan(&upper, runbox::capture_limits(project)).map_err(|e| Error::io(&upper, e))?;
    let fresh: Vec<Written> = written.into_iter().filter(|w| now.get(w.path()) != seen.get(w.path())).collect();
    let gone: Vec<String> = seen.keys().filter(|p| !now.contains_key(*p)).cloned().collect();
    if fresh.is_empty() && gone.is_empty() {
        *seen = now;
        return Ok(false);
    }
    // Under the review lock: no accept or hunk action is halfway through the decided proposal.
    let lock = crate::review::lock::acquire(project)?;
    let state = project.bin()?.get(agent)?.state;
    if state.is_revisable() {
        let to = if live { State::Executing } else { State::Reviewing };
        crate::review::revise::start(project, agent, to, why, false)?;
        if live {
            project.bin()?.keep_worker(agent, this_worker())?;
        }
    }
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
    let bin = project.bin()?;
    let state = bin.get(agent)?.state;
    bin.append(agent, state, &crate::events::EventKind::Wrote { paths: touched.into_iter().take(50).collect() })?;
    // The agent's jj change follows its writes (`[jj] create_change_on_spawn`).
    crate::jj::sync(project, &lock, agent);
    Ok(true)
}

/// The stamp of every entry of the layer, by path, walked as the capture walks it: never
/// through a symlink the agent swaps in (its layer is written while it runs).
fn stamps(upper: &Path) -> Result<BTreeMap<String, Stamp>> {
    runbox::stamps(upper).map_err(|e| Error::io(upper, e))
}
