//! The tree against the index, one directory at a time.
//!
//! A directory's mtime moves when an entry is created, removed or renamed in it (never when a
//! file's content changes in place), so a *pruned* scan stats each indexed directory and reads
//! only those whose stamp (mtime and inode: a swap of two directories keeps both mtimes) moved
//! or is unsure (recorded by the watcher or accept without a read of the whole directory), plus the subtree under a `.gitignore` that changed: the cost
//! is O(directories + changes), as git's untracked cache does. A *full* scan reads every
//! directory and stats every file (`cairn init`). Both run in batches of directories on a few
//! threads and commit each batch before the next, so memory holds one batch, never the index.
//!
//! What a pruned scan does not see: a file rewritten in place keeps its old size, mtime and
//! hash in `stable.db` until the watcher or the next `cairn init` sees it. Nothing depends on
//! those columns being current: every reader of a project file (views, review, accept's
//! checks) reads the disk.

use super::{mtime_ns, warn_once_unindexed};
use crate::error::{Error, Result};
use crate::paths::{self, IgnoreRules};
use crate::project::Project;
use crate::store::stable::{Entry, Stable};
use crate::store::{atomic, fsx, Kind};
use rustix::fs::{self as rfs, AtFlags};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// How much of the tree a scan reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Depth {
    /// Every directory read, every file stat'ed (and hashed where size or mtime moved).
    Full,
    /// Only directories whose stamp moved, and new directories whole.
    Pruned,
}

/// What a scan did.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Scanned {
    /// Files and directories seen in the directories read.
    pub files: u64,
    pub dirs: u64,
    pub hashed: u64,
    pub removed: u64,
    /// Directories read (a pruned scan reads only the ones that changed).
    pub read_dirs: u64,
    /// Index rows written.
    pub written: u64,
}

/// A directory whose stamp is this close to the scan's start is recorded as unsure (mtime 0,
/// read again next time): a change within the same clock tick would leave the same stamp.
const RACY_NS: i64 = 2_000_000_000;
/// Directories per batch: read in parallel, then committed together.
const BATCH: usize = 256;
/// Threads that stat and read (I/O bound: more than the cores overlap the waits).
const THREADS: usize = 4;

/// One directory to read; `full`: descend into every subdirectory, not only new ones.
#[derive(Debug, Clone)]
struct Job {
    dir: String,
    full: bool,
}

/// What reading one directory found.
#[derive(Default)]
pub(super) struct Delta {
    upserts: Vec<Entry>,
    removals: Vec<String>,
    descend: Vec<Job>,
    files: u64,
    dirs: u64,
    hashed: u64,
    /// For a comparison (`cairn doctor`): paths on disk the index lacks, files whose size or
    /// mtime moved, and FIFOs, sockets and devices (never indexed).
    pub(super) missing: Vec<String>,
    pub(super) changed: Vec<String>,
    pub(super) specials: Vec<String>,
}

impl Delta {
    /// Paths the index has and the disk does not.
    pub(super) fn extra(&self) -> &[String] {
        &self.removals
    }
}

/// Brings `stable` in line with the tree at `depth`. Batches are read on [`THREADS`] threads
/// while the previous one is written (reads of the index go through a second connection:
/// a batch never writes the rows a later batch reads, see [`read_dir`]).
pub fn scan(project: &Project, stable: &mut Stable, depth: Depth) -> Result<Scanned> {
    let started = crate::time::now_ms().saturating_mul(1_000_000);
    let queue: VecDeque<Job> = match depth {
        Depth::Full => VecDeque::from([Job { dir: String::new(), full: true }]),
        Depth::Pruned => moved_dirs(project, stable)?.into(),
    };
    let empty = stable.count()? == 0;
    let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<Delta>>(2);
    std::thread::scope(|s| {
        let writer = s.spawn(move || write_batches(stable, rx));
        let read = read_batches(project, queue, Reading { empty, hashing: true, started }, |deltas| tx.send(deltas).is_ok());
        drop(tx);
        let written = writer.join().map_err(|_| Error::panicked("indexing"))?;
        let read_dirs = read?;
        let mut report = written?;
        report.read_dirs = read_dirs;
        Ok(report)
    })
}

/// How a batch of directories is read: against an empty index (no lookups), hashing new and
/// moved files (an index's scan) or not (a comparison), and when the scan started.
#[derive(Clone, Copy)]
pub(super) struct Reading {
    pub(super) empty: bool,
    pub(super) hashing: bool,
    pub(super) started: i64,
}

