//! Making a new agent's overlay: a copy of an empty template made once (one file copy, not a
//! journaled switch to WAL, its fsyncs and the schema's DDL), else the schema written afresh;
//! either way whole beside its name, then renamed into place. A creation cut short (no
//! descriptor left, a full disk) leaves no empty database at the name, which would read as a
//! damaged overlay for good and lose its agent.

use super::Overlay;
use crate::error::{Error, Result};
use std::path::Path;

/// Puts a new, empty overlay at `path` (nothing when there is one).
pub(super) fn place(path: &Path, template: &Path) -> Result<()> {
    if path.exists() {
        return Ok(());
    }
    let part = path.with_extension("db.part");
    let copied = (template.is_file() || make_template(template).is_ok()) && std::fs::copy(template, &part).is_ok();
    let made = match copied {
        true => Ok(()),
        false => {
            remove_part(&part);
            fresh(&part)
        }
    };
    let placed = made.and_then(|()| std::fs::rename(&part, path).map_err(|e| Error::io(path, e)));
    if placed.is_err() {
        remove_part(&part);
    }
    placed
}

/// Writes an empty overlay, self-contained, to `template`, atomically.
fn make_template(template: &Path) -> Result<()> {
    let part = template.with_extension(format!("part-{}", std::process::id()));
    fresh(&part)?;
    std::fs::rename(&part, template).map_err(|e| Error::io(template, e))
}

/// An empty overlay at `path`, whole in its one file (the WAL checkpointed and removed).
fn fresh(path: &Path) -> Result<()> {
    {
        let overlay = Overlay::open(path)?;
        overlay.conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")?;
    }
    for suffix in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    Ok(())
}

/// Removes a creation's part file and what SQLite made beside it.
fn remove_part(part: &Path) {
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", part.display()));
    }
}
