//! The one command model shared by the CLI, signal files and the RPC host (SPEC §7–8): every
//! surface parses its input into a [`Command`] and calls [`execute`], which calls exactly one
//! core function per operation.

use crate::error::{Error, Result};
use crate::lifecycle::{Priority, Provider};
use crate::project::Project;
use crate::review::{self, AcceptReport, UndoReport};
use crate::sandbox::script::Diagnostic;
use crate::{gc, index, orchestrator, sync, workspace};
use serde::Serialize;
use std::path::PathBuf;

mod status;
pub use status::{status_of, task_brief, ChangeSummary, Status, TaskBrief};

/// Every agent (`all`: the terminal ones too). Any cairn process notices a dead worker here:
/// its agent is re-queued (or errored), and a wrap session whose `cairn wrap` died keeps what
/// it wrote, for review. Listing never fails for want of a write (a full disk): recovery
/// then waits for later.
fn list_agents(project: &Project, all: bool) -> Result<Output> {
    if let Err(e) = crate::orchestrator::recover(project).and_then(|_| crate::wrap::recover(project)) {
        tracing::warn!("recovery deferred: {e}");
    }
    notice_jj(project);
    let recs = project.bin()?.list(all)?;
    let board = review::board::build(project)?;
    let with_overlaps = |mut s: Status| {
        s.overlaps = board.get(&s.id).map(|a| a.overlaps.clone()).unwrap_or_default();
        s
    };
    let agents = recs.iter().map(|r| status_of(project, r, false).map(with_overlaps)).collect::<Result<_>>()?;
    Ok(Output::Agents { agents, order: board.order })
}

/// Every operation a user can ask for.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    Init,
    /// `key` makes it idempotent (see [`crate::orchestrator::queue_once`]).
    Queue { reference: String, provider: Option<Provider>, priority: Priority, key: Option<String> },
    Run { reference: String, provider: Option<Provider>, interpreter: Option<crate::sandbox::interpreter::Interpreter> },
    ListAgents { all: bool },
    Status { id: String },
    /// `since_review`: what changed since the user last reviewed (the interdiff).
    Diff { id: String, stat: bool, since_review: bool },
    Accept { id: String, force: bool },
    /// `reason` is feedback for the agent's next revision.
    Reject { id: String, reason: Option<String> },
    /// A note on lines (1-based, inclusive) of a file, for the agent's next revision.
    Comment { id: String, path: String, lines: (u32, u32), text: String },
    /// Sends the feedback since the last revision and puts the proposal back to work.
    Revise { id: String },
    /// The revisions of a proposal and the feedback each sent.
    Log { id: String },
    Undo { id: String },
    Preview { id: String },
    Check { file: PathBuf, interpreter: Option<crate::sandbox::interpreter::Interpreter> },
    Gc,
    /// The hunks of every text file of a proposal (ghost text).
    Hunks { id: String },
    /// `force` accepts a hunk that conflicts with the user's edits.
    AcceptHunk { id: String, path: String, hunk: review::Hunk, force: bool },
    RejectHunk { id: String, path: String, hunk: review::Hunk, reason: Option<String> },
    /// Lines matching `pattern` in the project as indexed (under `under`, all when empty),
    /// with agent `agent`'s proposal on top when given: what that agent's `search_content`
    /// sees.
    Search { pattern: String, under: String, agent: Option<String> },
    /// Every pending proposal at once: overlaps, landing order, status line.
    Board,
    /// The three versions of a conflicted file of a proposal.
    ThreeWay { id: String, path: String },
    /// The user's resolution of a file of a proposal.
    Resolve { id: String, path: String, content: Vec<u8> },
}


/// The result of a pre-flight check.
#[derive(Debug, Clone, Serialize)]
pub struct CheckReport {
    pub file: String,
    pub ok: bool,
    pub diagnostics: Vec<Diagnostic>,
}

/// A diff.
#[derive(Debug, Clone, Serialize)]
pub struct DiffReport {
    pub id: String,
    pub files: Vec<review::FileChange>,
    pub text: String,
}

