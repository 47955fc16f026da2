//! Accept: a small write-ahead protocol, under the project's review lock.
//!
//! 1. Rebase the agent's change onto the project as it is now (three-way; review reads each
//!    file once and keeps its stamp) and refuse conflicts.
//! 2. Write the journal (old and new hashes, and the old contents the agent's overlay does not
//!    already keep as its bases) and mark the accept pending, in one transaction.
//! 3. Write and fsync every new file under a temporary name while the journal is forced to
//!    disk; then a last look at each path's stamp: one that moved since review read it (an
//!    editor saving) stops the accept with nothing changed (`prepare.rs`; the files are
//!    mostly written ahead, during steps 1 and 2: `ahead.rs`).
//! 4. Put each file in place (and fsync its directory) while `stable.db` records the new
//!    versions: an exchange with what is at the path, kept only if that is what was seen (an
//!    editor saving after the last look gets its file back, and the accept is rolled back).
//! 5. Mark the agent accepted and archive its overlay.
//!
//! A crash anywhere leaves each file wholly old or wholly new, and running accept again
//! finishes from the journal.

use crate::error::{Error, Result};
use crate::project::Project;
use crate::store::bin::{AgentRecord, Bin, JournalEntry, JournalSync};
use crate::store::overlay::Overlay;
use super::ahead::Ahead;
use super::prepare::{prepare_all, Seen, Step, Work};
use crate::store::{atomic, fsx, hash_bytes};
use super::rollback::current;
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


/// Accepts agent `id`: applies its change, rebased onto the project as it is now, to the
/// working tree and `stable.db`. Conflicts with the user's edits refuse it unless `force`,
/// which takes the agent's side there (the overwritten content is journaled for undo).
/// `bin`: a connection to the project's `bin.db`.
pub fn accept(project: &Project, bin: &mut Bin, id: &str, force: bool) -> Result<AcceptReport> {
    let phases = Phases::start();
    let _lock = super::lock::acquire_for(project, id)?;
    let rec = bin.get(id)?;
    if rec.accept_pending {
        return resume_accept(project, bin, &rec, force);
    }
    if !rec.state.is_reviewable() {
        return Err(Error::IllegalTransition {
            id: id.to_string(),
            from: rec.state.to_string(),
            action: "accept (only reviewing or undone agents can be accepted)".into(),
        });
    }
    let mut overlay = project.existing_overlay(id)?.ok_or_else(|| missing_overlay(id))?;
    phases.mark("opened");
    let agent = std::sync::Arc::new(overlay.changes()?);
    phases.mark("loaded");
    let ahead = Ahead::start(&project.root, &agent);
    let changed = super::diff::changes_from(project, &overlay, &rec, &agent)?;
    drop(agent);
    phases.mark("reviewed");
    // What is at each path now (a link, a FIFO) is looked at while the files are prepared.
    for c in &changed {
        crate::paths::refuse_unwritable(&c.path)?;
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
        // writes the same bytes; its base becomes the version it was rebased onto, in the
        // same transaction, so an accept refused after this leaves a proposal whose change is
        // still the agent's alone (the user's edits in between never read as the agent's).
        if let (Some(bytes), Some((_, mode)), true) = (&c.new, new, c.rebased) {
            if overlay.get(&c.path)?.flatten().map(|(b, _)| b).as_ref() != Some(bytes) {
                let onto = c.old_hash.zip(c.old_mode);
                overlay.transaction(|o| {
                    o.rebase_base(&c.path, onto, c.old.as_deref())?;
                    o.write(&c.path, bytes, mode)
                })?;
            }
        }
        let old = c.old_hash.zip(c.old_mode);
        // An old content the overlay already keeps (its base: the file is as the agent read
        // it) is not copied into the journal again.
        let old_content = if c.old_is_base { None } else { c.old };
        journal.push(JournalEntry { path: c.path, old, old_content, old_in_base: c.old_is_base, new });
        work.push(Work { content: c.new, seen: Seen::At(c.seen) });
    }
    let sync = bin.begin_accept(id, &journal)?.with_overlay(&overlay.file());
    phases.mark("journaled");
    let mut report = apply(project, Closing::start(overlay), &journal, work, ahead, bin, id, sync, false, force, &phases)?;
    report.forced = forced;
    Ok(report)
}

