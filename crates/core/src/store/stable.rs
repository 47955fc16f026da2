//! `stable.db`: the index of the project tree. One row per file, directory and symlink: kind,
//! mode, size, mtime and (for files) the content hash. Content itself stays in the working tree,
//! which `stable.db` mirrors; [`crate::sync`] keeps the two in step.

use super::{hash_from_blob, Hash, Kind};
use crate::error::Result;
use rusqlite::{params, Connection, OptionalExtension, Row};
use std::path::Path;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS entries(
    path TEXT PRIMARY KEY,
    parent TEXT NOT NULL,
    kind INTEGER NOT NULL,
    mode INTEGER NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    hash BLOB
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS entries_parent ON entries(parent);
CREATE INDEX IF NOT EXISTS entries_dirs ON entries(kind) WHERE kind = 1;
";

/// One indexed path. For a directory, `size` is its inode number and `mtime_ns` its mtime as
/// of the last scan that read it whole, or 0 when unsure: together its stamp (see
/// [`crate::sync::scan`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub path: String,
    pub kind: Kind,
    pub mode: u32,
    pub size: u64,
    pub mtime_ns: i64,
    pub hash: Option<Hash>,
}

/// An open `stable.db`.
pub struct Stable {
    conn: Connection,
}

fn row(r: &Row) -> rusqlite::Result<Entry> {
    Ok(Entry {
        path: r.get(0)?,
        kind: Kind::from_i64(r.get(1)?),
        mode: r.get(2)?,
        size: r.get::<_, i64>(3)? as u64,
        mtime_ns: r.get(4)?,
        hash: hash_from_blob(r.get(5)?),
    })
}

const COLS: &str = "path, kind, mode, size, mtime_ns, hash";

impl Stable {
    /// Opens or creates the database at `path`.
    pub fn open(path: &Path) -> Result<Stable> {
        Ok(Stable { conn: super::open(path, SCHEMA)? })
    }

    /// The entry at `path`, if indexed.
    pub fn get(&self, path: &str) -> Result<Option<Entry>> {
        let mut st = self.conn.prepare_cached(&format!("SELECT {COLS} FROM entries WHERE path = ?1"))?;
        Ok(st.query_row([path], row).optional()?)
    }

    /// Direct children of directory `dir` (`""` = root).
    pub fn children(&self, dir: &str) -> Result<Vec<Entry>> {
        let mut st = self.conn.prepare_cached(&format!("SELECT {COLS} FROM entries WHERE parent = ?1 ORDER BY path"))?;
        let rows = st.query_map([dir], row)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Every entry, ordered by path.
    pub fn all(&self) -> Result<Vec<Entry>> {
        let mut st = self.conn.prepare_cached(&format!("SELECT {COLS} FROM entries ORDER BY path"))?;
        let rows = st.query_map([], row)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Every indexed directory with its stamp (mtime, inode), through the directories' own
    /// index: what a pruned scan stats, without reading the files' rows.
    pub fn dir_stamps(&self) -> Result<Vec<(String, i64, u64)>> {
        let mut st = self.conn.prepare_cached("SELECT path, mtime_ns, size FROM entries WHERE kind = 1")?;
        let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get::<_, i64>(2)? as u64)))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Number of indexed entries.
    pub fn count(&self) -> Result<u64> {
        Ok(self.conn.query_row("SELECT count(*) FROM entries", [], |r| r.get::<_, i64>(0))? as u64)
    }

    /// Starts a write transaction; the writer batches any number of changes into one commit.
    /// Folds the WAL into the database and truncates it. After a large batch (an init) the WAL
    /// holds megabytes that every later commit would otherwise copy in auto-checkpoints.
    pub fn checkpoint(&self) -> Result<()> {
        self.conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
        Ok(())
    }

    pub fn writer(&mut self) -> Result<Writer<'_>> {
        Ok(Writer { tx: self.conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)? })
    }
}

/// A batch of changes to `stable.db`, committed at once.
pub struct Writer<'c> {
    tx: rusqlite::Transaction<'c>,
}

impl Writer<'_> {
    /// Inserts or replaces an entry.
    pub fn upsert(&self, e: &Entry) -> Result<()> {
        // An update in place where the path is indexed: its parent (the one indexed column) is
        // the same, so the parent index is left alone (a replace would delete and re-insert it).
        let mut st = self.tx.prepare_cached(
            "INSERT INTO entries(path, parent, kind, mode, size, mtime_ns, hash) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
             ON CONFLICT(path) DO UPDATE SET kind = excluded.kind, mode = excluded.mode, size = excluded.size, mtime_ns = excluded.mtime_ns, hash = excluded.hash",
        )?;
        st.execute(params![
            e.path,
            crate::paths::parent(&e.path),
            e.kind as i64,
            e.mode,
            e.size as i64,
            e.mtime_ns,
            e.hash.as_ref().map(|h| h.as_slice())
        ])?;
        Ok(())
    }

    /// Is `path` indexed as a directory (this batch included)?
    pub fn is_dir(&self, path: &str) -> Result<bool> {
        let mut st = self.tx.prepare_cached("SELECT 1 FROM entries WHERE path = ?1 AND kind = ?2")?;
        Ok(st.exists(params![path, Kind::Dir as i64])?)
    }

    /// Removes `path` and, if it is a directory, everything below it.
    pub fn remove_tree(&self, path: &str) -> Result<()> {
        let mut st = self.tx.prepare_cached("DELETE FROM entries WHERE path = ?1 OR (path > ?2 AND path < ?3)")?;
        // Paths below `p/` sort between `p/` and `p0` ('0' follows '/').
        st.execute(params![path, format!("{path}/"), format!("{path}0")])?;
        Ok(())
    }

    /// Removes every entry (used by a full re-index).
    pub fn clear(&self) -> Result<()> {
        self.tx.execute("DELETE FROM entries", [])?;
        Ok(())
    }

    /// Commits the batch.
    pub fn commit(self) -> Result<()> {
        Ok(self.tx.commit()?)
    }
}