/// A full comparison from the root, nothing hashed or written: each batch's deltas to `sink`.
pub(super) fn compare(project: &Project, sink: impl FnMut(Vec<Delta>) -> bool) -> Result<u64> {
    let started = crate::time::now_ms().saturating_mul(1_000_000);
    read_batches(project, VecDeque::from([Job { dir: String::new(), full: true }]), Reading { empty: false, hashing: false, started }, sink)
}

/// Reads the queued directories in batches (and those they lead to), each batch's deltas to
/// `sink` (which says whether to go on). Returns the number of directories read.
fn read_batches(project: &Project, mut queue: VecDeque<Job>, how: Reading, mut sink: impl FnMut(Vec<Delta>) -> bool) -> Result<u64> {
    let reader = project.stable()?;
    let root = &project.root;
    let mut read_dirs = 0u64;
    while !queue.is_empty() {
        let batch: Vec<(Job, Vec<Entry>)> = queue
            .drain(..queue.len().min(BATCH))
            .map(|job| {
                let prev = if how.empty { Vec::new() } else { reader.children(&job.dir)? };
                Ok((job, prev))
            })
            .collect::<Result<_>>()?;
        let deltas = crate::par::chunks(&batch, THREADS, "indexing", |chunk| {
            let mut rules = IgnoreRules::new(root);
            chunk.iter().map(|(job, prev)| read_dir(root, &mut rules, job, prev, how)).collect::<Vec<_>>()
        })?;
        let mut deltas = deltas.into_iter().flatten().collect::<Result<Vec<Delta>>>()?;
        for d in &mut deltas {
            queue.extend(std::mem::take(&mut d.descend));
        }
        read_dirs += batch.len() as u64;
        if !sink(deltas) {
            break;
        }
    }
    Ok(read_dirs)
}

/// The writing side of [`scan`]: one transaction per batch, in order.
fn write_batches(stable: &mut Stable, rx: std::sync::mpsc::Receiver<Vec<Delta>>) -> Result<Scanned> {
    let mut report = Scanned::default();
    for deltas in rx {
        let w = stable.writer()?;
        for delta in deltas {
            for rel in &delta.removals {
                w.remove_tree(rel)?;
            }
            for e in &delta.upserts {
                w.upsert(e)?;
            }
            report.files += delta.files;
            report.dirs += delta.dirs;
            report.hashed += delta.hashed;
            report.removed += delta.removals.len() as u64;
            report.written += (delta.upserts.len() + delta.removals.len()) as u64;
        }
        w.commit()?;
    }
    Ok(report)
}

/// The directories a pruned scan reads: the root always, each indexed directory whose stamp
/// moved, and (whole) each one whose `.gitignore` changed in place. Stat'ed in parallel.
fn moved_dirs(project: &Project, stable: &Stable) -> Result<Vec<Job>> {
    let dirs = stable.dir_stamps()?;
    let root = &project.root;
    let found = crate::par::chunks(&dirs, THREADS, "indexing", |chunk| -> Result<Vec<Job>> {
        let mut lookup: Option<Stable> = None;
        let mut out = Vec::new();
        for (dir, stamp, ino) in chunk {
            // Gone or no longer a directory: its parent's stamp moved, and its read says so.
            let Ok(md) = std::fs::symlink_metadata(root.join(dir)) else { continue };
            if !md.is_dir() {
                continue;
            }
            // Another directory at the path (a swap keeps both stamps): read it.
            if mtime_ns(&md) != *stamp || (*ino != 0 && md.ino() != *ino) {
                out.push(Job { dir: dir.clone(), full: false });
                continue;
            }
            let rel = format!("{dir}/.gitignore");
            let Ok(gi) = std::fs::symlink_metadata(root.join(&rel)) else { continue };
            let stable = match &mut lookup {
                Some(s) => s,
                None => lookup.insert(project.stable()?),
            };
            let same = stable.get(&rel)?.is_some_and(|e| e.size == gi.size() && e.mtime_ns == mtime_ns(&gi));
            if !same {
                out.push(Job { dir: dir.clone(), full: true });
            }
        }
        Ok(out)
    })?;
    let mut jobs: BTreeMap<String, bool> = BTreeMap::new();
    jobs.insert(String::new(), root_gitignore_moved(root, stable)?);
    for job in found.into_iter().collect::<Result<Vec<_>>>()?.into_iter().flatten() {
        jobs.insert(job.dir, job.full);
    }
    // A whole subtree read covers every directory below it.
    let whole: Vec<String> = jobs.iter().filter(|(_, full)| **full).map(|(d, _)| d.clone()).collect();
    jobs.retain(|d, full| *full || !paths::ancestors(d).chain((!d.is_empty()).then_some("")).any(|a| whole.iter().any(|w| w == a)));
    Ok(jobs.into_iter().map(|(dir, full)| Job { dir, full }).collect())
}

