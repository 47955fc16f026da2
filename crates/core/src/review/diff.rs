//! What a proposal changes: each changed path with its old and new content, against the
//! project as it is now (a live proposal) or the journaled old content (an accepted one), and
//! the git-style renderings of that.

use crate::error::Result;
use crate::lifecycle::State;
use crate::project::Project;
use crate::store::fsx;
use crate::store::overlay::Change;
use serde::Serialize;
use std::fmt::Write as _;

/// How a path changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ChangeKind {
    Added,
    Modified,
    Deleted,
}

/// One changed path of a proposal, with old and new content.
#[derive(Debug, Clone, Serialize)]
pub struct FileChange {
    pub path: String,
    pub kind: ChangeKind,
    pub binary: bool,
    #[serde(skip)]
    pub old: Option<Vec<u8>>,
    #[serde(skip)]
    pub new: Option<Vec<u8>>,
    pub old_mode: Option<u32>,
    pub new_mode: Option<u32>,
}

fn is_binary(bytes: &[u8]) -> bool {
    bytes.contains(&0) || std::str::from_utf8(bytes).is_err()
}

/// The changes of agent `id`: against the current project for a live proposal, against the
/// journaled old content for an accepted one.
pub fn changes(project: &Project, id: &str) -> Result<Vec<FileChange>> {
    let Some(overlay) = project.existing_overlay(id)? else { return Ok(Vec::new()) };
    let rec = project.bin()?.get(id)?;
    let journal = if rec.state == State::Accepted { project.bin()?.journal(id)? } else { Vec::new() };
    let mut out = Vec::new();
    for c in overlay.changes()? {
        let (old, old_mode) = match journal.iter().find(|j| j.path == c.path) {
            Some(j) => (j.old_content.clone(), j.old.map(|o| o.1)),
            None => match fsx::read(&project.root, &c.path)? {
                Some((bytes, mode)) => (Some(bytes), Some(mode)),
                None => (None, None),
            },
        };
        let (new, new_mode) = match c.change {
            Change::Write { content, mode, .. } => (Some(content), Some(mode)),
            Change::Delete => (None, None),
        };
        let kind = match (&old, &new) {
            (None, Some(_)) => ChangeKind::Added,
            (Some(_), None) => ChangeKind::Deleted,
            _ => ChangeKind::Modified,
        };
        if kind == ChangeKind::Modified && old == new && old_mode == new_mode {
            continue;
        }
        let binary = old.as_deref().is_some_and(is_binary) || new.as_deref().is_some_and(is_binary);
        out.push(FileChange { path: c.path, kind, binary, old, new, old_mode, new_mode });
    }
    Ok(out)
}

/// Renders changes as a git-style unified diff.
pub fn unified(changes: &[FileChange]) -> String {
    let mut out = String::new();
    for c in changes {
        let _ = writeln!(out, "diff --git a/{0} b/{0}", c.path);
        match c.kind {
            ChangeKind::Added => {
                let _ = writeln!(out, "new file mode 100{:o}", c.new_mode.unwrap_or(0o644));
            }
            ChangeKind::Deleted => {
                let _ = writeln!(out, "deleted file mode 100{:o}", c.old_mode.unwrap_or(0o644));
            }
            ChangeKind::Modified if c.old_mode != c.new_mode => {
                let _ = writeln!(out, "old mode 100{:o}\nnew mode 100{:o}", c.old_mode.unwrap_or(0), c.new_mode.unwrap_or(0));
            }
            ChangeKind::Modified => {}
        }
        let a = if c.old.is_some() { format!("a/{}", c.path) } else { "/dev/null".into() };
        let b = if c.new.is_some() { format!("b/{}", c.path) } else { "/dev/null".into() };
        if c.binary {
            let _ = writeln!(out, "Binary files {a} and {b} differ");
            continue;
        }
        let old = String::from_utf8_lossy(c.old.as_deref().unwrap_or_default());
        let new = String::from_utf8_lossy(c.new.as_deref().unwrap_or_default());
        if old == new {
            continue;
        }
        let diff = similar::TextDiff::from_lines(old.as_ref(), new.as_ref());
        let _ = write!(out, "{}", diff.unified_diff().context_radius(3).header(&a, &b));
    }
    out
}

/// `--stat` rendering: one line per file with added/removed line counts.
pub fn stat(changes: &[FileChange]) -> String {
    let mut out = String::new();
    let (mut adds, mut dels) = (0, 0);
    for c in changes {
        if c.binary {
            let _ = writeln!(out, " {} | Bin", c.path);
            continue;
        }
        let old = String::from_utf8_lossy(c.old.as_deref().unwrap_or_default()).into_owned();
        let new = String::from_utf8_lossy(c.new.as_deref().unwrap_or_default()).into_owned();
        let diff = similar::TextDiff::from_lines(&old, &new);
        let (mut a, mut d) = (0, 0);
        for op in diff.iter_all_changes() {
            match op.tag() {
                similar::ChangeTag::Insert => a += 1,
                similar::ChangeTag::Delete => d += 1,
                similar::ChangeTag::Equal => {}
            }
        }
        adds += a;
        dels += d;
        let _ = writeln!(out, " {} | {} {}{}", c.path, a + d, "+".repeat(a.min(40)), "-".repeat(d.min(40)));
    }
    let _ = writeln!(out, " {} file{} changed, {adds} insertion(s)(+), {dels} deletion(s)(-)", changes.len(), if changes.len() == 1 { "" } else { "s" });
    out
}

