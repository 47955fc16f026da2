//! Agent sessions: `begin → heartbeat* → finish | cancel`. A session claims its task, moves
//! it to the working status (through the deps gate) and owns one agent (provider `mcp`) whose
//! overlay receives the session's file tools. `finish` submits the proposal for review (agent
//! `reviewing`, task to the review status); `cancel` discards it and releases the task.
//! Retrying `begin` with the same idempotency key returns the same session. A session belongs
//! to the actor that began it; another actor is refused ([`Error::ForeignSession`], whose hint
//! says how to continue it). An MCP connection's own session: [`super::implicit`].

use super::{claim, get, link_agent, transition, Flow};
use crate::error::{Error, Result};
use crate::lifecycle::State;
use crate::project::Project;
use serde::Serialize;

pub use crate::store::bin::SessionRow;

pub use crate::store::bin::STALLED_AFTER_MS;

/// A session as read: the row and its health (derived from heartbeats).
#[derive(Debug, Clone, Serialize)]
pub struct Session {
    #[serde(flatten)]
    pub row: SessionRow,
    /// `active` or `stalled` while the session is open; its status once it ended.
    pub health: String,
}

pub(super) fn with_health(row: SessionRow) -> Session {
    let health = if row.status != "active" {
        row.status.clone()
    } else if crate::time::now_ms() - row.heartbeat_ms > STALLED_AFTER_MS {
        "stalled".to_string()
    } else {
        "active".to_string()
    };
    Session { row, health }
}

/// Begins (or, for a key seen before, returns) `actor`'s session on `task`.
pub fn begin(project: &Project, actor: &str, task: &str, key: &str) -> Result<Session> {
    begin_with(project, actor, task, key, None)
}

/// Most bytes of a session's runtime metadata (as JSON) and of its progress text.
pub const MAX_META_BYTES: usize = 4096;

/// [`begin`], keeping free runtime metadata (`meta`: client, model, pid, ...) on the session.
pub fn begin_with(project: &Project, actor: &str, task: &str, key: &str, meta: Option<&serde_json::Value>) -> Result<Session> {
    if key.trim().is_empty() {
        return Err(Error::Usage("session_begin needs an idempotency key".into()));
    }
    super::bounded_title("idempotency_key", key)?;
    if let Some(m) = meta {
        super::bounded("meta", &m.to_string(), MAX_META_BYTES)?;
    }
    let t = get(project, task)?;
    let (s, new) = project.bin()?.session_begin(&t.row, actor, key, meta)?;
    if !new {
        if s.task != t.row.id || s.actor != actor {
            return Err(Error::Usage(format!("idempotency key '{key}' belongs to another session")));
        }
        return Ok(with_health(s));
    }
    // The task is claimed and started through the same gates as from the CLI; a refusal
    // ends the new session at once and gives back a claim it made.
    let flow = Flow::of(project);
    let was_unassigned = t.row.assignee.is_none();
    let started = claim(project, actor, &t.row.id).and_then(|t| match t.row.status == flow.working() {
        true => Ok(t),
        false => transition(project, actor, &t.row.id, flow.working()),
    });
    if let Err(e) = started {
        cancel_quietly(project, &s, "the task could not start");
        if was_unassigned {
            if let Ok(mut row) = project.bin().and_then(|b| b.task_get(&t.row.id)) {
                if row.assignee.as_deref() == Some(actor) {
                    row.assignee = None;
                    let _ = project.bin().and_then(|b| b.task_update(&row, actor, "released: the session could not start"));
                }
            }
        }
        return Err(e);
    }
    link_agent(project, actor, &t.row.id, &s.agent)?;
    crate::jj::started(project, &s.agent);
    Ok(with_health(s))
}

/// An open session of `actor`, or an error saying why not.
pub fn open(project: &Project, actor: &str, id: &str) -> Result<SessionRow> {
    let s = owned(project, actor, id)?;
    if s.status != "active" {
        return Err(Error::Usage(format!("session {id} is {}; begin a new one", s.status)));
    }
    let state = project.bin()?.get(&s.agent)?.state;
    if state.is_terminal() || state == State::Errored {
        return Err(Error::Usage(format!("session {id}'s proposal (agent {}) is {state}; begin a new one", s.agent)));
    }
    Ok(s)
}

/// Session `id` if `actor` owns it, in any status.
pub(super) fn owned(project: &Project, actor: &str, id: &str) -> Result<SessionRow> {
    let s = project.bin()?.session_get(id)?;
    if s.actor != actor {
        return Err(Error::ForeignSession { session: id.to_string(), owner: s.actor, actor: actor.to_string() });
    }
    Ok(s)
}

