//! Revisions of a proposal: `cairn revise` sends the feedback since the last revision and puts
//! the proposal back to work (how depends on the agent, see [`revise`]); the proposal as it
//! reached review is kept per revision so that `cairn diff --since-review` and ghost text show
//! what changed since the user last reviewed (the interdiff).
//!
//! Snapshots live in the agent's overlay: slot 0 is the proposal as it last reached review,
//! slot 1 what the user had reviewed when the current revision started (copied from slot 0
//! by [`revise`] or by the agent writing again after its turn: what the agent proposed, which
//! an LLM's next prompt shows it), slot 2 the proposal as the user left it then, their hunk
//! decisions applied ([`LEFT`]: what `--since-review` and the revised marks compare with, so a
//! hunk the user rejected is not shown again as a removal to review).

use super::diff::{changes, FileChange};
use super::hunks::{hunks_between, Hunk};
use crate::error::{Error, Result};
use crate::lifecycle::{Provider, State};
use crate::project::Project;
use crate::store::bin::{Feedback, Revision};
use serde::Serialize;

/// What `cairn revise` did.
#[derive(Debug, Clone, Serialize)]
pub struct ReviseReport {
    pub id: String,
    pub revision: u32,
    /// Pieces of feedback sent.
    pub sent: usize,
    /// How they reach the agent: `terminal` (its live CLI), `review_wait` (its MCP client),
    /// `prompt` (a re-queued run), `command line` (the next `cairn wrap --agent`).
    pub delivery: &'static str,
    pub state: State,
}

/// Starts revision N+1 of `id`: the feedback since the last revision is sent, and the agent
/// goes back to work:
/// - a wrap session whose `cairn wrap` is still running: executing; the feedback is typed into
///   its terminal as the user's next message;
/// - an MCP session: executing; its client gets the feedback from `review_wait`;
/// - an LLM agent: queued; the re-run's prompt carries the feedback and the previous
///   proposal, which the re-run starts from; a script agent is re-run as it is (it gets no
///   text: its feedback is marked delivered by the re-run);
/// - a wrap session that ended: reviewing, until `cairn wrap --agent ID` re-runs it with the
///   feedback appended to its command line.
/// `alive` says whether a worker (a wrap session's `cairn wrap`) still runs.
pub fn revise(project: &Project, id: &str, alive: &dyn Fn(crate::store::bin::Worker) -> bool) -> Result<ReviseReport> {
    let _lock = super::lock::acquire(project)?;
    let bin = project.bin()?;
    let rec = bin.get(id)?;
    let live = rec.provider == Provider::Wrap && rec.worker.is_some_and(alive);
    let unsent = bin.unsent_feedback(id)?;
    if live && unsent.is_empty() {
        // Nothing would be typed: the agent, idle at its prompt, would stay at work for ever.
        return Err(Error::Usage(format!("nothing to send to agent {id}: reject a hunk with a reason, or comment, first (or type to it in its terminal)")));
    }
    if live && rec.state == State::Executing {
        // At work already (it went on by itself): the feedback is sent with this revision.
        let sent = bin.send_feedback(id)?;
        return Ok(ReviseReport { id: id.to_string(), revision: rec.revision, sent: sent.len(), delivery: "terminal", state: rec.state });
    }
    let (to, delivery) = match rec.provider {
        Provider::Wrap if live => (State::Executing, "terminal"),
        Provider::Wrap => (State::Reviewing, "command line"),
        Provider::Mcp => (State::Executing, "review_wait"),
        Provider::Llm => (State::Queued, "prompt"),
        Provider::File | Provider::Inline => (State::Queued, "rerun"),
    };
    let why = if unsent.is_empty() { "revise requested".to_string() } else { format!("{} piece(s) of feedback sent", unsent.len()) };
    if to == State::Queued {
        // Before the move: a worker may claim it at once, and must keep its proposal.
        project.unarchive_overlay(id)?;
        project.overlay(id)?.kv_set(REVISING, &(rec.revision + 1).to_string())?;
    }
    let (revision, sent) = start(project, id, to, &why, true)?;
    if let (Some(w), State::Executing) = (rec.worker, to) {
        project.bin()?.keep_worker(id, w)?;
    }
    Ok(ReviseReport { id: id.to_string(), revision, sent: sent.len(), delivery, state: to })
}

/// The overlay key that keeps a revised run's overlay: the re-run starts from its proposal.
pub const REVISING: &str = "revising";

/// The snapshot slot of the proposal as the user left it when the current revision started:
/// what they reviewed with their hunk decisions applied (a rejected hunk gone, an accepted one
/// in the project).
pub const LEFT: u8 = 2;

/// The next revision: its baseline snapshots (what was reviewed, and as the user left it), the
/// overlay back in place, the move in `bin.db`. Shared by [`revise`] and a live agent writing
/// again after its turn. `send`: the unsent feedback goes with it (a revise; not the agent
/// writing again by itself). A proposal rejected whole starts again empty (the user left
/// nothing of it): what the user rejected never comes back unasked.
pub fn start(project: &Project, id: &str, to: State, why: &str, send: bool) -> Result<(u32, Vec<Feedback>)> {
    let rec = project.bin()?.get(id)?;
    project.unarchive_overlay(id)?;
    if let Some(o) = project.existing_overlay(id)? {
        let reviewed = o.snapshot_get(0)?;
        o.snapshot_put(1, &reviewed)?;
        let left: Vec<(String, Option<Vec<u8>>)> = if rec.state == State::Rejected {
            o.clear_entries()?;
            Vec::new()
        } else {
            super::diff::changes_from(project, &o, &rec, &o.changes()?)?.into_iter().map(|c| (c.path, c.new)).collect()
        };
        o.snapshot_put(LEFT, &left)?;
    }
    project.bin()?.start_revision(id, to, why, send)
}

