//! Hunk-level review: the hunks of every text file of a proposal (ghost text), and accepting
//! or rejecting one hunk. Decisions are recorded in `bin.db` (`hunk_decisions`), so an agent
//! whose every hunk has been decided ends accepted when any hunk landed, else rejected.

use super::prepare::check_writable;
use super::diff::{changes, ChangeKind, FileChange};
use super::hunks::{accept_hunk as accept_hunk_bytes, drop_hunk, hunks_between, Hunk};
use crate::store::bin::JournalEntry;
use crate::error::{Error, Result};
use crate::lifecycle::State;
use crate::project::Project;
use crate::store::bin::TransitionExtra;
use crate::store::overlay::Overlay;
use crate::store::{atomic, hash_bytes};
use serde::Serialize;

/// A text file of a proposal with its hunks (binary files have none).
#[derive(Debug, Clone, Serialize)]
pub struct FileHunks {
    pub path: String,
    pub kind: ChangeKind,
    pub hunks: Vec<Hunk>,
    /// Line ranges of the current file (0-based, end exclusive) where the agent's change
    /// conflicts with the user's edits: hunks touching them are conflicts.
    pub conflicts: Vec<(usize, usize)>,
    /// The whole file conflicts (deleted, a directory now, not mergeable).
    pub file_conflict: Option<String>,
    /// Per hunk: changed since the user last reviewed (revision 2 on; all false before).
    pub revised: Vec<bool>,
    /// Another tool runs or obeys this file on its own (flagged in the ghost header).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runs_by_itself: Option<&'static str>,
    /// Whose changes the conflicts are with: agent ids that landed on this file since the
    /// agent read it, and "your edit" (empty without conflicts).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub conflict_with: Vec<String>,
    /// Per hunk: the other pending proposals whose hunks overlap it (filled by
    /// [`super::board`]; empty when not computed).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub overlaps: Vec<Vec<String>>,
}

/// Text files have hunks; a file with a NUL byte is reviewed whole (non-UTF-8 text, such as
/// Latin-1, has hunks: the math is on bytes).
fn has_hunks(c: &FileChange) -> bool {
    !c.old.as_deref().unwrap_or_default().contains(&0) && !c.new.as_deref().unwrap_or_default().contains(&0)
}

fn bytes(b: &Option<Vec<u8>>) -> &[u8] {
    b.as_deref().unwrap_or_default()
}

/// The hunks of every text file agent `id` changes: its change rebased onto the project as it
/// is now (three-way), so the user's own edits are never among them.
pub fn file_hunks(project: &Project, id: &str) -> Result<Vec<FileHunks>> {
    // The proposal as the user left it before this revision, to mark the hunks changed since.
    let reviewed = match project.bin()?.revision(id)? {
        n if n > 1 => project.existing_overlay(id)?.map(|o| o.snapshot_get(super::revise::LEFT)).transpose()?,
        _ => None,
    };
    changes(project, id)?
        .into_iter()
        .filter(has_hunks)
        .map(|c| {
            let hunks = hunks_between(bytes(&c.old), bytes(&c.new));
            let revised = super::revise::revised_hunks(reviewed.as_deref(), &c.path, bytes(&c.old), bytes(&c.new), &hunks);
            Ok(FileHunks {
                hunks,
                revised,
                path: c.path,
                kind: c.kind,
                conflicts: c.conflicts,
                file_conflict: c.file_conflict,
                runs_by_itself: c.runs_by_itself,
                conflict_with: c.conflict_with,
                overlaps: Vec::new(),
            })
        })
        .collect()
}

/// Hunks still proposed in every file of `id` (none once it ended).
fn left_in_all(project: &Project, id: &str, state: State) -> Result<usize> {
    if !state.is_reviewable() {
        return Ok(0);
    }
    Ok(file_hunks(project, id)?.iter().map(|f| f.hunks.len()).sum())
}

