//! Accept's preparation: each path checked (never through a symlink, its directory
//! writable), every new file written and synced under a temporary name, or taken from what
//! was written ahead, then a last look at each path before anything goes in place.

use super::ahead::Ahead;
use crate::error::{Error, Result};
use crate::project::Project;
use crate::store::bin::{JournalEntry, JournalSync};
use crate::store::{atomic, fsx, hash_bytes, Hash};

/// Refuses paths whose parent chain passes through a symlink or a non-directory: accept never
/// writes through them, whatever was there when the agent ran. Returns the parent directory
/// when it exists, opened symlink-safely.
pub(crate) fn check_writable(project: &Project, rel: &str) -> Result<Option<std::os::fd::OwnedFd>> {
    check_writable_in(project, rel, &mut fsx::DirCache::new(&project.root))
}

/// [`check_writable`], with the directory taken from `dirs` (paths checked in order).
fn check_writable_in(project: &Project, rel: &str, dirs: &mut fsx::DirCache) -> Result<Option<std::os::fd::OwnedFd>> {
    match dirs.get(crate::paths::parent(rel)) {
        Ok(Some(dir)) => {
            // A read-only directory or a directory at the file's path would fail the write
            // midway: refuse before the first one.
            let denied = |why: &str| Error::io(project.root.join(rel), std::io::Error::new(std::io::ErrorKind::PermissionDenied, why.to_string()));
            if rustix::fs::accessat(dir, ".", rustix::fs::Access::WRITE_OK, rustix::fs::AtFlags::empty()).is_err() {
                return Err(denied("its directory is not writable"));
            }
            // Nor is anything but a regular file replaced (a link, a FIFO, a device).
            let st = rustix::fs::statat(dir, crate::paths::file_name(rel), rustix::fs::AtFlags::SYMLINK_NOFOLLOW).ok();
            if st.is_some_and(|st| rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::Directory) {
                return Err(denied("a directory is at that path"));
            }
            if let Some(what) = st.and_then(|st| not_a_file(st.st_mode)) {
                return Err(Error::NotAFile { path: rel.to_string(), what });
            }
            Ok(Some(dir.try_clone().map_err(|e| Error::io(project.root.join(rel), e))?))
        }
        // Missing directories are created, but none of the existing ancestors may be a link
        // or a file (an absent parent may be one of those too: say which ancestor, and how).
        Ok(None) => match blocking_ancestor(project, rel, true) {
            Some(refusal) => Err(refusal),
            None => Ok(None),
        },
        Err(_) => Err(blocking_ancestor(project, rel, false).unwrap_or_else(|| Error::InvalidPath(rel.to_string()))),
    }
}

/// What an entry of mode `st_mode` is, when accept must not write over it (a directory is
/// refused on its own terms).
pub(crate) fn not_a_file(st_mode: u32) -> Option<&'static str> {
    use rustix::fs::FileType;
    match FileType::from_raw_mode(st_mode) {
        FileType::RegularFile | FileType::Directory => None,
        FileType::Symlink => Some("a symbolic link"),
        FileType::Fifo => Some("a FIFO"),
        FileType::Socket => Some("a socket"),
        _ => Some("a device"),
    }
}

/// The refusal for the first ancestor of `rel` that exists and is not a directory (a file or
/// a symlink), if any. With `stop_at_missing`, a missing ancestor ends the walk (what is below
/// it will be created).
fn blocking_ancestor(project: &Project, rel: &str, stop_at_missing: bool) -> Option<Error> {
    let parent = crate::paths::parent(rel);
    let mut dir = String::new();
    for comp in parent.split('/') {
        if !dir.is_empty() {
            dir.push('/');
        }
        dir.push_str(comp);
        match std::fs::symlink_metadata(project.root.join(&dir)) {
            Ok(md) if md.is_dir() => {}
            Ok(md) => return Some(not_a_directory(project, rel, &dir, md.file_type().is_symlink())),
            Err(_) if stop_at_missing => return None,
            Err(_) => {}
        }
    }
    None
}

/// The refusal for a path whose ancestor `dir` is now a file or a symlink.
fn not_a_directory(project: &Project, rel: &str, dir: &str, symlink: bool) -> Error {
    let what = if symlink { "a symbolic link (accept never writes through one)" } else { "a file now" };
    Error::io(project.root.join(rel), std::io::Error::new(std::io::ErrorKind::NotADirectory, format!("its parent {dir} is {what}")))
}

