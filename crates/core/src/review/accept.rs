//! Accept: a small write-ahead protocol, under the project's review lock.
//!
//! 1. Rebase the agent's change onto the project as it is now (three-way; review reads each
//!    file once and keeps its stamp) and refuse conflicts.
//! 2. Write the journal (old contents, old and new hashes) and mark the accept pending, in one
//!    transaction.
//! 3. Write and fsync every new file under a temporary name while the journal is forced to
//!    disk; then a last look at each path's stamp: one that moved since review read it (an
//!    editor saving) stops the accept with nothing changed.
//! 4. Rename each file in place (and fsync its directory) while `stable.db` records the new
//!    versions.
//! 5. Mark the agent accepted and archive its overlay.
//!
//! A crash anywhere leaves each file wholly old or wholly new, and running accept again
//! finishes from the journal.

use crate::error::{Error, Result};
use crate::lifecycle::State;
use crate::project::Project;
use crate::store::bin::{AgentRecord, Bin, JournalEntry, JournalSync};
use crate::store::overlay::Overlay;
use super::ahead::Ahead;
use crate::store::{atomic, fsx, hash_bytes, Hash};
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
/// writes through them, whatever was there when the agent ran. Returns the parent directory
/// when it exists, opened symlink-safely.
pub(crate) fn check_writable(project: &Project, rel: &str) -> Result<Option<std::os::fd::OwnedFd>> {
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
                _ => Ok(Some(dir)),
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
                    Err(_) => return Ok(None),
                }
            }
            Ok(None)
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
    let phases = Phases::start();
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
    phases.mark("opened");
    let agent = overlay.changes()?;
    let ahead = Ahead::start(&project.root, &agent);
    let changed = super::diff::changes_from(project, &overlay, &rec, &agent)?;
    drop(agent);
    phases.mark("reviewed");
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
    let mut journal = Vec::with_capacity(changed.len());
    let mut work = Vec::with_capacity(changed.len());
    for c in changed {
        let new = c.new.as_ref().map(|bytes| (c.new_hash.unwrap_or_else(|| hash_bytes(bytes)), c.new_mode.unwrap_or(0o644) & 0o777));
        // The overlay holds exactly what lands (the rebased change), so a resumed accept
        // writes the same bytes.
        if let (Some(bytes), Some((_, mode)), true) = (&c.new, new, c.rebased) {
            if overlay.get(&c.path)?.flatten().map(|(b, _)| b).as_ref() != Some(bytes) {
                overlay.write(&c.path, bytes, mode)?;
            }
        }
        let old = c.old_hash.zip(c.old_mode);
        journal.push(JournalEntry { path: c.path, old, old_content: c.old, new });
        work.push(Work { content: c.new, seen: Seen::At(c.seen) });
    }
    let sync = bin.begin_accept(id, &journal)?;
    phases.mark("journaled");
    let mut report = apply(project, overlay, &journal, work, ahead, &mut bin, id, sync, false, &phases)?;
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
    let work = journaled_contents(&overlay, &journal, &rec.id)?.into_iter().map(|content| Work { content, seen: Seen::Unknown }).collect();
    let mut report = apply(project, overlay, &journal, work, Ahead::none(), &mut bin, &rec.id, sync, true, &Phases::start())?;
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

/// What accept writes at one journaled path: the new content, and what it knows of the path.
struct Work {
    content: Option<Vec<u8>>,
    seen: Seen,
}

/// What accept knows of a path before it prepares it.
enum Seen {
    /// Its stamp when review read the journaled old content from it (`None`: absent then).
    At(Option<fsx::Stamp>),
    /// Nothing: a resumed accept reads it again (it may already hold the new content).
    Unknown,
}

/// Writes the journaled changes, updates `stable.db`, marks the agent accepted and archives
/// its overlay.
#[allow(clippy::too_many_arguments)]
fn apply(project: &Project, overlay: Overlay, journal: &[JournalEntry], work: Vec<Work>, ahead: Ahead, bin: &mut Bin, id: &str, sync: JournalSync, resume: bool, phases: &Phases) -> Result<AcceptReport> {
    if resume {
        // What a killed writer left, once per directory and before any new write (the writes
        // below run concurrently and each makes its own temporary file).
        let dirs: std::collections::BTreeSet<&str> = journal.iter().map(|j| crate::paths::parent(&j.path)).collect();
        for dir in dirs {
            atomic::remove_temps(&project.root, dir)?;
        }
    }
    // An ordinary error up to the first rename (a full disk, a read-only directory, a file
    // edited meanwhile) leaves the project as it was, and a fresh accept is abandoned: the
    // agent stays reviewable.
    let steps = match prepare_all(project, id, journal, work, ahead, sync) {
        Ok(steps) => {
            phases.mark("prepared");
            steps
        }
        Err(e) => {
            if !resume {
                bin.abandon_accept(id)?;
            }
            return Err(e);
        }
    };
    // Then every file goes in place (renames and directory fsyncs, concurrently), while
    // `stable.db` records the new versions from what was written (a rename keeps a file's
    // status; should the renames fail midway, the index sees the difference and re-hashes).
    let known: Vec<crate::sync::Known> = journal
        .iter()
        .zip(&steps)
        .map(|(j, step)| (j.path.clone(), j.new.map(|n| (n.0, if let Step::Write(p) = step { Some(p.written()) } else { None }))))
        .collect();
    let steps: Vec<std::sync::Mutex<Option<Step>>> = steps.into_iter().map(|s| std::sync::Mutex::new(Some(s))).collect();
    let threads = crate::par::io_threads(steps.len());
    let (committed, recorded) = std::thread::scope(|s| {
        let recorded = s.spawn(|| crate::sync::record_known(project, &known));
        let committed = crate::par::map(&steps, threads, "accept (renaming)", |slot| match slot.lock().ok().and_then(|mut s| s.take()) {
            Some(Step::Write(p)) => p.commit(),
            Some(Step::Remove(path)) => fsx::remove(&project.root, &path),
            _ => Ok(()),
        });
        (committed, recorded.join().unwrap_or_else(|_| Err(Error::panicked("accept (recording)"))))
    });
    committed?.into_iter().collect::<Result<()>>()?;
    recorded?;
    phases.mark("renamed");
    let mut report = AcceptReport { id: id.to_string(), written: Vec::new(), deleted: Vec::new(), forced: Vec::new(), resumed: false };
    for j in journal {
        match j.new {
            Some(_) => report.written.push(j.path.clone()),
            None => report.deleted.push(j.path.clone()),
        }
    }
    drop(overlay);
    let summary = format!("accepted: {} written, {} deleted", report.written.len(), report.deleted.len());
    bin.finish_accept(id, &summary)?;
    project.archive_overlay(id)?;
    phases.mark("finished");
    Ok(report)
}

