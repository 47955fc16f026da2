//! What undoes an accept's writes: the rollback of an interrupted (or stopped) accept, and the
//! check undo shares (which journaled paths were edited since).

use crate::error::Result;
use crate::project::Project;
use crate::store::bin::JournalEntry;
use crate::store::{atomic, fsx, hash_bytes, Hash};

/// What `rel` holds now: its hash, mode and content (`None`: nothing there).
pub(crate) fn current(project: &Project, rel: &str) -> Result<Option<(Hash, u32, Vec<u8>)>> {
    Ok(fsx::read(&project.root, rel)?.map(|(bytes, mode)| (hash_bytes(&bytes), mode, bytes)))
}

/// Restores the journaled old content of every path an interrupted (or stopped) accept of `id`
/// reached, and marks the accept abandoned. A path that holds neither side (the user edited it
/// since) is left as the user has it: it is newer than both (said in the log).
pub(super) fn roll_back(project: &Project, id: &str) -> Result<()> {
    let mut bin = project.bin()?;
    let journal = super::journal(project, &bin, id)?;
    // Each path's stamp before it is read: what goes back goes only over that (a save landing
    // after the read is kept, as one during the accept is).
    let seen = journal.iter().map(|j| fsx::stamp(&project.root, &j.path)).collect::<Result<Vec<_>>>()?;
    let (currents, edited) = journal_state(project, &journal)?;
    let dirs: std::collections::BTreeSet<&str> = journal.iter().map(|j| crate::paths::parent(&j.path)).collect();
    for dir in dirs {
        atomic::remove_temps(&project.root, dir)?;
    }
    let mut kept = edited.clone();
    for ((j, cur), seen) in journal.iter().zip(currents).zip(&seen) {
        if cur == j.old.map(|o| o.0) {
            if j.old.is_none() {
                // Not written, but its directories may have been made ahead of it.
                prune_empty_dirs(project, &j.path);
            }
            continue;
        }
        if edited.contains(&j.path) {
            continue;
        }
        let over = match (&j.old, &j.old_content) {
            (Some((_, mode)), Some(content)) => atomic::prepare(&project.root, &j.path, content, *mode)?.commit_over(seen.as_ref(), None)?,
            _ => remove_new_file_over(project, &j.path, seen.as_ref(), None)?,
        };
        if over != atomic::Over::Placed {
            kept.push(j.path.clone());
        }
    }
    if !kept.is_empty() {
        tracing::warn!(agent = %id, "rolling back its accept: kept as edited since: {}", kept.join(", "));
    }
    // Every journaled path: the index may hold the new version of one never renamed.
    let paths: Vec<String> = journal.iter().map(|j| j.path.clone()).collect();
    crate::sync::refresh(project, &paths)?;
    bin.abandon_accept(id)
}

/// Removes a file an accept created, only if it is what was seen there
/// ([`atomic::remove_over`]), and the directories it made for it (only empty ones: an rmdir
/// never removes anything else). Undo and a rollback share it.
pub(crate) fn remove_new_file_over(project: &Project, rel: &str, seen: Option<&fsx::Stamp>, lease: Option<&crate::store::held::Lease>) -> Result<atomic::Over> {
    let over = atomic::remove_over(&project.root, rel, seen, lease)?;
    if over == atomic::Over::Placed {
        prune_empty_dirs(project, rel);
    }
    Ok(over)
}

/// Removes the empty directories above `rel`, deepest first, up to the first that is not.
fn prune_empty_dirs(project: &Project, rel: &str) {
    for dir in crate::paths::ancestors(rel).collect::<Vec<_>>().into_iter().rev() {
        if std::fs::remove_dir(project.root.join(dir)).is_err() {
            break;
        }
    }
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


/// The shallowest missing directory above each of `paths`: what writing them would make.
pub(super) fn missing_dirs<'a>(project: &Project, paths: impl Iterator<Item = &'a str>) -> Vec<String> {
    // Each directory is looked at once, however many new files it holds.
    let mut exists: std::collections::HashMap<&str, bool> = std::collections::HashMap::new();
    let mut out = std::collections::BTreeSet::new();
    for path in paths {
        let missing = crate::paths::ancestors(path).find(|d| !*exists.entry(d).or_insert_with(|| matches!(fsx::stat_nofollow(&project.root, d), Ok(Some(_)))));
        if let Some(dir) = missing {
            out.insert(dir.to_string());
        }
    }
    out.into_iter().collect()
}

/// Removes what is empty of each of `dirs`, which a refused accept made: the directory and the
/// empty ones under it, deepest first (never through a symlink); anything holding a file stays.
pub(super) fn remove_made_dirs(project: &Project, dirs: &[String]) {
    for dir in dirs {
        let (parent, name) = (crate::paths::parent(dir), crate::paths::file_name(dir));
        if let Ok(pfd) = fsx::open_dir(&project.root, parent, false) {
            remove_empty_tree(&pfd, name);
        }
    }
}

fn remove_empty_tree(dfd: &std::os::fd::OwnedFd, name: &str) -> bool {
    use rustix::fs::{self as rfs, AtFlags, FileType, Mode, OFlags};
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let Ok(child) = rfs::openat(dfd, name, flags, Mode::empty()) else { return false };
    if let Ok(entries) = rfs::Dir::read_from(&child) {
        let subdirs: Vec<String> = entries
            .filter_map(|e| e.ok())
            .filter(|e| e.file_type() == FileType::Directory)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n != "." && n != "..")
            .collect();
        for sub in subdirs {
            remove_empty_tree(&child, &sub);
        }
    }
    rfs::unlinkat(dfd, name, AtFlags::REMOVEDIR).is_ok()
}