/// What a command produced.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Output {
    Init(sync::InitReport),
    /// A queued, run or rejected agent (rendered as its id).
    Agent(Status),
    /// `status`: the full status.
    Status(Status),
    /// `order`: the suggested landing order of the pending proposals ([`review::board`]).
    Agents { agents: Vec<Status>, order: Vec<String> },
    Diff(DiffReport),
    Accepted(AcceptReport),
    Undone(UndoReport),
    Preview(workspace::Materialized),
    Check(CheckReport),
    Gc(gc::GcReport),
    Hunks { id: String, files: Vec<review::FileHunks> },
    Hunk(review::HunkReport),
    Revised(review::revise::ReviseReport),
    Log(review::revise::LogReport),
    /// A note was recorded for agent `id`.
    Commented { id: String },
    Search { hits: Vec<crate::search::Hit> },
    Board(review::board::Board),
    ThreeWay(review::resolve::ThreeWay),
    Resolved { id: String, path: String },
}

/// The project at a glance (`cairn status` without an id).
#[derive(Debug, Clone, Serialize)]
pub struct Overview {
    pub root: std::path::PathBuf,
    /// How many agents are in each state (active and ended ones still recorded).
    pub agents: std::collections::BTreeMap<String, usize>,
    pub jj: crate::jj::Detection,
    /// The pending proposals together: overlaps, landing order, the status line.
    pub board: review::board::Board,
    /// Bytes of overlays and preview workspaces (what `[gc] max_total_size_mb` caps).
    pub disk_bytes: u64,
}

/// [`Overview`] of `project`, after noticing what jj users did.
pub fn overview(project: &Project) -> Result<Overview> {
    notice_jj(project);
    let mut agents = std::collections::BTreeMap::new();
    for rec in project.bin()?.list(true)? {
        *agents.entry(rec.state.to_string()).or_insert(0) += 1;
    }
    Ok(Overview { root: project.root.clone(), agents, jj: crate::jj::detect(project).0, board: review::board::build(project)?, disk_bytes: gc::total_bytes(project) })
}


/// The pre-flight check of a script file (needs no project).
/// The interpreter is `interpreter` when given, else the one the script's header names, else
/// RustPython (the check needs no project, so no `[sandbox] interpreter`).
pub fn execute_check(file: &std::path::Path, interpreter: Option<crate::sandbox::interpreter::Interpreter>) -> Result<CheckReport> {
    use crate::sandbox::interpreter::{self, Interpreter};
    let source = std::fs::read_to_string(file).map_err(|e| Error::io(file, e))?;
    let chosen = interpreter.or_else(|| interpreter::header(&source)).unwrap_or(Interpreter::Rustpython);
    let diagnostics = interpreter::check(&source, chosen);
    Ok(CheckReport { file: file.display().to_string(), ok: diagnostics.is_empty(), diagnostics })
}

/// Resolves a unique id prefix.
/// A wrap session whose `cairn wrap` died is completed first (what it wrote is kept, for
/// review), so that every command naming an agent sees it whole.
pub fn resolve(project: &Project, prefix: &str) -> Result<String> {
    resolve_in(project, &project.bin()?, prefix)
}

/// [`resolve`] through `bin`, a connection the caller holds.
fn resolve_in(project: &Project, bin: &crate::store::bin::Bin, prefix: &str) -> Result<String> {
    crate::wrap::recover_in(project, bin)?;
    bin.resolve(prefix)
}

/// `cairn run`: one agent now, in this process; `interpreter` is `--interpreter`.
fn run_now(project: &Project, reference: &str, provider: Option<Provider>, interpreter: Option<crate::config::Interpreter>) -> Result<Output> {
    let mut chosen = project.clone();
    chosen.config.sandbox.interpreter_flag = interpreter.or(project.config.sandbox.interpreter_flag);
    let project = &chosen;
    // The zygote builds its interpreter while the index catches up (two cores at work);
    // none when this run is CPython's (a script's header may still choose RustPython).
    let cpython = project.config.sandbox.interpreter_flag.unwrap_or(project.config.sandbox.interpreter) == crate::config::Interpreter::Cpython;
    let pool = (!cpython).then(|| crate::sandbox::pool::Pool::new(&project.exe, project.config.sandbox.syntax_layer));
    index::ensure_index(project)?;
    let rec = orchestrator::run_now(project, reference, provider, pool.as_deref())?;
    Ok(Output::Agent(status_of(project, &rec, true)?))
}

