//! Review of a proposal (SPEC §6): the diff, accept (stale-base refusal, atomic journaled
//! writes, crash-resumable), reject and undo.
//!
//! Accept is a small write-ahead protocol: (1) check every changed path's base against the
//! project; (2) write the journal (old content, old and new hashes) to `bin.db` and mark the
//! accept pending, in one transaction; (3) replace each file atomically; (4) update
//! `stable.db`; (5) mark the agent accepted and archive its overlay. A crash anywhere leaves
//! each file wholly old or wholly new, and running accept again finishes from the journal.

use crate::error::{Error, Result};
use crate::lifecycle::State;
use crate::project::Project;
use crate::store::bin::{AgentRecord, JournalEntry, TransitionExtra};
use crate::store::overlay::{Change, Overlay};
use crate::store::{fsx, hash_bytes, Hash};
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

/// What an accept did.
#[derive(Debug, Clone, Serialize)]
pub struct AcceptReport {
    pub id: String,
    pub written: Vec<String>,
    pub deleted: Vec<String>,
    /// Paths whose stale base `--force` overrode.
    pub forced: Vec<String>,
    /// True when this call finished an accept a crash had interrupted.
    pub resumed: bool,
}

fn current(project: &Project, rel: &str) -> Result<Option<(Hash, u32, Vec<u8>)>> {
    Ok(fsx::read(&project.root, rel)?.map(|(bytes, mode)| (hash_bytes(&bytes), mode, bytes)))
}

/// Refuses paths whose parent chain passes through a symlink or a non-directory: accept never
/// writes through them, whatever was there when the agent ran.
fn check_writable(project: &Project, rel: &str) -> Result<()> {
    let parent = crate::paths::parent(rel);
    match fsx::open_dir(&project.root, parent, false) {
        Ok(_) => Ok(()),
        Err(Error::Io { source, .. }) if source.raw_os_error() == Some(libc::ENOENT) => {
            // Missing directories are created, but none of the existing ancestors may be a link.
            let mut dir = String::new();
            for comp in parent.split('/') {
                if !dir.is_empty() {
                    dir.push('/');
                }
                dir.push_str(comp);
                match std::fs::symlink_metadata(project.root.join(&dir)) {
                    Ok(md) if md.is_dir() => continue,
                    Ok(_) => return Err(Error::InvalidPath(rel.to_string())),
                    Err(_) => return Ok(()),
                }
            }
            Ok(())
        }
        Err(_) => Err(Error::InvalidPath(rel.to_string())),
    }
}