/// Keeps the proposal as it reaches review (slot 0): the left side of the next revision's
/// interdiff. Called whenever an agent reaches reviewing.
/// `overlay`: the agent's, open (no second connection: a run may be short of descriptors).
pub fn snapshot(project: &Project, overlay: &crate::store::overlay::Overlay, id: &str) -> Result<()> {
    let rec = project.bin()?.get(id)?;
    let files: Vec<(String, Option<Vec<u8>>)> = super::diff::changes_from(project, overlay, &rec, &overlay.changes()?)?.into_iter().map(|c| (c.path, c.new)).collect();
    overlay.snapshot_put(0, &files)
}

/// What changed in the proposal since the user last reviewed it: for each path of the
/// proposal as the user left it ([`LEFT`]) or the current one, the left version (else the
/// project's) against the current one (else the project's). Revision 1 has no earlier review:
/// the whole proposal.
pub fn since_review(project: &Project, id: &str) -> Result<Vec<FileChange>> {
    let now = changes(project, id)?;
    let Some(o) = project.existing_overlay(id)? else { return Ok(now) };
    if project.bin()?.revision(id)? <= 1 {
        return Ok(now);
    }
    let reviewed = o.snapshot_get(LEFT)?;
    let mut out = Vec::new();
    let mut paths: Vec<&str> = reviewed.iter().map(|(p, _)| p.as_str()).chain(now.iter().map(|c| c.path.as_str())).collect();
    paths.sort_unstable();
    paths.dedup();
    for path in paths {
        let cur = now.iter().find(|c| c.path == path);
        let project_now = || crate::store::fsx::read(&project.root, path).map(|r| r.map(|(b, _)| b));
        let new = match cur {
            Some(c) => c.new.clone(),
            None => project_now()?,
        };
        let old = match reviewed.iter().find(|(p, _)| p == path) {
            Some((_, c)) => c.clone(),
            None => cur.map_or_else(project_now, |c| Ok(c.old.clone()))?,
        };
        out.extend(FileChange::between(path, old, new));
    }
    Ok(out)
}

/// What the user last reviewed (before any decision on it) against the project as it is now.
pub fn reviewed(project: &Project, id: &str) -> Result<Vec<FileChange>> {
    let Some(o) = project.existing_overlay(id)? else { return Ok(Vec::new()) };
    let mut out = Vec::new();
    for (path, content) in o.snapshot_get(1)? {
        let now = crate::store::fsx::read(&project.root, &path)?.map(|(b, _)| b);
        out.extend(FileChange::between(&path, now, content));
    }
    Ok(out)
}

/// For each hunk of `path` in the proposal (current file → proposal), whether it changed
/// since the user last reviewed (`reviewed`: the proposal as they left it, [`LEFT`]; `false`
/// everywhere in revision 1).
pub fn revised_hunks(reviewed: Option<&[(String, Option<Vec<u8>>)]>, path: &str, current: &[u8], proposed: &[u8], hunks: &[Hunk]) -> Vec<bool> {
    let Some(reviewed) = reviewed else { return vec![false; hunks.len()] };
    let before = reviewed.iter().find(|(p, _)| p == path).map_or(current, |(_, c)| c.as_deref().unwrap_or_default());
    let inter = new_ranges(&hunks_between(before, proposed));
    new_ranges(hunks).into_iter().map(|(s, e)| inter.iter().any(|&(a, b)| s < b.max(a + 1) && a < e.max(s + 1))).collect()
}

/// The line ranges hunks occupy in the new side (0-based, end exclusive).
fn new_ranges(hunks: &[Hunk]) -> Vec<(usize, usize)> {
    let mut shift: isize = 0;
    hunks
        .iter()
        .map(|h| {
            let start = (h.old_start as isize + shift).max(0) as usize;
            shift += h.added.len() as isize - h.removed.len() as isize;
            (start, start + h.added.len())
        })
        .collect()
}

/// `cairn log ID`: the revisions of a proposal with the feedback each one sent.
#[derive(Debug, Clone, Serialize)]
pub struct LogReport {
    pub id: String,
    pub state: State,
    pub revision: u32,
    pub revisions: Vec<Revision>,
    pub feedback: Vec<Feedback>,
}

pub fn log(project: &Project, id: &str) -> Result<LogReport> {
    let bin = project.bin()?;
    let rec = bin.get(id)?;
    Ok(LogReport { id: id.to_string(), state: rec.state, revision: rec.revision, revisions: bin.revisions_of(id)?, feedback: bin.feedback_of(id)? })
}

/// Refuses feedback on an agent that cannot take it.
pub fn check_reviewable(project: &Project, id: &str, action: &str) -> Result<()> {
    let rec = project.bin()?.get(id)?;
    if rec.state.is_revisable() || rec.state.is_running() {
        return Ok(());
    }
    Err(Error::IllegalTransition { id: id.to_string(), from: rec.state.to_string(), action: action.to_string() })
}
