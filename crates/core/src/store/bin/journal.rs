//! The accept journal in `bin.db`: what an accept changes, written and forced to disk before
//! the first project file is touched, so a crashed accept can be finished and an accepted one
//! undone.

use super::{apply_transition, AgentRecord, Bin, JournalEntry, TransitionExtra};
use crate::error::{Error, Result};
use crate::lifecycle::State;
use crate::store::{hash_from_blob, Hash};
use rusqlite::{params, TransactionBehavior};

/// The fsync a journal still owes (see [`Bin::begin_accept`]): the WAL's frames, the journal's
/// among them, reach the disk when it returns. Whatever else happened to the WAL meanwhile
/// (a checkpoint syncs what it copies), an fsync of the WAL file covers what was written to it.
#[must_use = "the journal is not on disk until synced"]
pub struct JournalSync {
    wal: std::path::PathBuf,
}

impl JournalSync {
    pub fn sync(self) -> Result<()> {
        match std::fs::File::open(&self.wal) {
            Ok(f) => f.sync_all().map_err(|e| Error::io(&self.wal, e)),
            // No WAL: a checkpoint folded it into the database and synced that.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(Error::io(&self.wal, e)),
        }
    }
}

impl Bin {
    /// Writes the accept journal for `id` and marks the accept pending, in one transaction,
    /// after checking the agent is still reviewing. The commit is safe from a process crash at
    /// once; [`JournalSync::sync`] forces it to disk (an fsync of the WAL), which the caller
    /// runs while it writes the new files and must finish before the first one goes in place.
    pub fn begin_accept(&mut self, id: &str, entries: &[JournalEntry]) -> Result<JournalSync> {
        self.write_journal(id, entries)?;
        Ok(self.journal_sync())
    }

    /// The fsync that puts every commit so far on disk (a resumed accept's journal too).
    pub fn journal_sync(&self) -> JournalSync {
        let db = self.conn.path().unwrap_or_default().to_string();
        JournalSync { wal: std::path::PathBuf::from(format!("{db}-wal")) }
    }

    fn write_journal(&mut self, id: &str, entries: &[JournalEntry]) -> Result<()> {
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let (state, pending): (String, i64) =
            tx.query_row("SELECT state, accept_pending FROM agents WHERE id = ?1", [id], |r| Ok((r.get(0)?, r.get(1)?)))?;
        if state != State::Reviewing.as_str() || pending != 0 {
            return Err(Error::IllegalTransition { id: id.to_string(), from: state, action: "accept".into() });
        }
        for e in entries {
            upsert(&tx, id, e)?;
        }
        tx.execute("UPDATE agents SET accept_pending = 1 WHERE id = ?1", [id])?;
        tx.commit()?;
        Ok(())
    }

    /// The journal of `id`'s accept, ordered by path.
    /// Records, for a resumed `--force` accept, what the project holds now at a path the user
    /// edited after the first attempt: undo then gives back that edit, not the older content.
    pub fn rejournal_old(&mut self, id: &str, path: &str, old: Option<(Hash, u32)>, old_content: Option<&[u8]>) -> Result<()> {
        self.conn.execute(
            "UPDATE journal SET old_hash = ?3, old_mode = ?4, old_content = ?5 WHERE agent_id = ?1 AND path = ?2",
            params![id, path, old.map(|o| o.0.to_vec()), old.map(|o| o.1), old_content],
        )?;
        Ok(())
    }

    /// Journals one hunk accept of a reviewing agent before its write (durably): the path's
    /// first entry keeps the content from before any hunk landed, later ones only move `new`,
    /// so undo gives back the file as it was before the first hunk.
    pub fn journal_hunk(&mut self, id: &str, entry: &JournalEntry) -> Result<()> {
        self.conn.pragma_update(None, "synchronous", "FULL")?;
        let result = (|| {
            let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            upsert(&tx, id, entry)?;
            tx.commit()?;
            Ok(())
        })();
        self.conn.pragma_update(None, "synchronous", "NORMAL")?;
        result
    }

    /// Abandons an interrupted accept after its files were rolled back: the agent is plain
    /// reviewing again, with no journal.
    pub fn abandon_accept(&mut self, id: &str) -> Result<()> {
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute("DELETE FROM journal WHERE agent_id = ?1", [id])?;
        tx.execute("UPDATE agents SET accept_pending = 0 WHERE id = ?1", [id])?;
        tx.commit()?;
        Ok(())
    }

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
        self.write_finish(id, message)
    }

    fn write_finish(&mut self, id: &str, message: &str) -> Result<AgentRecord> {
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute("UPDATE agents SET accept_pending = 0 WHERE id = ?1", [id])?;
        apply_transition(&tx, id, State::Accepted, &TransitionExtra { message: Some(message), ..Default::default() })?;
        tx.commit()?;
        self.get(id)
    }

}

/// Inserts a journal entry, or moves an existing one's `new` (its `old` is what the path held
/// before the agent's first change landed, hunk or whole).
fn upsert(tx: &rusqlite::Transaction<'_>, id: &str, e: &JournalEntry) -> Result<()> {
    let mut st = tx.prepare_cached(
        "INSERT INTO journal(agent_id, path, old_hash, old_mode, old_content, new_hash, new_mode) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
         ON CONFLICT(agent_id, path) DO UPDATE SET new_hash = excluded.new_hash, new_mode = excluded.new_mode",
    )?;
    st.execute(params![id, e.path, e.old.map(|o| o.0.to_vec()), e.old.map(|o| o.1), e.old_content, e.new.map(|n| n.0.to_vec()), e.new.map(|n| n.1)])?;
    Ok(())
}
