//! What a proposal changes: each changed path with its old and new content, against the
//! project as it is now (a live proposal) or the journaled old content (an accepted one), and
//! the git-style renderings of that.

use crate::error::Result;
use crate::lifecycle::State;
use crate::project::Project;
use crate::store::fsx;
use super::merge;
use crate::store::bin::{AgentRecord, JournalEntry};
use crate::store::overlay::{Change, Changed, Overlay};
use crate::store::{hash_bytes, Hash};
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
///
/// For a live proposal `old` is the file as it is now and `new` the agent's change rebased
/// onto it (three-way, see [`super::merge`]): the user's own edits are in both, so they never
/// show up as agent hunks. Where the two touch the same lines, `new` holds the agent's side and
/// `conflicts` names those lines of `old`.
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
    /// Line ranges of `old` (0-based, end exclusive) where the agent and the user both changed
    /// the file.
    pub conflicts: Vec<(usize, usize)>,
    /// A conflict of the whole file: the user deleted it, replaced it with a directory, or
    /// changed it where no three-way merge is possible (binary, or no recorded base content).
    pub file_conflict: Option<String>,
    /// `new` came out of a rebase onto the user's edits (it may differ from what the agent
    /// wrote in its overlay).
    #[serde(skip)]
    pub rebased: bool,
    /// The content hashes of `old` and `new`.
    #[serde(skip)]
    pub old_hash: Option<Hash>,
    #[serde(skip)]
    pub new_hash: Option<Hash>,
    /// The stamp of the project's file when `old` was read from it.
    #[serde(skip)]
    pub seen: Option<fsx::Stamp>,
    /// `old` is the very content the agent's overlay kept as this path's base (the user has
    /// not changed the file since the agent read it).
    #[serde(skip)]
    pub old_is_base: bool,
    /// Another tool runs or obeys this file on its own ([`crate::paths::runs_by_itself`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runs_by_itself: Option<&'static str>,
    /// The hash of the file when the agent first read it (`None`: absent then, or unknown).
    #[serde(skip)]
    pub base: Option<Hash>,
    /// Whose changes the conflicts are with ([`super::landed::authors`]): agents whose accepts
    /// moved the file on since this agent read it, and "your edit" only where no accept
    /// explains a step (empty without conflicts).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub conflict_with: Vec<String>,
}

impl FileChange {
    /// A plain two-way change (an interdiff: no merge, no conflicts), its kind from the two
    /// sides; `None` when they are the same.
    pub fn between(path: &str, old: Option<Vec<u8>>, new: Option<Vec<u8>>) -> Option<FileChange> {
        if old == new {
            return None;
        }
        let kind = match (&old, &new) {
            (None, _) => ChangeKind::Added,
            (_, None) => ChangeKind::Deleted,
            _ => ChangeKind::Modified,
        };
        let binary = old.as_deref().is_some_and(is_binary) || new.as_deref().is_some_and(is_binary);
        Some(FileChange {
            path: path.to_string(),
            kind,
            binary,
            old_hash: old.as_deref().map(crate::store::hash_bytes),
            new_hash: new.as_deref().map(crate::store::hash_bytes),
            old_mode: old.as_ref().map(|_| 0o644),
            new_mode: new.as_ref().map(|_| 0o644),
            old,
            new,
            conflicts: Vec::new(),
            file_conflict: None,
            rebased: false,
            seen: None,
            old_is_base: false,
            runs_by_itself: None,
            base: None,
            conflict_with: Vec::new(),
        })
    }

    /// Does accepting this change need `--force`?
    pub fn conflicted(&self) -> bool {
        !self.conflicts.is_empty() || self.file_conflict.is_some()
    }

    /// How a refusal names this file's conflicts, and whose change each is with.
    pub fn conflict_text(&self) -> String {
        let with = super::landed::describe(&self.conflict_with);
        match &self.file_conflict {
            Some(why) => format!("{}: {why} (by {with})", self.path),
            None => {
                let ranges: Vec<String> = self.conflicts.iter().map(|(s, e)| if e - s <= 1 { format!("line {}", s + 1) } else { format!("lines {}-{}", s + 1, e) }).collect();
                format!("{} ({}, with {with})", self.path, ranges.join(", "))
            }
        }
    }
}

