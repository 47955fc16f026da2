//! Hunk-level review: the hunks of every text file of a proposal (ghost text), and accepting
//! or rejecting one hunk. Decisions are recorded in `bin.db` (`hunk_decisions`), so an agent
//! whose every hunk has been decided ends accepted when any hunk landed, else rejected.

use super::accept::check_writable;
use super::diff::{changes, ChangeKind};
use super::hunks::{apply_hunk, hunks_between, Hunk};
use crate::error::{Error, Result};
use crate::lifecycle::State;
use crate::project::Project;
use crate::store::bin::TransitionExtra;
use crate::store::overlay::Overlay;
use crate::store::{fsx, hash_bytes};
use serde::Serialize;

/// A text file of a proposal with its hunks (binary files have none).
#[derive(Debug, Clone, Serialize)]
pub struct FileHunks {
    pub path: String,
    pub kind: ChangeKind,
    pub hunks: Vec<Hunk>,
}

/// The hunks of every text file agent `id` changes, against the project as it is now.
pub fn file_hunks(project: &Project, id: &str) -> Result<Vec<FileHunks>> {
    Ok(changes(project, id)?
        .into_iter()
        .filter(|c| !c.binary)
        .map(|c| {
            let old = String::from_utf8_lossy(c.old.as_deref().unwrap_or_default()).into_owned();
            let new = String::from_utf8_lossy(c.new.as_deref().unwrap_or_default()).into_owned();
            FileHunks { hunks: hunks_between(&old, &new), path: c.path, kind: c.kind }
        })
        .collect())
}

/// What a hunk-level action left.
#[derive(Debug, Clone, Serialize)]
pub struct HunkReport {
    pub id: String,
    pub path: String,
    /// Hunks of this file still proposed.
    pub remaining: usize,
    /// The agent's state afterwards (accepted or rejected once nothing is left).
    pub state: State,
}

fn find_hunk(project: &Project, id: &str, path: &str, hunk: &Hunk) -> Result<(Overlay, String, String)> {
    let rec = project.bin()?.get(id)?;
    if rec.state != State::Reviewing || rec.accept_pending {
        return Err(Error::IllegalTransition { id: id.to_string(), from: rec.state.to_string(), action: "review a hunk".into() });
    }
    let overlay = project.existing_overlay(id)?.ok_or_else(|| Error::NoProposal(id.to_string()))?;
    let new = match overlay.get(path)? {
        Some(Some((bytes, _))) => String::from_utf8(bytes).map_err(|_| Error::Hunk(format!("{path} is binary: accept or reject the whole agent")))?,
        _ => return Err(Error::Hunk(format!("agent {id} proposes no text change to {path}"))),
    };
    let old = match fsx::read(&project.root, path)? {
        Some((bytes, _)) => String::from_utf8_lossy(&bytes).into_owned(),
        None => String::new(),
    };
    if !hunks_between(&old, &new).contains(hunk) {
        return Err(Error::Hunk(format!("that hunk of {path} is no longer part of agent {id}'s proposal; refresh and try again")));
    }
    Ok((overlay, old, new))
}

/// Ends the agent when no change is left: accepted if any hunk landed, else rejected.
fn settle(project: &Project, id: &str, overlay: Overlay, any_accepted: bool) -> Result<State> {
    if !changes(project, id)?.is_empty() {
        return Ok(State::Reviewing);
    }
    drop(overlay);
    let mut bin = project.bin()?;
    let accepted = any_accepted || bin.hunks_accepted(id)? > 0;
    let to = if accepted { State::Accepted } else { State::Rejected };
    let message = if accepted { "accepted hunk by hunk" } else { "rejected hunk by hunk" };
    bin.transition(id, to, "finish review", TransitionExtra { message: Some(message), ..Default::default() })?;
    project.archive_overlay(id)?;
    Ok(to)
}

/// Accepts one hunk of `path` into the project, with accept's stale-base rule: the project
/// file must still be what the agent based its change on (or what earlier hunk accepts made
/// it). The rest of the proposal stays, recomputed against the new file.
pub fn accept_hunk(project: &Project, id: &str, path: &str, hunk: &Hunk) -> Result<HunkReport> {
    let (overlay, old, new) = find_hunk(project, id, path, hunk)?;
    let changed = overlay.changes()?;
    let base = changed.iter().find(|c| c.path == path).and_then(|c| c.base);
    let current = fsx::read(&project.root, path)?;
    if current.as_ref().map(|(b, _)| hash_bytes(b)) != base {
        return Err(Error::StaleBase { id: id.to_string(), paths: vec![path.to_string()] });
    }
    super::accept::refuse_unsafe_path(project, path)?;
    check_writable(project, path)?;
    let updated = apply_hunk(&old, hunk).ok_or_else(|| Error::Hunk(format!("hunk does not apply to {path}")))?;
    let mode = current.map(|(_, m)| m).or_else(|| overlay.get(path).ok().flatten().flatten().map(|(_, m)| m)).unwrap_or(0o644) & 0o777;
    fsx::write_atomic(&project.root, path, updated.as_bytes(), mode)?;
    crate::sync::record_known(project, &[(path.to_string(), Some(hash_bytes(updated.as_bytes())))])?;
    // The project moved on by this hunk: it is the agent's new base for the path.
    overlay.rebase(path, Some((hash_bytes(updated.as_bytes()), mode)))?;
    if updated == new {
        overlay.forget(path)?;
    }
    let remaining = hunks_between(&updated, &new).len();
    project.bin()?.decide_hunk(id, path, true)?;
    let state = settle(project, id, overlay, true)?;
    Ok(HunkReport { id: id.to_string(), path: path.to_string(), remaining, state })
}

/// Drops one hunk from the agent's proposal for `path`; the project is not touched.
pub fn reject_hunk(project: &Project, id: &str, path: &str, hunk: &Hunk) -> Result<HunkReport> {
    let (overlay, old, new) = find_hunk(project, id, path, hunk)?;
    // Undo the hunk inside the agent's version: find it there by its added lines.
    let new_hunks = hunks_between(&old, &new);
    let index = new_hunks.iter().position(|h| h == hunk).unwrap_or(0);
    let mut reverted = old.clone();
    for (i, h) in new_hunks.iter().enumerate().rev() {
        if i != index {
            reverted = apply_hunk(&reverted, h).unwrap_or(reverted);
        }
    }
    let mode = overlay.get(path)?.flatten().map(|(_, m)| m).unwrap_or(0o644);
    if reverted == old {
        overlay.forget(path)?;
    } else {
        overlay.write(path, reverted.as_bytes(), mode)?;
    }
    let remaining = hunks_between(&old, &reverted).len();
    project.bin()?.decide_hunk(id, path, false)?;
    let state = settle(project, id, overlay, false)?;
    Ok(HunkReport { id: id.to_string(), path: path.to_string(), remaining, state })
}
