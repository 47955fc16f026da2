//! Tasks in `bin.db`: rows, provenance and their events. The rules (gates, checks, sessions)
//! live in `crate::tasks`; every write here is one transaction that also appends the
//! provenance entry and the event.

use super::{insert_event, Bin};
use crate::error::{Error, Result};
use crate::events::EventKind;
use crate::lifecycle::State;
use rusqlite::{params, OptionalExtension, Row};
use serde::{Deserialize, Serialize};

pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS tasks(
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    title TEXT NOT NULL,
    body TEXT NOT NULL,
    status TEXT NOT NULL,
    assignee TEXT,
    deps TEXT NOT NULL,
    checks TEXT NOT NULL,
    agent_id TEXT,
    created_ms INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS provenance(
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id TEXT NOT NULL,
    who TEXT NOT NULL,
    at_ms INTEGER NOT NULL,
    did TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS provenance_task ON provenance(task_id);
CREATE TABLE IF NOT EXISTS sessions(
    id TEXT PRIMARY KEY,
    task_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    actor TEXT NOT NULL,
    key TEXT NOT NULL UNIQUE,
    status TEXT NOT NULL,
    heartbeat_ms INTEGER NOT NULL,
    created_ms INTEGER NOT NULL,
    summary TEXT,
    meta TEXT,
    progress TEXT,
    head TEXT
) WITHOUT ROWID;
";

/// Adds the runtime metadata, progress and head of a session to tables made before them.
pub(super) fn migrate(conn: &rusqlite::Connection) -> Result<()> {
    let has = |col: &str| -> Result<bool> { Ok(conn.prepare("SELECT 1 FROM pragma_table_info('sessions') WHERE name = ?1")?.exists([col])?) };
    if !has("meta")? {
        conn.execute_batch("ALTER TABLE sessions ADD COLUMN meta TEXT; ALTER TABLE sessions ADD COLUMN progress TEXT; ALTER TABLE sessions ADD COLUMN head TEXT;")?;
    }
    Ok(())
}

/// An agent session (`cairn mcp`): one attempt at a task, owning one agent and its overlay.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionRow {
    pub id: String,
    pub task: String,
    pub agent: String,
    pub actor: String,
    /// `active`, `finished` or `cancelled`.
    pub status: String,
    pub heartbeat_ms: i64,
    pub summary: Option<String>,
    /// Free runtime metadata the agent gave at begin (client, model, pid, ...).
    pub meta: Option<serde_json::Value>,
    /// What the agent last said it is doing (its heartbeat).
    pub progress: Option<String>,
    /// What was submitted: the proposal's content hash.
    pub head: Option<String>,
}

/// A check's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CheckResult {
    #[default]
    Pending,
    Pass,
    Fail,
}

/// One gate-closing check: a command run in the agent's workspace, or a manual attestation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Check {
    /// What it verifies.
    pub desc: String,
    /// Shell command line; none for a manual check.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cmd: Option<String>,
    /// `manual` for an attested check.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Working directory relative to the workspace root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Seconds (default `[tasks] check_timeout_seconds`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<u64>,
    #[serde(default)]
    pub result: CheckResult,
    /// The log of the last run, relative to the project root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log: Option<String>,
    /// Who wrote the check (the task's creator); set by the core, never taken from input.
    /// Checks from before authors were recorded have none and count as a human's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    /// The human who approved an agent-written check (`cairn task approve-check`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved_by: Option<String>,
}

impl Check {
    /// A check a person attests (no command).
    pub fn is_manual(&self) -> bool {
        self.cmd.is_none()
    }
    /// Does this check count for the gates (close, accept)? Only when a human wrote or
    /// approved it: an agent's own checks run and report, but cannot open a gate for it.
    pub fn counts(&self) -> bool {
        self.author.as_deref().is_none_or(is_human) || self.approved_by.is_some()
    }
    /// `human`, `agent:claude-code (approved by human:ann)`, ...: how the check is shown.
    pub fn authority(&self) -> String {
        match (&self.author, &self.approved_by) {
            (None, _) => "human".to_string(),
            (Some(a), Some(h)) if !is_human(a) => format!("{a}, approved by {h}"),
            (Some(a), None) if !is_human(a) => format!("{a}, not approved: does not count"),
            (Some(a), _) => a.clone(),
        }
    }
}

/// Is `actor` a person (`human`, `human:<login>`) rather than an agent?
/// A session without a heartbeat for this long is `stalled`.
pub const STALLED_AFTER_MS: i64 = 60_000;

pub fn is_human(actor: &str) -> bool {
    actor == "human" || actor.starts_with("human:")
}

/// One provenance entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    pub who: String,
    pub at: String,
    pub did: String,
}