fn is_binary(bytes: &[u8]) -> bool {
    bytes.contains(&0) || std::str::from_utf8(bytes).is_err()
}

/// The changes of agent `id`: against the current project for a live proposal (three-way),
/// against the journaled old content for an accepted one.
pub fn changes(project: &Project, id: &str) -> Result<Vec<FileChange>> {
    let Some(overlay) = project.existing_overlay(id)? else { return Ok(Vec::new()) };
    let rec = project.bin()?.get(id)?;
    changes_from(project, &overlay, &rec, &overlay.changes()?)
}

/// [`changes`], for an agent whose record and overlay are open, from the overlay's entries
/// `all` (already loaded).
pub(crate) fn changes_from(project: &Project, overlay: &Overlay, rec: &AgentRecord, all: &[Changed]) -> Result<Vec<FileChange>> {
    let journal = if rec.state == State::Accepted { super::journal_in(&project.bin()?, overlay, &rec.id)? } else { Vec::new() };
    // The project's current versions are read and hashed on a few threads (I/O-bound), the
    // agent's contents hashed there too; the merges are done here.
    let threads = crate::par::io_threads(all.len());
    let currents = crate::par::chunks(all, threads, "review (reading)", |chunk| {
        let mut dirs = fsx::DirCache::new(&project.root);
        chunk.iter().map(|c| current(&project.root, &mut dirs, &journal, c)).collect::<Vec<_>>()
    })?;
    let mut out = Vec::new();
    let mut bin = None;
    let umask = crate::store::mode::umask();
    for (c, current) in all.iter().zip(currents.into_iter().flatten()) {
        let Current { bytes: old, mode: old_mode, hash: old_hash, seen, journaled, agent_hash } = current?;
        // The mode that lands (and that the diff shows): the proposal's executable bit.
        let (agent, new_mode) = match &c.change {
            Change::Write { content, mode, .. } => (Some(content.clone()), Some(crate::store::mode::landing(*mode, old_mode, umask))),
            Change::Delete => (None, None),
        };
        let rebased = !(journaled || old_hash == c.base);
        let (new, conflicts, file_conflict) = if rebased {
            let base_content = if c.base.is_some() { overlay.base_content(&c.path)? } else { None };
            rebase(project, c, base_content.as_deref(), old.as_deref(), agent)
        } else {
            (agent, Vec::new(), None)
        };
        let kind = match (&old, &new) {
            (None, Some(_)) => ChangeKind::Added,
            (Some(_), None) => ChangeKind::Deleted,
            _ => ChangeKind::Modified,
        };
        if kind == ChangeKind::Modified && old == new && old_mode == new_mode && file_conflict.is_none() {
            continue;
        }
        let binary = old.as_deref().is_some_and(is_binary) || new.as_deref().is_some_and(is_binary);
        let new_hash = if rebased { new.as_deref().map(hash_bytes) } else { agent_hash };
        let old_is_base = !journaled && !rebased && c.base_kept && old.is_some();
        let runs_by_itself = crate::paths::runs_by_itself(&c.path, old.as_deref(), new.as_deref());
        let conflict_with = if conflicts.is_empty() && file_conflict.is_none() {
            Vec::new()
        } else {
            let bin = match &mut bin {
                Some(b) => b,
                None => bin.insert(project.bin()?),
            };
            super::landed::authors(bin, &rec.id, &c.path, c.base, old_hash)?
        };
        out.push(FileChange { path: c.path.clone(), kind, binary, old, new, old_mode, new_mode, conflicts, file_conflict, rebased, old_hash, new_hash, seen, old_is_base, runs_by_itself, base: c.base, conflict_with });
    }
    Ok(out)
}

/// A path's version in the project (or in the journal, for an accepted agent).
struct Current {
    bytes: Option<Vec<u8>>,
    mode: Option<u32>,
    hash: Option<Hash>,
    seen: Option<fsx::Stamp>,
    journaled: bool,
    /// The hash of the agent's content (computed here: the overlay's record of it is not
    /// trusted for what lands).
    agent_hash: Option<Hash>,
}