/// Holds the session's lock: one tool call (or finish) at a time per session, across threads
/// and processes, so that a reply of success means the change is in the overlay and no
/// parallel call overwrote it. Released when dropped.
pub(super) struct SessionLock(#[allow(dead_code)] std::fs::File);

impl SessionLock {
    fn take(project: &Project, agent: &str, wait: bool) -> Result<Option<SessionLock>> {
        let dir = project.agent_dir(agent);
        project.state_dir(&dir)?;
        let path = dir.join("session.lock");
        let f = std::fs::OpenOptions::new().create(true).truncate(false).read(true).write(true).open(&path).map_err(|e| Error::io(&path, e))?;
        let op = if wait { rustix::fs::FlockOperation::LockExclusive } else { rustix::fs::FlockOperation::NonBlockingLockExclusive };
        match rustix::fs::flock(&f, op) {
            Ok(()) => Ok(Some(SessionLock(f))),
            Err(e) if e == rustix::io::Errno::WOULDBLOCK => Ok(None),
            Err(e) => Err(Error::io(&path, e.into())),
        }
    }
    /// Waits for the lock.
    pub(super) fn wait(project: &Project, agent: &str) -> Result<SessionLock> {
        Self::take(project, agent, true)?.ok_or_else(|| Error::Internal("a blocking lock returned without it".into()))
    }
}

/// Records that the session is alive, and what it is doing (`progress`, when given).
pub fn heartbeat(project: &Project, actor: &str, id: &str, progress: Option<&str>) -> Result<Session> {
    let mut s = open(project, actor, id)?;
    s.heartbeat_ms = crate::time::now_ms();
    if let Some(p) = progress {
        super::bounded("progress", p, MAX_META_BYTES)?;
        s.progress = Some(p.to_string());
    }
    project.bin()?.session_update(&s)?;
    Ok(with_health(s))
}

/// Submits the session's proposal for review with `summary`; the task goes to review.
/// Idempotent and resumable: a retry after a kill at any point (from any process) completes
/// what is left, and a retry of a finished session returns it.
pub fn finish(project: &Project, actor: &str, id: &str, summary: &str) -> Result<Session> {
    let s = owned(project, actor, id)?;
    let _lock = SessionLock::wait(project, &s.agent)?;
    let s = owned(project, actor, id)?;
    if s.status == "active" {
        if summary.trim().is_empty() {
            return Err(Error::Usage("session_finish needs a summary".into()));
        }
        super::bounded("summary", summary, super::MAX_TEXT_BYTES)?;
        open(project, actor, id)?;
        let overlay = project.overlay(&s.agent)?;
        super::seal::check(project, &s.agent, &overlay)?;
        let changed: Vec<String> = overlay.paths()?.into_iter().map(|(p, _)| p).collect();
        overlay.kv_set("submission", &serde_json::json!({ "summary": summary, "changed_files": changed }).to_string())?;
    } else if s.status != "finished" {
        return Err(Error::Usage(format!("session {id} is {}; begin a new one", s.status)));
    }
    complete(project, actor, s)
}

/// The rest of a finish whose submission is recorded: the agent to `reviewing`, the session
/// `finished`, the task to the review status. Each step is skipped when already done.
fn complete(project: &Project, actor: &str, mut s: SessionRow) -> Result<Session> {
    let state = project.bin()?.get(&s.agent)?.state;
    if matches!(state, State::Executing | State::Submitting) {
        let overlay = project.overlay(&s.agent)?;
        crate::orchestrator::submit(project, &mut project.bin()?, &s.agent, &overlay, true, serde_json::Value::Null)?;
    }
    if s.status != "finished" {
        let summary = project.overlay(&s.agent)?.kv_get("submission")?.and_then(|j| serde_json::from_str::<serde_json::Value>(&j).ok()).and_then(|v| v["summary"].as_str().map(str::to_string));
        s.status = "finished".into();
        s.summary = summary;
        s.head = Some(head(&project.overlay(&s.agent)?)?);
        s.heartbeat_ms = crate::time::now_ms();
        project.bin()?.session_update(&s)?;
    }
    let flow = Flow::of(project);
    let task = project.bin()?.task_get(&s.task)?;
    if task.status == flow.working() {
        transition(project, actor, &s.task, flow.review())?;
    }
    Ok(with_health(s))
}

/// The proposal's content hash: every changed path with its content's hash (or its
/// deletion), in path order, hashed. The same proposal always has the same head.
fn head(overlay: &crate::store::overlay::Overlay) -> Result<String> {
    let mut listing = String::new();
    for c in overlay.changes()? {
        let what = match &c.change {
            crate::store::overlay::Change::Write { content, mode, .. } => format!("{} {mode:o}", hex::encode(crate::store::hash_bytes(content))),
            crate::store::overlay::Change::Delete => "deleted".to_string(),
        };
        listing.push_str(&format!("{}\0{what}\n", c.path));
    }
    Ok(format!("blake3:{}", hex::encode(crate::store::hash_bytes(listing.as_bytes()))))
}

/// Sessions matching `filter`, oldest first.
pub fn list(project: &Project, filter: &SessionFilter) -> Result<Vec<Session>> {
    let task = match &filter.task {
        Some(t) => Some(get(project, t)?.row.id),
        None => None,
    };
    let rows = project.bin()?.session_list(task.as_deref())?;
    Ok(rows
        .into_iter()
        .map(with_health)
        .filter(|s| filter.actor.as_ref().is_none_or(|a| &s.row.actor == a))
        .filter(|s| filter.status.as_ref().is_none_or(|st| &s.row.status == st))
        .filter(|s| filter.health.as_ref().is_none_or(|h| &s.health == h))
        .collect())
}

/// Filters of [`list`]; `None` ignores one.
#[derive(Debug, Default)]
pub struct SessionFilter {
    pub task: Option<String>,
    pub actor: Option<String>,
    /// `active`, `finished` or `cancelled`.
    pub status: Option<String>,
    /// `active`, `stalled`, `finished` or `cancelled`.
    pub health: Option<String>,
}

/// Completes the finish of every session whose process died in the middle of it (agent left
/// `submitting`, or `reviewing` with the session or task behind), unless a live process is
/// finishing it now (it holds the session's lock). `cairn up` and the Neovim host run this
/// at start, as they recover runs. Returns the agents recovered.
pub fn recover(project: &Project) -> Result<Vec<String>> {
    let mut out = Vec::new();
    let flow = Flow::of(project);
    let bin = project.bin()?;
    for s in bin.session_list(None)? {
        let state = bin.get(&s.agent)?.state;
        let task_behind = s.status == "finished" && bin.task_get(&s.task)?.status == flow.working();
        let stuck = state == State::Submitting || (state == State::Reviewing && s.status == "active") || task_behind;
        if !stuck {
            continue;
        }
        let Some(_lock) = SessionLock::take(project, &s.agent, false)? else { continue };
        let actor = s.actor.clone();
        let agent = s.agent.clone();
        complete(project, &actor, s)?;
        out.push(agent);
    }
    Ok(out)
}

/// Ends the session without a proposal: its agent is rejected, the task released (it stays
/// open).
pub fn cancel(project: &Project, actor: &str, id: &str, reason: &str) -> Result<Session> {
    let s = open(project, actor, id)?;
    cancel_quietly(project, &s, reason);
    let mut t = project.bin()?.task_get(&s.task)?;
    t.assignee = None;
    t.agent = None;
    project.bin()?.task_update(&t, actor, &format!("session {} cancelled: {reason}", s.id))?;
    Ok(with_health(project.bin()?.session_get(id)?))
}

/// Ends the session's agent (errored as interrupted, then rejected) and marks it cancelled.
fn cancel_quietly(project: &Project, s: &SessionRow, reason: &str) {
    if let Ok(mut bin) = project.bin() {
        let why = format!("session cancelled: {reason}");
        let extra = crate::store::bin::TransitionExtra { error: Some((crate::lifecycle::ErrorKind::Interrupted, &why)), ..Default::default() };
        let _ = bin.transition(&s.agent, State::Errored, "cancel", extra);
        let _ = bin.transition(&s.agent, State::Rejected, "cancel", Default::default());
        crate::jj::sync_locked(project, &s.agent);
        let mut row = s.clone();
        row.status = "cancelled".into();
        let _ = bin.session_update(&row);
    }
}

/// A session by id.
pub fn get_session(project: &Project, id: &str) -> Result<Session> {
    Ok(with_health(project.bin()?.session_get(id)?))
}

/// Runs `f` with a [`crate::externals::Host`] on the session's overlay: the same host as a
/// `.pym` run (code, limits, protected paths, audit log, events). `writes`: the agent's jj
/// change follows (`[jj] create_change_on_spawn`).
pub(super) fn with_host<T>(project: &Project, actor: &str, id: &str, writes: bool, f: impl FnOnce(&mut crate::externals::Host) -> Result<T>) -> Result<T> {
    let s = open(project, actor, id)?;
    let _lock = SessionLock::wait(project, &s.agent)?;
    // Opened again under the lock: a finish may have ended the session meanwhile.
    let s = open(project, actor, id)?;
    // Writes an earlier call reported as done must still be there (`seal.rs`).
    let overlay = project.overlay(&s.agent)?;
    super::seal::check(project, &s.agent, &overlay)?;
    let out = host_on(project, &s.agent, &overlay, f);
    // A seal left behind weakens the next check, never fails it: the call's outcome stands.
    if let Err(e) = super::seal::record(project, &s.agent, &overlay) {
        tracing::warn!("sealing the overlay of agent {}: {e}", s.agent);
    }
    if writes {
        crate::jj::sync_locked(project, &s.agent);
    }
    out
}

/// Runs `f` with a [`crate::externals::Host`] on agent `agent`'s overlay, its budgets carried
/// from call to call in the overlay (an MCP session's tools, a wrap session's syncs).
pub(crate) fn with_agent_host<T>(project: &Project, agent: &str, f: impl FnOnce(&mut crate::externals::Host) -> Result<T>) -> Result<T> {
    host_on(project, agent, &project.overlay(agent)?, f)
}

fn host_on<T>(project: &Project, agent: &str, overlay: &crate::store::overlay::Overlay, f: impl FnOnce(&mut crate::externals::Host) -> Result<T>) -> Result<T> {
    let events = project.bin()?;
    let on_event = |kind: &crate::events::EventKind| {
        let _ = events.append(agent, State::Executing, kind);
    };
    let ask = |_: &str, _: &str, _: std::time::Duration| Err("ask_llm is not available to MCP sessions (the client is the model)".to_string());
    let view = crate::view::View::new(project, overlay)?;
    let mut host = crate::externals::Host::new(view, project.config.sandbox.clone(), &ask, None, &on_event);
    let usage = overlay.kv_get("usage")?.and_then(|u| serde_json::from_str(&u).ok()).unwrap_or_default();
    host.resume(usage);
    let out = f(&mut host);
    overlay.kv_set("usage", &serde_json::to_string(&host.usage())?)?;
    out
}

/// Runs external `name` (`read_file`, `edit_lines`, ...) in the session's overlay, for an MCP
/// client: an absolute path is a host path, refused outside the project. `Err` inside carries
/// the Python exception name and message.
pub fn tool(project: &Project, actor: &str, id: &str, name: &str, args: &[serde_json::Value], kwargs: &serde_json::Map<String, serde_json::Value>) -> Result<std::result::Result<serde_json::Value, (String, String)>> {
    let writes = name.parse::<crate::externals::External>().is_ok_and(|e| e.writes());
    with_host(project, actor, id, writes, |host| {
        host.rooted = crate::paths::Rooted::Host;
        Ok(host.call(name, args, kwargs).map_err(|e| match e {
            crate::externals::CallError::Raise { exc, message } => (exc.to_string(), message),
            crate::externals::CallError::Fatal { kind, message } => (kind.to_string(), message),
        }))
    })
}

/// Runs a `.pym` script against the session's overlay, in the sandbox, as a run would (the
/// pre-flight check first). Returns `{result}` or `{error: {kind, message}}`.
pub fn run_script(project: &Project, actor: &str, id: &str, code: &str) -> Result<serde_json::Value> {
    let (interpreter, diags) = crate::sandbox::interpreter::pre_flight(code, &project.config.sandbox);
    if !diags.is_empty() {
        let text = diags.iter().map(|d| format!("script:{}:{}: {}", d.line, d.col, d.message)).collect::<Vec<_>>().join("\n");
        return Ok(serde_json::json!({ "error": { "kind": "check", "message": text } }));
    }
    let source = match crate::sandbox::interpreter::prepare(code, interpreter) {
        Ok(s) => s,
        Err(d) => return Ok(serde_json::json!({ "error": { "kind": "check", "message": d.message } })),
    };
    with_host(project, actor, id, true, |host| {
        host.deadline = Some(std::time::Instant::now() + std::time::Duration::from_secs(project.config.sandbox.timeout_seconds));
        host.limits.interpreter = interpreter;
        let out = crate::sandbox::runner::run(&project.exe, None, &source, "script.pym", Default::default(), host)?;
        Ok(match out.error {
            Some((kind, message)) => serde_json::json!({ "error": { "kind": kind, "message": message } }),
            None => serde_json::json!({ "result": out.result }),
        })
    })
}
