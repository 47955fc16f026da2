//! Accept and reject.
//!
//! Accept is a small write-ahead protocol, under the project's review lock: (1) rebase the
//! agent's change onto the project as it is now (three-way) and refuse conflicts; (2) write the journal (old content, old and new hashes) to `bin.db` and mark the
//! accept pending, in one transaction; (3) replace each file atomically; (4) update
//! `stable.db`; (5) mark the agent accepted and archive its overlay. A crash anywhere leaves
//! each file wholly old or wholly new, and running accept again finishes from the journal.

use crate::error::{Error, Result};
use crate::lifecycle::State;
use crate::project::Project;
use crate::store::bin::{AgentRecord, Bin, JournalEntry, JournalSync, TransitionExtra};
use crate::store::overlay::Overlay;
use crate::store::{fsx, hash_bytes, Hash};
use serde::Serialize;

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

pub(crate) fn current(project: &Project, rel: &str) -> Result<Option<(Hash, u32, Vec<u8>)>> {
    Ok(fsx::read(&project.root, rel)?.map(|(bytes, mode)| (hash_bytes(&bytes), mode, bytes)))
}

/// Refuses paths whose parent chain passes through a symlink or a non-directory: accept never
/// writes through them, whatever was there when the agent ran.
pub(crate) fn check_writable(project: &Project, rel: &str) -> Result<()> {
    let parent = crate::paths::parent(rel);
    match fsx::open_dir(&project.root, parent, false) {
        Ok(dir) => {
            // A read-only directory or a directory at the file's path would fail the write
            // midway: refuse before the first one.
            let denied = |why: &str| Error::io(project.root.join(rel), std::io::Error::new(std::io::ErrorKind::PermissionDenied, why.to_string()));
            if rustix::fs::accessat(&dir, ".", rustix::fs::Access::WRITE_OK, rustix::fs::AtFlags::empty()).is_err() {
                return Err(denied("its directory is not writable"));
            }
            match rustix::fs::statat(&dir, crate::paths::file_name(rel), rustix::fs::AtFlags::SYMLINK_NOFOLLOW) {
                Ok(st) if rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::Directory => Err(denied("a directory is at that path")),
                _ => Ok(()),
            }
        }
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
                    Ok(md) => return Err(not_a_directory(project, rel, &dir, md.file_type().is_symlink())),
                    Err(_) => return Ok(()),
                }
            }
            Ok(())
        }
        Err(_) => {
            // Say which ancestor is in the way, and how.
            let mut dir = String::new();
            for comp in parent.split('/') {
                if !dir.is_empty() {
                    dir.push('/');
                }
                dir.push_str(comp);
                if let Ok(md) = std::fs::symlink_metadata(project.root.join(&dir)) {
                    if !md.is_dir() {
                        return Err(not_a_directory(project, rel, &dir, md.file_type().is_symlink()));
                    }
                }
            }
            Err(Error::InvalidPath(rel.to_string()))
        }
    }
}

/// The refusal for a path whose ancestor `dir` is now a file or a symlink.
fn not_a_directory(project: &Project, rel: &str, dir: &str, symlink: bool) -> Error {
    let what = if symlink { "a symbolic link (accept never writes through one)" } else { "a file now" };
    Error::io(project.root.join(rel), std::io::Error::new(std::io::ErrorKind::NotADirectory, format!("its parent {dir} is {what}")))
}