/// Reads path `c`'s current version: the project's file (in the directory `dirs` holds), or
/// its journaled old content for an accepted agent.
fn current(root: &std::path::Path, dirs: &mut fsx::DirCache, journal: &[JournalEntry], c: &Changed) -> Result<Current> {
    let agent_hash = match &c.change {
        Change::Write { content, .. } => Some(hash_bytes(content)),
        Change::Delete => None,
    };
    if let Some(j) = journal.iter().find(|j| j.path == c.path) {
        return Ok(Current { bytes: j.old_content.clone(), mode: j.old.map(|o| o.1), hash: j.old.map(|o| o.0), seen: None, journaled: true, agent_hash });
    }
    let found = match dirs.get(crate::paths::parent(&c.path))? {
        Some(dir) => fsx::read_stamped(root, &c.path, Some(dir))?,
        None => None,
    };
    Ok(match found {
        Some((bytes, mode, seen)) => Current { hash: Some(hash_bytes(&bytes)), bytes: Some(bytes), mode: Some(mode), seen: Some(seen), journaled: false, agent_hash },
        None => Current { bytes: None, mode: None, hash: None, seen: None, journaled: false, agent_hash },
    })
}

/// A rebased change: the new content, the conflicting line ranges, a whole-file conflict.
type Rebased = (Option<Vec<u8>>, Vec<(usize, usize)>, Option<String>);

/// The agent's change of one path rebased onto the project's current version `current`,
/// which differs from the base the agent saw: `(new, conflicting line ranges, file conflict)`.
fn rebase(project: &Project, c: &Changed, base_content: Option<&[u8]>, current: Option<&[u8]>, agent: Option<Vec<u8>>) -> Rebased {
    let whole = |why: &str| (agent.clone(), Vec::new(), Some(why.to_string()));
    let base: &[u8] = match (&c.base, base_content) {
        (None, _) => b"",
        (Some(_), Some(bytes)) => bytes,
        (Some(_), None) => return whole("changed in the project since the agent read it (no three-way base recorded)"),
    };
    match (current, &agent) {
        (None, _) if project.root.join(&c.path).is_dir() => whole("a directory is there now"),
        (None, Some(_)) => whole("deleted in the project since the agent read it"),
        (Some(_), None) => whole("changed in the project since the agent read it; the agent deletes it"),
        (None, None) => (None, Vec::new(), None),
        (Some(cur), Some(theirs)) => {
            // Lines are bytes: any text merges (Latin-1 too); only NUL-bearing content doesn't.
            if [base, cur, theirs.as_slice()].iter().any(|b| b.contains(&0)) {
                return whole("changed in the project since the agent read it (binary: no line merge)");
            }
            let pieces = merge::merge(base, cur, theirs);
            let conflicts = merge::conflicts(&pieces).into_iter().map(|r| (r.start, r.end)).collect();
            (Some(merge::agent_side(&pieces)), conflicts, None)
        }
    }
}