/// Did the root's `.gitignore` change in place (so every path may be in or out now)?
fn root_gitignore_moved(root: &Path, stable: &Stable) -> Result<bool> {
    let on_disk = std::fs::symlink_metadata(root.join(".gitignore")).ok();
    let indexed = stable.get(".gitignore")?;
    Ok(match (on_disk, indexed) {
        (None, None) => false,
        (Some(md), Some(e)) => e.size != md.size() || e.mtime_ns != mtime_ns(&md),
        _ => true,
    })
}

/// Reads directory `job.dir` and compares it with its indexed children `prev`. The directory
/// is opened once (beneath the root, no symlink on the way) and every child is stat'ed and
/// opened relative to it, never following a symlink.
fn read_dir(root: &Path, rules: &mut IgnoreRules, job: &Job, prev: &[Entry], how: Reading) -> Result<Delta> {
    let mut delta = Delta::default();
    let dfd = match fsx::open_dir(root, &job.dir, false) {
        Ok(fd) => fd,
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::PermissionDenied => {
            tracing::warn!("{}: not readable, its index entries are kept as they are", job.dir);
            return Ok(delta);
        }
        // Gone since its parent was read: out of the index. No longer a directory: the
        // parent's read has already said what is there now.
        Err(_) => {
            if !job.dir.is_empty() && std::fs::symlink_metadata(root.join(&job.dir)).is_err() {
                delta.removals.push(job.dir.clone());
            }
            return Ok(delta);
        }
    };
    let io = |e: rustix::io::Errno| Error::io(root.join(&job.dir), e.into());
    if !job.dir.is_empty() {
        let st = rfs::fstat(&dfd).map_err(io)?;
        let stamp = stat_mtime(&st);
        let mtime_ns = if stamp >= how.started - RACY_NS { 0 } else { stamp };
        delta.upserts.push(Entry { path: job.dir.clone(), kind: Kind::Dir, mode: st.st_mode & 0o7777, size: st.st_ino, mtime_ns, hash: None });
    }
    let mut prev: HashMap<&str, &Entry> = prev.iter().map(|e| (e.path.rsplit('/').next().unwrap_or(&e.path), e)).collect();
    let mut dir = rfs::Dir::read_from(&dfd).map_err(io)?;
    let ignoring = rules.any_in(&job.dir);
    while let Some(child) = dir.read() {
        let child = child.map_err(io)?;
        let Ok(name) = child.file_name().to_str() else {
            warn_once_unindexed(&root.join(&job.dir).join(std::ffi::OsStr::from_bytes(child.file_name().to_bytes())));
            continue;
        };
        if name == "." || name == ".." || paths::ALWAYS_SKIPPED.contains(&name) || name.ends_with(atomic::TEMP_SUFFIX) {
            continue;
        }
        let fresh_file = how.hashing && child.file_type() == rfs::FileType::RegularFile && !prev.contains_key(name);
        compare_child(root, rules, ignoring, job, &dfd, name, (fresh_file, how.hashing), &mut prev, &mut delta)?;
    }
    delta.removals.extend(prev.into_values().map(|e| e.path.clone()));
    Ok(delta)
}