/// Accepts agent `id`: applies its change, rebased onto the project as it is now, to the
/// working tree and `stable.db`. Conflicts with the user's edits refuse it unless `force`,
/// which takes the agent's side there (the overwritten content is journaled for undo).
pub fn accept(project: &Project, id: &str, force: bool) -> Result<AcceptReport> {
    let _lock = super::lock::acquire(project)?;
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
    let overlay = project.existing_overlay(id)?.ok_or_else(|| missing_overlay(id))?;
    let changed = super::diff::changes(project, id)?;
    for c in &changed {
        refuse_unsafe_path(project, &c.path)?;
    }
    let conflicts: Vec<&super::FileChange> = changed.iter().filter(|c| c.conflicted()).collect();
    if !conflicts.is_empty() && !force {
        return Err(Error::Conflict { id: id.to_string(), conflicts: conflicts.iter().map(|c| c.conflict_text()).collect() });
    }
    let forced = conflicts.iter().map(|c| c.path.clone()).collect();
    let needed: u64 = changed.iter().filter_map(|c| c.new.as_ref()).map(|b| b.len() as u64).sum();
    if let Ok(fs) = rustix::fs::statvfs(&project.root) {
        let free = fs.f_bavail.saturating_mul(fs.f_frsize);
        if needed > free {
            let why = format!("the accept writes {needed} bytes and the file system has {free} free");
            return Err(Error::io(&project.root, std::io::Error::new(std::io::ErrorKind::StorageFull, why)));
        }
    }
    // Everything that can be checked is checked before the first write; the files are read
    // and hashed again on a few threads (I/O-bound) for the journal.
    let threads = crate::par::io_threads(changed.len());
    let currents = crate::par::map(&changed, threads, "accept (reading)", |c| {
        check_writable(project, &c.path)?;
        current(project, &c.path)
    })?;
    let mut journal = Vec::with_capacity(changed.len());
    let mut contents = Vec::with_capacity(changed.len());
    for (c, cur) in changed.into_iter().zip(currents) {
        let cur = cur?;
        if cur.as_ref().map(|x| &x.2) != c.old.as_ref() {
            // Edited between the merge and now (an editor saving): merge again rather than lose it.
            return Err(Error::StaleBase { id: id.to_string(), paths: vec![c.path.clone()] });
        }
        let new = c.new.as_ref().map(|bytes| (hash_bytes(bytes), c.new_mode.unwrap_or(0o644) & 0o777));
        // The overlay holds exactly what lands (the rebased change), so a resumed accept
        // writes the same bytes.
        if let (Some(bytes), Some((_, mode)), true) = (&c.new, new, c.rebased) {
            if overlay.get(&c.path)?.flatten().map(|(b, _)| b).as_ref() != Some(bytes) {
                overlay.write(&c.path, bytes, mode)?;
            }
        }
        let (old, old_content) = match cur {
            Some((h, m, bytes)) => (Some((h, m)), Some(bytes)),
            None => (None, None),
        };
        journal.push(JournalEntry { path: c.path, old, old_content, new });
        contents.push(c.new);
    }
    let sync = bin.begin_accept(id, &journal)?;
    let mut report = apply(project, overlay, &journal, contents, &mut bin, id, sync, false)?;
    report.forced = forced;
    Ok(report)
}

/// Accept writes only normalized paths outside the never-mirrored and protected ones, whatever
/// an overlay holds (it may come from an older cairn, or be tampered with).
pub(crate) fn refuse_unsafe_path(project: &Project, rel: &str) -> Result<()> {
    if let Some(rule) = crate::paths::protected(rel) {
        return Err(Error::ProtectedPath { path: rel.to_string(), rule });
    }
    if crate::paths::normalize(rel, &project.root)? != rel || crate::paths::has_skipped_component(rel) {
        return Err(Error::InvalidPath(rel.to_string()));
    }
    Ok(())
}

fn missing_overlay(id: &str) -> Error {
    Error::Overlay { id: id.to_string(), message: "the overlay database is missing".into() }
}

/// Finishes an accept that a crash interrupted, from its journal. A path the user edited in
/// between is a conflict; with `force` the edit is journaled first, so undo gives it back.
fn resume_accept(project: &Project, rec: &AgentRecord, force: bool) -> Result<AcceptReport> {
    let mut bin = project.bin()?;
    let overlay = project.existing_overlay(&rec.id)?.ok_or_else(|| missing_overlay(&rec.id))?;
    let mut conflicts = Vec::new();
    for j in bin.journal(&rec.id)? {
        let cur = current(project, &j.path)?;
        let hash = cur.as_ref().map(|c| c.0);
        if hash != j.old.map(|o| o.0) && hash != j.new.map(|n| n.0) {
            if force {
                bin.rejournal_old(&rec.id, &j.path, cur.as_ref().map(|c| (c.0, c.1)), cur.as_ref().map(|c| c.2.as_slice()))?;
            }
            conflicts.push(j.path.clone());
        }
    }
    if !conflicts.is_empty() && !force {
        return Err(Error::StaleBase { id: rec.id.clone(), paths: conflicts });
    }
    let journal = bin.journal(&rec.id)?;
    let sync = bin.journal_sync(&rec.id);
    let contents = journaled_contents(&overlay, &journal, &rec.id)?;
    let mut report = apply(project, overlay, &journal, contents, &mut bin, &rec.id, sync, true)?;
    report.resumed = true;
    report.forced = conflicts;
    Ok(report)
}

/// The new content of each journal entry, from the overlay (which holds exactly what lands).
fn journaled_contents(overlay: &Overlay, journal: &[JournalEntry], id: &str) -> Result<Vec<Option<Vec<u8>>>> {
    let lost = |path: &str| Error::Overlay { id: id.to_string(), message: format!("lost the content of {path}") };
    journal.iter().map(|j| match j.new {
        Some(_) => overlay.get(&j.path)?.flatten().map(|(bytes, _)| Some(bytes)).ok_or_else(|| lost(&j.path)),
        None => Ok(None),
    }).collect()
}

