//! The jj change of each agent (`crate::jj`): which change holds its proposal, what Cairn
//! last wrote there, and what became of it.

use super::{insert_event, Bin};
use crate::events::EventKind;
use crate::error::Result;
use rusqlite::{params, OptionalExtension, Row};
use serde::Serialize;

pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS jj_changes(
    agent TEXT PRIMARY KEY,
    change TEXT NOT NULL,
    commit_id TEXT NOT NULL,
    wanted TEXT NOT NULL,
    diff TEXT NOT NULL,
    status TEXT NOT NULL,
    note TEXT,
    op TEXT,
    updated_ms INTEGER NOT NULL
) WITHOUT ROWID;
";

/// One agent's change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct JjRow {
    pub agent: String,
    /// jj's change id (stable across rewrites).
    pub change: String,
    /// The commit as Cairn last wrote or saw it.
    #[serde(skip)]
    pub commit: String,
    /// Fingerprint of the proposal the change was written from.
    #[serde(skip)]
    pub wanted: String,
    /// Fingerprint of jj's diff of the change (a rebase keeps it, an edit does not).
    #[serde(skip)]
    pub diff: String,
    /// `proposed` (the change holds the proposal), `squashed` (accepted: its content is in the
    /// working copy, the change abandoned), `abandoned` (rejected), or what happened to it in
    /// jj: `gone` (abandoned there), `edited` (edited there), `back` (visible again after an
    /// accept, e.g. `jj undo`).
    pub status: String,
    /// The last thing worth saying (a jj failure, why the change is not rewritten).
    pub note: Option<String>,
    /// The operation that abandoned the change (for bringing it back on undo).
    #[serde(skip)]
    pub op: Option<String>,
}

fn row(r: &Row) -> rusqlite::Result<JjRow> {
    Ok(JjRow { agent: r.get(0)?, change: r.get(1)?, commit: r.get(2)?, wanted: r.get(3)?, diff: r.get(4)?, status: r.get(5)?, note: r.get(6)?, op: r.get(7)? })
}

const COLUMNS: &str = "agent, change, commit_id, wanted, diff, status, note, op";

impl Bin {
    /// Agent `agent`'s change, if one was recorded.
    pub fn jj_get(&self, agent: &str) -> Result<Option<JjRow>> {
        Ok(self.conn.query_row(&format!("SELECT {COLUMNS} FROM jj_changes WHERE agent = ?1"), [agent], row).optional()?)
    }

    /// Every recorded change.
    pub fn jj_all(&self) -> Result<Vec<JjRow>> {
        let mut st = self.conn.prepare(&format!("SELECT {COLUMNS} FROM jj_changes ORDER BY agent"))?;
        let rows = st.query_map([], row)?.collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }

    /// Records (or replaces) an agent's change.
    pub fn jj_put(&self, r: &JjRow) -> Result<()> {
        self.conn.execute(
            &format!("INSERT OR REPLACE INTO jj_changes({COLUMNS}, updated_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"),
            params![r.agent, r.change, r.commit, r.wanted, r.diff, r.status, r.note, r.op, crate::time::now_ms()],
        )?;
        Ok(())
    }

    /// Appends a `jj` event for the agent (in its current state): what happened to its change.
    pub fn jj_event(&self, agent: &str, change: &str, what: &str) -> Result<()> {
        let state = self.get(agent)?.state;
        insert_event(&self.conn, agent, state, &EventKind::Jj { change: change.to_string(), what: what.to_string() })
    }

    /// Forgets an agent's change (the agent is gone).
    pub fn jj_delete(&self, agent: &str) -> Result<()> {
        self.conn.execute("DELETE FROM jj_changes WHERE agent = ?1", [agent])?;
        Ok(())
    }
}