/// What a hunk-level action left.
#[derive(Debug, Clone, Serialize)]
pub struct HunkReport {
    pub id: String,
    pub path: String,
    /// Hunks of this file still proposed.
    pub remaining: usize,
    /// Hunks still proposed in every file of the agent.
    pub remaining_all: usize,
    /// The agent's state afterwards (accepted or rejected once nothing is left).
    pub state: State,
    /// The hunk landed in the project (an accept), rather than being dropped (a reject).
    pub landed: bool,
    /// This call finished a hunk accept a crash had interrupted (that hunk, not the one asked
    /// for now: ask again).
    pub finished_interrupted: bool,
}

/// The reviewing agent's change of `path` holding `hunk`: its overlay and the change (current
/// bytes in `old`, the rebased proposal in `new`).
fn find_hunk(project: &Project, id: &str, path: &str, hunk: &Hunk) -> Result<(Overlay, FileChange)> {
    let rec = project.bin()?.get(id)?;
    if !rec.state.is_reviewable() || rec.accept_pending {
        return Err(Error::IllegalTransition { id: id.to_string(), from: rec.state.to_string(), action: "review a hunk".into() });
    }
    let overlay = project.existing_overlay(id)?.ok_or_else(|| Error::NoProposal(id.to_string()))?;
    let Some(change) = changes(project, id)?.into_iter().find(|c| c.path == path) else {
        return Err(Error::Hunk(format!("agent {id} proposes no change to {path}")));
    };
    if !has_hunks(&change) || change.new.is_none() {
        return Err(Error::Hunk(format!("{path} is not a text change: accept or reject the whole agent")));
    }
    if !hunks_between(bytes(&change.old), bytes(&change.new)).contains(hunk) {
        return Err(Error::Hunk(format!("that hunk of {path} is no longer part of agent {id}'s proposal; :CairnRefresh (or `cairn diff {id}`) shows the current ones")));
    }
    Ok((overlay, change))
}

/// Does `hunk` touch one of the conflicting line ranges (an insertion touches the line it is
/// inserted at)?
fn overlaps(conflicts: &[(usize, usize)], hunk: &Hunk) -> bool {
    let (start, end) = (hunk.old_start, hunk.old_start + hunk.removed.len().max(1));
    conflicts.iter().any(|&(s, e)| start < e.max(s + 1) && s < end)
}

fn in_conflict(change: &FileChange, hunk: &Hunk) -> bool {
    change.file_conflict.is_some() || overlaps(&change.conflicts, hunk)
}

impl FileHunks {
    /// Is `hunk` (one of this file's) a conflict with the user's edits?
    pub fn in_conflict(&self, hunk: &Hunk) -> bool {
        self.file_conflict.is_some() || overlaps(&self.conflicts, hunk)
    }
}

/// Ends the agent when no change is left: accepted if anything landed (its journal holds
/// every hunk that did, for undo), else rejected.
fn settle(project: &Project, id: &str, overlay: Overlay) -> Result<State> {
    if !changes(project, id)?.is_empty() {
        return Ok(State::Reviewing);
    }
    drop(overlay);
    let mut bin = project.bin()?;
    let accepted = !bin.journal_rows(id)?.is_empty() || bin.hunks_accepted(id)? > 0;
    let to = if accepted { State::Accepted } else { State::Rejected };
    let message = if accepted { "accepted hunk by hunk" } else { "rejected hunk by hunk" };
    bin.transition(id, to, "finish review", TransitionExtra { message: Some(message), ..Default::default() })?;
    project.archive_overlay(id)?;
    Ok(to)
}

