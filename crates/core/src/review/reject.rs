//! Reject, and what undoes an accept's writes: the rollback of an interrupted accept and the
//! check undo shares (which journaled paths were edited since).

use super::accept::current;
use crate::error::{Error, Result};
use crate::project::Project;
use crate::store::bin::{AgentRecord, JournalEntry, TransitionExtra};
use crate::store::{atomic, fsx, Hash};
use crate::lifecycle::State;

/// Restores the journaled old content of every path an interrupted (or stopped) accept of `id`
/// reached, and marks the accept abandoned. A path that holds neither side (the user edited it
/// since) is left as the user has it: it is newer than both (said in the log).
pub(super) fn roll_back(project: &Project, id: &str) -> Result<()> {
    let mut bin = project.bin()?;
    let journal = super::journal(project, &bin, id)?;
    let (currents, edited) = journal_state(project, &journal)?;
    if !edited.is_empty() {
        tracing::warn!(agent = %id, "rolling back its accept: kept as edited since: {}", edited.join(", "));
    }
    let dirs: std::collections::BTreeSet<&str> = journal.iter().map(|j| crate::paths::parent(&j.path)).collect();
    for dir in dirs {
        atomic::remove_temps(&project.root, dir)?;
    }
    for (j, cur) in journal.iter().zip(currents) {
        if cur == j.old.map(|o| o.0) {
            if j.old.is_none() {
                // Not written, but its directories may have been made ahead of it.
                prune_empty_dirs(project, &j.path);
            }
            continue;
        }
        if edited.contains(&j.path) {
            continue;
        }
        match (&j.old, &j.old_content) {
            (Some((_, mode)), Some(content)) => atomic::write_atomic(&project.root, &j.path, content, *mode)?,
            _ => remove_new_file(project, &j.path)?,
        }
    }
    // Every journaled path: the index may hold the new version of one never renamed.
    let paths: Vec<String> = journal.iter().map(|j| j.path.clone()).collect();
    crate::sync::refresh(project, &paths)?;
    bin.abandon_accept(id)
}

/// Removes a file an accept created, and the directories it made for it (only empty ones:
/// an rmdir never removes anything else). Undo and a rollback share it.
pub(crate) fn remove_new_file(project: &Project, rel: &str) -> Result<()> {
    fsx::remove(&project.root, rel)?;
    prune_empty_dirs(project, rel);
    Ok(())
}

/// Removes the empty directories above `rel`, deepest first, up to the first that is not.
fn prune_empty_dirs(project: &Project, rel: &str) {
    for dir in crate::paths::ancestors(rel).collect::<Vec<_>>().into_iter().rev() {
        if std::fs::remove_dir(project.root.join(dir)).is_err() {
            break;
        }
    }
}

/// The current hash of each journaled path, and the paths that hold neither the journal's old
/// nor its new content (edited since): what undo and a rollback must refuse.
pub(crate) fn journal_state(project: &Project, journal: &[JournalEntry]) -> Result<(Vec<Option<Hash>>, Vec<String>)> {
    let mut currents = Vec::with_capacity(journal.len());
    let mut edited = Vec::new();
    for j in journal {
        let cur = current(project, &j.path)?.map(|c| c.0);
        if cur != j.old.map(|o| o.0) && cur != j.new.map(|n| n.0) {
            edited.push(j.path.clone());
        }
        currents.push(cur);
    }
    Ok((currents, edited))
}

/// Rejects agent `id` (reviewing, undone, queued or errored): its overlay is set aside;
/// nothing else changes. The `reason`, when given, is feedback for a revision (`cairn revise`).
///
/// An accept that failed midway (an I/O error, a kill) is rolled back first: every file it
/// wrote gets its journaled old content back, so rejecting never leaves a half-applied change.
pub fn reject(project: &Project, id: &str, reason: Option<&str>) -> Result<AgentRecord> {
    let _lock = super::lock::acquire(project)?;
    if project.bin()?.get(id)?.accept_pending {
        roll_back(project, id)?;
    }
    let now = project.bin()?.get(id)?;
    let session = matches!(now.provider, crate::lifecycle::Provider::Mcp | crate::lifecycle::Provider::Wrap);
    // Its hunks, remembered as rejected: a live agent writing them again unchanged does not
    // bring them back (carry-over).
    let hunks = super::hunk_review::file_hunks(project, id).unwrap_or_default();
    // A proposal can be rejected at any point, as it grows: running → errored → rejected
    // (SPEC §3), in one transaction (its runner never sees it only errored). An MCP or wrap
    // session ends with it (its next tool call is refused); a run is stopped by its runner,
    // which sees the decision and sets its overlay aside once it has closed it. A run that
    // ended meanwhile (now under review) is rejected as any other.
    let why = if session { "rejected while its session was open" } else { "rejected while it ran" };
    let stopped = TransitionExtra { error: Some((crate::lifecycle::ErrorKind::Interrupted, why)), ..Default::default() };
    let mut bin = project.bin()?;
    let ran = now.state.is_running() && match bin.transitions(id, "reject", [(State::Errored, stopped), (State::Rejected, TransitionExtra::default())]) {
        Ok(_) => true,
        Err(Error::IllegalTransition { .. }) if !bin.get(id)?.state.is_running() => false,
        Err(e) => return Err(e),
    };
    let rec = if ran { bin.get(id)? } else { bin.transition(id, State::Rejected, "reject", TransitionExtra::default())? };
    let rejected: Vec<(String, String)> = hunks.iter().flat_map(|f| f.hunks.iter().filter_map(|h| serde_json::to_string(h).ok().map(|j| (f.path.clone(), j)))).collect();
    project.bin()?.remember_rejected(id, &rejected)?;
    if let Some(reason) = reason {
        super::feedback::record_reason(project, id, reason)?;
    }
    if session || !ran {
        project.archive_overlay(id)?;
    }
    Ok(rec)
}

