//! Review of a proposal (SPEC §6), one concern per file:
//!
//! - [`diff`]: what a proposal changes (against the project now, or the journal once
//!   accepted) and its renderings (unified diff, `--stat`).
//! - [`hunks`]: pure hunk math on lines: no I/O, table-driven tests.
//! - [`accept`]: accept (stale-base refusal, journaled atomic writes, crash-resumable), with
//!   `prepare` (checks, temporaries, the last look) and `ahead` (writing while review runs).
//! - [`reject`]: reject; `rollback`: rolling back an interrupted or stopped accept.
//! - [`undo`]: restoring what an accept changed.
//! - [`hunk_review`]: the hunks of a proposal for ghost text, and accepting or rejecting one.
//! - [`feedback`]: reasons, notes and hunk decisions for the agent, delivered once.
//! - [`revise`]: revisions of a proposal, `cairn revise`, interdiffs, `cairn log`.
//! - [`board`]: every pending proposal at once: overlaps, a landing order, the status line,
//!   rebasing the others after an accept, resolving a conflict; [`landed`] names whose
//!   change a conflict is with; [`resolve`] the three-way view of a conflicted file.

pub mod accept;
mod ahead;
pub mod diff;
pub mod feedback;
pub mod revise;
pub mod hunk_review;
pub mod hunks;
pub mod landed;
pub mod board;
pub mod lock;
pub mod merge;
mod prepare;
pub mod reject;
mod rollback;
pub mod resolve;
pub mod undo;

pub use accept::{accept, AcceptReport};
pub use reject::reject;
pub use diff::{changes, stat, unified, ChangeKind, FileChange};
pub use hunk_review::{accept_hunk, file_hunks, reject_hunk, FileHunks, HunkReport};
pub use hunks::Hunk;
pub use undo::{undo, UndoReport};

use crate::error::{Error, Result};
use crate::project::Project;
use crate::store::bin::{Bin, JournalEntry};
use crate::store::overlay::Overlay;

/// The journal of agent `id`'s accept with every old content in hand: those its overlay keeps
/// as bases (`old_in_base`, where the file was as the agent read it) are read from the
/// overlay, live or archived, and must hash to what the journal recorded.
pub(crate) fn journal(project: &Project, bin: &Bin, id: &str) -> Result<Vec<JournalEntry>> {
    let journal = bin.journal_rows(id)?;
    if !journal.iter().any(|j| j.old_in_base) {
        return Ok(journal);
    }
    let overlay = project.existing_overlay(id)?.ok_or_else(|| lost_base(id, "each path", "was kept in the agent's overlay, which is missing"))?;
    with_bases(journal, &overlay, id)
}

/// [`journal`], for an agent whose overlay is open already.
pub(crate) fn journal_in(bin: &Bin, overlay: &Overlay, id: &str) -> Result<Vec<JournalEntry>> {
    with_bases(bin.journal_rows(id)?, overlay, id)
}

fn with_bases(mut journal: Vec<JournalEntry>, overlay: &Overlay, id: &str) -> Result<Vec<JournalEntry>> {
    for j in journal.iter_mut().filter(|j| j.old_in_base) {
        let content = overlay.base_content(&j.path)?.ok_or_else(|| lost_base(id, &j.path, "is missing from the agent's overlay"))?;
        if Some(crate::store::hash_bytes(&content)) != j.old.map(|o| o.0) {
            return Err(lost_base(id, &j.path, "no longer matches its hash in the agent's overlay"));
        }
        j.old_content = Some(content);
    }
    Ok(journal)
}

fn lost_base(id: &str, path: &str, why: &str) -> Error {
    Error::Overlay { id: id.to_string(), message: format!("the content {path} had before the accept {why}") }
}