/// What accept writes at one journaled path: the new content, and what it knows of the path.
pub(super) struct Work {
    pub(super) content: Option<Vec<u8>>,
    pub(super) seen: Seen,
}

/// What accept knows of a path before it prepares it.
pub(super) enum Seen {
    /// Its stamp when review read the journaled old content from it (`None`: absent then).
    At(Option<fsx::Stamp>),
    /// Nothing: a resumed accept reads it again (it may already hold the new content).
    Unknown,
}

/// Writes and syncs every new file under a temporary name (concurrently: the work is bound by
/// fsync latency) while the journal's own fsync runs, then takes a last look at each path:
/// a status that moved since its check (an editor saving meanwhile) stops the accept before
/// anything changes in place. Each step comes with the stamp its path had then, which its
/// rename checks once more ([`atomic::Prepared::commit_over`]). Each path is checked while the writing ahead finishes.
/// Unless forced, no path is held open for writing elsewhere, and the read leases that
/// looked stay on the old files until the renames are done ([`crate::store::held::Leases`]).
pub(super) fn prepare_all(project: &Project, id: &str, journal: &[JournalEntry], work: Vec<Work>, ahead: Ahead, sync: JournalSync, force: bool) -> Result<(Vec<(Step, Option<fsx::Stamp>)>, crate::store::held::Leases)> {
    let work: Vec<(&JournalEntry, Work)> = journal.iter().zip(work).collect();
    let threads = crate::par::io_threads(work.len());
    // A checked path keeps its directory's descriptor until its file is prepared, so only a
    // bounded number are checked ahead of the join; a larger accept checks each in one pass.
    let keep = work.len() <= HELD_DIRS;
    let check = |(j, w): &(&JournalEntry, Work), dirs: &mut fsx::DirCache| check_one(project, j, w, dirs);
    let prepared = std::thread::scope(|s| {
        let synced = s.spawn(move || sync.sync());
        let early_checks = keep.then(|| {
            let chunks = crate::par::chunks(&work, threads, "accept (checking)", |chunk| {
                let mut dirs = fsx::DirCache::new(&project.root);
                chunk.iter().map(|pair| check(pair, &mut dirs)).collect::<Vec<_>>()
            });
            chunks.map(|c| c.into_iter().flatten().collect::<Vec<_>>())
        });
        // The journal is on disk before any temporary gets a name (an error here closes the
        // writer's gate as `ahead` is dropped).
        synced.join().unwrap_or_else(|_| Err(Error::panicked("accept (journal fsync)")))?;
        ahead.journaled();
        // What was written ahead serves where it is exactly what lands.
        let early = std::sync::Mutex::new(ahead.join());
        let take = |j: &JournalEntry| {
            let written = early.lock().ok().and_then(|mut e| e.remove(&j.path));
            written.filter(|(hash, mode, _)| j.new == Some((*hash, *mode))).map(|(_, _, p)| p)
        };
        match early_checks {
            Some(checks) => checks.and_then(|checks| {
                // Each check moves into its path's preparation (taken once from its slot).
                let slots: Vec<_> = work.iter().zip(checks.into_iter().map(|c| std::sync::Mutex::new(Some(c)))).collect();
                crate::par::map(&slots, threads, "accept (writing)", |((j, w), slot)| {
                    let checked = slot.lock().ok().and_then(|mut c| c.take()).unwrap_or_else(|| Err(Error::Internal("a path prepared twice".into())))?;
                    prepare_one(project, j, w, checked, take(j), true)
                })
            }),
            None => crate::par::map(&work, threads, "accept (writing)", |pair| {
                prepare_one(project, pair.0, &pair.1, check(pair, &mut fsx::DirCache::new(&project.root))?, take(pair.0), false)
            }),
        }
        .and_then(|all| all.into_iter().collect::<Result<Vec<_>>>())
    })?;
    let looks: Vec<(&JournalEntry, (Step, Option<fsx::Stamp>))> = journal.iter().zip(prepared).collect();
    let moved = crate::par::map(&looks, threads, "accept (checking)", |(j, (step, seen))| {
        let now = match step {
            Step::Write(p) => p.target_stamp()?,
            _ => fsx::stamp(&project.root, &j.path)?,
        };
        Ok(((now != *seen).then(|| j.path.clone()), now.is_some().then(|| j.path.clone())))
    })?;
    let (moved, existing): (Vec<_>, Vec<_>) = moved.into_iter().collect::<Result<Vec<_>>>()?.into_iter().unzip();
    let moved: Vec<String> = moved.into_iter().flatten().collect();
    if !moved.is_empty() {
        return Err(Error::StaleBase { id: id.to_string(), paths: moved });
    }
    // A path held open for writing elsewhere would take its writer's later writes with it:
    // unless forced, that refuses the accept too.
    let leases = if force {
        crate::store::held::Leases::default()
    } else {
        refuse_held(project, &existing.into_iter().flatten().collect::<Vec<_>>(), "accept", &force_tail(id))?
    };
    Ok((looks.into_iter().map(|(_, step_seen)| step_seen).collect(), leases))
}