/// A task as stored.
#[derive(Debug, Clone, Serialize)]
pub struct TaskRow {
    pub id: String,
    pub title: String,
    pub body: String,
    pub status: String,
    pub assignee: Option<String>,
    pub deps: Vec<String>,
    pub checks: Vec<Check>,
    /// The agent holding the task's current proposal (its session's).
    pub agent: Option<String>,
    pub created_ms: i64,
    pub provenance: Vec<Provenance>,
}

const COLS: &str = "id, title, body, status, assignee, deps, checks, agent_id, created_ms";

fn task_row(r: &Row) -> rusqlite::Result<TaskRow> {
    let json = |i: usize| -> rusqlite::Result<String> { r.get(i) };
    Ok(TaskRow {
        id: r.get(0)?,
        title: r.get(1)?,
        body: r.get(2)?,
        status: r.get(3)?,
        assignee: r.get(4)?,
        deps: serde_json::from_str(&json(5)?).unwrap_or_default(),
        checks: serde_json::from_str::<Vec<Check>>(&json(6)?).unwrap_or_default(),
        agent: r.get(7)?,
        created_ms: r.get(8)?,
        provenance: Vec::new(),
    })
}

impl Bin {
    /// Inserts a new task (its id must be fresh), recording `who` created it.
    pub fn task_insert(&self, t: &TaskRow, who: &str) -> Result<()> {
        let tx = self.write_tx()?;
        tx.execute(
            &format!("INSERT INTO tasks({COLS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"),
            params![t.id, t.title, t.body, t.status, t.assignee, json(&t.deps), json(&t.checks), t.agent, t.created_ms],
        )?;
        record(&tx, &t.id, t.agent.as_deref(), who, "created")?;
        tx.commit()?;
        Ok(())
    }

    /// Writes a task's mutable fields (status, assignee, checks, agent) with one provenance
    /// entry `did` by `who`.
    pub fn task_update(&self, t: &TaskRow, who: &str, did: &str) -> Result<()> {
        let tx = self.write_tx()?;
        let n = tx.execute(
            "UPDATE tasks SET status = ?2, assignee = ?3, checks = ?4, agent_id = ?5 WHERE id = ?1",
            params![t.id, t.status, t.assignee, json(&t.checks), t.agent],
        )?;
        if n == 0 {
            return Err(Error::UnknownTask(t.id.clone()));
        }
        record(&tx, &t.id, t.agent.as_deref(), who, did)?;
        tx.commit()?;
        Ok(())
    }

    /// The task `id` with its provenance.
    pub fn task_get(&self, id: &str) -> Result<TaskRow> {
        let mut t = self
            .conn
            .query_row(&format!("SELECT {COLS} FROM tasks WHERE id = ?1"), [id], task_row)
            .optional()?
            .ok_or_else(|| Error::UnknownTask(id.to_string()))?;
        let mut st = self.conn.prepare_cached("SELECT who, at_ms, did FROM provenance WHERE task_id = ?1 ORDER BY seq")?;
        let rows = st.query_map([id], |r| Ok(Provenance { who: r.get(0)?, at: crate::time::rfc3339(r.get(1)?), did: r.get(2)? }))?;
        t.provenance = rows.collect::<rusqlite::Result<_>>()?;
        Ok(t)
    }

