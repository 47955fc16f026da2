//! The accept journal in `bin.db`: what an accept changes, written and forced to disk before
//! the first project file is touched, so a crashed accept can be finished and an accepted one
//! undone.
//!
//! An accept's old contents go to a file of their own beside `bin.db`
//! (`journal/<agent>.old`, appended, the rows holding offset and length): a megabyte of them
//! per accept through the WAL and its checkpoints cost more than the whole rest of the
//! journal. Hunk accepts and `--force` re-journaling keep theirs in the row.

use super::{apply_transition, Bin, JournalEntry, TransitionExtra};
use crate::error::{Error, Result};
use crate::lifecycle::State;
use crate::store::{hash_from_blob, Hash};
use rusqlite::OptionalExtension;
use rusqlite::{params, TransactionBehavior};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The fsync a journal still owes (see [`Bin::begin_accept`]): the WAL's frames, the journal's
/// among them, reach the disk when it returns. Whatever else happened to the WAL meanwhile
/// (a checkpoint syncs what it copies), an fsync of the WAL file covers what was written to it.
#[must_use = "the journal is not on disk until synced"]
pub struct JournalSync {
    /// The WAL, and the agent's file of old contents.
    files: [PathBuf; 2],
    /// The agent's overlay (database, WAL), which keeps old contents too (`old_in_base`) and
    /// the rebased contents an accept writes to it.
    overlay: Option<(PathBuf, PathBuf)>,
}

impl JournalSync {
    /// Also makes the overlay at `db` durable: it holds what the journal points to.
    pub fn with_overlay(mut self, db: &Path) -> JournalSync {
        self.overlay = Some((db.to_path_buf(), crate::store::wal_of(db)));
        self
    }

    pub fn sync(self) -> Result<()> {
        for path in &self.files {
            sync_file(path)?;
        }
        // An empty WAL: the last checkpoint (the one a finished run makes) synced the database,
        // so all of it is on disk already.
        if let Some((db, wal)) = &self.overlay {
            if std::fs::metadata(wal).is_ok_and(|m| m.len() > 0) {
                sync_file(wal)?;
                sync_file(db)?;
            }
        }
        Ok(())
    }
}

/// fsync of `path`, if it exists: no WAL (a checkpoint folded it into the database and synced
/// that), or no old contents, is nothing to sync.
fn sync_file(path: &Path) -> Result<()> {
    match std::fs::File::open(path) {
        Ok(f) => f.sync_all().map_err(|e| Error::io(path, e)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io(path, e)),
    }
}

/// Adds the columns that point into the file of old contents, and the mark of an old content
/// kept in the overlay, to journals made before them.
pub(super) fn migrate(conn: &rusqlite::Connection) -> Result<()> {
    let has = |col: &str| -> Result<bool> { Ok(conn.prepare("SELECT 1 FROM pragma_table_info('journal') WHERE name = ?1")?.exists([col])?) };
    if !has("old_at")? {
        conn.execute_batch("ALTER TABLE journal ADD COLUMN old_at INTEGER; ALTER TABLE journal ADD COLUMN old_len INTEGER;")?;
    }
    if !has("old_base")? {
        conn.execute_batch("ALTER TABLE journal ADD COLUMN old_base INTEGER;")?;
    }
    Ok(())
}

impl Bin {
    /// Writes the accept journal for `id` and marks the accept pending, in one transaction,
    /// after checking the agent is still reviewing. The commit is safe from a process crash at
    /// once; [`JournalSync::sync`] forces it to disk (an fsync of the WAL), which the caller
    /// runs while it writes the new files and must finish before the first one goes in place.
    pub fn begin_accept(&mut self, id: &str, entries: &[JournalEntry]) -> Result<JournalSync> {
        self.write_journal(id, entries)?;
        Ok(self.journal_sync(id))
    }

    /// The fsync that puts every commit so far and `id`'s old contents on disk (a resumed
    /// accept's journal too).
    pub fn journal_sync(&self, id: &str) -> JournalSync {
        let db = Path::new(self.conn.path().unwrap_or_default());
        JournalSync { files: [crate::store::wal_of(db), self.old_contents(id)], overlay: None }
    }

    /// `journal/<id>.old` beside `bin.db`.
    fn old_contents(&self, id: &str) -> PathBuf {
        let db = Path::new(self.conn.path().unwrap_or_default());
        db.with_file_name("journal").join(format!("{}.old", crate::paths::id_part(id)))
    }