/// Runs one command.
pub fn execute(project: &Project, cmd: Command) -> Result<Output> {
    match cmd {
        Command::Init => {
            // Signal files have their directory from the start (a shell writes into it).
            let signals = project.home.signals();
            std::fs::create_dir_all(&signals).map_err(|e| Error::io(&signals, e))?;
            Ok(Output::Init(sync::init_rebuilding(project)?))
        }
        Command::Queue { reference, provider, priority, key } => {
            index::ensure_index(project)?;
            let rec = orchestrator::queue_once(project, &reference, provider, priority, key.as_deref())?;
            Ok(Output::Agent(status_of(project, &rec, false)?))
        }
        Command::Run { reference, provider, interpreter } => run_now(project, &reference, provider, interpreter),
        Command::ListAgents { all } => list_agents(project, all),
        Command::Status { id } => {
            let id = resolve(project, &id)?;
            notice_jj(project);
            let rec = project.bin()?.get(&id)?;
            let mut status = status_of(project, &rec, true)?;
            status.overlaps = review::board::build(project)?.get(&id).map(|a| a.overlaps.clone()).unwrap_or_default();
            Ok(Output::Status(status))
        }
        Command::Diff { id, stat, since_review } => {
            let id = resolve(project, &id)?;
            let files = if since_review { review::revise::since_review(project, &id)? } else { review::changes(project, &id)? };
            let text = if stat { review::stat(&files) } else { review::unified(&files) };
            Ok(Output::Diff(DiffReport { id, files, text }))
        }
        Command::Accept { id, force } => {
            // One connection to bin.db for the whole accept.
            let mut bin = project.bin()?;
            let id = resolve_in(project, &bin, &id)?;
            // A task's checks gate its agent's accept; accepting closes the task.
            crate::tasks::gate_accept(&bin, &project.actor, &id, force)?;
            let accepted = with_jj(project, &id, review::accept(project, &mut bin, &id, force))?;
            crate::tasks::after_accept(project, &bin, &project.actor, &id)?;
            Ok(Output::Accepted(accepted))
        }
        Command::Reject { id, reason } => {
            let id = resolve(project, &id)?;
            // An agent whose worker died is re-queued first, which a reject can then cancel.
            crate::orchestrator::recover(project)?;
            let rec = with_jj(project, &id, review::reject(project, &id, reason.as_deref()))?;
            Ok(Output::Agent(status_of(project, &rec, false)?))
        }
        Command::Comment { .. } | Command::Revise { .. } | Command::Log { .. } => review_loop(project, cmd),
        Command::Hunks { .. } | Command::Board | Command::ThreeWay { .. } | Command::Resolve { .. } => many(project, cmd),
        Command::Undo { id } => {
            let id = resolve(project, &id)?;
            Ok(Output::Undone(with_jj(project, &id, review::undo(project, &id))?))
        }
        Command::Preview { id } => {
            let id = resolve(project, &id)?;
            Ok(Output::Preview(workspace::materialize(project, &id)?))
        }
        Command::Check { file, interpreter } => Ok(Output::Check(execute_check(&file, interpreter)?)),
        Command::Gc => Ok(Output::Gc(gc::collect(project)?)),
        Command::AcceptHunk { id, path, hunk, force } => {
            let id = resolve(project, &id)?;
            let path = crate::paths::normalize(&path, &project.root)?;
            Ok(Output::Hunk(with_jj(project, &id, review::accept_hunk(project, &id, &path, &hunk, force))?))
        }
        Command::RejectHunk { id, path, hunk, reason } => {
            let id = resolve(project, &id)?;
            let path = crate::paths::normalize(&path, &project.root)?;
            Ok(Output::Hunk(with_jj(project, &id, review::reject_hunk(project, &id, &path, &hunk, reason.as_deref()))?))
        }
        Command::Search { pattern, under, agent } => search(project, &pattern, &under, agent.as_deref()),
    }
}

