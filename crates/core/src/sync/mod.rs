//! Keeps `stable.db` a mirror of the working tree: [`init`] indexes the whole project (in
//! parallel, re-hashing only files whose size or mtime changed), [`sync_paths`] refreshes the
//! paths the watcher reports.

use crate::error::{Error, Result};
use crate::paths::{self, IgnoreRules};
use crate::project::Project;
use crate::store::{self, atomic, fsx, stable::Entry, Kind};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

mod drift;
pub mod scan;
pub use drift::{compare, drift, Drift};
use std::sync::Mutex;

/// What an [`init`] did.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct InitReport {
    pub files: u64,
    pub dirs: u64,
    pub hashed: u64,
    pub removed: u64,
    /// The index was damaged (why), set aside as `stable.db.damaged` and rebuilt from the
    /// tree (it is derived data: nothing of an agent's is in it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rebuilt: Option<String>,
    /// A state Cairn did not make (it came with the repository, a copy or a backup) was
    /// found: why, and where it was set aside (see [`crate::origin`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub set_aside: Option<String>,
}

pub(crate) fn mtime_ns(md: &std::fs::Metadata) -> i64 {
    md.mtime() * 1_000_000_000 + md.mtime_nsec()
}

/// Builds the entry of `rel` from disk, hashing only when `prev` does not already match size
/// and mtime. `None` when the path is absent or not a project file type.
pub(crate) fn entry_from_disk(root: &Path, rel: &str, md: &std::fs::Metadata, prev: Option<&Entry>) -> Result<Option<Entry>> {
    let ft = md.file_type();
    let kind = if ft.is_dir() {
        Kind::Dir
    } else if ft.is_file() {
        Kind::File
    } else if ft.is_symlink() {
        Kind::Symlink
    } else {
        return Ok(None);
    };
    let mut e = Entry {
        path: rel.to_string(),
        kind,
        mode: md.permissions().mode() & 0o7777,
        size: match kind {
            Kind::File => md.size(),
            Kind::Dir => md.ino(),
            _ => 0,
        },
        // A directory's stamp is recorded only by a scan that read it whole ([`scan`]);
        // elsewhere it is "unsure" (0), so the next pruned scan reads it.
        mtime_ns: if kind == Kind::Dir { 0 } else { mtime_ns(md) },
        hash: None,
    };
    if kind == Kind::File {
        match prev {
            Some(p) if p.kind == Kind::File && p.size == e.size && p.mtime_ns == e.mtime_ns && p.hash.is_some() => e.hash = p.hash,
            _ => match fsx::hash(root, rel) {
                Ok(Some((hash, size))) => {
                    e.size = size;
                    e.hash = Some(hash);
                }
                Ok(None) => return Ok(None),
                // One unreadable file never fails the index (nor the batch it is in): it is
                // left out, with a warning, and agents see it as absent.
                Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::PermissionDenied => {
                    tracing::warn!("{rel}: not readable, left out of the index");
                    return Ok(None);
                }
                Err(e) => return Err(e),
            },
        }
    }
    Ok(Some(e))
}

/// Changes in one batch past which the WAL is folded back at once
/// (see [`crate::store::stable::Stable::checkpoint`]).
const CHECKPOINT_AFTER: u64 = 1000;

/// Moves a damaged `stable.db` (and its WAL and index) aside and opens a new, empty one.
fn set_aside_damaged_index(project: &Project) -> Result<crate::store::stable::Stable> {
    let db = project.agentfs().join("stable.db");
    for suffix in ["", "-wal", "-shm"] {
        let from = std::path::PathBuf::from(format!("{}{suffix}", db.display()));
        if from.exists() {
            let to = std::path::PathBuf::from(format!("{}.damaged{suffix}", db.display()));
            std::fs::rename(&from, &to).map_err(|e| Error::io(&from, e))?;
        }
    }
    project.stable()
}

/// Creates `.agentfs/` and indexes the whole project into `stable.db`, honouring `.gitignore`
/// and skipping [`paths::ALWAYS_SKIPPED`]. Safe to run again: unchanged files are not re-read.
pub fn init(project: &Project) -> Result<InitReport> {
    init_with(project, false)
}

