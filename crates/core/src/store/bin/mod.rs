//! `bin.db`: lifecycle records of every agent, the event stream other processes follow, and
//! the accept journal (what an accept changed, for crash recovery and undo).
//!
//! - this file: the schema and agent records;
//! - [`transition`]: lifecycle moves, each checked and recorded with its event;
//! - [`workers`]: claiming queued agents and recovering dead workers' agents;
//! - [`events`]: the event stream and hunk decisions;
//! - [`journal`]: the accept journal;
//! - [`tasks`]: tasks and their provenance;
//! - [`review`]: feedback to agents, revisions, delivery exactly once;
//! - [`marks`]: each agent's mark (`A`, `B`, ...), kept for its life.
//!
//! Every state change happens inside one IMMEDIATE transaction that checks the move against
//! [`State::can_move_to`], writes the new state and appends an event, so a transition is
//! persisted before anyone reports it and two processes never both claim an agent.

mod events;
mod jj;
pub use jj::JjRow;
mod journal;
pub use journal::JournalSync;
mod marks;
mod review;
pub use review::{Feedback, FeedbackKind, NewFeedback, Revision};
mod tasks;
pub use tasks::{is_human, Check, CheckResult, Provenance, SessionRow, TaskRow, STALLED_AFTER_MS};
mod transition;
use transition::apply_transition;
mod workers;
pub use workers::HELD;

use super::Hash;
use crate::error::{Error, Result};
use crate::events::EventKind;
use crate::lifecycle::{ErrorKind, Priority, Provider, State};

