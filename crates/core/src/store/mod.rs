//! Storage: the three SQLite databases of SPEC §2 and the project file system access that
//! cannot be fooled by symlinks.
//!
//! - [`stable`]: `stable.db`, the index of the project tree (paths, kinds, modes, hashes).
//! - [`overlay`]: `agent-<id>.db`, one agent's writes, whiteouts, base hashes, KV and audit log.
//! - [`bin`]: `bin.db`, lifecycle records, events, the accept journal.
//! - [`fsx`]: symlink-safe reads and atomic writes inside the project root; [`mode`]: the
//!   mode a file written there gets.
//!
//! Architecture invariant: only this module writes SQL.

pub mod bin;
pub mod atomic;
pub mod fsx;
pub mod held;
pub mod mode;
pub mod overlay;
pub mod stable;

use crate::error::Result;
use rusqlite::Connection;
use std::path::Path;

/// A 32-byte content hash (BLAKE3).
pub type Hash = [u8; 32];

/// Hashes file content.
pub fn hash_bytes(bytes: &[u8]) -> Hash {
    *blake3::hash(bytes).as_bytes()
}

/// The content hash as hex text.
pub fn hex_hash(bytes: &[u8]) -> String {
    hex::encode(hash_bytes(bytes))
}

/// Kind of an entry in a tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    File = 0,
    Dir = 1,
    Symlink = 2,
    /// A delete recorded in an agent overlay.
    Whiteout = 3,
}

impl Kind {
    pub(crate) fn from_i64(v: i64) -> Kind {
        match v {
            1 => Kind::Dir,
            2 => Kind::Symlink,
            3 => Kind::Whiteout,
            _ => Kind::File,
        }
    }
}

/// Version of every schema below; a database with another `user_version` gets the schema
/// (re)applied on open. Opening a current database costs no DDL.
pub(crate) const SCHEMA_VERSION: i32 = 4;

/// Opens (creating if needed) a database with the settings every cairn database uses: WAL, so
/// readers never block the writer; a busy timeout, so several cairn processes can share it;
/// synchronous=NORMAL, so commits survive any process crash.
pub(crate) fn open(path: &Path, schema: &str) -> Result<Connection> {
    open_flags(path, schema, rusqlite::OpenFlags::default())
}

/// [`open`] of a database that must already exist: never creates a file.
fn open_no_create(path: &Path, schema: &str) -> Result<Connection> {
    open_flags(path, schema, rusqlite::OpenFlags::default() - rusqlite::OpenFlags::SQLITE_OPEN_CREATE)
}

fn open_flags(path: &Path, schema: &str, flags: rusqlite::OpenFlags) -> Result<Connection> {
    // An error opening a database always names it: "file is not a database" alone helps nobody.
    let named = |e: rusqlite::Error| crate::error::Error::Database { path: path.to_path_buf(), message: format!("{e} (`cairn doctor` checks every database)") };
    let had_wal = wal_of(path).exists();
    let conn = Connection::open_with_flags(path, flags).map_err(named)?;
    harden(&conn).map_err(named)?;
    conn.busy_timeout(std::time::Duration::from_secs(10)).map_err(named)?;
    conn.pragma_update(None, "synchronous", "NORMAL").map_err(named)?;
    // Closing the last connection neither checkpoints nor deletes the WAL: cairn processes
    // open and close these databases many times a second, and each close would cost fsyncs
    // and the WAL's re-creation. Writers still checkpoint as the WAL grows (every 1,000 pages).
    conn.set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true).map_err(named)?;
    // A WAL left behind stays small: each checkpoint truncates it to 1 MiB at most.
    conn.pragma_update(None, "journal_size_limit", 1 << 20).map_err(named)?;
    // Reading the header page finds a truncated or foreign file here, not halfway through.
    let version: i32 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).map_err(named)?;
    conn.query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get::<_, i64>(0)).map_err(named)?;
    if version != SCHEMA_VERSION {
        conn.pragma_update(None, "journal_mode", "WAL").map_err(named)?;
        // One transaction for the whole schema: one commit, not one per table.
        conn.execute_batch(&format!("BEGIN IMMEDIATE; {schema} PRAGMA user_version = {SCHEMA_VERSION}; COMMIT;")).map_err(named)?;
    }
    keep_open(path);
    if !had_wal && wal_of(path).exists() {
        // Cairn's own WAL, not one a pull left (see `origin`).
        crate::origin::mark_new_wal(path)?;
    }
    Ok(conn)
}