/// Compares child `name` of the directory read by `job` (open as `dfd`) with its indexed
/// entry (taken out of `prev`), adding what changed to `delta`.
/// `fresh_file`: the directory says a regular file the index does not have: it is opened and
/// hashed at once (its status from the open), without a stat of its own.
#[allow(clippy::too_many_arguments)]
fn compare_child(root: &Path, rules: &mut IgnoreRules, ignoring: bool, job: &Job, dfd: &OwnedFd, name: &str, (fresh_file, hashing): (bool, bool), prev: &mut HashMap<&str, &Entry>, delta: &mut Delta) -> Result<()> {
    let rel = if job.dir.is_empty() { name.to_string() } else { format!("{}/{name}", job.dir) };
    if fresh_file && !(ignoring && rules.is_ignored(&rel, false)) {
        match hashed_entry(root, dfd, rel.clone())? {
            Some(e) => {
                delta.files += 1;
                delta.hashed += 1;
                delta.upserts.push(e);
                return Ok(());
            }
            // Not a regular file after all (replaced meanwhile): the general path below.
            None => {}
        }
    }
    let Ok(st) = rfs::statat(dfd, name, AtFlags::SYMLINK_NOFOLLOW) else { return Ok(()) };
    let kind = match rfs::FileType::from_raw_mode(st.st_mode) {
        rfs::FileType::Directory => Kind::Dir,
        rfs::FileType::RegularFile => Kind::File,
        rfs::FileType::Symlink => Kind::Symlink,
        // FIFOs, sockets and devices are never indexed (nor opened).
        _ => {
            if let Some(p) = prev.remove(name) {
                delta.removals.push(p.path.clone());
            }
            delta.specials.push(rel);
            return Ok(());
        }
    };
    if ignoring && rules.is_ignored(&rel, kind == Kind::Dir) {
        return Ok(());
    }
    let before = prev.remove(name);
    if kind == Kind::Dir {
        delta.dirs += 1;
        let was_dir = before.is_some_and(|p| p.kind == Kind::Dir);
        if before.is_some() && !was_dir {
            delta.removals.push(rel.clone());
        }
        if before.is_none() {
            delta.missing.push(rel.clone());
        }
        if job.full || !was_dir {
            delta.descend.push(Job { dir: rel, full: true });
        }
        return Ok(());
    }
    if before.is_none() {
        delta.missing.push(rel.clone());
    } else if kind == Kind::File && before.is_some_and(|p| p.size != st.st_size as u64 || p.mtime_ns != stat_mtime(&st)) {
        delta.changed.push(rel.clone());
    }
    let Some(e) = entry_at(root, dfd, rel, kind, &st, before, hashing)? else {
        if let Some(p) = before {
            delta.removals.push(p.path.clone());
        }
        return Ok(());
    };
    delta.files += 1;
    if e.kind == Kind::File && before.and_then(|p| p.hash) != e.hash {
        delta.hashed += 1;
    }
    if before != Some(&e) {
        if before.is_some_and(|p| p.kind == Kind::Dir) {
            delta.removals.push(e.path.clone());
        }
        delta.upserts.push(e);
    }
    Ok(())
}

/// A new regular file's entry from one open: its hash and its status as opened. `None`
/// when it is not (or no longer) a readable regular file.
fn hashed_entry(root: &Path, dfd: &OwnedFd, rel: String) -> Result<Option<Entry>> {
    match fsx::hash_stat_in(root, &rel, Some(dfd)) {
        Ok(Some((hash, size, st))) => Ok(Some(Entry { path: rel, kind: Kind::File, mode: st.st_mode & 0o7777, size, mtime_ns: stat_mtime(&st), hash: Some(hash) })),
        Ok(None) => Ok(None),
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::PermissionDenied => Ok(None),
        Err(e) => Err(e),
    }
}

fn stat_mtime(st: &rfs::Stat) -> i64 {
    st.st_mtime as i64 * 1_000_000_000 + st.st_mtime_nsec as i64
}

/// The entry of a file or symlink stat'ed in `dfd`, hashing a file only when `prev` does not
/// already match its size and mtime. `None`: gone meanwhile, or not readable (left out, with
/// a warning: agents see it as absent).
fn entry_at(root: &Path, dfd: &OwnedFd, rel: String, kind: Kind, st: &rfs::Stat, prev: Option<&Entry>, hashing: bool) -> Result<Option<Entry>> {
    let size = if kind == Kind::File { st.st_size as u64 } else { 0 };
    let mut e = Entry { path: rel, kind, mode: st.st_mode & 0o7777, size, mtime_ns: stat_mtime(st), hash: None };
    if kind != Kind::File || !hashing {
        return Ok(Some(e));
    }
    match prev {
        Some(p) if p.kind == Kind::File && p.size == e.size && p.mtime_ns == e.mtime_ns && p.hash.is_some() => e.hash = p.hash,
        _ => match fsx::hash_in(root, &e.path, Some(dfd)) {
            Ok(Some((hash, size))) => {
                e.size = size;
                e.hash = Some(hash);
            }
            Ok(None) => return Ok(None),
            Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::PermissionDenied => {
                tracing::warn!("{}: not readable, left out of the index", e.path);
                return Ok(None);
            }
            Err(err) => return Err(err),
        },
    }
    Ok(Some(e))
}
