//! Undo: restores what accepting an agent changed, from its journal, refusing paths edited
//! since the accept. The agent is then `undone`: its proposal is back for review (ghost text,
//! diff) and `cairn accept` applies it again. Undoing a reject puts a rejected proposal back
//! to `reviewing` as it was: its overlay, its hunk decisions and its feedback.

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
    /// A reject was undone: the proposal is `reviewing` again (nothing in the project changed).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub unrejected: bool,
}

/// Restores what accepting `id` changed, refusing paths edited since; or, for a rejected
/// proposal, takes the reject back ([`unreject`]).
pub fn undo(project: &Project, id: &str) -> Result<UndoReport> {
    let _lock = super::lock::acquire_for(project, id)?;
    let mut bin = project.bin()?;
    let rec = bin.get(id)?;
    if rec.state == State::Rejected {
        return unreject(project, &mut bin, id);
    }
    if rec.state != State::Accepted {
        return Err(Error::IllegalTransition { id: id.to_string(), from: rec.state.to_string(), action: "undo (only an accept or a reject can be undone)".into() });
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
    // A file held open for writing elsewhere is not replaced under its writer (see accept);
    // the leases taken to look stay until each path is done, for one opened meanwhile.
    let leases = super::prepare::refuse_held(project, &journal.iter().map(|j| j.path.clone()).collect::<Vec<_>>(), "undo", "")?;
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
    let mut report = UndoReport { id: id.to_string(), restored: Vec::new(), removed: Vec::new(), unrejected: false };
    let (touched, saved, opened) = restore(project, &journal, &seen, &leases, &mut report)?;
    drop(leases);
    crate::sync::refresh(project, &touched)?;
    if let Some(path) = opened.first() {
        // Opened for writing while the undo ran: kept in place for its writer; undo again
        // once it is closed finishes the rest.
        return Err(Error::Busy(format!("undo stopped: a process opened {path} for writing during the undo, so it stays as accepted (replacing it would lose what the process writes). Close it (or stop the process) and undo again to finish")));
    }
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

/// The paths an undo touched, those saved meanwhile, those opened for writing meanwhile.
type Restored = (Vec<String>, Vec<String>, Vec<String>);

/// Puts each journaled path back, only over what was seen there and not under a process that
/// opens it for writing meanwhile.
fn restore(project: &Project, journal: &[crate::store::bin::JournalEntry], seen: &[Option<crate::store::fsx::Stamp>], leases: &crate::store::held::Leases, report: &mut UndoReport) -> Result<Restored> {
    let (mut touched, mut saved, mut opened) = (Vec::new(), Vec::new(), Vec::new());
    for (j, seen) in journal.iter().zip(seen) {
        let lease = leases.get(&j.path);
        let over = match (&j.old, &j.old_content) {
            (Some((_, mode)), Some(content)) => atomic::prepare(&project.root, &j.path, content, *mode)?.commit_over(seen.as_ref(), lease)?,
            _ => super::rollback::remove_new_file_over(project, &j.path, seen.as_ref(), lease)?,
        };
        match (over, j.old.is_some()) {
            (atomic::Over::Moved, _) => saved.push(j.path.clone()),
            (atomic::Over::Held, _) => opened.push(j.path.clone()),
            (_, true) => report.restored.push(j.path.clone()),
            (_, false) => report.removed.push(j.path.clone()),
        }
        touched.push(j.path.clone());
    }
    Ok((touched, saved, opened))
}

/// The state a rejected agent had when it was rejected, and when the reject happened: from
/// its events (the last move into `rejected`).
fn before_reject(bin: &crate::store::bin::Bin, id: &str) -> Result<Option<(State, i64)>> {
    let moves: Vec<_> = bin.events_of(id)?.into_iter().filter(|e| matches!(e.kind, crate::events::EventKind::StateChanged { .. })).collect();
    let Some(at) = moves.iter().rposition(|e| e.state == State::Rejected) else { return Ok(None) };
    Ok(at.checked_sub(1).map(|prev| (moves[prev].state, moves[at].ts_ms)))
}

/// Can the reject of `id` be undone: was it a proposal under review, is its overlay kept?
pub fn can_unreject(project: &Project, bin: &crate::store::bin::Bin, id: &str) -> Result<bool> {
    let reviewed = matches!(before_reject(bin, id)?, Some((State::Reviewing | State::Undone, _)));
    Ok(reviewed && (project.overlay_path(id).is_file() || project.archived_overlay_path(id).is_file()))
}

/// Takes back the reject of a proposal under review: its overlay back in place, the hunks the
/// reject remembered as rejected forgotten (the decisions made before it stay, and so does
/// its feedback), `reviewing` again. Nothing in the project changes.
fn unreject(project: &Project, bin: &mut crate::store::bin::Bin, id: &str) -> Result<UndoReport> {
    let refuse = |why: &str| Error::IllegalTransition { id: id.to_string(), from: State::Rejected.to_string(), action: format!("undo the reject: {why}") };
    let Some((was, at)) = before_reject(bin, id)? else { return Err(refuse("its history does not say what it was before")) };
    if !matches!(was, State::Reviewing | State::Undone) {
        return Err(refuse(&format!("it was {was}, not a proposal under review (re-queue the task instead)")));
    }
    if !(project.overlay_path(id).is_file() || project.archived_overlay_path(id).is_file()) {
        return Err(refuse("its proposal is gone (`cairn gc` removed it)"));
    }
    project.unarchive_overlay(id)?;
    bin.forget_rejected_since(id, at)?;
    bin.transition(id, State::Reviewing, "undo reject", crate::store::bin::TransitionExtra { message: Some("reject undone"), ..Default::default() })?;
    Ok(UndoReport { id: id.to_string(), restored: Vec::new(), removed: Vec::new(), unrejected: true })
}