/// Accepts one hunk of `path` into the project. The hunk is part of the agent's change rebased
/// onto the file as it is now, so the user's edits elsewhere in the file stay; a hunk that
/// conflicts with them is refused unless `force`. Journaled before the write, like a whole
/// accept: undo gives back the file as it was before the first hunk landed.
pub fn accept_hunk(project: &Project, id: &str, path: &str, hunk: &Hunk, force: bool) -> Result<HunkReport> {
    let _lock = super::lock::acquire_for(project, id)?;
    atomic::remove_temps(&project.root, crate::paths::parent(path))?;
    if let Some(report) = finish_pending(project, id)? {
        return Ok(report);
    }
    let (overlay, change) = find_hunk(project, id, path, hunk)?;
    if in_conflict(&change, hunk) && !force {
        return Err(Error::HunkConflict { id: id.to_string(), path: path.to_string(), line: hunk.old_start + 1, with: super::landed::describe(&change.conflict_with) });
    }
    super::accept::refuse_unsafe_path(project, path)?;
    check_writable(project, path)?;
    // Not under a writer that holds the file open (see accept); the lease that looked stays
    // on the file until it is replaced, for a writer that opens it meanwhile.
    let tail = ", or take it with --force (`:CairnAcceptHunk!`)";
    let leases = if force { crate::store::held::Leases::default() } else { super::prepare::refuse_held(project, &[path.to_string()], "hunk accept", tail)? };
    let updated = accept_hunk_bytes(bytes(&change.old), bytes(&change.new), hunk).ok_or_else(|| Error::Hunk(format!("hunk does not apply to {path}")))?;
    let mode = change.old_mode.or(change.new_mode).unwrap_or(0o644) & 0o777;
    let entry = JournalEntry {
        path: path.to_string(),
        old: change.old.as_ref().map(|b| (hash_bytes(b), change.old_mode.unwrap_or(0o644))),
        old_content: change.old.clone(),
        old_in_base: false,
        new: Some((hash_bytes(&updated), mode)),
    };
    // The choice is kept by content before anything lands: a re-run after a crash finishes
    // this very hunk (numbers shift once it is in the file).
    let pending = Pending { path: path.to_string(), updated: hash_bytes(&updated).to_vec(), mode, agent_new: hash_bytes(bytes(&change.new)).to_vec(), hunk: Some(hunk.clone()) };
    overlay.kv_set(PENDING, &serde_json::to_string(&pending)?)?;
    let mut bin = project.bin()?;
    let before = bin.journal_rows(id)?.into_iter().find(|j| j.path == path).map(|j| j.new);
    bin.journal_hunk(id, &entry)?;
    // In place only over the file as it was read (a save meanwhile stays), and not under a
    // process that opened it for writing meanwhile.
    let over = atomic::prepare(&project.root, path, &updated, mode)?.commit_over(change.seen.as_ref(), leases.get(path))?;
    drop(leases);
    if over != atomic::Over::Placed {
        overlay.kv_delete(PENDING)?;
        bin.unjournal_hunk(id, path, before)?;
        return Err(match over {
            atomic::Over::Held => super::prepare::opened_meanwhile(path, "hunk accept", tail),
            _ => Error::StaleBase { id: id.to_string(), paths: vec![path.to_string()] },
        });
    }
    landed(project, id, overlay, &pending, &updated, bytes(&change.new))
}

/// The overlay key of a hunk accept under way.
const PENDING: &str = "pending_hunk";

/// A hunk accept under way: the file and what it becomes.
#[derive(serde::Serialize, serde::Deserialize)]
struct Pending {
    path: String,
    /// Hash of the file with the hunk in.
    updated: Vec<u8>,
    mode: u32,
    /// Hash of the agent's whole new version (what the proposal keeps).
    agent_new: Vec<u8>,
    /// The hunk, for the agent's feedback.
    #[serde(default)]
    hunk: Option<Hunk>,
}

/// The bookkeeping after a hunk is in the file: index, overlay, the decision, the agent.
fn landed(project: &Project, id: &str, overlay: Overlay, p: &Pending, updated: &[u8], agent_new: &[u8]) -> Result<HunkReport> {
    crate::sync::record_known(project, &[(p.path.clone(), Some((hash_bytes(updated), None)))])?;
    if overlay.get(&p.path)?.flatten().is_some_and(|(b, _)| b == updated) {
        overlay.forget(&p.path)?;
    }
    let remaining = hunks_between(updated, agent_new).len();
    project.bin()?.decide_hunk(id, &p.path, true, None)?;
    if let Some(h) = &p.hunk {
        super::feedback::record_hunk(project, id, &p.path, h, true, None)?;
    }
    // Counted while the accept is still marked pending: a kill in the count (which opens the
    // overlay again) finishes this hunk on the re-run instead of taking the next one.
    let remaining_all = left_in_all(project, id, State::Reviewing)?;
    overlay.kv_delete(PENDING)?;
    let state = settle(project, id, overlay)?;
    Ok(HunkReport { id: id.to_string(), path: p.path.clone(), remaining, remaining_all, state, landed: true, finished_interrupted: false })
}

