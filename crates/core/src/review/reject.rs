//! Reject: a proposal discarded at any point of its life, an interrupted accept rolled back
//! first.

use crate::error::{Error, Result};
use crate::project::Project;
use crate::store::bin::{AgentRecord, TransitionExtra};
use crate::lifecycle::State;

/// Rejects agent `id` (reviewing, undone, queued or errored): its overlay is set aside;
/// nothing else changes. The `reason`, when given, is feedback for a revision (`cairn revise`).
///
/// An accept that failed midway (an I/O error, a kill) is rolled back first: every file it
/// wrote gets its journaled old content back, so rejecting never leaves a half-applied change.
pub fn reject(project: &Project, id: &str, reason: Option<&str>) -> Result<AgentRecord> {
    let _lock = super::lock::acquire(project)?;
    if project.bin()?.get(id)?.accept_pending {
        super::rollback::roll_back(project, id)?;
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