/// `cairn init`: [`init`], and a damaged index is set aside and rebuilt (the report says so)
/// instead of refused. Everything else that indexes refuses it, naming the file.
pub fn init_rebuilding(project: &Project) -> Result<InitReport> {
    init_with(project, true)
}

fn init_with(project: &Project, rebuild: bool) -> Result<InitReport> {
    let agentfs = project.agentfs();
    // A state that came with the repository (or a copy) is set aside, never used.
    let set_aside = crate::origin::set_aside(&project.root)?.map(|(why, to)| format!("{why}: set aside into {}", to.display()));
    project.refuse_lost_bin()?;
    project.state_dir(&agentfs)?;
    // Counting reads every page of the table: a damaged index shows here, before any write.
    let (mut stable, rebuilt) = match project.stable().and_then(|s| s.count().map(|_| s)) {
        Ok(s) => (s, None),
        Err(e @ (Error::Database { .. } | Error::Db(_))) if rebuild => (set_aside_damaged_index(project)?, Some(e.to_string())),
        Err(e) => return Err(e),
    };
    crate::store::bin::Bin::open(&agentfs.join("bin.db"))?;
    crate::origin::mark(&project.root)?;
    let done = scan::scan(project, &mut stable, scan::Depth::Full)?;
    if done.written > CHECKPOINT_AFTER {
        stable.checkpoint()?;
    }
    Ok(InitReport { files: done.files, dirs: done.dirs, hashed: done.hashed, removed: done.removed, rebuilt, set_aside })
}

/// Brings `stable.db` in line with the tree in O(directories + changes): the directories
/// whose stamp moved are read, new ones whole (see [`scan`]). What a command without a live
/// watcher runs before it queues an agent, and what a watcher's process runs to catch up.
/// On a project never indexed, it indexes everything.
pub fn catch_up(project: &Project) -> Result<scan::Scanned> {
    let agentfs = project.agentfs();
    project.refuse_lost_bin()?;
    project.state_dir(&agentfs)?;
    let mut stable = project.stable()?;
    if stable.count()? == 0 {
        // A project never indexed: it becomes one, as `init` makes it.
        crate::store::bin::Bin::open(&agentfs.join("bin.db"))?;
        crate::origin::mark(&project.root)?;
    }
    let done = scan::scan(project, &mut stable, scan::Depth::Pruned)?;
    if done.written > CHECKPOINT_AFTER {
        stable.checkpoint()?;
    }
    Ok(done)
}

/// Non-UTF-8 names are not indexed (paths are text everywhere in Cairn: the index, the
/// externals, the diff); each is reported once per process.
pub(crate) fn warn_once_unindexed(path: &Path) {
    static WARNED: std::sync::OnceLock<Mutex<std::collections::HashSet<std::path::PathBuf>>> = std::sync::OnceLock::new();
    let warned = WARNED.get_or_init(Default::default);
    if warned.lock().map(|mut w| w.insert(path.to_path_buf())).unwrap_or(false) {
        tracing::warn!("{}: the name is not UTF-8, so it is not indexed (agents do not see it)", path.display());
    }
}