/// Accept writes only normalized paths outside the never-mirrored and protected ones, whatever
/// an overlay holds (it may come from an older cairn, or be tampered with), and only over a
/// regular file (or nothing).
pub(crate) fn refuse_unsafe_path(project: &Project, rel: &str) -> Result<()> {
    crate::paths::refuse_unwritable(rel)?;
    match fsx::stat_nofollow(&project.root, rel)?.and_then(|st| super::prepare::not_a_file(st.st_mode)) {
        Some(what) => Err(Error::NotAFile { path: rel.to_string(), what }),
        None => Ok(()),
    }
}

fn missing_overlay(id: &str) -> Error {
    Error::Overlay { id: id.to_string(), message: "the overlay database is missing".into() }
}

/// Finishes an accept that a crash interrupted, from its journal. A path the user edited in
/// between is a conflict; with `force` the edit is journaled first, so undo gives it back.
fn resume_accept(project: &Project, bin: &mut Bin, rec: &AgentRecord, force: bool) -> Result<AcceptReport> {
    let overlay = project.existing_overlay(&rec.id)?.ok_or_else(|| missing_overlay(&rec.id))?;
    let mut conflicts = Vec::new();
    let journal = super::journal_in(bin, &overlay, &rec.id)?;
    for j in &journal {
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
    // Re-read only where `--force` re-journaled the user's edits.
    let journal = if conflicts.is_empty() { journal } else { super::journal_in(bin, &overlay, &rec.id)? };
    let sync = bin.journal_sync(&rec.id).with_overlay(&overlay.file());
    let work = journaled_contents(&overlay, &journal, &rec.id)?.into_iter().map(|content| Work { content, seen: Seen::Unknown }).collect();
    let mut report = apply(project, Closing::start(overlay), &journal, work, Ahead::none(), bin, &rec.id, sync, true, force, &Phases::start())?;
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

/// Writes the journaled changes, updates `stable.db`, marks the agent accepted and archives
/// its overlay.
#[allow(clippy::too_many_arguments)]
fn apply(project: &Project, closing: Closing, journal: &[JournalEntry], work: Vec<Work>, ahead: Ahead, bin: &mut Bin, id: &str, sync: JournalSync, resume: bool, force: bool, phases: &Phases) -> Result<AcceptReport> {
    if resume {
        // What a killed writer left, once per directory and before any new write (the writes
        // below run concurrently and each makes its own temporary file).
        let dirs: std::collections::BTreeSet<&str> = journal.iter().map(|j| crate::paths::parent(&j.path)).collect();
        for dir in dirs {
            atomic::remove_temps(&project.root, dir)?;
        }
    }
    // An ordinary error up to the first rename (a full disk, a read-only directory, a file
    // edited meanwhile) leaves the project as it was (the directories made for new files go
    // again), and a fresh accept is abandoned: the agent stays reviewable.
    let added = journal.iter().filter(|j| j.old.is_none() && j.new.is_some()).map(|j| j.path.as_str());
    let made = if resume { Vec::new() } else { super::rollback::missing_dirs(project, added) };
    let (steps, leases) = match prepare_all(project, id, journal, work, ahead, sync, force) {
        Ok(prepared) => {
            phases.mark("prepared");
            prepared
        }
        Err(e) => {
            if !resume {
                super::rollback::remove_made_dirs(project, &made);
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
        .map(|(j, (step, _))| (j.path.clone(), j.new.map(|n| (n.0, if let Step::Write(p) = step { Some(p.written()) } else { None }))))
        .collect();
    let (moved, recorded) = std::thread::scope(|s| {
        let recorded = s.spawn(|| crate::sync::record_known(project, &known));
        (rename_all(project, steps, &leases), recorded.join().unwrap_or_else(|_| Err(Error::panicked("accept (recording)"))))
    });
    let moved = moved.map_err(|e| Error::AcceptStopped { id: id.to_string(), cause: Box::new(e) })?;
    recorded?;
    // Whoever waits on a lease (an open for writing of an old file) goes on now: with the
    // file it opened in place, when it is one the renames put back.
    drop(leases);
    if !moved.is_empty() {
        // What went in place goes back (the journal has it); the saved files stay as saved,
        // and so do the files a process opened for writing meanwhile.
        drop(closing);
        super::rollback::roll_back(project, id)?;
        return Err(match moved.iter().find(|(_, over)| *over == atomic::Over::Held) {
            Some((path, _)) => super::prepare::opened_meanwhile(path, "accept", &super::prepare::force_tail(id)),
            None => Error::StaleBase { id: id.to_string(), paths: moved.into_iter().map(|(p, _)| p).collect() },
        });
    }
    phases.mark("renamed");
    let mut report = AcceptReport { id: id.to_string(), written: Vec::new(), deleted: Vec::new(), forced: Vec::new(), resumed: false };
    for j in journal {
        match j.new {
            Some(_) => report.written.push(j.path.clone()),
            None => report.deleted.push(j.path.clone()),
        }
    }
    // The overlay is closed (waited for here) before it moves.
    drop(closing);
    phases.mark("closed");
    let summary = format!("accepted: {} written, {} deleted", report.written.len(), report.deleted.len());
    // Its overlay is archived meanwhile (a resumed accept finds it there too).
    let (finished, archived) = std::thread::scope(|s| {
        let archived = s.spawn(|| project.archive_overlay(id));
        (bin.finish_accept(id, &summary), archived.join().unwrap_or_else(|_| Err(Error::panicked("accept (archiving)"))))
    });
    finished?;
    archived?;
    phases.mark("finished");
    Ok(report)
}

/// Puts every prepared file in place, each only over what was seen at its path (concurrently);
/// the paths found changed at their rename (an editor saved after the last look) or being
/// opened for writing (a lease of `leases` breaking), after which no more is renamed.
fn rename_all(project: &Project, steps: Vec<(Step, Option<fsx::Stamp>)>, leases: &crate::store::held::Leases) -> Result<Vec<(String, atomic::Over)>> {
    use std::sync::atomic::{AtomicBool, Ordering};
    let threads = crate::par::io_threads(steps.len());
    let steps: Vec<std::sync::Mutex<Option<(Step, Option<fsx::Stamp>)>>> = steps.into_iter().map(|s| std::sync::Mutex::new(Some(s))).collect();
    let stop = AtomicBool::new(false);
    let done = crate::par::map(&steps, threads, "accept (renaming)", |slot| {
        let (over, path) = match slot.lock().ok().and_then(|mut s| s.take()).filter(|_| !stop.load(Ordering::Relaxed)) {
            Some((Step::Write(p), seen)) => {
                let path = p.rel();
                (p.commit_over(seen.as_ref(), leases.get(&path))?, path)
            }
            Some((Step::Remove(path), seen)) => (atomic::remove_over(&project.root, &path, seen.as_ref(), leases.get(&path))?, path),
            _ => return Ok(None),
        };
        let moved = over != atomic::Over::Placed;
        stop.fetch_or(moved, Ordering::Relaxed);
        Ok(moved.then_some((path, over)))
    })?;
    Ok(done.into_iter().collect::<Result<Vec<_>>>()?.into_iter().flatten().collect())
}

/// An overlay closing on a thread of its own (a close takes a few hundred microseconds),
/// waited for before the overlay is archived.
struct Closing(Option<std::thread::JoinHandle<()>>);

impl Closing {
    fn start(overlay: Overlay) -> Closing {
        // Should no thread start, the overlay closes here, at once.
        Closing(std::thread::Builder::new().name("cairn-accept-close".into()).spawn(move || drop(overlay)).ok())
    }
}

impl Drop for Closing {
    fn drop(&mut self) {
        if let Some(h) = self.0.take() {
            let _ = h.join();
        }
    }
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