/// How a refusal for a held file ends, for agent `id`'s accept.
pub(super) fn force_tail(id: &str) -> String {
    format!(", or `cairn accept {id} --force` to replace it anyway")
}

/// Refuses `what` (accept, undo, hunk accept) when one of `paths` is held open for writing
/// elsewhere ([`crate::store::held`]), naming it and who holds it; `tail` ends the message.
/// Returns the read leases taken on the others, for the caller to keep through its renames.
pub(super) fn refuse_held(project: &Project, paths: &[String], what: &str, tail: &str) -> Result<crate::store::held::Leases> {
    let (held, leases) = crate::store::held::held_leased(&project.root, paths)?;
    let Some((path, who)) = held.into_iter().next() else { return Ok(leases) };
    let who = if who.is_empty() { "another process".to_string() } else { who.join(", ") };
    Err(Error::Busy(format!("{what} refused, nothing changed: {path} is open for writing by {who}; what it writes after the {what} would go to the replaced file and be lost. Close it (or stop the process) and {what} again{tail}")))
}

/// The refusal when a process opened `path` for writing while `what` was putting files in
/// place: that file is back for it and what went in place before it was rolled back.
pub(super) fn opened_meanwhile(path: &str, what: &str, tail: &str) -> Error {
    Error::Busy(format!("{what} refused, nothing changed: a process opened {path} for writing during the {what}; it keeps the file it opened (replacing it would lose what it writes). Close it (or stop the process) and {what} again{tail}"))
}

/// What one journal entry needs once every file is prepared.
pub(super) enum Step {
    Write(atomic::Prepared),
    Remove(String),
    Nothing,
}

/// One journaled path, checked: its directory (opened symlink-safely, when it exists), what it
/// holds (hash and mode) and its stamp. A fresh accept knows the path holds the journaled old
/// content as long as its stamp has not moved since review read it; a resumed one reads it.
struct Checked {
    dir: Option<std::os::fd::OwnedFd>,
    now: Option<(Hash, u32)>,
    seen: Option<fsx::Stamp>,
}

fn check_one(project: &Project, j: &JournalEntry, work: &Work, dirs: &mut fsx::DirCache) -> Result<Checked> {
    let dir = check_writable_in(project, &j.path, dirs)?;
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
    Ok(Checked { dir, now, seen })
}

/// Prepares one checked journal entry's new version (a resumed accept skips a path already
/// done); also returns the path's stamp, for the last look before the renames. `ahead`: its
/// new version written ahead, used when its directory is still the one checked. With `keep`,
/// the prepared file holds its directory's descriptor (a walk less for each later step; the
/// caller bounds how many).
fn prepare_one(project: &Project, j: &JournalEntry, work: &Work, checked: Checked, ahead: Option<atomic::Prepared>, keep: bool) -> Result<(Step, Option<fsx::Stamp>)> {
    let Checked { dir, now, seen } = checked;
    // Written ahead into the very directory checked, or written now.
    let ahead = ahead.filter(|p| dir.as_ref().is_some_and(|d| p.is_in(d)));
    let step = match j.new {
        Some((hash, mode)) if now != Some((hash, mode)) => match ahead {
            Some(mut p) => {
                // Its writer named it once the journal was on disk (here, should it not have).
                p.name()?;
                Step::Write(p)
            }
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
