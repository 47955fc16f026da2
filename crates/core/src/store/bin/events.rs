//! The event stream in `bin.db` ([`crate::events`]) and the record of hunk-level review
//! decisions.

use super::{insert_event, Bin, Event};
use crate::error::Result;
use crate::events::EventKind;
use crate::lifecycle::State;
use rusqlite::{params, Connection};

/// Adds the `data` column (the typed event) to a `bin.db` made before it existed; older rows
/// read as state changes with their message.
pub(super) fn migrate(conn: &Connection) -> Result<()> {
    let has_data = conn.prepare("SELECT data FROM events LIMIT 0").is_ok();
    if !has_data {
        conn.execute_batch("ALTER TABLE events ADD COLUMN data TEXT")?;
    }
    if conn.prepare("SELECT hunk FROM hunk_decisions LIMIT 0").is_err() {
        conn.execute_batch("ALTER TABLE hunk_decisions ADD COLUMN hunk TEXT")?;
    }
    Ok(())
}

fn event_row(r: &rusqlite::Row) -> rusqlite::Result<Event> {
    let state: String = r.get(3)?;
    let message: String = r.get(4)?;
    let data: Option<String> = r.get(5)?;
    let kind = data.and_then(|d| serde_json::from_str(&d).ok()).unwrap_or_else(|| EventKind::StateChanged { message: message.clone() });
    Ok(Event { seq: r.get(0)?, agent_id: r.get(1)?, ts_ms: r.get(2)?, state: state.parse().unwrap_or(State::Errored), message, kind })
}

impl Bin {
    /// Events after `after_seq`, oldest first, at most `limit`.
    pub fn events_after(&self, after_seq: i64, limit: usize) -> Result<Vec<Event>> {
        let mut st = self.conn.prepare_cached("SELECT seq, agent_id, ts_ms, state, message, data FROM events WHERE seq > ?1 ORDER BY seq LIMIT ?2")?;
        let rows = st.query_map(params![after_seq, limit as i64], event_row)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Every event of agent `id`, oldest first.
    pub fn events_of(&self, id: &str) -> Result<Vec<Event>> {
        let mut st = self.conn.prepare_cached("SELECT seq, agent_id, ts_ms, state, message, data FROM events WHERE agent_id = ?1 ORDER BY seq")?;
        let rows = st.query_map([id], event_row)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Every event after `after_seq`, oldest first.
    pub fn events_since(&self, after_seq: i64) -> Result<Vec<Event>> {
        self.events_after(after_seq, i64::MAX as usize)
    }

    /// The newest event's sequence number (0 when none).
    pub fn last_event_seq(&self) -> Result<i64> {
        Ok(self.conn.query_row("SELECT coalesce(max(seq), 0) FROM events", [], |r| r.get(0))?)
    }

    /// Appends an event that is not a state change (a log line, a tool call, an undo).
    pub fn append(&self, id: &str, state: State, kind: &EventKind) -> Result<()> {
        insert_event(&self.conn, id, state, kind)
    }

    /// Records a hunk-level decision on `path` (and the matching event); `hunk`: the hunk as
    /// JSON, so that a later revision proposing it unchanged is decided the same way.
    pub fn decide_hunk(&self, id: &str, path: &str, accepted: bool, hunk: Option<&str>) -> Result<()> {
        let tx = self.write_tx()?;
        tx.execute(
            "INSERT INTO hunk_decisions(agent_id, path, ts_ms, accepted, hunk) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![id, path, crate::time::now_ms(), accepted, hunk],
        )?;
        insert_event(&tx, id, State::Reviewing, &EventKind::HunkDecided { path: path.to_string(), accepted })?;
        tx.commit()?;
        Ok(())
    }

    /// Remembers `hunks` (path, hunk as JSON) of `id` as rejected, without events: a proposal
    /// rejected whole.
    pub fn remember_rejected(&self, id: &str, hunks: &[(String, String)]) -> Result<()> {
        let tx = self.write_tx()?;
        for (path, hunk) in hunks {
            tx.execute("INSERT INTO hunk_decisions(agent_id, path, ts_ms, accepted, hunk) VALUES (?1, ?2, ?3, 0, ?4)", params![id, path, crate::time::now_ms(), hunk])?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Forgets the hunks a reject of `id` at `since_ms` remembered as rejected (an undone
    /// reject): the decisions made before it stay.
    pub fn forget_rejected_since(&self, id: &str, since_ms: i64) -> Result<()> {
        self.conn.execute("DELETE FROM hunk_decisions WHERE agent_id = ?1 AND NOT accepted AND ts_ms >= ?2", params![id, since_ms])?;
        Ok(())
    }

    /// The hunks of `id` rejected so far: path and hunk (JSON).
    pub fn rejected_hunks(&self, id: &str) -> Result<Vec<(String, String)>> {
        let mut st = self.conn.prepare_cached("SELECT path, hunk FROM hunk_decisions WHERE agent_id = ?1 AND NOT accepted AND hunk IS NOT NULL")?;
        let rows = st.query_map([id], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// How many hunks of `id` were accepted into the project.
    pub fn hunks_accepted(&self, id: &str) -> Result<u64> {
        Ok(self.conn.query_row("SELECT count(*) FROM hunk_decisions WHERE agent_id = ?1 AND accepted", [id], |r| r.get(0))?)
    }
}
