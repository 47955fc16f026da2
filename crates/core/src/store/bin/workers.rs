//! Workers and the queue in `bin.db`: claiming the next queued agent within the concurrency
//! limit, recovering agents whose worker died, and re-queueing a run that must wait (a rate
//! limit: `not_before_ms`, the earliest claim, and `rate_limits`, the re-queues so far), and
//! holding newly queued agents until `cairn start` (`auto_spawn = false`: `not_before_ms` is
//! [`HELD`]).

use super::{apply_transition, insert_event, sql_states, AgentRecord, Bin, TransitionExtra, Worker};
use crate::events::EventKind;
use crate::error::Result;
use crate::lifecycle::{ErrorKind, State};
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

/// `not_before_ms` of a held agent: never due until released.
pub const HELD: i64 = i64::MAX;

/// Adds `not_before_ms` and `rate_limits` to a `bin.db` made before rate-limited re-queues
/// (once, under the write lock: two processes may open an old database at once).
pub(super) fn migrate(conn: &Connection) -> Result<()> {
    let has = |c: &Connection| c.prepare("SELECT not_before_ms, rate_limits FROM agents LIMIT 0").is_ok();
    if has(conn) {
        return Ok(());
    }
    let tx = rusqlite::Transaction::new_unchecked(conn, TransactionBehavior::Immediate)?;
    if !has(&tx) {
        tx.execute_batch("ALTER TABLE agents ADD COLUMN not_before_ms INTEGER; ALTER TABLE agents ADD COLUMN rate_limits INTEGER NOT NULL DEFAULT 0;")?;
    }
    tx.commit()?;
    Ok(())
}

/// MCP sessions' and wrap sessions' agents are not run by a worker of the queue: they
/// neither count against the concurrency limit nor are re-queued; their session ends them
/// (and `crate::wrap::recover` a wrap session whose `cairn wrap` died).
fn unqueued() -> String {
    format!("'{}', '{}'", crate::lifecycle::Provider::Mcp.as_str(), crate::lifecycle::Provider::Wrap.as_str())
}

impl Bin {
    /// Claims the next queued agent (highest priority, then oldest) for `worker`, moving it to
    /// generating, unless `max_running` agents already run. `only` restricts the claim to one id.
    /// An agent re-queued to wait (a rate limit) is not claimed before its `not_before_ms`.
    pub fn claim(&mut self, worker: Worker, max_running: u32, only: Option<&str>) -> Result<Option<AgentRecord>> {
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let running: i64 =
            tx.query_row(&format!("SELECT count(*) FROM agents WHERE state IN ({}) AND provider NOT IN ({})", sql_states(State::is_running), unqueued()), [], |r| r.get(0))?;
        if running >= max_running as i64 {
            return Ok(None);
        }
        let now = crate::time::now_ms();
        let due = "(not_before_ms IS NULL OR not_before_ms <= ?2)";
        let next: Option<String> = match only {
            // One agent by id: before its time too, when that time is a reservation (`cairn
            // run` reserves its own for a moment, so that no other worker takes it from under
            // it), never when it is a hold or a rate limit's back-off.
            Some(id) => tx
                .query_row(
                    &format!("SELECT id FROM agents WHERE state = ?1 AND ({due} OR (not_before_ms <> ?4 AND rate_limits = 0)) AND id = ?3"),
                    params![State::Queued.as_str(), now, id, HELD],
                    |r| r.get(0),
                )
                .optional()?,
            None => tx
                .query_row(&format!("SELECT id FROM agents WHERE state = ?1 AND {due} ORDER BY priority DESC, seq ASC LIMIT 1"), params![State::Queued.as_str(), now], |r| r.get(0))
                .optional()?,
        };
        let Some(id) = next else { return Ok(None) };
        // Claimed: a reservation is spent (re-queued after a crash, it is due at once).
        tx.execute("UPDATE agents SET worker_pid = ?2, worker_start = ?3, not_before_ms = NULL WHERE id = ?1", params![id, worker.pid, worker.start])?;
        apply_transition(&tx, &id, State::Generating, &TransitionExtra::default())?;
        tx.commit()?;
        Ok(Some(self.get(&id)?))
    }