    /// Every task, oldest first (without provenance).
    pub fn task_list(&self) -> Result<Vec<TaskRow>> {
        let mut st = self.conn.prepare_cached(&format!("SELECT {COLS} FROM tasks ORDER BY seq"))?;
        let rows = st.query_map([], task_row)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// The task whose id starts with `prefix` (unique).
    pub fn task_resolve(&self, prefix: &str) -> Result<String> {
        let mut st = self.conn.prepare_cached("SELECT id FROM tasks WHERE id >= ?1 AND id < ?1 || '\u{10FFFF}' LIMIT 2")?;
        let ids: Vec<String> = st.query_map([prefix], |r| r.get(0))?.collect::<rusqlite::Result<_>>()?;
        match ids.as_slice() {
            [one] => Ok(one.clone()),
            [] => Err(Error::UnknownTask(prefix.to_string())),
            _ => Err(Error::Usage(format!("task prefix '{prefix}' is ambiguous"))),
        }
    }

    /// The task whose current proposal is agent `agent`, if any.
    pub fn task_of_agent(&self, agent: &str) -> Result<Option<String>> {
        Ok(self.conn.query_row("SELECT id FROM tasks WHERE agent_id = ?1", [agent], |r| r.get(0)).optional()?)
    }
}

const SESSION_COLS: &str = "id, task_id, agent_id, actor, status, heartbeat_ms, summary, meta, progress, head";

fn session_row(r: &Row) -> rusqlite::Result<SessionRow> {
    let meta: Option<String> = r.get(7)?;
    Ok(SessionRow {
        id: r.get(0)?,
        task: r.get(1)?,
        agent: r.get(2)?,
        actor: r.get(3)?,
        status: r.get(4)?,
        heartbeat_ms: r.get(5)?,
        summary: r.get(6)?,
        meta: meta.and_then(|m| serde_json::from_str(&m).ok()),
        progress: r.get(8)?,
        head: r.get(9)?,
    })
}

impl Bin {
    /// Starts a session for `task` under `key`: a new agent (provider `mcp`, executing, no
    /// worker) and the session row, in one transaction. A key seen before returns its
    /// session instead (`None` for the agent's title means the task's title is used).
    pub fn session_begin(&self, task: &TaskRow, actor: &str, key: &str, meta: Option<&serde_json::Value>) -> Result<(SessionRow, bool)> {
        let tx = self.write_tx()?;
        if let Some(existing) = tx.query_row(&format!("SELECT {SESSION_COLS} FROM sessions WHERE key = ?1"), [key], session_row).optional()? {
            return Ok((existing, false));
        }
        let now = crate::time::now_ms();
        let mut agent = super::new_id();
        while tx.query_row("SELECT 1 FROM agents WHERE id = ?1", [&agent], |_| Ok(())).optional()?.is_some() {
            agent = super::new_id();
        }
        tx.execute(
            "INSERT INTO agents(id, state, task, provider, priority, created_ms, state_changed_ms) VALUES (?1, ?2, ?3, ?4, 1, ?5, ?5)",
            params![agent, State::Executing.as_str(), format!("{}: {}", task.id, task.title), crate::lifecycle::Provider::Mcp.as_str(), now],
        )?;
        super::marks::claim(&tx, &agent)?;
        insert_event(&tx, &agent, State::Executing, &EventKind::StateChanged { message: format!("session of {actor} on task {}", task.id) })?;
        let id = format!("s{agent}");
        tx.execute(
            "INSERT INTO sessions(id, task_id, agent_id, actor, key, status, heartbeat_ms, created_ms, meta) VALUES (?1, ?2, ?3, ?4, ?5, 'active', ?6, ?6, ?7)",
            params![id, task.id, agent, actor, key, now, meta.map(|m| m.to_string())],
        )?;
        tx.commit()?;
        Ok((self.session_get(&id)?, true))
    }

    pub fn session_get(&self, id: &str) -> Result<SessionRow> {
        self.conn
            .query_row(&format!("SELECT {SESSION_COLS} FROM sessions WHERE id = ?1"), [id], session_row)
            .optional()?
            .ok_or_else(|| Error::Usage(format!("no session '{id}'")))
    }

    /// Sets a session's status, heartbeat, summary, progress and head.
    pub fn session_update(&self, s: &SessionRow) -> Result<()> {
        self.conn.execute(
            "UPDATE sessions SET status = ?2, heartbeat_ms = ?3, summary = ?4, progress = ?5, head = ?6 WHERE id = ?1",
            params![s.id, s.status, s.heartbeat_ms, s.summary, s.progress, s.head],
        )?;
        Ok(())
    }

    /// Moves an open session's `meta.connection` from `from` to `to` (a server going on with
    /// the session of one that is gone); false when it no longer names `from` or the session
    /// ended, so of two servers trying at once one wins.
    pub fn session_move_connection(&self, id: &str, from: &str, to: &str) -> Result<bool> {
        let moved = self.conn.execute(
            "UPDATE sessions SET meta = json_set(meta, '$.connection', ?3), heartbeat_ms = ?4 WHERE id = ?1 AND status = 'active' AND json_extract(meta, '$.connection') = ?2",
            params![id, from, to, crate::time::now_ms()],
        )?;
        Ok(moved == 1)
    }

    /// Sessions of `task` (every task when `None`), oldest first.
    pub fn session_list(&self, task: Option<&str>) -> Result<Vec<SessionRow>> {
        let mut st = self.conn.prepare_cached(&format!("SELECT {SESSION_COLS} FROM sessions WHERE ?1 IS NULL OR task_id = ?1 ORDER BY created_ms"))?;
        let rows = st.query_map([task], session_row)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }
}

fn json<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_else(|_| "[]".into())
}

/// Appends the provenance entry and its event.
fn record(tx: &rusqlite::Connection, task: &str, agent: Option<&str>, who: &str, did: &str) -> Result<()> {
    tx.execute("INSERT INTO provenance(task_id, who, at_ms, did) VALUES (?1, ?2, ?3, ?4)", params![task, who, crate::time::now_ms(), did])?;
    let kind = EventKind::TaskChanged { task: task.to_string(), who: who.to_string(), did: did.to_string() };
    // The event carries the task's agent and that agent's state (queued when it has none).
    let state = match agent {
        Some(a) => tx.query_row("SELECT state FROM agents WHERE id = ?1", [a], |r| r.get::<_, String>(0)).optional()?.and_then(|s| s.parse().ok()).unwrap_or(State::Queued),
        None => State::Queued,
    };
    insert_event(tx, agent.unwrap_or(""), state, &kind)
}
