//! `bin.db`: lifecycle records of every agent, the event stream other processes follow, and
//! the accept journal (what an accept changed, for crash recovery and undo).
//!
//! Every state change happens inside one IMMEDIATE transaction that checks the move against
//! [`State::can_move_to`], writes the new state and appends an event, so a transition is
//! persisted before anyone reports it and two processes never both claim an agent.

use super::{hash_from_blob, Hash};
use crate::error::{Error, Result};
use crate::lifecycle::{Priority, State};
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
    undone INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS agents_state ON agents(state);
CREATE TABLE IF NOT EXISTS events(
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    agent_id TEXT NOT NULL,
    ts_ms INTEGER NOT NULL,
    state TEXT NOT NULL,
    message TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS journal(
    agent_id TEXT NOT NULL,
    path TEXT NOT NULL,
    old_hash BLOB,
    old_mode INTEGER,
    old_content BLOB,
    new_hash BLOB,
    new_mode INTEGER,
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
    pub provider: String,
    pub priority: Priority,
    pub created_ms: i64,
    pub state_changed_ms: i64,
    pub error_kind: Option<String>,
    pub error: Option<String>,
    pub submission: Option<serde_json::Value>,
    pub result: Option<serde_json::Value>,
    pub attempts: u32,
    pub worker: Option<Worker>,
    pub accept_pending: bool,
    pub undone: bool,
}

/// Identity of the process running an agent: pid plus its start time, so a recycled pid is
/// never mistaken for the original worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Worker {
    pub pid: i64,
    pub start: i64,
}

/// One lifecycle event.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Event {
    pub seq: i64,
    pub agent_id: String,
    pub ts_ms: i64,
    pub state: State,
    pub message: String,
}

/// One path of an accept, as journaled before the working tree is touched.
#[derive(Debug, Clone)]
pub struct JournalEntry {
    pub path: String,
    /// Project file before the accept (`None` = absent).
    pub old: Option<(Hash, u32)>,
    pub old_content: Option<Vec<u8>>,
    /// What the accept puts there (`None` = delete).
    pub new: Option<(Hash, u32)>,
}

/// Extra fields written together with a transition.
#[derive(Default)]
pub struct TransitionExtra<'a> {
    pub error: Option<(&'a str, &'a str)>,
    pub submission: Option<&'a serde_json::Value>,
    pub result: Option<&'a serde_json::Value>,
    pub message: Option<&'a str>,
}

const COLS: &str = "seq, id, state, task, provider, priority, created_ms, state_changed_ms, error_kind, error, \
                    submission, result, attempts, worker_pid, worker_start, accept_pending, undone";

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
        provider: r.get(4)?,
        priority: Priority::from_i64(r.get(5)?),
        created_ms: r.get(6)?,
        state_changed_ms: r.get(7)?,
        error_kind: r.get(8)?,
        error: r.get(9)?,
        submission: json(10)?,
        result: json(11)?,
        attempts: r.get(12)?,
        worker,
        accept_pending: r.get::<_, i64>(15)? != 0,
        undone: r.get::<_, i64>(16)? != 0,
    })
}

/// An open `bin.db`.
pub struct Bin {
    conn: Connection,
}

impl Bin {
    /// Opens or creates the database. Commits survive a crash of any process (WAL,
    /// synchronous=NORMAL); the accept journal alone is also forced to disk before any project
    /// file is touched (see [`Bin::begin_accept`]).
    pub fn open(path: &Path) -> Result<Bin> {
        Ok(Bin { conn: super::open(path, SCHEMA)? })
    }