/// When each phase of an accept ended, for `tracing` (the bench shows them).
struct Phases(std::time::Instant);

impl Phases {
    fn start() -> Phases {
        Phases(std::time::Instant::now())
    }

    fn mark(&self, phase: &str) {
        tracing::debug!(target: "cairn::accept", "phase {phase} {:.2} ms", self.0.elapsed().as_secs_f64() * 1e3);
    }
}

/// Writes and syncs every new file under a temporary name (concurrently: the work is bound by
/// fsync latency) while the journal's own fsync runs, then takes a last look at each path:
/// a status that moved since its check (an editor saving meanwhile) stops the accept before
/// anything changes in place.
fn prepare_all(project: &Project, id: &str, journal: &[JournalEntry], work: Vec<Work>, ahead: Ahead, sync: JournalSync) -> Result<Vec<Step>> {
    let work: Vec<(&JournalEntry, Work)> = journal.iter().zip(work).collect();
    let threads = crate::par::io_threads(work.len());
    let prepared = std::thread::scope(|s| {
        let synced = s.spawn(move || sync.sync());
        // What was written ahead serves where it is exactly what lands.
        let early = std::sync::Mutex::new(ahead.join());
        let take = |j: &JournalEntry| {
            let written = early.lock().ok().and_then(|mut e| e.remove(&j.path));
            written.filter(|(hash, mode, _)| j.new == Some((*hash, *mode))).map(|(_, _, p)| p)
        };
        let keep = work.len() <= HELD_DIRS;
        let prepared = crate::par::map(&work, threads, "accept (writing)", |(j, w)| prepare_one(project, j, w, take(j), keep))
            .and_then(|all| all.into_iter().collect::<Result<Vec<_>>>());
        let synced = synced.join().unwrap_or_else(|_| Err(Error::panicked("accept (journal fsync)")));
        synced.and(prepared)
    })?;
    let looks: Vec<(&JournalEntry, (Step, Option<fsx::Stamp>))> = journal.iter().zip(prepared).collect();
    let moved = crate::par::map(&looks, threads, "accept (checking)", |(j, (step, seen))| {
        let now = match step {
            Step::Write(p) => p.target_stamp()?,
            _ => fsx::stamp(&project.root, &j.path)?,
        };
        Ok((now != *seen).then(|| j.path.clone()))
    })?;
    let moved: Vec<String> = moved.into_iter().collect::<Result<Vec<_>>>()?.into_iter().flatten().collect();
    if !moved.is_empty() {
        return Err(Error::StaleBase { id: id.to_string(), paths: moved });
    }
    Ok(looks.into_iter().map(|(_, (step, _))| step).collect())
}

/// What one journal entry needs once every file is prepared.
enum Step {
    Write(atomic::Prepared),
    Remove(String),
    Nothing,
}

/// Checks one journal entry's path and prepares its new version; also returns the path's
/// stamp, for the last look before the renames. A fresh accept knows the path holds the
/// journaled old content as long as its stamp has not moved since review read it; a resumed
/// one reads it, and skips a path already done. `ahead`: its new version written ahead, used
/// when its directory is still the one checked now. With `keep`, the prepared file holds its
/// directory's descriptor (a walk less for each later step; the caller bounds how many).
fn prepare_one(project: &Project, j: &JournalEntry, work: &Work, ahead: Option<atomic::Prepared>, keep: bool) -> Result<(Step, Option<fsx::Stamp>)> {
    let dir = check_writable(project, &j.path)?;
    let (now, seen) = match work.seen {
        Seen::At(seen) => (j.old, seen),
        Seen::Unknown => {
            let cur = match &dir {
                Some(d) => fsx::read_stamped(&project.root, &j.path, Some(d))?,
                None => None,
            };
            (cur.as_ref().map(|(bytes, mode, _)| (hash_bytes(bytes), *mode)), cur.map(|c| c.2))
        }
    };
    // Written ahead into the very directory checked now, or written now.
    let ahead = ahead.filter(|p| dir.as_ref().is_some_and(|d| p.is_in(d)));
    let step = match j.new {
        Some((hash, mode)) if now != Some((hash, mode)) => match ahead {
            Some(p) => Step::Write(p),
            None => Step::Write(atomic::prepare_in(&project.root, &j.path, dir.filter(|_| keep), work.content.as_deref().unwrap_or_default(), mode)?),
        },
        Some(_) => Step::Nothing,
        None if now.is_some() => Step::Remove(j.path.clone()),
        None => Step::Nothing,
    };
    Ok((step, seen))
}

/// How many prepared files may hold their directory's descriptor at once (far below any
/// descriptor limit; a larger accept opens each directory again to commit).
const HELD_DIRS: usize = 256;