/// The commands of many proposals at once: hunks with their overlaps, the board, resolving a
/// conflicted file.
fn many(project: &Project, cmd: Command) -> Result<Output> {
    match cmd {
        Command::Hunks { id } => {
            let id = resolve(project, &id)?;
            // From the board when the proposal is pending: its hunks with their overlaps.
            let files = match review::board::build(project)?.agents.into_iter().find(|a| a.id == id) {
                Some(a) if !a.files.is_empty() => a.files,
                _ => review::file_hunks(project, &id)?,
            };
            Ok(Output::Hunks { files, id })
        }
        Command::Board => Ok(Output::Board(review::board::build(project)?)),
        Command::ThreeWay { id, path } => {
            let id = resolve(project, &id)?;
            let path = crate::paths::normalize(&path, &project.root)?;
            Ok(Output::ThreeWay(review::resolve::three_way(project, &id, &path)?))
        }
        Command::Resolve { id, path, content } => {
            let id = resolve(project, &id)?;
            let path = crate::paths::normalize(&path, &project.root)?;
            review::resolve::resolve(project, &id, &path, &content)?;
            Ok(Output::Resolved { id, path })
        }
        other => execute(project, other),
    }
}

/// The review loop's commands: notes, revise, the log of revisions.
fn review_loop(project: &Project, cmd: Command) -> Result<Output> {
    match cmd {
        Command::Comment { id, path, lines, text } => {
            let id = resolve(project, &id)?;
            review::feedback::comment(project, &id, &path, lines, &text)?;
            Ok(Output::Commented { id })
        }
        Command::Revise { id } => {
            let id = resolve(project, &id)?;
            Ok(Output::Revised(with_jj(project, &id, review::revise::revise(project, &id, &crate::orchestrator::worker_alive))?))
        }
        Command::Log { id } => {
            let id = resolve(project, &id)?;
            Ok(Output::Log(review::revise::log(project, &id)?))
        }
        other => execute(project, other),
    }
}

/// A review action's result, once the agent's jj change follows it (whatever the result: a
/// failed accept may have rolled back, a crash-resumed one finished).
fn with_jj<T>(project: &Project, id: &str, result: Result<T>) -> Result<T> {
    crate::jj::sync_locked(project, id);
    result
}

/// What jj users did to agents' changes, noticed before a status shows them (a jj failure
/// is logged: the status itself never fails for it).
fn notice_jj(project: &Project) {
    if let Err(e) = crate::jj::notice(project) {
        tracing::warn!(target: "cairn::jj", "{e}");
    }
}

/// How long `cairn search` may take before it gives up.
const SEARCH_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

fn search(project: &Project, pattern: &str, under: &str, agent: Option<&str>) -> Result<Output> {
    let overlay = match agent {
        Some(prefix) => {
            let id = resolve(project, prefix)?;
            project.existing_overlay(&id)?.ok_or(Error::NoProposal(id))?
        }
        None => crate::store::overlay::Overlay::empty()?,
    };
    let under = if under.is_empty() || under == "." { String::new() } else { crate::paths::normalize(under, &project.root)? };
    let view = crate::view::View::new(project, &overlay)?;
    let bounds = crate::search::Bounds { deadline: std::time::Instant::now() + SEARCH_TIMEOUT, max_bytes: u64::MAX };
    match crate::search::content(&view, pattern, &under, bounds) {
        Ok((hits, _)) => Ok(Output::Search { hits }),
        Err(crate::search::SearchError::Store(e)) => Err(e),
        Err(e) => Err(Error::Usage(e.to_string())),
    }
}