/// Renders changes as a git-style unified diff. Agent-controlled bytes (paths, content) are
/// escaped (see [`crate::display`]): a path cannot forge a header, an escape sequence cannot
/// hide a line, and a NUL does not turn a text change into "Binary files differ".
pub fn unified(changes: &[FileChange]) -> String {
    let mut out = String::new();
    let renames = renames(changes);
    for (i, c) in changes.iter().enumerate() {
        if renames.iter().any(|r| r.0 == i) {
            continue;
        }
        let path = crate::display::escape_line(&c.path);
        if let Some(&(from, _, pct)) = renames.iter().find(|r| r.1 == i) {
            let old = &changes[from];
            let was = crate::display::escape_line(&old.path);
            let _ = writeln!(out, "diff --git a/{was} b/{path}\nsimilarity index {pct}%\nrename from {was}\nrename to {path}");
            let (a, b) = (String::from_utf8_lossy(old.old.as_deref().unwrap_or_default()), String::from_utf8_lossy(c.new.as_deref().unwrap_or_default()));
            if a != b {
                let text = similar::TextDiff::from_lines(a.as_ref(), b.as_ref()).unified_diff().context_radius(3).header(&format!("a/{was}"), &format!("b/{path}")).to_string();
                out.push_str(&crate::display::escape(&text));
            }
            continue;
        }
        let _ = writeln!(out, "diff --git a/{path} b/{path}");
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
        if c.conflicted() {
            let _ = writeln!(out, "CONFLICT {}: changed there since the agent read it; below, what --force lands (the agent's side inside its own hunks only)", crate::display::escape_line(&c.conflict_text()));
        }
        if let Some(why) = c.runs_by_itself {
            let _ = writeln!(out, "WARNING {path}: {why}; read it before running anything here");
        }
        let a = if c.old.is_some() { format!("a/{path}") } else { "/dev/null".into() };
        let b = if c.new.is_some() { format!("b/{path}") } else { "/dev/null".into() };
        let utf8 = |x: &Option<Vec<u8>>| x.as_deref().is_none_or(|b| std::str::from_utf8(b).is_ok());
        if c.binary && !(utf8(&c.old) && utf8(&c.new)) {
            let _ = writeln!(out, "Binary files {a} and {b} differ");
            continue;
        }
        if c.binary {
            // Text with NUL bytes: shown as text, loudly.
            let _ = writeln!(out, "WARNING {path}: contains NUL bytes (shown as \\0); a tool may treat it as binary");
        }
        let old = String::from_utf8_lossy(c.old.as_deref().unwrap_or_default());
        let new = String::from_utf8_lossy(c.new.as_deref().unwrap_or_default());
        if old == new {
            continue;
        }
        let diff = similar::TextDiff::from_lines(old.as_ref(), new.as_ref());
        let text = diff.unified_diff().context_radius(3).header(&a, &b).to_string();
        out.push_str(&crate::display::escape(&text));
    }
    out
}

/// Renames, as git finds them: a deleted and an added text file of the same mode whose
/// contents are the same or at least half alike, as (deleted index, added index, similarity %).
fn renames(changes: &[FileChange]) -> Vec<(usize, usize, u32)> {
    const MOST: usize = 64;
    let pick = |k: ChangeKind| changes.iter().enumerate().filter(move |(_, c)| c.kind == k && !c.binary && !c.conflicted() && c.runs_by_itself.is_none()).take(MOST);
    let mut out: Vec<(usize, usize, u32)> = Vec::new();
    for (d, del) in pick(ChangeKind::Deleted) {
        let best = pick(ChangeKind::Added)
            .filter(|(a, add)| !out.iter().any(|r| r.1 == *a) && add.new_mode == del.old_mode)
            .map(|(a, add)| {
                let pct = if add.new_hash.is_some() && add.new_hash == del.old_hash {
                    100
                } else {
                    let (x, y) = (String::from_utf8_lossy(del.old.as_deref().unwrap_or_default()), String::from_utf8_lossy(add.new.as_deref().unwrap_or_default()));
                    (similar::TextDiff::from_lines(x.as_ref(), y.as_ref()).ratio() * 100.0) as u32
                };
                (a, pct)
            })
            .max_by_key(|&(a, pct)| (pct, std::cmp::Reverse(a)));
        if let Some((a, pct)) = best.filter(|b| b.1 >= 50) {
            out.push((d, a, pct));
        }
    }
    out
}

/// `--stat` rendering: one line per file with added/removed line counts.
pub fn stat(changes: &[FileChange]) -> String {
    let mut out = String::new();
    let (mut adds, mut dels) = (0, 0);
    for c in changes {
        if c.binary {
            let _ = writeln!(out, " {} | Bin", crate::display::escape_line(&c.path));
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
        let _ = writeln!(out, " {} | {} {}{}", crate::display::escape_line(&c.path), a + d, "+".repeat(a.min(40)), "-".repeat(d.min(40)));
    }
    // git's wording: "1 insertion(+)", "2 insertions(+)".
    let plural = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
    let _ = writeln!(out, " {} changed, {}(+), {}(-)", plural(changes.len(), "file"), plural(adds, "insertion"), plural(dels, "deletion"));
    out
}