/// Accepts agent `id`: applies its changes to the working tree and `stable.db`.
pub fn accept(project: &Project, id: &str, force: bool) -> Result<AcceptReport> {
    let mut bin = project.bin()?;
    let rec = bin.get(id)?;
    if rec.accept_pending {
        return resume_accept(project, &rec, force);
    }
    if rec.state != State::Reviewing {
        return Err(Error::IllegalTransition {
            id: id.to_string(),
            from: rec.state.to_string(),
            action: "accept (only reviewing agents can be accepted)".into(),
        });
    }
    let overlay = project.existing_overlay(id)?.ok_or_else(|| Error::Sandbox(format!("overlay of agent {id} is missing")))?;
    let changed = overlay.changes()?;
    for c in &changed {
        if crate::paths::normalize(&c.path, &project.root)? != c.path || crate::paths::has_skipped_component(&c.path) {
            return Err(Error::InvalidPath(c.path.clone()));
        }
    }
    // Read and hash what the project holds now, on a few threads (I/O-bound).
    let threads = changed.len().div_ceil(16).clamp(1, 4);
    let currents: Vec<Result<Option<(Hash, u32, Vec<u8>)>>> = std::thread::scope(|s| {
        let handles: Vec<_> = changed
            .chunks(changed.len().div_ceil(threads).max(1))
            .map(|chunk| {
                s.spawn(move || {
                    chunk
                        .iter()
                        .map(|c| {
                            check_writable(project, &c.path)?;
                            current(project, &c.path)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap_or_else(|_| vec![Err(Error::Sandbox("accept reader panicked".into()))])).collect()
    });
    let mut stale = Vec::new();
    let mut journal = Vec::with_capacity(changed.len());
    for (c, cur) in changed.iter().zip(currents) {
        let cur = cur?;
        if cur.as_ref().map(|c| c.0) != c.base {
            stale.push(c.path.clone());
        }
        let new = match &c.change {
            Change::Write { mode, hash, .. } => Some((*hash, *mode)),
            Change::Delete => None,
        };
        let (old, old_content) = match cur {
            Some((h, m, bytes)) => (Some((h, m)), Some(bytes)),
            None => (None, None),
        };
        journal.push(JournalEntry { path: c.path.clone(), old, old_content, new });
    }
    if !stale.is_empty() && !force {
        return Err(Error::StaleBase { id: id.to_string(), paths: stale });
    }
    bin.begin_accept(id, &journal)?;
    let mut report = apply(project, overlay, &journal, &mut bin, id, false)?;
    report.forced = stale;
    Ok(report)
}

/// Finishes an accept that a crash interrupted, from its journal.
fn resume_accept(project: &Project, rec: &AgentRecord, force: bool) -> Result<AcceptReport> {
    let mut bin = project.bin()?;
    let journal = bin.journal(&rec.id)?;
    let overlay = project.existing_overlay(&rec.id)?.ok_or_else(|| Error::Sandbox(format!("overlay of agent {} is missing", rec.id)))?;
    let mut conflicts = Vec::new();
    for j in &journal {
        let cur = current(project, &j.path)?.map(|c| c.0);
        if cur != j.old.map(|o| o.0) && cur != j.new.map(|n| n.0) {
            conflicts.push(j.path.clone());
        }
    }
    if !conflicts.is_empty() && !force {
        return Err(Error::StaleBase { id: rec.id.clone(), paths: conflicts });
    }
    let mut report = apply(project, overlay, &journal, &mut bin, &rec.id, true)?;
    report.resumed = true;
    report.forced = conflicts;
    Ok(report)
}

/// Writes the journaled changes, updates `stable.db`, marks the agent accepted and archives
/// its overlay.
fn apply(project: &Project, overlay: Overlay, journal: &[JournalEntry], bin: &mut crate::store::bin::Bin, id: &str, resume: bool) -> Result<AcceptReport> {
    let mut report = AcceptReport { id: id.to_string(), written: Vec::new(), deleted: Vec::new(), forced: Vec::new(), resumed: false };
    // New contents come out of the overlay here (connections stay on this thread); each file
    // is then replaced atomically on its own, so the writes run concurrently: they are bound
    // by fsync latency, not CPU.
    let mut work = Vec::with_capacity(journal.len());
    for j in journal {
        let content = match j.new {
            Some(_) => Some(
                overlay
                    .get(&j.path)?
                    .flatten()
                    .ok_or_else(|| Error::Sandbox(format!("overlay of agent {id} lost {}", j.path)))?
                    .0,
            ),
            None => None,
        };
        work.push((j, content));
    }
    let threads = work.len().div_ceil(16).clamp(1, 4);
    let chunks: Vec<_> = work.chunks(work.len().div_ceil(threads).max(1)).collect();
    std::thread::scope(|s| -> Result<()> {
        let handles: Vec<_> = chunks
            .into_iter()
            .map(|chunk| s.spawn(move || chunk.iter().try_for_each(|(j, content)| apply_one(project, j, content.as_deref(), resume))))
            .collect();
        for h in handles {
            h.join().map_err(|_| Error::Sandbox("accept writer panicked".into()))??;
        }
        Ok(())
    })?;
    for j in journal {
        match j.new {
            Some(_) => report.written.push(j.path.clone()),
            None => report.deleted.push(j.path.clone()),
        }
    }
    let touched: Vec<(String, Option<Hash>)> = journal.iter().map(|j| (j.path.clone(), j.new.map(|n| n.0))).collect();
    crate::sync::record_known(project, &touched)?;
    drop(overlay);
    let summary = format!("accepted: {} written, {} deleted", report.written.len(), report.deleted.len());
    bin.finish_accept(id, &summary)?;
    project.archive_overlay(id)?;
    Ok(report)
}

/// Applies one journal entry. A fresh accept knows the file is as journaled; a resumed one
/// reads it, skips it when already done and clears a killed writer's temporary file.
fn apply_one(project: &Project, j: &JournalEntry, content: Option<&[u8]>, resume: bool) -> Result<()> {
    let cur = if resume {
        fsx::remove_temp(&project.root, &j.path)?;
        current(project, &j.path)?.map(|c| (c.0, c.1))
    } else {
        j.old
    };
    match j.new {
        Some((hash, mode)) if cur != Some((hash, mode)) => fsx::write_atomic(&project.root, &j.path, content.unwrap_or_default(), mode),
        Some(_) => Ok(()),
        None if cur.is_some() => fsx::remove(&project.root, &j.path),
        None => Ok(()),
    }
}

/// Rejects agent `id` (reviewing, queued or errored): its overlay is discarded; nothing else
/// changes.
pub fn reject(project: &Project, id: &str) -> Result<AgentRecord> {
    let rec = project.bin()?.transition(id, State::Rejected, "reject", TransitionExtra::default())?;
    project.archive_overlay(id)?;
    Ok(rec)
}

/// What an undo restored.
#[derive(Debug, Clone, Serialize)]
pub struct UndoReport {
    pub id: String,
    pub restored: Vec<String>,
    pub removed: Vec<String>,
}

/// Restores what accepting `id` changed, refusing paths edited since.
pub fn undo(project: &Project, id: &str) -> Result<UndoReport> {
    let mut bin = project.bin()?;
    let rec = bin.get(id)?;
    if rec.state != State::Accepted || rec.undone {
        let from = if rec.undone { "accepted and already undone".to_string() } else { rec.state.to_string() };
        return Err(Error::IllegalTransition { id: id.to_string(), from, action: "undo (only accepted agents can be undone)".into() });
    }
    let journal = bin.journal(id)?;
    let mut edited = Vec::new();
    for j in &journal {
        let cur = current(project, &j.path)?.map(|c| c.0);
        // Already restored (an interrupted undo) or still as accepted: both fine.
        if cur != j.new.map(|n| n.0) && cur != j.old.map(|o| o.0) {
            edited.push(j.path.clone());
        }
    }
    if !edited.is_empty() {
        return Err(Error::EditedSinceAccept { id: id.to_string(), paths: edited });
    }
    let mut report = UndoReport { id: id.to_string(), restored: Vec::new(), removed: Vec::new() };
    let mut touched = Vec::new();
    for j in &journal {
        match (&j.old, &j.old_content) {
            (Some((_, mode)), Some(content)) => {
                fsx::write_atomic(&project.root, &j.path, content, *mode)?;
                report.restored.push(j.path.clone());
            }
            _ => {
                fsx::remove(&project.root, &j.path)?;
                report.removed.push(j.path.clone());
            }
        }
        touched.push(j.path.clone());
    }
    crate::sync::refresh(project, &touched)?;
    bin.mark_undone(id)?;
    Ok(report)
}

/// One hunk of a file's proposal: at 0-based line `old_start` of the project's version,
/// `removed` lines are replaced by `added` lines.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Hunk {
    pub old_start: usize,
    pub removed: Vec<String>,
    pub added: Vec<String>,
}

fn split_lines(s: &str) -> Vec<String> {
    s.lines().map(str::to_string).collect()
}

/// The hunks (no context) turning `old` into `new`.
pub fn hunks_between(old: &str, new: &str) -> Vec<Hunk> {
    let diff = similar::TextDiff::from_lines(old, new);
    let (old_lines, new_lines) = (split_lines(old), split_lines(new));
    diff.grouped_ops(0)
        .into_iter()
        .filter_map(|group| {
            let first = group.first()?;
            let last = group.last()?;
            let old_range = first.old_range().start..last.old_range().end;
            let new_range = first.new_range().start..last.new_range().end;
            Some(Hunk {
                old_start: old_range.start,
                removed: old_lines.get(old_range).map(<[String]>::to_vec).unwrap_or_default(),
                added: new_lines.get(new_range).map(<[String]>::to_vec).unwrap_or_default(),
            })
        })
        .collect()
}

/// Applies `hunk` to `text` (whose lines at `old_start` must be `removed`).
fn apply_hunk(text: &str, hunk: &Hunk) -> Option<String> {
    let mut lines = split_lines(text);
    let end = hunk.old_start + hunk.removed.len();
    if lines.get(hunk.old_start..end)? != hunk.removed.as_slice() {
        return None;
    }
    lines.splice(hunk.old_start..end, hunk.added.iter().cloned());
    let mut out = lines.join("\n");
    if text.ends_with('\n') || (text.is_empty() && !out.is_empty()) {
        out.push('\n');
    }
    Some(out)
}

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
    let overlay = project.existing_overlay(id)?.ok_or_else(|| Error::Usage(format!("agent {id} has no proposal")))?;
    let new = match overlay.get(path)? {
        Some(Some((bytes, _))) => String::from_utf8(bytes).map_err(|_| Error::Usage(format!("{path} is binary: accept or reject the whole agent")))?,
        _ => return Err(Error::Usage(format!("agent {id} proposes no text change to {path}"))),
    };
    let old = match fsx::read(&project.root, path)? {
        Some((bytes, _)) => String::from_utf8_lossy(&bytes).into_owned(),
        None => String::new(),
    };
    if !hunks_between(&old, &new).contains(hunk) {
        return Err(Error::Usage(format!("that hunk of {path} is no longer part of agent {id}'s proposal; refresh and try again")));
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
    let accepted = any_accepted || bin.get(id)?.submission.as_ref().and_then(|s| s.get("hunks_accepted")).is_some();
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
    check_writable(project, path)?;
    let updated = apply_hunk(&old, hunk).ok_or_else(|| Error::Usage(format!("hunk does not apply to {path}")))?;
    let mode = current.map(|(_, m)| m).or_else(|| overlay.get(path).ok().flatten().flatten().map(|(_, m)| m)).unwrap_or(0o644);
    fsx::write_atomic(&project.root, path, updated.as_bytes(), mode)?;
    crate::sync::record_known(project, &[(path.to_string(), Some(hash_bytes(updated.as_bytes())))])?;
    // The project moved on by this hunk: it is the agent's new base for the path.
    overlay.rebase(path, Some((hash_bytes(updated.as_bytes()), mode)))?;
    if updated == new {
        overlay.forget(path)?;
    }
    let remaining = hunks_between(&updated, &new).len();
    project.bin()?.note(id, State::Reviewing, &format!("accepted a hunk of {path}"))?;
    mark_hunk_accepted(project, id)?;
    let state = settle(project, id, overlay, true)?;
    Ok(HunkReport { id: id.to_string(), path: path.to_string(), remaining, state })
}

fn mark_hunk_accepted(project: &Project, id: &str) -> Result<()> {
    let mut bin = project.bin()?;
    let rec = bin.get(id)?;
    let mut sub = rec.submission.unwrap_or_else(|| serde_json::json!({}));
    if let Some(obj) = sub.as_object_mut() {
        obj.insert("hunks_accepted".into(), serde_json::Value::Bool(true));
    }
    bin.set_submission(id, &sub)
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
    project.bin()?.note(id, State::Reviewing, &format!("rejected a hunk of {path}"))?;
    let any = project.bin()?.get(id)?.submission.as_ref().and_then(|s| s.get("hunks_accepted")).is_some();
    let state = settle(project, id, overlay, any)?;
    Ok(HunkReport { id: id.to_string(), path: path.to_string(), remaining, state })
}
