//! The event stream in `bin.db` that other processes follow (notifications, ghost text), and
//! the record of hunk-level review decisions.

use super::{Bin, Event};
use crate::error::Result;
use crate::lifecycle::State;
use rusqlite::params;

impl Bin {
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

    /// Records a hunk-level decision on `path` (and the matching event).
    pub fn decide_hunk(&self, id: &str, path: &str, accepted: bool) -> Result<()> {
        self.conn.execute(
            "INSERT INTO hunk_decisions(agent_id, path, ts_ms, accepted) VALUES (?1, ?2, ?3, ?4)",
            params![id, path, crate::time::now_ms(), accepted],
        )?;
        let verb = if accepted { "accepted" } else { "rejected" };
        self.note(id, State::Reviewing, &format!("{verb} a hunk of {path}"))
    }

    /// How many hunks of `id` were accepted into the project.
    pub fn hunks_accepted(&self, id: &str) -> Result<u64> {
        Ok(self.conn.query_row("SELECT count(*) FROM hunk_decisions WHERE agent_id = ?1 AND accepted", [id], |r| r.get(0))?)
    }
}
