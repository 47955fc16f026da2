//! `agent-<id>.db`: one agent's copy-on-write layer over the project. Writes hold full content;
//! deletes are whiteouts; `bases` records what the project held at each path when the agent
//! first read or wrote it, with its content when it is text-sized (the base of the three-way
//! review, see `review::merge`); `kv` holds the submission and the
//! run's result; `audit` is the append-only log of external calls.

use super::{hash_bytes, hash_from_blob, Hash, Kind};
use crate::error::Result;
use rusqlite::{params, Connection, OptionalExtension};
use std::path::Path;

mod create;

pub(crate) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS entries(
    path TEXT PRIMARY KEY,
    kind INTEGER NOT NULL,
    mode INTEGER NOT NULL,
    content BLOB,
    hash BLOB
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS bases(
    path TEXT PRIMARY KEY,
    hash BLOB,
    mode INTEGER,
    content BLOB
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS kv(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS audit(
    seq INTEGER PRIMARY KEY,
    ts_ms INTEGER NOT NULL,
    name TEXT NOT NULL,
    args TEXT NOT NULL,
    result TEXT,
    error TEXT,
    duration_us INTEGER NOT NULL
);
";

/// Snapshots of the proposal for interdiffs (made on first use: overlays from before have none).
const SNAPSHOTS: &str = "CREATE TABLE IF NOT EXISTS snapshots(slot INTEGER NOT NULL, path TEXT NOT NULL, content BLOB, PRIMARY KEY(slot, path)) WITHOUT ROWID;";

/// An agent's view of one path it changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// New or modified content with its mode.
    Write { content: Vec<u8>, mode: u32, hash: Hash },
    /// Deleted (whiteout).
    Delete,
}

/// What an overlay's entry does to its path ([`Overlay::kinds`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kinded {
    Added,
    Modified,
    Deleted,
}

/// One changed path with the base recorded for it.
#[derive(Debug, Clone)]
pub struct Changed {
    pub path: String,
    pub change: Change,
    /// Hash of the project file when the agent first touched the path; `None` = absent then.
    pub base: Option<Hash>,
    /// Mode of the project file then (kept when the agent rewrites it).
    pub base_mode: Option<u32>,
    /// The overlay keeps that file's content too ([`Overlay::base_content`]).
    pub base_kept: bool,
}

/// One row of the audit log.
#[derive(Debug, Clone, serde::Serialize)]
pub struct AuditRecord {
    pub ts_ms: i64,
    pub name: String,
    pub args: String,
    pub result: Option<String>,
    pub error: Option<String>,
    pub duration_us: i64,
}

/// An open agent overlay.
pub struct Overlay {
    conn: Connection,
}

/// How much of an overlay a reader maps (SQLite maps the file up to its size, at most this).
const MAPPED: i64 = 256 << 20;

impl Overlay {
    /// Opens or creates the overlay at `path`.
    pub fn open(path: &Path) -> Result<Overlay> {
        Overlay::with(super::open(path, SCHEMA)?)
    }

    /// Creates the overlay at `path` as a copy of `template`, an empty overlay made once (on
    /// first use): a new agent then costs one file copy, not a journaled switch to WAL, its
    /// fsyncs and the schema's DDL. Falls back to creating the schema itself. Either way the
    /// file is made whole beside its name and renamed into place: a creation cut short (no
    /// descriptor left, a full disk) leaves no empty database that would read as damaged.
    pub fn create(path: &Path, template: &Path) -> Result<Overlay> {
        create::place(path, template)?;
        Overlay::open(path)
    }

    /// An empty overlay in memory: the project as indexed, seen through a [`crate::view::View`].
    pub fn empty() -> Result<Overlay> {
        Overlay::with(super::open(Path::new(":memory:"), SCHEMA)?)
    }

    /// Opens an overlay that must exist and be whole (an agent past executing has one): an
    /// empty or damaged file is an error naming it, never an empty proposal.
    pub fn open_existing(path: &Path) -> Result<Overlay> {
        let conn = super::open_existing(path, SCHEMA, "entries")?;
        // Review and accept read a whole overlay at once: mapped, a page read is a copy, not
        // a system call. (Only cairn writes an overlay, and never truncates one under a reader.)
        conn.pragma_update(None, "mmap_size", MAPPED)?;
        Overlay::with(conn)
    }

    fn with(conn: Connection) -> Result<Overlay> {
        // Overlays made before base contents were kept gain the column (empty for old rows).
        let has_content: bool = conn.prepare("SELECT 1 FROM pragma_table_info('bases') WHERE name = 'content'")?.exists([])?;
        if !has_content {
            conn.execute("ALTER TABLE bases ADD COLUMN content BLOB", [])?;
        }
        Ok(Overlay { conn })
    }

    /// The database file.
    pub fn file(&self) -> std::path::PathBuf {
        std::path::PathBuf::from(self.conn.path().unwrap_or_default())
    }

    /// The overlay's entry for `path`: `Some(Some(..))` written, `Some(None)` whiteout.
    pub fn get(&self, path: &str) -> Result<Option<Option<(Vec<u8>, u32)>>> {
        let mut st = self.conn.prepare_cached("SELECT kind, content, mode FROM entries WHERE path = ?1")?;
        let found = st
            .query_row([path], |r| Ok((Kind::from_i64(r.get(0)?), r.get::<_, Option<Vec<u8>>>(1)?, r.get::<_, u32>(2)?)))
            .optional()?;
        Ok(found.map(|(kind, content, mode)| match kind {
            Kind::Whiteout => None,
            _ => Some((content.unwrap_or_default(), mode)),
        }))
    }

    /// Paths with an overlay entry: `(path, is_whiteout)`, ordered.
    pub fn paths(&self) -> Result<Vec<(String, bool)>> {
        let mut st = self.conn.prepare_cached("SELECT path, kind FROM entries ORDER BY path")?;
        let rows = st.query_map([], |r| Ok((r.get::<_, String>(0)?, Kind::from_i64(r.get(1)?) == Kind::Whiteout)))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Each changed path with what it is: a whiteout (deleted), a file the agent found
    /// (modified) or not (added). No content is read: what a listing shows.
    pub fn kinds(&self) -> Result<Vec<(String, Kinded)>> {
        let mut st = self.conn.prepare_cached("SELECT e.path, e.kind, b.hash IS NOT NULL FROM entries e LEFT JOIN bases b ON b.path = e.path ORDER BY e.path")?;
        let rows = st.query_map([], |r| {
            let kind = match (Kind::from_i64(r.get(1)?) == Kind::Whiteout, r.get::<_, Option<bool>>(2)?.unwrap_or(false)) {
                (true, _) => Kinded::Deleted,
                (false, true) => Kinded::Modified,
                (false, false) => Kinded::Added,
            };
            Ok((r.get::<_, String>(0)?, kind))
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Each path with an entry and its size in bytes (`None`: a whiteout), ordered. Cheap: no
    /// content is read (`length()` of a blob reads its header only).
    pub fn sizes(&self) -> Result<Vec<(String, Option<u64>)>> {
        let mut st = self.conn.prepare_cached("SELECT path, kind, length(content) FROM entries ORDER BY path")?;
        let rows = st.query_map([], |r| {
            let whiteout = Kind::from_i64(r.get(1)?) == Kind::Whiteout;
            Ok((r.get::<_, String>(0)?, (!whiteout).then(|| r.get::<_, Option<i64>>(2)).transpose()?.map(|n| n.unwrap_or(0) as u64)))
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Has the agent recorded a base for `path` yet?
    pub fn has_base(&self, path: &str) -> Result<bool> {
        let mut st = self.conn.prepare_cached("SELECT 1 FROM bases WHERE path = ?1")?;
        Ok(st.exists([path])?)
    }

    /// Records the project's state at `path` the first time the agent touches it (later calls
    /// keep the first record).
    /// `content` is the base's bytes when known (absent files have none).
    pub fn record_base(&self, path: &str, base: Option<(Hash, u32)>, content: Option<&[u8]>) -> Result<()> {
        let mut st = self.conn.prepare_cached("INSERT OR IGNORE INTO bases(path, hash, mode, content) VALUES (?1, ?2, ?3, ?4)")?;
        st.execute(params![path, base.as_ref().map(|b| b.0.to_vec()), base.map(|b| b.1), content])?;
        Ok(())
    }

    /// Makes the project's version `base` (hash, mode, content) the base of `path` from now
    /// on: the user resolved the agent's change against it.
    pub fn rebase_base(&self, path: &str, base: Option<(Hash, u32)>, content: Option<&[u8]>) -> Result<()> {
        let mut st = self.conn.prepare_cached("INSERT OR REPLACE INTO bases(path, hash, mode, content) VALUES (?1, ?2, ?3, ?4)")?;
        st.execute(params![path, base.as_ref().map(|b| b.0.to_vec()), base.map(|b| b.1), content])?;
        Ok(())
    }

    /// Writes `content` at `path`.
    pub fn write(&self, path: &str, content: &[u8], mode: u32) -> Result<()> {
        let mut st = self
            .conn
            .prepare_cached("INSERT OR REPLACE INTO entries(path, kind, mode, content, hash) VALUES (?1, ?2, ?3, ?4, ?5)")?;
        st.execute(params![path, Kind::File as i64, mode, content, hash_bytes(content).to_vec()])?;
        Ok(())
    }

    /// Records a delete of `path`.
    pub fn whiteout(&self, path: &str) -> Result<()> {
        let mut st = self
            .conn
            .prepare_cached("INSERT OR REPLACE INTO entries(path, kind, mode, content, hash) VALUES (?1, ?2, 0, NULL, NULL)")?;
        st.execute(params![path, Kind::Whiteout as i64])?;
        Ok(())
    }

    /// Drops every entry (a proposal rejected whole, starting again); bases stay.
    pub fn clear_entries(&self) -> Result<()> {
        self.conn.execute("DELETE FROM entries", [])?;
        Ok(())
    }

    /// Drops the overlay entry of `path` (the path shows the project's version again).
    pub fn forget(&self, path: &str) -> Result<()> {
        self.conn.execute("DELETE FROM entries WHERE path = ?1", [path])?;
        Ok(())
    }

    /// Every changed path with its base (hash and mode; the content, needed only to rebase, is
    /// [`Overlay::base_content`]), ordered by path.
    pub fn changes(&self) -> Result<Vec<Changed>> {
        let mut st = self.conn.prepare_cached(
            "SELECT e.path, e.kind, e.mode, e.content, e.hash, b.hash, b.mode, b.content IS NOT NULL
             FROM entries e LEFT JOIN bases b ON b.path = e.path ORDER BY e.path",
        )?;
        let rows = st.query_map([], |r| {
            let kind = Kind::from_i64(r.get(1)?);
            let change = if kind == Kind::Whiteout {
                Change::Delete
            } else {
                let content: Vec<u8> = r.get::<_, Option<Vec<u8>>>(3)?.unwrap_or_default();
                let hash = hash_from_blob(r.get(4)?).unwrap_or_else(|| hash_bytes(&content));
                Change::Write { content, mode: r.get(2)?, hash }
            };
            let base_kept = r.get::<_, Option<bool>>(7)?.unwrap_or(false);
            Ok(Changed { path: r.get(0)?, change, base: hash_from_blob(r.get(5)?), base_mode: r.get(6)?, base_kept })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// The content of `path` when the agent first touched it, when recorded (overlays from
    /// before the three-way review, and files over the read cap, have none: review is then
    /// two-way for that path).
    pub fn base_content(&self, path: &str) -> Result<Option<Vec<u8>>> {
        let mut st = self.conn.prepare_cached("SELECT content FROM bases WHERE path = ?1")?;
        Ok(st.query_row([path], |r| r.get::<_, Option<Vec<u8>>>(0)).optional()?.flatten())
    }

    /// Folds the WAL into the database file and empties it, once the agent is done writing:
    /// a finished proposal then lives in one file (losing a `-wal` afterwards loses nothing),
    /// and review and accept, which open the overlay afresh, never re-read a WAL to rebuild its
    /// index. Best effort: a reader still at work leaves the WAL as it is (nothing is lost;
    /// the next fold, or SQLite's own checkpoint, finishes it).
    pub fn fold(&self) {
        if !std::fs::metadata(super::wal_of(&self.file())).is_ok_and(|m| m.len() > 0) {
            return;
        }
        if let Err(e) = self.conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(())) {
            tracing::debug!("overlay checkpoint: {e}");
        }
    }

    /// Number of distinct paths written or deleted so far.
    pub fn changed_count(&self) -> Result<u64> {
        Ok(self.conn.query_row("SELECT count(*) FROM entries", [], |r| r.get::<_, i64>(0))? as u64)
    }

    /// Does the overlay hold a written file below directory `dir`? (An index range scan.)
    pub fn has_file_under(&self, dir: &str) -> Result<bool> {
        let mut st = self.conn.prepare_cached("SELECT 1 FROM entries WHERE path > ?1 AND path < ?2 AND kind != ?3 LIMIT 1")?;
        // Paths below `d/` sort between `d/` and `d0` ('0' follows '/').
        Ok(st.exists(params![format!("{dir}/"), format!("{dir}0"), Kind::Whiteout as i64])?)
    }

    /// Reads a KV value.
    pub fn kv_get(&self, key: &str) -> Result<Option<String>> {
        let mut st = self.conn.prepare_cached("SELECT value FROM kv WHERE key = ?1")?;
        Ok(st.query_row([key], |r| r.get(0)).optional()?)
    }

    /// Removes a KV value (nothing when absent).
    pub fn kv_delete(&self, key: &str) -> Result<()> {
        self.conn.execute("DELETE FROM kv WHERE key = ?1", [key])?;
        Ok(())
    }

    /// Sets a KV value.
    pub fn kv_set(&self, key: &str, value: &str) -> Result<()> {
        self.conn.execute("INSERT OR REPLACE INTO kv(key, value) VALUES (?1, ?2)", [key, value])?;
        Ok(())
    }

    /// Appends one external call to the audit log.
    pub fn audit(&self, rec: &AuditRecord) -> Result<()> {
        let mut st = self.conn.prepare_cached(
            "INSERT INTO audit(ts_ms, name, args, result, error, duration_us) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )?;
        st.execute(params![rec.ts_ms, rec.name, rec.args, rec.result, rec.error, rec.duration_us])?;
        Ok(())
    }

    /// The whole audit log, oldest first.
    pub fn audit_log(&self) -> Result<Vec<AuditRecord>> {
        let mut st = self.conn.prepare_cached("SELECT ts_ms, name, args, result, error, duration_us FROM audit ORDER BY seq")?;
        let rows = st.query_map([], |r| {
            Ok(AuditRecord {
                ts_ms: r.get(0)?,
                name: r.get(1)?,
                args: r.get(2)?,
                result: r.get(3)?,
                error: r.get(4)?,
                duration_us: r.get(5)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Replaces snapshot `slot` with `files` (path, content; `None` = deleted): slot 0 is the
    /// proposal as it last reached review, slot 1 what the user reviewed before the current
    /// revision (the interdiff's left side).
    pub fn snapshot_put(&self, slot: u8, files: &[(String, Option<Vec<u8>>)]) -> Result<()> {
        self.conn.execute_batch(SNAPSHOTS)?;
        self.conn.execute_batch("BEGIN IMMEDIATE")?;
        let put = || -> Result<()> {
            self.conn.execute("DELETE FROM snapshots WHERE slot = ?1", [slot])?;
            let mut st = self.conn.prepare_cached("INSERT INTO snapshots(slot, path, content) VALUES (?1, ?2, ?3)")?;
            for (path, content) in files {
                st.execute(params![slot, path, content])?;
            }
            Ok(())
        };
        match put() {
            Ok(()) => Ok(self.conn.execute_batch("COMMIT")?),
            Err(e) => {
                let _ = self.conn.execute_batch("ROLLBACK");
                Err(e)
            }
        }
    }

    /// Snapshot `slot` (empty when none was taken).
    pub fn snapshot_get(&self, slot: u8) -> Result<Vec<(String, Option<Vec<u8>>)>> {
        self.conn.execute_batch(SNAPSHOTS)?;
        let mut st = self.conn.prepare_cached("SELECT path, content FROM snapshots WHERE slot = ?1 ORDER BY path")?;
        let rows = st.query_map([slot], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Runs `f` inside one transaction (a batch of overlay changes commits at once).
    pub fn transaction<T>(&mut self, f: impl FnOnce(&Overlay) -> Result<T>) -> Result<T> {
        self.conn.execute_batch("BEGIN IMMEDIATE")?;
        match f(self) {
            Ok(v) => {
                self.conn.execute_batch("COMMIT")?;
                Ok(v)
            }
            Err(e) => {
                let _ = self.conn.execute_batch("ROLLBACK");
                Err(e)
            }
        }
    }
}