    /// Releases held agents (all, or `id`): claimable from now on. Returns their ids.
    pub fn release(&mut self, id: Option<&str>) -> Result<Vec<String>> {
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let ids: Vec<String> = {
            let mut st = tx.prepare("SELECT id FROM agents WHERE state = ?1 AND not_before_ms = ?2 AND (?3 IS NULL OR id = ?3) ORDER BY seq")?;
            let rows = st.query_map(params![State::Queued.as_str(), HELD, id], |r| r.get(0))?;
            rows.collect::<rusqlite::Result<_>>()?
        };
        for id in &ids {
            tx.execute("UPDATE agents SET not_before_ms = NULL WHERE id = ?1", [id])?;
            insert_event(&tx, id, State::Queued, &EventKind::StateChanged { message: "started (cairn start)".into() })?;
        }
        tx.commit()?;
        Ok(ids)
    }

    /// Recovers agents whose worker died mid-run: re-queued once, errored ("interrupted") the
    /// second time. `alive` says whether a worker still runs. Returns the ids touched.
    pub fn recover(&mut self, alive: &dyn Fn(Worker) -> bool) -> Result<Vec<(String, State)>> {
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let stale: Vec<(String, u32, Option<Worker>)> = {
            let mut st = tx.prepare(&format!(
                "SELECT id, attempts, worker_pid, worker_start FROM agents WHERE state IN ({}) AND provider NOT IN ({})",
                sql_states(State::is_running),
                unqueued()
            ))?;
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
                    "UPDATE agents SET state = ?3, attempts = attempts + 1, worker_pid = NULL, worker_start = NULL, state_changed_ms = ?2 WHERE id = ?1",
                    params![id, now, State::Queued.as_str()],
                )?;
                super::insert_event(&tx, &id, State::Queued, &crate::events::EventKind::Requeued { message: "re-queued after its worker stopped".into() })?;
                touched.push((id, State::Queued));
            } else {
                let extra = TransitionExtra { error: Some((ErrorKind::Interrupted, "interrupted: its worker stopped twice mid-run")), ..Default::default() };
                apply_transition(&tx, &id, State::Errored, &extra)?;
                touched.push((id, State::Errored));
            }
        }
        tx.commit()?;
        Ok(touched)
    }

    /// A wrap session's agent (`cairn wrap`): executing at once, owned by `worker` (the
    /// `cairn wrap` process), `task` its description. Returns its id.
    pub fn wrap_begin(&mut self, task: &str, worker: Worker) -> Result<String> {
        let now = crate::time::now_ms();
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut id = super::new_id();
        while tx.query_row("SELECT 1 FROM agents WHERE id = ?1", [&id], |_| Ok(())).optional()?.is_some() {
            id = super::new_id();
        }
        tx.execute(
            "INSERT INTO agents(id, state, task, provider, priority, created_ms, state_changed_ms, worker_pid, worker_start) VALUES (?1, ?2, ?3, ?4, 1, ?5, ?5, ?6, ?7)",
            params![id, State::Executing.as_str(), task, crate::lifecycle::Provider::Wrap.as_str(), now, worker.pid, worker.start],
        )?;
        super::marks::claim(&tx, &id)?;
        super::insert_event(&tx, &id, State::Executing, &crate::events::EventKind::StateChanged { message: format!("wrap: {task}") })?;
        tx.commit()?;
        Ok(id)
    }

    /// A wrap session's new name (its task): the first prompt typed to it.
    pub fn rename(&self, id: &str, task: &str) -> Result<()> {
        self.conn.execute("UPDATE agents SET task = ?2 WHERE id = ?1", params![id, task])?;
        Ok(())
    }

    /// Agent `id` back to executing for `worker` (`cairn wrap --agent`): from reviewing, or
    /// from executing when its previous `cairn wrap` is gone (`alive` says).
    pub fn wrap_resume(&mut self, id: &str, worker: Worker, alive: &dyn Fn(Worker) -> bool) -> Result<()> {
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let rec = tx.query_row(&format!("SELECT {} FROM agents WHERE id = ?1", super::COLS), [id], super::row).optional()?.ok_or_else(|| crate::Error::UnknownAgent(id.to_string()))?;
        let resumable = !rec.worker.is_some_and(alive) && matches!(rec.state, State::Reviewing | State::Executing);
        if rec.provider != crate::lifecycle::Provider::Wrap || !resumable || rec.accept_pending {
            return Err(crate::Error::IllegalTransition { id: id.to_string(), from: rec.state.to_string(), action: "wrap --agent (a wrap session's proposal, reviewing, whose `cairn wrap` has ended)".into() });
        }
        if rec.state == State::Reviewing {
            apply_transition(&tx, id, State::Executing, &TransitionExtra { message: Some("wrap resumed"), ..Default::default() })?;
        }
        // Claimed: a reservation is spent (re-queued after a crash, it is due at once).
        tx.execute("UPDATE agents SET worker_pid = ?2, worker_start = ?3, not_before_ms = NULL WHERE id = ?1", params![id, worker.pid, worker.start])?;
        tx.commit()?;
        Ok(())
    }

    /// Wrap sessions whose `cairn wrap` is gone: executing, or held by a worker (a live
    /// session keeps its agent through the reviews of its turns).
    pub fn wrap_orphans(&self, alive: &dyn Fn(Worker) -> bool) -> Result<Vec<String>> {
        let mut st = self.conn.prepare(&format!("SELECT {} FROM agents WHERE provider = ?1 AND (state = ?2 OR worker_pid IS NOT NULL)", super::COLS))?;
        let rows = st.query_map([crate::lifecycle::Provider::Wrap.as_str(), State::Executing.as_str()], super::row)?.collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows.into_iter().filter(|r| !r.worker.is_some_and(alive)).map(|r| r.id).collect())
    }

    /// Agent `id` (generating or executing) back to the queue, its worker released: a run
    /// that failed for want of a resource (file descriptors) rather than by its own doing.
    pub fn requeue(&mut self, id: &str, why: &str) -> Result<()> {
        self.requeue_at(id, why, None)
    }

    /// Agent `id` back to the queue after a rate limit: no worker claims it before
    /// `not_before_ms`, and one more re-queue is counted ([`Bin::rate_limits`]).
    pub fn requeue_later(&mut self, id: &str, why: &str, not_before_ms: i64) -> Result<()> {
        self.requeue_at(id, why, Some(not_before_ms))
    }

    fn requeue_at(&mut self, id: &str, why: &str, not_before_ms: Option<i64>) -> Result<()> {
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let now = crate::time::now_ms();
        let n = tx.execute(
            &format!(
                "UPDATE agents SET state = ?3, worker_pid = NULL, worker_start = NULL, state_changed_ms = ?2, not_before_ms = ?4, rate_limits = rate_limits + (?4 IS NOT NULL) WHERE id = ?1 AND state IN ({})",
                sql_states(State::is_running)
            ),
            params![id, now, State::Queued.as_str(), not_before_ms],
        )?;
        if n == 1 {
            super::insert_event(&tx, id, State::Queued, &crate::events::EventKind::Requeued { message: why.to_string() })?;
        }
        tx.commit()?;
        Ok(())
    }

    /// How many times agent `id` was re-queued for a rate limit since the count was cleared.
    pub fn rate_limits(&self, id: &str) -> Result<u32> {
        Ok(self.conn.query_row("SELECT rate_limits FROM agents WHERE id = ?1", [id], |r| r.get(0)).optional()?.unwrap_or(0))
    }

    /// Starts agent `id`'s count of rate-limited re-queues afresh (a request got through, or
    /// the agent gave up).
    pub fn clear_rate_limits(&mut self, id: &str) -> Result<()> {
        self.conn.execute("UPDATE agents SET rate_limits = 0, not_before_ms = NULL WHERE id = ?1", [id])?;
        Ok(())
    }
}