/// Finishes a hunk accept a crash interrupted (the very hunk chosen then, whatever is asked
/// now): written already, only the bookkeeping is left; not written, it is dropped (the
/// journal's row stays harmless: undo restores the same old content).
fn finish_pending(project: &Project, id: &str) -> Result<Option<HunkReport>> {
    let Some(overlay) = project.existing_overlay(id)? else { return Ok(None) };
    let Some(p) = overlay.kv_get(PENDING)?.and_then(|j| serde_json::from_str::<Pending>(&j).ok()) else { return Ok(None) };
    let current = crate::store::fsx::read(&project.root, &p.path)?;
    match current {
        Some((bytes_now, _)) if hash_bytes(&bytes_now).to_vec() == p.updated => {
            let agent_new = overlay.get(&p.path)?.flatten().map(|(b, _)| b).unwrap_or_else(|| bytes_now.clone());
            let mut report = landed(project, id, overlay, &p, &bytes_now, &agent_new)?;
            report.finished_interrupted = true;
            Ok(Some(report))
        }
        _ => {
            overlay.kv_delete(PENDING)?;
            Ok(None)
        }
    }
}

/// Drops one hunk from the agent's proposal for `path`; the project is not touched. The
/// decision (with `reason`) is feedback for the agent's next revision.
pub fn reject_hunk(project: &Project, id: &str, path: &str, hunk: &Hunk, reason: Option<&str>) -> Result<HunkReport> {
    let _lock = super::lock::acquire(project)?;
    if let Some(report) = finish_pending(project, id)? {
        return Ok(report);
    }
    let (overlay, change) = find_hunk(project, id, path, hunk)?;
    super::feedback::record_hunk(project, id, path, hunk, false, reason)?;
    let old = bytes(&change.old);
    let kept = drop_hunk(old, bytes(&change.new), hunk).ok_or_else(|| Error::Hunk(format!("hunk not found in {path}")))?;
    if kept == old {
        overlay.forget(path)?;
    } else {
        overlay.write(path, &kept, change.new_mode.unwrap_or(0o644))?;
    }
    let remaining = hunks_between(old, &kept).len();
    project.bin()?.decide_hunk(id, path, false, Some(&serde_json::to_string(hunk)?))?;
    let state = settle(project, id, overlay)?;
    Ok(HunkReport { id: id.to_string(), path: path.to_string(), remaining, remaining_all: left_in_all(project, id, state)?, state, landed: false, finished_interrupted: false })
}

/// Earlier decisions carry over: a hunk the user rejected in an earlier revision, proposed
/// again unchanged (same lines removed and added, in the same file), is rejected again.
/// Accepted hunks need nothing: they are in the project, so no longer in the proposal.
/// Returns how many were dropped. Called when a revision reaches review.
pub fn carry_over(project: &Project, id: &str) -> Result<usize> {
    let rejected: Vec<(String, Hunk)> = project.bin()?.rejected_hunks(id)?.into_iter().filter_map(|(p, h)| serde_json::from_str(&h).ok().map(|h| (p, h))).collect();
    if rejected.is_empty() {
        return Ok(0);
    }
    let same = |path: &str, h: &Hunk| rejected.iter().any(|(p, r)| p == path && r.removed == h.removed && r.added == h.added);
    let mut dropped = 0;
    // Each drop renumbers the file's hunks: look again after each (bounded).
    for _ in 0..10_000 {
        if !project.bin()?.get(id)?.state.is_reviewable() {
            break;
        }
        let files = file_hunks(project, id)?;
        let Some((path, hunk)) = files.iter().find_map(|f| f.hunks.iter().find(|h| same(&f.path, h)).map(|h| (f.path.clone(), h.clone()))) else { break };
        reject_hunk(project, id, &path, &hunk, None)?;
        dropped += 1;
    }
    Ok(dropped)
}