use rusqlite::{params, Connection, OptionalExtension, Row, TransactionBehavior};
use std::path::Path;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS agents(
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    state TEXT NOT NULL,
    task TEXT NOT NULL,
    provider TEXT NOT NULL,
    priority INTEGER NOT NULL,
    created_ms INTEGER NOT NULL,
    state_changed_ms INTEGER NOT NULL,
    error_kind TEXT,
    error TEXT,
    submission TEXT,
    result TEXT,
    attempts INTEGER NOT NULL DEFAULT 0,
    worker_pid INTEGER,
    worker_start INTEGER,
    accept_pending INTEGER NOT NULL DEFAULT 0,
    undone INTEGER NOT NULL DEFAULT 0,
    revision INTEGER NOT NULL DEFAULT 1
);
CREATE INDEX IF NOT EXISTS agents_state ON agents(state);
CREATE TABLE IF NOT EXISTS events(
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    agent_id TEXT NOT NULL,
    ts_ms INTEGER NOT NULL,
    state TEXT NOT NULL,
    message TEXT NOT NULL,
    data TEXT
);
CREATE TABLE IF NOT EXISTS hunk_decisions(
    agent_id TEXT NOT NULL,
    path TEXT NOT NULL,
    ts_ms INTEGER NOT NULL,
    accepted INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS hunk_decisions_agent ON hunk_decisions(agent_id);
CREATE TABLE IF NOT EXISTS queue_keys(
    key TEXT PRIMARY KEY,
    agent_id TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS journal(
    agent_id TEXT NOT NULL,
    path TEXT NOT NULL,
    old_hash BLOB,
    old_mode INTEGER,
    old_content BLOB,
    new_hash BLOB,
    new_mode INTEGER,
    old_at INTEGER,
    old_len INTEGER,
    old_base INTEGER,
    PRIMARY KEY(agent_id, path)
) WITHOUT ROWID;
";

/// The persisted record of one agent.
#[derive(Debug, Clone)]
pub struct AgentRecord {
    pub seq: i64,
    pub id: String,
    pub state: State,
    pub task: String,
    pub provider: Provider,
    pub priority: Priority,
    pub created_ms: i64,
    pub state_changed_ms: i64,
    pub error_kind: Option<ErrorKind>,
    pub error: Option<String>,
    pub submission: Option<serde_json::Value>,
    pub result: Option<serde_json::Value>,
    pub attempts: u32,
    pub worker: Option<Worker>,
    pub accept_pending: bool,
    pub undone: bool,
    /// The revision of the proposal (1, then one more per `cairn revise` or new turn).
    pub revision: u32,
}

/// Identity of the process running an agent: pid plus its start time, so a recycled pid is
/// never mistaken for the original worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Worker {
    pub pid: i64,
    pub start: i64,
}

pub use crate::events::Event;

/// One path of an accept, as journaled before the working tree is touched.
#[derive(Debug, Clone)]
pub struct JournalEntry {
    pub path: String,
    /// Project file before the accept (`None` = absent).
    pub old: Option<(Hash, u32)>,
    /// Its content, when the journal holds it (see `old_in_base`).
    pub old_content: Option<Vec<u8>>,
    /// The old content is not in the journal: it is the base the agent's overlay kept for this
    /// path (`review::journal` fetches it from there; `old_content` is then `None` as read).
    pub old_in_base: bool,
    /// What the accept puts there (`None` = delete).
    pub new: Option<(Hash, u32)>,
}

/// Extra fields written together with a transition.
#[derive(Default)]
pub struct TransitionExtra<'a> {
    pub error: Option<(ErrorKind, &'a str)>,
    pub submission: Option<&'a serde_json::Value>,
    pub result: Option<&'a serde_json::Value>,
    pub message: Option<&'a str>,
}

const COLS: &str = "seq, id, state, task, provider, priority, created_ms, state_changed_ms, error_kind, error, \
                    submission, result, attempts, worker_pid, worker_start, accept_pending, undone, revision";

fn row(r: &Row) -> rusqlite::Result<AgentRecord> {
    let state: String = r.get(2)?;
    let json = |i: usize| -> rusqlite::Result<Option<serde_json::Value>> {
        Ok(r.get::<_, Option<String>>(i)?.and_then(|s| serde_json::from_str(&s).ok()))
    };
    let worker = match (r.get::<_, Option<i64>>(13)?, r.get::<_, Option<i64>>(14)?) {
        (Some(pid), Some(start)) => Some(Worker { pid, start }),
        _ => None,
    };
    Ok(AgentRecord {
        seq: r.get(0)?,
        id: r.get(1)?,
        state: state.parse().unwrap_or(State::Errored),
        task: r.get(3)?,
        provider: r.get::<_, String>(4)?.parse().unwrap_or(Provider::File),
        priority: Priority::from_i64(r.get(5)?),
        created_ms: r.get(6)?,
        state_changed_ms: r.get(7)?,
        error_kind: r.get::<_, Option<String>>(8)?.map(|k| k.parse().unwrap_or(ErrorKind::Internal)),
        error: r.get(9)?,
        submission: json(10)?,
        result: json(11)?,
        attempts: r.get(12)?,
        worker,
        accept_pending: r.get::<_, i64>(15)? != 0,
        undone: r.get::<_, i64>(16)? != 0,
        revision: r.get(17)?,
    })
}

/// An open `bin.db`.
pub struct Bin {
    pub(super) conn: Connection,
}

/// The migrations `Bin::open` runs, as one number kept in the database's `application_id`
/// once they have run: raise it with every migration added.
const MIGRATED: i32 = 0x6361_0002;

impl Bin {
    /// A write transaction on a shared connection, taking the write lock at once: a deferred
    /// one that reads first fails at once with "database is locked" when another process
    /// commits in between (its busy timeout does not apply to that upgrade).
    fn write_tx(&self) -> Result<rusqlite::Transaction<'_>> {
        Ok(rusqlite::Transaction::new_unchecked(&self.conn, rusqlite::TransactionBehavior::Immediate)?)
    }

    /// Opens or creates the database. Commits survive a crash of any process (WAL,
    /// synchronous=NORMAL); the accept journal alone is also forced to disk before any project
    /// file is touched (see [`Bin::begin_accept`]).
    pub fn open(path: &Path) -> Result<Bin> {
        let conn = super::open(path, &format!("{SCHEMA}{}{}{}{}", tasks::SCHEMA, jj::SCHEMA, review::SCHEMA, marks::SCHEMA))?;
        // Each migration looks for its columns (a statement prepared each); a database that
        // says it has them all is not asked again.
        // Every cairn process opens this database afresh and reads its WAL whole to index it
        // (see `store::keep_open`): a shorter WAL (checkpointed every 200 pages, not SQLite's
        // 1,000) makes that read a fifth, for a checkpoint every few commands.
        conn.pragma_update(None, "wal_autocheckpoint", 200)?;
        let level: i32 = conn.query_row("PRAGMA application_id", [], |r| r.get(0))?;
        if level != MIGRATED {
            events::migrate(&conn)?;
            review::migrate(&conn)?;
            journal::migrate(&conn)?;
            tasks::migrate(&conn)?;
            workers::migrate(&conn)?;
            marks::migrate(&conn)?;
            conn.pragma_update(None, "application_id", MIGRATED)?;
        }
        Ok(Bin { conn })
    }

    /// Inserts a new queued agent with a fresh short id.
    /// With `key` (an idempotency key, such as a signal file's identity), a second insert with
    /// the same key returns the first agent instead of queueing another.
    /// `not_before`: not claimed before then (in the same transaction, so no worker takes it
    /// first): [`HELD`] until [`Bin::release`] (`auto_spawn = false`), or a moment reserved
    /// for the process that queues it to claim it by id (`cairn run`).
    pub fn insert(&mut self, task: &str, provider: Provider, priority: Priority, key: Option<&str>, not_before: Option<i64>) -> Result<AgentRecord> {
        let now = crate::time::now_ms();
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        if let Some(k) = key {
            let existing: Option<String> = tx.query_row("SELECT agent_id FROM queue_keys WHERE key = ?1", [k], |r| r.get(0)).optional()?;
            if let Some(id) = existing {
                tx.commit()?;
                return self.get(&id);
            }
        }
        let mut id = new_id();
        while tx.query_row("SELECT 1 FROM agents WHERE id = ?1", [&id], |_| Ok(())).optional()?.is_some() {
            id = new_id();
        }
        tx.execute(
            "INSERT INTO agents(id, state, task, provider, priority, created_ms, state_changed_ms) VALUES (?1, ?6, ?2, ?3, ?4, ?5, ?5)",
            params![id, task, provider.as_str(), priority as i64, now, State::Queued.as_str()],
        )?;
        if let Some(at) = not_before {
            tx.execute("UPDATE agents SET not_before_ms = ?2 WHERE id = ?1", params![id, at])?;
        }
        marks::claim(&tx, &id)?;
        insert_event(&tx, &id, State::Queued, &EventKind::StateChanged { message: task.to_string() })?;
        if let Some(k) = key {
            tx.execute("INSERT INTO queue_keys(key, agent_id) VALUES (?1, ?2)", params![k, id])?;
        }
        tx.commit()?;
        self.get(&id)
    }

    /// The record of exactly `id`.
    pub fn get(&self, id: &str) -> Result<AgentRecord> {
        let mut st = self.conn.prepare_cached(&format!("SELECT {COLS} FROM agents WHERE id = ?1"))?;
        st.query_row([id], row).optional()?.ok_or_else(|| Error::UnknownAgent(id.to_string()))
    }

    /// Resolves a unique id prefix to the full id.
    pub fn resolve(&self, prefix: &str) -> Result<String> {
        if prefix.is_empty() || !prefix.chars().all(|c| c.is_ascii_alphanumeric()) {
            return Err(Error::UnknownAgent(prefix.to_string()));
        }
        // A whole id (what the frontends pass) is one lookup; a prefix scans the agents.
        let mut exact = self.conn.prepare_cached("SELECT 1 FROM agents WHERE id = ?1")?;
        if exact.exists([prefix])? {
            return Ok(prefix.to_string());
        }
        let mut st = self.conn.prepare_cached("SELECT id FROM agents WHERE id LIKE ?1 || '%' ORDER BY seq LIMIT 6")?;
        let ids: Vec<String> = st.query_map([prefix], |r| r.get(0))?.collect::<rusqlite::Result<_>>()?;
        match ids.len() {
            0 => Err(Error::UnknownAgent(prefix.to_string())),
            1 => Ok(ids.into_iter().next().unwrap_or_default()),
            _ if ids.iter().any(|i| i == prefix) => Ok(prefix.to_string()),
            _ => Err(Error::AmbiguousAgent { prefix: prefix.to_string(), candidates: ids.join(", ") }),
        }
    }

    /// Agents oldest first; only non-terminal ones unless `all`.
    pub fn list(&self, all: bool) -> Result<Vec<AgentRecord>> {
        let filter = if all { String::new() } else { format!("WHERE state NOT IN ({})", sql_states(State::is_terminal)) };
        let mut st = self.conn.prepare_cached(&format!("SELECT {COLS} FROM agents {filter} ORDER BY seq"))?;
        let rows = st.query_map([], row)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Agents in `state`, oldest first.
    pub fn in_state(&self, state: State) -> Result<Vec<AgentRecord>> {
        let mut st = self.conn.prepare_cached(&format!("SELECT {COLS} FROM agents WHERE state = ?1 ORDER BY seq"))?;
        let rows = st.query_map([state.as_str()], row)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Replaces the stored submission.
    pub fn set_submission(&mut self, id: &str, submission: &serde_json::Value) -> Result<()> {
        self.conn.execute("UPDATE agents SET submission = ?2 WHERE id = ?1", params![id, submission.to_string()])?;
        Ok(())
    }

    /// Removes every trace of `id` (GC).
    pub fn delete(&mut self, id: &str) -> Result<()> {
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute("DELETE FROM journal WHERE agent_id = ?1", [id])?;
        tx.execute("DELETE FROM hunk_decisions WHERE agent_id = ?1", [id])?;
        tx.execute("DELETE FROM feedback WHERE agent_id = ?1", [id])?;
        tx.execute("DELETE FROM revisions WHERE agent_id = ?1", [id])?;
        tx.execute("DELETE FROM events WHERE agent_id = ?1", [id])?;
        tx.execute("DELETE FROM agents WHERE id = ?1", [id])?;
        tx.execute("DELETE FROM jj_changes WHERE agent = ?1", [id])?;
        tx.execute("DELETE FROM marks WHERE agent_id = ?1", [id])?;
        tx.commit()?;
        self.forget_old(id);
        Ok(())
    }

    /// Checks the database's own integrity (used by crash tests and `:checkhealth`).
    pub fn integrity_ok(&self) -> Result<bool> {
        let s: String = self.conn.query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
        Ok(s == "ok")
    }
}

/// Appends one event inside the caller's transaction (or connection).
pub(super) fn insert_event(conn: &Connection, id: &str, state: State, kind: &EventKind) -> Result<()> {
    let data = serde_json::to_string(kind).unwrap_or_default();
    conn.execute(
        "INSERT INTO events(agent_id, ts_ms, state, message, data) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![id, crate::time::now_ms(), state.as_str(), kind.describe(), data],
    )?;
    Ok(())
}

/// The states for which `pred` holds, as an SQL list (`'generating', 'executing'`): lifecycle
/// sets come from [`crate::lifecycle`], never from string literals here.
pub(crate) fn sql_states(pred: impl Fn(State) -> bool) -> String {
    State::ALL.into_iter().filter(|s| pred(*s)).map(|s| format!("'{}'", s.as_str())).collect::<Vec<_>>().join(", ")
}

/// A fresh 6-hex-digit id.
pub(super) fn new_id() -> String {
    format!("{:06x}", rand::random::<u32>() & 0xff_ffff)
}