    /// Inserts a new queued agent with a fresh short id.
    pub fn insert(&mut self, task: &str, provider: &str, priority: Priority) -> Result<AgentRecord> {
        let now = crate::time::now_ms();
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut id = new_id();
        while tx.query_row("SELECT 1 FROM agents WHERE id = ?1", [&id], |_| Ok(())).optional()?.is_some() {
            id = new_id();
        }
        tx.execute(
            "INSERT INTO agents(id, state, task, provider, priority, created_ms, state_changed_ms) VALUES (?1, 'queued', ?2, ?3, ?4, ?5, ?5)",
            params![id, task, provider, priority as i64, now],
        )?;
        tx.execute(
            "INSERT INTO events(agent_id, ts_ms, state, message) VALUES (?1, ?2, 'queued', ?3)",
            params![id, now, task],
        )?;
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
        let filter = if all { "" } else { "WHERE state NOT IN ('accepted', 'rejected', 'errored')" };
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

    /// Moves `id` to `to` if the move is legal from its current state; `action` names the
    /// operation for the error message. Returns the updated record.
    pub fn transition(&mut self, id: &str, to: State, action: &str, extra: TransitionExtra) -> Result<AgentRecord> {
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let (cur, pending): (String, i64) = tx
            .query_row("SELECT state, accept_pending FROM agents WHERE id = ?1", [id], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?
            .ok_or_else(|| Error::UnknownAgent(id.to_string()))?;
        if pending != 0 {
            return Err(Error::IllegalTransition {
                id: id.to_string(),
                from: "being accepted (the accept was interrupted)".into(),
                action: format!("{action}; run `cairn accept {id}` again to finish"),
            });
        }
        let from: State = cur.parse().map_err(Error::Usage)?;
        if !from.can_move_to(to) {
            return Err(Error::IllegalTransition { id: id.to_string(), from: from.to_string(), action: action.to_string() });
        }
        apply_transition(&tx, id, to, &extra)?;
        tx.commit()?;
        self.get(id)
    }

    /// Claims the next queued agent (highest priority, then oldest) for `worker`, moving it to
    /// generating, unless `max_running` agents already run. `only` restricts the claim to one id.
    pub fn claim(&mut self, worker: Worker, max_running: u32, only: Option<&str>) -> Result<Option<AgentRecord>> {
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let running: i64 = tx.query_row(
            "SELECT count(*) FROM agents WHERE state IN ('generating', 'executing', 'submitting')",
            [],
            |r| r.get(0),
        )?;
        if running >= max_running as i64 {
            return Ok(None);
        }
        let next: Option<String> = match only {
            Some(id) => tx.query_row("SELECT id FROM agents WHERE id = ?1 AND state = 'queued'", [id], |r| r.get(0)).optional()?,
            None => tx
                .query_row("SELECT id FROM agents WHERE state = 'queued' ORDER BY priority DESC, seq ASC LIMIT 1", [], |r| r.get(0))
                .optional()?,
        };
        let Some(id) = next else { return Ok(None) };
        tx.execute("UPDATE agents SET worker_pid = ?2, worker_start = ?3 WHERE id = ?1", params![id, worker.pid, worker.start])?;
        apply_transition(&tx, &id, State::Generating, &TransitionExtra::default())?;
        tx.commit()?;
        Ok(Some(self.get(&id)?))
    }

    /// Recovers agents whose worker died mid-run: re-queued once, errored ("interrupted") the
    /// second time. `alive` says whether a worker still runs. Returns the ids touched.
    pub fn recover(&mut self, alive: &dyn Fn(Worker) -> bool) -> Result<Vec<(String, State)>> {
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let stale: Vec<(String, u32, Option<Worker>)> = {
            let mut st = tx.prepare(
                "SELECT id, attempts, worker_pid, worker_start FROM agents WHERE state IN ('generating', 'executing', 'submitting')",
            )?;
            let rows = st.query_map([], |r| {
                let w = match (r.get::<_, Option<i64>>(2)?, r.get::<_, Option<i64>>(3)?) {
                    (Some(pid), Some(start)) => Some(Worker { pid, start }),
                    _ => None,
                };
                Ok((r.get(0)?, r.get(1)?, w))
            })?;
            rows.collect::<rusqlite::Result<_>>()?
        };
        let mut touched = Vec::new();
        for (id, attempts, worker) in stale {
            if worker.is_some_and(alive) {
                continue;
            }
            let now = crate::time::now_ms();
            if attempts == 0 {
                tx.execute(
                    "UPDATE agents SET state = 'queued', attempts = attempts + 1, worker_pid = NULL, worker_start = NULL, state_changed_ms = ?2 WHERE id = ?1",
                    params![id, now],
                )?;
                tx.execute(
                    "INSERT INTO events(agent_id, ts_ms, state, message) VALUES (?1, ?2, 'queued', 're-queued after its worker stopped')",
                    params![id, now],
                )?;
                touched.push((id, State::Queued));
            } else {
                let extra = TransitionExtra { error: Some(("interrupted", "interrupted: its worker stopped twice mid-run")), ..Default::default() };
                apply_transition(&tx, &id, State::Errored, &extra)?;
                touched.push((id, State::Errored));
            }
        }
        tx.commit()?;
        Ok(touched)
    }

    /// Events after `after_seq`, oldest first.
    pub fn events_since(&self, after_seq: i64) -> Result<Vec<Event>> {
        let mut st = self.conn.prepare_cached("SELECT seq, agent_id, ts_ms, state, message FROM events WHERE seq > ?1 ORDER BY seq")?;
        let rows = st.query_map([after_seq], |r| {
            let state: String = r.get(3)?;
            Ok(Event { seq: r.get(0)?, agent_id: r.get(1)?, ts_ms: r.get(2)?, state: state.parse().unwrap_or(State::Errored), message: r.get(4)? })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// The newest event's sequence number (0 when none).
    pub fn last_event_seq(&self) -> Result<i64> {
        Ok(self.conn.query_row("SELECT coalesce(max(seq), 0) FROM events", [], |r| r.get(0))?)
    }

    /// Appends an event that is not a state change (log lines, accept of a hunk, undo).
    pub fn note(&self, id: &str, state: State, message: &str) -> Result<()> {
        self.conn.execute(
            "INSERT INTO events(agent_id, ts_ms, state, message) VALUES (?1, ?2, ?3, ?4)",
            params![id, crate::time::now_ms(), state.as_str(), message],
        )?;
        Ok(())
    }

    /// Writes the accept journal for `id` and marks the accept pending, in one transaction,
    /// after checking the agent is still reviewing. The commit is fsynced: the journal must be
    /// on disk before the first project file changes.
    pub fn begin_accept(&mut self, id: &str, entries: &[JournalEntry]) -> Result<()> {
        self.conn.pragma_update(None, "synchronous", "FULL")?;
        let result = self.write_journal(id, entries);
        self.conn.pragma_update(None, "synchronous", "NORMAL")?;
        result
    }

    fn write_journal(&mut self, id: &str, entries: &[JournalEntry]) -> Result<()> {
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let (state, pending): (String, i64) =
            tx.query_row("SELECT state, accept_pending FROM agents WHERE id = ?1", [id], |r| Ok((r.get(0)?, r.get(1)?)))?;
        if state != "reviewing" || pending != 0 {
            return Err(Error::IllegalTransition { id: id.to_string(), from: state, action: "accept".into() });
        }
        tx.execute("DELETE FROM journal WHERE agent_id = ?1", [id])?;
        {
            let mut st = tx.prepare(
                "INSERT INTO journal(agent_id, path, old_hash, old_mode, old_content, new_hash, new_mode) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )?;
            for e in entries {
                st.execute(params![
                    id,
                    e.path,
                    e.old.map(|o| o.0.to_vec()),
                    e.old.map(|o| o.1),
                    e.old_content,
                    e.new.map(|n| n.0.to_vec()),
                    e.new.map(|n| n.1)
                ])?;
            }
        }
        tx.execute("UPDATE agents SET accept_pending = 1 WHERE id = ?1", [id])?;
        tx.commit()?;
        Ok(())
    }

    /// The journal of `id`'s accept, ordered by path.
    pub fn journal(&self, id: &str) -> Result<Vec<JournalEntry>> {
        let mut st = self.conn.prepare_cached(
            "SELECT path, old_hash, old_mode, old_content, new_hash, new_mode FROM journal WHERE agent_id = ?1 ORDER BY path",
        )?;
        let rows = st.query_map([id], |r| {
            let pair = |h: Option<Vec<u8>>, m: Option<u32>| hash_from_blob(h).map(|h| (h, m.unwrap_or(0o644)));
            Ok(JournalEntry {
                path: r.get(0)?,
                old: pair(r.get(1)?, r.get(2)?),
                old_content: r.get(3)?,
                new: pair(r.get(4)?, r.get(5)?),
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Completes a pending accept: accepted, pending cleared, event appended. Should power
    /// fail before this commit reaches the disk, the accept is still pending and the next
    /// `accept` re-verifies every file from the journal and finishes it.
    pub fn finish_accept(&mut self, id: &str, message: &str) -> Result<AgentRecord> {
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute("UPDATE agents SET accept_pending = 0 WHERE id = ?1", [id])?;
        apply_transition(&tx, id, State::Accepted, &TransitionExtra { message: Some(message), ..Default::default() })?;
        tx.commit()?;
        self.get(id)
    }

    /// Replaces the stored submission.
    pub fn set_submission(&mut self, id: &str, submission: &serde_json::Value) -> Result<()> {
        self.conn.execute("UPDATE agents SET submission = ?2 WHERE id = ?1", params![id, submission.to_string()])?;
        Ok(())
    }

    /// Marks an accepted agent as undone.
    pub fn mark_undone(&mut self, id: &str) -> Result<()> {
        self.conn.execute("UPDATE agents SET undone = 1 WHERE id = ?1", [id])?;
        self.note(id, State::Accepted, "undone")
    }

    /// Removes every trace of `id` (GC).
    pub fn delete(&mut self, id: &str) -> Result<()> {
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute("DELETE FROM journal WHERE agent_id = ?1", [id])?;
        tx.execute("DELETE FROM events WHERE agent_id = ?1", [id])?;
        tx.execute("DELETE FROM agents WHERE id = ?1", [id])?;
        tx.commit()?;
        Ok(())
    }

    /// Checks the database's own integrity (used by crash tests and `:checkhealth`).
    pub fn integrity_ok(&self) -> Result<bool> {
        let s: String = self.conn.query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
        Ok(s == "ok")
    }
}

fn apply_transition(tx: &rusqlite::Transaction, id: &str, to: State, extra: &TransitionExtra) -> Result<()> {
    let now = crate::time::now_ms();
    tx.execute("UPDATE agents SET state = ?2, state_changed_ms = ?3 WHERE id = ?1", params![id, to.as_str(), now])?;
    if let Some((kind, msg)) = extra.error {
        tx.execute("UPDATE agents SET error_kind = ?2, error = ?3 WHERE id = ?1", params![id, kind, msg])?;
    }
    if let Some(sub) = extra.submission {
        tx.execute("UPDATE agents SET submission = ?2 WHERE id = ?1", params![id, sub.to_string()])?;
    }
    if let Some(res) = extra.result {
        tx.execute("UPDATE agents SET result = ?2 WHERE id = ?1", params![id, res.to_string()])?;
    }
    if to.is_terminal() || to == State::Reviewing {
        tx.execute("UPDATE agents SET worker_pid = NULL, worker_start = NULL WHERE id = ?1", [id])?;
    }
    let message = match (extra.message, extra.error) {
        (Some(m), _) => m.to_string(),
        (None, Some((_, e))) => e.to_string(),
        (None, None) => extra
            .submission
            .and_then(|s| s.get("summary"))
            .and_then(|s| s.as_str())
            .unwrap_or("")
            .to_string(),
    };
    tx.execute(
        "INSERT INTO events(agent_id, ts_ms, state, message) VALUES (?1, ?2, ?3, ?4)",
        params![id, now, to.as_str(), message],
    )?;
    Ok(())
}

/// A fresh 6-hex-digit id.
fn new_id() -> String {
    format!("{:06x}", rand::random::<u32>() & 0xff_ffff)
}