/// Brings `stable.db` in line with the disk for each of `rels` (created, modified, deleted or
/// renamed paths). A directory that appears is indexed with everything below it.
pub fn sync_paths(project: &Project, rules: &mut IgnoreRules, rels: &[String]) -> Result<usize> {
    let mut stable = project.stable()?;
    let mut updates: Vec<Option<Entry>> = Vec::new();
    let mut removals: Vec<String> = Vec::new();
    let mut queue: Vec<String> = rels.to_vec();
    while let Some(rel) = queue.pop() {
        if rel.ends_with(".gitignore") {
            rules.invalidate();
        }
        let full = project.root.join(&rel);
        let md = match std::fs::symlink_metadata(&full) {
            Ok(md) => md,
            Err(_) => {
                removals.push(rel);
                continue;
            }
        };
        let name = rel.rsplit('/').next().unwrap_or("");
        if name.ends_with(atomic::TEMP_SUFFIX) || rules.is_ignored(&rel, md.is_dir()) {
            removals.push(rel);
            continue;
        }
        let prev = stable.get(&rel)?;
        let entry = entry_from_disk(&project.root, &rel, &md, prev.as_ref())?;
        if let Some(e) = &entry {
            if e.kind == Kind::Dir && prev.as_ref().map(|p| p.kind) != Some(Kind::Dir) {
                if let Ok(rd) = std::fs::read_dir(&full) {
                    for child in rd.flatten() {
                        if let Some(n) = child.file_name().to_str() {
                            queue.push(format!("{rel}/{n}"));
                        }
                    }
                }
            }
            if prev.as_ref() != Some(e) {
                if prev.as_ref().is_some_and(|p| p.kind == Kind::Dir) && e.kind != Kind::Dir {
                    removals.push(rel.clone());
                }
                updates.push(entry);
            }
        } else {
            removals.push(rel);
        }
    }
    // A removed path's directories that are gone too (undo of a new file in new directories,
    // `rm -r`) leave the index with them.
    let gone_dirs: std::collections::BTreeSet<String> =
        removals.iter().flat_map(|r| paths::ancestors(r).map(str::to_string).collect::<Vec<_>>()).filter(|d| std::fs::symlink_metadata(project.root.join(d)).is_err()).collect();
    removals.extend(gone_dirs);
    let n = updates.len() + removals.len();
    if n == 0 {
        return Ok(0);
    }
    let w = stable.writer()?;
    for rel in &removals {
        w.remove_tree(rel)?;
    }
    let mut dirs = std::collections::BTreeSet::new();
    for e in updates.into_iter().flatten() {
        // Make sure the parents are indexed too (a file created in a new directory).
        dirs.extend(paths::ancestors(&e.path).map(str::to_string));
        w.upsert(&e)?;
    }
    upsert_dirs(project, &w, dirs)?;
    w.commit()?;
    Ok(n)
}

/// Indexes each of `dirs` that is a directory on disk.
fn upsert_dirs(project: &Project, w: &crate::store::stable::Writer<'_>, dirs: impl IntoIterator<Item = String>) -> Result<()> {
    for dir in dirs {
        if let Ok(md) = std::fs::symlink_metadata(project.root.join(&dir)) {
            if md.is_dir() {
                w.upsert(&Entry { path: dir, kind: Kind::Dir, mode: md.permissions().mode() & 0o7777, size: md.ino(), mtime_ns: 0, hash: None })?;
            }
        }
    }
    Ok(())
}

/// Refreshes `rels` in `stable.db` with a fresh set of ignore rules (after accept or undo).
pub fn refresh(project: &Project, rels: &[String]) -> Result<()> {
    let mut rules = IgnoreRules::new(&project.root);
    sync_paths(project, &mut rules, rels).map(|_| ())
}

/// A path whose new state is already known: its content hash (`None`: removed) and, when the
/// writer has it, the status it wrote ([`atomic::Written`]; otherwise taken from disk).
pub type Known = (String, Option<(store::Hash, Option<atomic::Written>)>);

/// Records paths whose new content hash is already known: what accept uses, so it never
/// re-reads what it just wrote.
pub fn record_known(project: &Project, paths: &[Known]) -> Result<()> {
    let mut stable = project.stable()?;
    let w = stable.writer()?;
    let mut dirs = std::collections::BTreeSet::new();
    for (rel, known) in paths {
        let (hash, written) = match known {
            Some((hash, Some(written))) => (*hash, *written),
            Some((hash, None)) => match std::fs::symlink_metadata(project.root.join(rel)) {
                Ok(md) if md.is_file() => (*hash, atomic::Written { mode: md.permissions().mode() & 0o7777, size: md.len(), mtime_ns: mtime_ns(&md) }),
                _ => {
                    w.remove_tree(rel)?;
                    continue;
                }
            },
            None => {
                w.remove_tree(rel)?;
                continue;
            }
        };
        // Directories already indexed keep their row (a stale mtime there only makes the next
        // re-index rewrite it); new ones are added.
        for dir in paths::ancestors(rel) {
            if !dirs.contains(dir) && !w.is_dir(dir)? {
                dirs.insert(dir.to_string());
            }
        }
        w.upsert(&Entry { path: rel.clone(), kind: Kind::File, mode: written.mode, size: written.size, mtime_ns: written.mtime_ns, hash: Some(hash) })?;
    }
    upsert_dirs(project, &w, dirs)?;
    w.commit()
}
