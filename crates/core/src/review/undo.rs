//! Undo: restores what accepting an agent changed, from its journal, refusing paths edited
//! since the accept. The agent is then `undone`: its proposal is back for review (ghost text,
//! diff) and `cairn accept` applies it again.

use super::rollback::journal_state;
use crate::error::{Error, Result};
use crate::lifecycle::State;
use crate::project::Project;
use crate::store::atomic;
use serde::Serialize;

/// What an undo restored.
#[derive(Debug, Clone, Serialize)]
pub struct UndoReport {
    pub id: String,
    pub restored: Vec<String>,
    pub removed: Vec<String>,
}

/// Restores what accepting `id` changed, refusing paths edited since.
pub fn undo(project: &Project, id: &str) -> Result<UndoReport> {
    let _lock = super::lock::acquire_for(project, id)?;
    let mut bin = project.bin()?;
    let rec = bin.get(id)?;
    if rec.state != State::Accepted {
        return Err(Error::IllegalTransition { id: id.to_string(), from: rec.state.to_string(), action: "undo (only accepted agents can be undone)".into() });
    }
    let journal = super::journal(project, &bin, id)?;
    // Each path's stamp before it is read: what goes back goes only over that (a save landing
    // after the check is kept, and stops the undo as an edit would have).
    let seen = journal.iter().map(|j| crate::store::fsx::stamp(&project.root, &j.path)).collect::<Result<Vec<_>>>()?;
    // Already restored (an interrupted undo) or still as accepted: both fine.
    let (_, edited) = journal_state(project, &journal)?;
    if !edited.is_empty() {
        return Err(Error::EditedSinceAccept { id: id.to_string(), paths: edited });
    }
    // A file held open for writing elsewhere is not replaced under its writer (see accept).
    super::prepare::refuse_held(project, &journal.iter().map(|j| j.path.clone()).collect::<Vec<_>>(), "undo", "")?;
    // Nothing is written back that is not what was there: each old content must match the
    // hash journaled before the accept (a damaged journal file or overlay is refused, naming
    // the files, before any is touched).
    let damaged: Vec<String> = journal
        .iter()
        .filter(|j| matches!((&j.old, &j.old_content), (Some((hash, _)), Some(content)) if crate::store::hash_bytes(content) != *hash))
        .map(|j| j.path.clone())
        .collect();
    if !damaged.is_empty() {
        return Err(Error::Overlay { id: id.to_string(), message: format!("undo refused, nothing restored: the journaled old contents of {} do not match their recorded hashes (the journal is damaged)", damaged.join(", ")) });
    }
    // What a killed undo left half-written goes first (we hold the review lock).
    let dirs: std::collections::BTreeSet<&str> = journal.iter().map(|j| crate::paths::parent(&j.path)).collect();
    for dir in dirs {
        atomic::remove_temps(&project.root, dir)?;
    }
    // What landed, as it is now (the accepted side: the journal holds hashes only), for the
    // proposal to hold again where hunk accepts took a file out of it.
    let landed: Vec<(String, Option<(Vec<u8>, u32)>)> = journal.iter().map(|j| Ok((j.path.clone(), crate::store::fsx::read(&project.root, &j.path)?))).collect::<Result<_>>()?;
    let mut report = UndoReport { id: id.to_string(), restored: Vec::new(), removed: Vec::new() };
    let mut touched = Vec::new();
    let mut saved = Vec::new();
    for (j, seen) in journal.iter().zip(&seen) {
        let over = match (&j.old, &j.old_content) {
            (Some((_, mode)), Some(content)) => atomic::prepare(&project.root, &j.path, content, *mode)?.commit_over(seen.as_ref())?,
            _ => super::rollback::remove_new_file_over(project, &j.path, seen.as_ref())?,
        };
        match (over, j.old.is_some()) {
            (atomic::Over::Moved, _) => saved.push(j.path.clone()),
            (_, true) => report.restored.push(j.path.clone()),
            (_, false) => report.removed.push(j.path.clone()),
        }
        touched.push(j.path.clone());
    }
    crate::sync::refresh(project, &touched)?;
    if !saved.is_empty() {
        // Saved while the undo ran: kept; undo again once it is reverted finishes the rest.
        return Err(Error::EditedSinceAccept { id: id.to_string(), paths: saved });
    }
    // The proposal is back for review: its overlay in place, then the state (a kill in
    // between leaves an accepted agent whose files are restored: undo again finishes it).
    project.unarchive_overlay(id)?;
    if let Some(overlay) = project.existing_overlay(id)? {
        for (path, now) in landed {
            if overlay.get(&path)?.is_none() {
                match now {
                    Some((bytes, mode)) => overlay.write(&path, &bytes, mode)?,
                    None => overlay.whiteout(&path)?,
                }
            }
        }
    }
    bin.mark_undone(id, touched)?;
    Ok(report)
}