/// Writes the journaled changes (`contents`: each entry's new content), updates `stable.db`,
/// marks the agent accepted and archives its overlay.
#[allow(clippy::too_many_arguments)]
fn apply(project: &Project, overlay: Overlay, journal: &[JournalEntry], contents: Vec<Option<Vec<u8>>>, bin: &mut Bin, id: &str, sync: JournalSync, resume: bool) -> Result<AcceptReport> {
    let mut report = AcceptReport { id: id.to_string(), written: Vec::new(), deleted: Vec::new(), forced: Vec::new(), resumed: false };
    // Each file is replaced atomically on its own, so the writes run concurrently: they are
    // bound by fsync latency, not CPU.
    let work: Vec<(&JournalEntry, Option<Vec<u8>>)> = journal.iter().zip(contents).collect();
    if resume {
        // What a killed writer left, once per directory and before any new write (the writes
        // below run concurrently and each makes its own temporary file).
        let dirs: std::collections::BTreeSet<&str> = journal.iter().map(|j| crate::paths::parent(&j.path)).collect();
        for dir in dirs {
            fsx::remove_temps(&project.root, dir)?;
        }
    }
    // Every new file is written and synced under a temporary name first (concurrently: the
    // work is bound by fsync latency), while the journal's own fsync runs; only when all are
    // on disk does anything change in place. An ordinary error up to here (a full disk, a
    // read-only directory) leaves the project as it was, and a fresh accept is abandoned: the
    // agent stays reviewable.
    let threads = crate::par::io_threads(work.len());
    let prepared = std::thread::scope(|s| {
        let synced = s.spawn(move || sync.sync());
        let prepared = crate::par::map(&work, threads, "accept (writing)", |(j, content)| prepare_one(project, j, content.as_deref(), resume))
            .and_then(|all| all.into_iter().collect::<Result<Vec<_>>>());
        let synced = synced.join().unwrap_or_else(|_| Err(Error::panicked("accept (journal fsync)")));
        synced.and(prepared)
    });
    let prepared = match prepared {
        Ok(p) => p,
        Err(e) => {
            if !resume {
                bin.abandon_accept(id)?;
            }
            return Err(e);
        }
    };
    // Then every file goes in place (renames and directory fsyncs, concurrently too).
    let steps: Vec<std::sync::Mutex<Option<Step>>> = prepared.into_iter().map(|s| std::sync::Mutex::new(Some(s))).collect();
    let committed = crate::par::map(&steps, threads, "accept (renaming)", |slot| {
        match slot.lock().ok().and_then(|mut s| s.take()) {
            Some(Step::Write(p)) => p.commit(),
            Some(Step::Remove(path)) => fsx::remove(&project.root, &path),
            _ => Ok(()),
        }
    })?;
    committed.into_iter().collect::<Result<()>>()?;
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

/// What one journal entry needs once every file is prepared.
enum Step {
    Write(fsx::Prepared),
    Remove(String),
    Nothing,
}

/// Prepares one journal entry. A fresh accept knows the file is as journaled; a resumed one
/// reads it and skips it when already done.
fn prepare_one(project: &Project, j: &JournalEntry, content: Option<&[u8]>, resume: bool) -> Result<Step> {
    let cur = if resume { current(project, &j.path)?.map(|c| (c.0, c.1)) } else { j.old };
    Ok(match j.new {
        Some((hash, mode)) if cur != Some((hash, mode)) => Step::Write(fsx::prepare(&project.root, &j.path, content.unwrap_or_default(), mode)?),
        Some(_) => Step::Nothing,
        None if cur.is_some() => Step::Remove(j.path.clone()),
        None => Step::Nothing,
    })
}

/// Restores the journaled old content of every path an interrupted accept of `id` reached,
/// refusing (and changing nothing) when a path holds neither side (edited since).
fn roll_back(project: &Project, id: &str) -> Result<()> {
    let mut bin = project.bin()?;
    let journal = bin.journal(id)?;
    let (currents, edited) = journal_state(project, &journal)?;
    if !edited.is_empty() {
        return Err(Error::StaleBase { id: id.to_string(), paths: edited });
    }
    let dirs: std::collections::BTreeSet<&str> = journal.iter().map(|j| crate::paths::parent(&j.path)).collect();
    for dir in dirs {
        fsx::remove_temps(&project.root, dir)?;
    }
    let mut touched = Vec::new();
    for (j, cur) in journal.iter().zip(currents) {
        if cur == j.old.map(|o| o.0) {
            continue;
        }
        match (&j.old, &j.old_content) {
            (Some((_, mode)), Some(content)) => fsx::write_atomic(&project.root, &j.path, content, *mode)?,
            _ => fsx::remove(&project.root, &j.path)?,
        }
        touched.push(j.path.clone());
    }
    crate::sync::refresh(project, &touched)?;
    bin.abandon_accept(id)
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

/// Rejects agent `id` (reviewing, queued or errored): its overlay is discarded; nothing else
/// changes.
///
/// An accept that failed midway (an I/O error, a kill) is rolled back first: every file it
/// wrote gets its journaled old content back, so rejecting never leaves a half-applied change.
pub fn reject(project: &Project, id: &str) -> Result<AgentRecord> {
    let _lock = super::lock::acquire(project)?;
    if project.bin()?.get(id)?.accept_pending {
        roll_back(project, id)?;
    }
    let rec = project.bin()?.transition(id, State::Rejected, "reject", TransitionExtra::default())?;
    project.archive_overlay(id)?;
    Ok(rec)
}