    /// Appends the entries' old contents to `id`'s file in one write; their places in it.
    fn append_old(&self, id: &str, entries: &[JournalEntry]) -> Result<Vec<Option<(u64, u64)>>> {
        if entries.iter().all(|e| e.old_content.is_none()) {
            return Ok(vec![None; entries.len()]);
        }
        let path = self.old_contents(id);
        let io = |e: std::io::Error| Error::io(&path, e);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        }
        let mut file = std::fs::OpenOptions::new().create(true).append(true).open(&path).map_err(io)?;
        let start = file.metadata().map_err(io)?.len();
        let mut bytes = Vec::new();
        let mut places = Vec::with_capacity(entries.len());
        for e in entries {
            places.push(e.old_content.as_ref().map(|c| {
                let at = start + bytes.len() as u64;
                bytes.extend_from_slice(c);
                (at, c.len() as u64)
            }));
        }
        file.write_all(&bytes).map_err(io)?;
        Ok(places)
    }

    /// Reads one old content back from `id`'s file.
    fn read_old(&self, id: &str, at: u64, len: u64) -> Result<Vec<u8>> {
        use std::os::unix::fs::FileExt;
        let path = self.old_contents(id);
        let mut buf = vec![0u8; len as usize];
        std::fs::File::open(&path)
            .and_then(|f| f.read_exact_at(&mut buf, at))
            .map_err(|e| Error::Database { path: path.clone(), message: format!("the accept journal's old contents cannot be read ({e})") })?;
        Ok(buf)
    }

    fn write_journal(&mut self, id: &str, entries: &[JournalEntry]) -> Result<()> {
        // The old contents first: a row never points at bytes not written yet.
        let places = self.append_old(id, entries)?;
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let (state, pending): (String, i64) =
            tx.query_row("SELECT state, accept_pending FROM agents WHERE id = ?1", [id], |r| Ok((r.get(0)?, r.get(1)?)))?;
        if !state.parse::<State>().is_ok_and(State::is_reviewable) || pending != 0 {
            return Err(Error::IllegalTransition { id: id.to_string(), from: state, action: "accept".into() });
        }
        for (e, place) in entries.iter().zip(places) {
            upsert(&tx, id, e, place)?;
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
            "UPDATE journal SET old_hash = ?3, old_mode = ?4, old_content = ?5, old_at = NULL, old_len = NULL, old_base = NULL WHERE agent_id = ?1 AND path = ?2",
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
            upsert(&tx, id, entry, None)?;
            tx.commit()?;
            Ok(())
        })();
        self.conn.pragma_update(None, "synchronous", "NORMAL")?;
        result
    }

    /// Takes back a [`Bin::journal_hunk`] whose write did not happen: the path's entry goes
    /// back to `before` (its new version then), or goes when there was none.
    pub fn unjournal_hunk(&mut self, id: &str, path: &str, before: Option<Option<(Hash, u32)>>) -> Result<()> {
        match before {
            None => self.conn.execute("DELETE FROM journal WHERE agent_id = ?1 AND path = ?2", params![id, path])?,
            Some(new) => self.conn.execute(
                "UPDATE journal SET new_hash = ?3, new_mode = ?4 WHERE agent_id = ?1 AND path = ?2",
                params![id, path, new.map(|n| n.0.to_vec()), new.map(|n| n.1)],
            )?,
        };
        Ok(())
    }

    /// An agent other than `id` whose accept was interrupted (its journal pending), if any.
    pub fn other_accept_pending(&self, id: &str) -> Result<Option<String>> {
        Ok(self.conn.query_row("SELECT id FROM agents WHERE accept_pending != 0 AND id != ?1 LIMIT 1", [id], |r| r.get(0)).optional()?)
    }

    /// Abandons an interrupted accept after its files were rolled back: the agent is plain
    /// reviewing again, with no journal.
    pub fn abandon_accept(&mut self, id: &str) -> Result<()> {
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute("DELETE FROM journal WHERE agent_id = ?1", [id])?;
        tx.execute("UPDATE agents SET accept_pending = 0 WHERE id = ?1", [id])?;
        tx.commit()?;
        self.forget_old(id);
        Ok(())
    }

    /// Removes `id`'s file of old contents (its journal rows are gone).
    pub(super) fn forget_old(&self, id: &str) {
        let _ = std::fs::remove_file(self.old_contents(id));
    }

    /// The journal's rows as stored: an old content kept in the agent's overlay
    /// (`old_in_base`) comes back as `None`; `review::journal` fetches it.
    pub fn journal_rows(&self, id: &str) -> Result<Vec<JournalEntry>> {
        let mut st = self.conn.prepare_cached(
            "SELECT path, old_hash, old_mode, old_content, new_hash, new_mode, old_at, old_len, old_base FROM journal WHERE agent_id = ?1 ORDER BY path",
        )?;
        let rows = st.query_map([id], |r| {
            let pair = |h: Option<Vec<u8>>, m: Option<u32>| hash_from_blob(h).map(|h| (h, m.unwrap_or(0o644)));
            let place: (Option<i64>, Option<i64>) = (r.get(6)?, r.get(7)?);
            let old_in_base = r.get::<_, Option<i64>>(8)?.is_some_and(|b| b != 0);
            let entry = JournalEntry { path: r.get(0)?, old: pair(r.get(1)?, r.get(2)?), old_content: r.get(3)?, old_in_base, new: pair(r.get(4)?, r.get(5)?) };
            Ok((entry, place))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (mut entry, place) = row?;
            // Undo, rollback and a resumed accept write these paths: only ones accept writes.
            if let Err(e) = crate::paths::refuse_unwritable(&entry.path) {
                let db = self.conn.path().unwrap_or_default().into();
                return Err(Error::Database { path: db, message: format!("the accept journal of agent {id} names a path Cairn never writes ({e}): it is damaged or not Cairn's; nothing was written") });
            }
            if let (None, (Some(at), Some(len))) = (&entry.old_content, place) {
                entry.old_content = Some(self.read_old(id, at as u64, len as u64)?);
            }
            out.push(entry);
        }
        Ok(out)
    }

    /// Every landing on `path` recorded in the journal (whole and hunk accepts, any agent but
    /// `except`): `(agent, hash before, hash after)`, newest accept first. What attributes a
    /// file's change since an agent read it to the agents that landed it.
    pub fn landings(&self, path: &str, except: &str) -> Result<Vec<(String, Option<Hash>, Option<Hash>)>> {
        let mut st = self.conn.prepare_cached(
            "SELECT j.agent_id, j.old_hash, j.new_hash FROM journal j JOIN agents a ON a.id = j.agent_id
             WHERE j.path = ?1 AND j.agent_id != ?2 ORDER BY a.state_changed_ms DESC",
        )?;
        let rows = st.query_map(params![path, except], |r| Ok((r.get::<_, String>(0)?, hash_from_blob(r.get(1)?), hash_from_blob(r.get(2)?))))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Completes a pending accept: accepted, pending cleared, event appended. Should power
    /// fail before this commit reaches the disk, the accept is still pending and the next
    /// `accept` re-verifies every file from the journal and finishes it.
    pub fn finish_accept(&mut self, id: &str, message: &str) -> Result<()> {
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute("UPDATE agents SET accept_pending = 0, undone = 0 WHERE id = ?1", [id])?;
        apply_transition(&tx, id, State::Accepted, &TransitionExtra { message: Some(message), ..Default::default() })?;
        tx.commit()?;
        Ok(())
    }

}

/// Inserts a journal entry, or moves an existing one's `new` (its `old` is what the path held
/// before the agent's first change landed, hunk or whole).
/// `place`: where the old content sits in the agent's file of old contents (else in the row).
fn upsert(tx: &rusqlite::Transaction<'_>, id: &str, e: &JournalEntry, place: Option<(u64, u64)>) -> Result<()> {
    let mut st = tx.prepare_cached(
        "INSERT INTO journal(agent_id, path, old_hash, old_mode, old_content, new_hash, new_mode, old_at, old_len, old_base) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
         ON CONFLICT(agent_id, path) DO UPDATE SET new_hash = excluded.new_hash, new_mode = excluded.new_mode",
    )?;
    let inline = if place.is_some() { None } else { e.old_content.as_deref() };
    let (at, len) = place.map_or((None, None), |(a, l)| (Some(a as i64), Some(l as i64)));
    let base = e.old_in_base.then_some(1);
    st.execute(params![id, e.path, e.old.map(|o| o.0.to_vec()), e.old.map(|o| o.1), inline, e.new.map(|n| n.0.to_vec()), e.new.map(|n| n.1), at, len, base])?;
    Ok(())
}