/// Cairn's databases hold no triggers and no views, and their schema is never trusted to run
/// functions: a database that came with a clone or a pull (the directory is git-ignored, so
/// git overwrites its files at will) runs nothing on Cairn's reads and writes.
pub(crate) fn harden(conn: &Connection) -> rusqlite::Result<()> {
    use rusqlite::config::DbConfig;
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_TRIGGER, false)?;
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_VIEW, false)?;
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_TRUSTED_SCHEMA, false)?;
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_DEFENSIVE, true)?;
    Ok(())
}

/// The project databases this process keeps one idle connection to, for its whole life.
/// While any connection is open, SQLite keeps the WAL's index in shared memory; when the last
/// one closes, the next open rebuilds it by reading the whole WAL (up to 1,000 pages), and
/// cairn opens `bin.db` and `stable.db` several times per agent.
static KEPT: std::sync::Mutex<Vec<(std::path::PathBuf, u64, Connection)>> = std::sync::Mutex::new(Vec::new());

fn keep_open(path: &Path) {
    use std::os::unix::fs::MetadataExt;
    let long_lived = path.file_name().is_some_and(|n| n == "bin.db" || n == "stable.db");
    let Ok(ino) = std::fs::metadata(path).map(|m| m.ino()) else { return };
    let Ok(mut kept) = KEPT.lock() else { return };
    if !long_lived || kept.iter().any(|(p, i, _)| p == path && *i == ino) {
        return;
    }
    // A database replaced under the same name (a project re-initialized) gets a new keeper.
    kept.retain(|(p, _, _)| p != path);
    if let Ok(conn) = Connection::open(path) {
        let _ = harden(&conn);
        let _ = conn.set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true);
        // A first read maps the WAL index (SQLite opens it lazily); it stays mapped after.
        if conn.query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get::<_, i64>(0)).is_ok() {
            kept.push((path.to_path_buf(), ino, conn));
        }
    }
}

/// Opens a database that must already exist with table `table` (never creates one: an empty
/// or truncated file is damage, not a fresh start).
pub(crate) fn open_existing(path: &Path, schema: &str, table: &str) -> Result<Connection> {
    let damaged = |why: String| crate::error::Error::Database { path: path.to_path_buf(), message: why };
    let len = std::fs::metadata(path).map_err(|e| damaged(format!("cannot be read: {e}")))?.len();
    if len == 0 {
        return Err(damaged("is empty (truncated): it holds nothing any more".into()));
    }
    // Never created here: a reader racing with a move of the file (an overlay being archived)
    // must fail to open, not leave a new empty database at the old name.
    let conn = open_no_create(path, schema)?;
    let has: i64 = conn
        .query_row("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1", [table], |r| r.get(0))
        .map_err(|e| damaged(e.to_string()))?;
    if has == 0 {
        return Err(damaged(format!("is damaged: its table '{table}' is missing")));
    }
    Ok(conn)
}

/// The WAL file of the database at `db` (`<db>-wal`).
pub(crate) fn wal_of(db: &Path) -> std::path::PathBuf {
    std::path::PathBuf::from(format!("{}-wal", db.display()))
}

/// Converts a stored hash column back into a [`Hash`].
pub(crate) fn hash_from_blob(blob: Option<Vec<u8>>) -> Option<Hash> {
    blob.and_then(|b| b.try_into().ok())
}

#[cfg(test)]
mod tests {
    /// The root of a reader's race with an archive step: the file is moved between the check
    /// that it exists and the open. The open must fail, not leave an empty database behind.
    #[test]
    fn an_open_of_an_existing_database_never_creates_one() {
        let dir = std::path::PathBuf::from(format!("/tmp/cairn-no-create-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let gone = dir.join("agent-x.db");
        assert!(super::open_no_create(&gone, super::overlay::SCHEMA).is_err());
        assert!(!gone.exists(), "a new database was left at the old name");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
