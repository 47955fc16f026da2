//! Review of a proposal (SPEC §6), one concern per file:
//!
//! - [`diff`]: what a proposal changes (against the project now, or the journal once
//!   accepted) and its renderings (unified diff, `--stat`).
//! - [`hunks`]: pure hunk math on lines: no I/O, table-driven tests.
//! - [`accept`]: accept (stale-base refusal, journaled atomic writes, crash-resumable) and
//!   reject.
//! - [`undo`]: restoring what an accept changed.
//! - [`hunk_review`]: the hunks of a proposal for ghost text, and accepting or rejecting one.

pub mod accept;
mod ahead;
pub mod diff;
pub mod hunk_review;
pub mod hunks;
pub mod lock;
pub mod merge;
pub mod reject;
pub mod undo;

pub use accept::{accept, AcceptReport};
pub use reject::reject;
pub use diff::{changes, stat, unified, ChangeKind, FileChange};
pub use hunk_review::{accept_hunk, file_hunks, reject_hunk, FileHunks, HunkReport};
pub use hunks::Hunk;
pub use undo::{undo, UndoReport};
