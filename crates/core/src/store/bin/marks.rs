//! Agents' marks (`A`, `B`, ...): the short name signs, ghost headers, status lines, the
//! hunk list and `cairn status` give a pending agent. A mark is the agent's for its whole
//! life: it is given when the agent is created, in the transaction that creates it, and kept
//! whatever the other agents do (one landing or being rejected moves no mark).
//!
//! A new agent takes the letter after the last one given, skipping the letters pending agents
//! hold (so a letter an accept just freed is not handed out again at once); past `Z` it
//! wraps, and with all 26 held it takes a number (`27`, ...). An agent that comes back from a
//! decision (an undo, a revise of an accepted proposal) keeps its letter unless a pending
//! agent took it meanwhile: then it gets a new one, as no two pending agents share a mark.

use super::sql_states;
use crate::error::Result;
use crate::lifecycle::State;
use rusqlite::{params, Connection, OptionalExtension};
use std::collections::HashMap;

pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS marks(
    agent_id TEXT PRIMARY KEY,
    mark TEXT NOT NULL,
    given INTEGER NOT NULL
) WITHOUT ROWID;
";

/// Adds the `marks` table to a `bin.db` made before marks were kept.
pub(super) fn migrate(conn: &Connection) -> Result<()> {
    conn.execute_batch(SCHEMA)?;
    Ok(())
}

const LETTERS: &[u8; 26] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ";

/// The mark a new agent takes: the letter after `last` (the last one given), wrapping, that no
/// pending agent holds (`held`); a number from 27 when every letter is held.
fn next_mark(last: Option<&str>, held: &[String]) -> String {
    let start = last.and_then(|l| LETTERS.iter().position(|c| l.as_bytes() == [*c])).map_or(0, |i| i + 1);
    let free = |m: &str| !held.iter().any(|h| h == m);
    (0..LETTERS.len())
        .map(|k| (LETTERS[(start + k) % LETTERS.len()] as char).to_string())
        .find(|m| free(m))
        .unwrap_or_else(|| (LETTERS.len() + 1..).map(|n| n.to_string()).find(|m| free(m)).unwrap_or_default())
}

/// Marks held by pending (non-terminal) agents other than `except`.
fn held(conn: &Connection, except: &str) -> Result<Vec<String>> {
    let sql = format!("SELECT m.mark FROM marks m JOIN agents a ON a.id = m.agent_id WHERE a.id != ?1 AND a.state NOT IN ({})", sql_states(State::is_terminal));
    let mut st = conn.prepare_cached(&sql)?;
    let rows = st.query_map([except], |r| r.get(0))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Gives agent `id` its mark inside the caller's transaction: it keeps the one it has unless a
/// pending agent holds that one; else the next free one.
pub(super) fn claim(conn: &Connection, id: &str) -> Result<()> {
    let current: Option<String> = conn.prepare_cached("SELECT mark FROM marks WHERE agent_id = ?1")?.query_row([id], |r| r.get(0)).optional()?;
    let held = held(conn, id)?;
    if current.as_ref().is_some_and(|m| !held.contains(m)) {
        return Ok(());
    }
    let (last, given): (Option<String>, i64) =
        conn.query_row("SELECT (SELECT mark FROM marks ORDER BY given DESC LIMIT 1), COALESCE(MAX(given), 0) + 1 FROM marks", [], |r| Ok((r.get(0)?, r.get(1)?)))?;
    let mark = next_mark(last.as_deref(), &held);
    conn.execute(
        "INSERT INTO marks(agent_id, mark, given) VALUES (?1, ?2, ?3) ON CONFLICT(agent_id) DO UPDATE SET mark = excluded.mark, given = excluded.given",
        params![id, mark, given],
    )?;
    Ok(())
}

impl super::Bin {
    /// The marks of the pending agents, by id. An agent recorded before marks were kept gets
    /// its mark here (oldest first), once.
    pub fn marks(&self) -> Result<HashMap<String, String>> {
        let pending = format!("SELECT a.id, m.mark FROM agents a LEFT JOIN marks m ON m.agent_id = a.id WHERE a.state NOT IN ({}) ORDER BY a.seq", sql_states(State::is_terminal));
        let read = |conn: &Connection| -> Result<Vec<(String, Option<String>)>> {
            let mut st = conn.prepare_cached(&pending)?;
            let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
            Ok(rows.collect::<rusqlite::Result<_>>()?)
        };
        let mut rows = read(&self.conn)?;
        if rows.iter().any(|(_, m)| m.is_none()) {
            let tx = self.write_tx()?;
            for (id, _) in read(&tx)?.into_iter().filter(|(_, m)| m.is_none()) {
                claim(&tx, &id)?;
            }
            rows = read(&tx)?;
            tx.commit()?;
        }
        Ok(rows.into_iter().filter_map(|(id, m)| Some((id, m?))).collect())
    }

    /// The mark of agent `id` while it is pending; `None` once it is decided (its letter may
    /// be another agent's by then).
    pub fn mark_of(&self, id: &str) -> Result<Option<String>> {
        Ok(self.marks()?.remove(id))
    }
}

#[cfg(test)]
mod tests {
    use super::next_mark;

    #[test]
    fn next_mark_takes_the_letter_after_the_last_one_given_and_skips_held_ones() {
        let held = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let all: Vec<String> = (b'A'..=b'Z').map(|c| (c as char).to_string()).collect();
        for (last, holding, want) in [
            (None, held(&[]), "A"),
            (Some("A"), held(&["A"]), "B"),
            // A landed: the next agent still takes D, not the A just freed.
            (Some("C"), held(&["B", "C"]), "D"),
            (Some("Z"), held(&["Z"]), "A"),
            (Some("Y"), held(&["Z", "A"]), "B"),
            (Some("Q"), all.clone(), "27"),
        ] {
            assert_eq!(next_mark(last, &holding), want, "after {last:?} holding {holding:?}");
        }
        let mut with_27 = all;
        with_27.push("27".into());
        assert_eq!(next_mark(Some("Q"), &with_27), "28");
    }
}
