//! Whose state is this? `.agentfs/` and `.grail/` are made by Cairn on this machine, never
//! taken from a clone: git ships them when a repository force-adds them, and overwrites the
//! files of an ignored directory at will on a pull. A shipped `bin.db` would list agents the
//! user never ran (queued ones would start by themselves) and name paths after their ids.
//!
//! When Cairn makes `.agentfs/` it records, in `.agentfs/origin`, the inode numbers of the
//! directory and of `bin.db`: files a clone, a copy or a pull creates get new ones, which no
//! repository can know in advance. Every command checks them (with Cairn's state directories
//! being real directories, not links) before it reads anything there; `cairn init` sets a
//! foreign state aside (nothing is deleted) and starts afresh, or, with `--adopt`, keeps it
//! as the user's own (a project restored from a backup, or made by an older Cairn).

use crate::error::{Error, Result};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

fn record(root: &Path) -> PathBuf {
    root.join(".agentfs").join("origin")
}

fn ino(path: &Path) -> Option<u64> {
    std::fs::symlink_metadata(path).ok().filter(|m| !m.file_type().is_symlink()).map(|m| m.ino())
}

/// The directories of Cairn's state that must be real directories when they exist.
fn state_dirs(root: &Path) -> [PathBuf; 6] {
    let (a, g) = (root.join(".agentfs"), root.join(".grail"));
    [a.clone(), a.join("bin"), a.join("journal"), a.join("jj"), g.clone(), g.join("agents")]
}

/// Why the state of the project at `root` is not Cairn's own, or `None` when it is (or there
/// is none yet).
pub fn foreign(root: &Path) -> Option<String> {
    for d in state_dirs(root) {
        if std::fs::symlink_metadata(&d).is_ok_and(|m| !m.is_dir()) {
            return Some(format!("{} is a link or a file, not a directory", d.display()));
        }
    }
    let agentfs = root.join(".agentfs");
    let dir = ino(&agentfs)?;
    let Ok(text) = std::fs::read_to_string(record(root)) else {
        return Some(format!("{} has no record that Cairn made it here", agentfs.display()));
    };
    let mut words = text.split_whitespace().map(|w| w.parse::<u64>().ok());
    let (made, bin) = (words.next().flatten(), words.next().flatten());
    if made != Some(dir) {
        return Some(format!("{} was made elsewhere (cloned, copied or restored)", agentfs.display()));
    }
    let now = ino(&agentfs.join("bin.db"));
    match (bin, now) {
        (Some(b), Some(n)) if b != n => Some(format!("{} was replaced (not by Cairn)", agentfs.join("bin.db").display())),
        _ => None,
    }
}

/// Refuses a project (at `root`) whose state is not Cairn's own (see the module doc).
/// `ok_ms`: when it was last found to be (checked again a second later, not on every open).
pub fn check(root: &Path, ok_ms: &std::sync::atomic::AtomicI64) -> Result<()> {
    use std::sync::atomic::Ordering;
    let now = crate::time::now_ms();
    if now.saturating_sub(ok_ms.load(Ordering::Relaxed)) < 1000 {
        return Ok(());
    }
    match foreign(root) {
        None => {
            ok_ms.store(now, Ordering::Relaxed);
            Ok(())
        }
        Some(why) => Err(Error::Database {
            path: root.join(".agentfs"),
            message: format!(
                "is not this Cairn's state: {why}. A repository can carry one; Cairn uses none it did not make. `cairn init` sets it aside (into .agentfs/set-aside-<time>/) and starts afresh; `cairn init --adopt` keeps it as yours (a backup you restored, or an older Cairn's)"
            ),
        }),
    }
}

/// Records the state of the project at `root` as Cairn's own (after `init` made it, or the
/// user adopted it).
pub fn mark(root: &Path) -> Result<()> {
    let Some(dir) = ino(&root.join(".agentfs")) else { return Ok(()) };
    let bin = ino(&root.join(".agentfs").join("bin.db")).map(|b| format!(" {b}")).unwrap_or_default();
    let path = record(root);
    let tmp = path.with_extension("part");
    std::fs::write(&tmp, format!("{dir}{bin}\n")).and_then(|()| std::fs::rename(&tmp, &path)).map_err(|e| Error::io(&path, e))
}

/// Moves a foreign state aside, whole, into `.agentfs/set-aside-<ms>/` (`.agentfs` and
/// `.grail` as they were: nothing is deleted, nothing in it is read again). Returns why it was
/// foreign and where it went, or `None` when the state is Cairn's own.
pub fn set_aside(root: &Path) -> Result<Option<(String, PathBuf)>> {
    let Some(why) = foreign(root) else { return Ok(None) };
    let stamp = crate::time::now_ms();
    let agentfs = root.join(".agentfs");
    let held = root.join(format!(".agentfs.set-aside-{stamp}"));
    let moved = |from: &Path, to: &Path| std::fs::rename(from, to).map_err(|e| Error::io(from, e));
    // Whatever `.agentfs` is (a directory, a link, a file), it goes; then the new one holds it.
    let had = std::fs::symlink_metadata(&agentfs).is_ok();
    if had {
        moved(&agentfs, &held)?;
    }
    std::fs::create_dir(&agentfs).map_err(|e| Error::io(&agentfs, e))?;
    let into = agentfs.join(format!("set-aside-{stamp}"));
    std::fs::create_dir(&into).map_err(|e| Error::io(&into, e))?;
    if had {
        moved(&held, &into.join("agentfs"))?;
    }
    let grail = root.join(".grail");
    if std::fs::symlink_metadata(&grail).is_ok() {
        moved(&grail, &into.join("grail"))?;
    }
    std::fs::write(agentfs.join(".gitignore"), "# Cairn's state: never tracked (see `:help cairn`).\n*\n").map_err(|e| Error::io(&agentfs, e))?;
    mark(root)?;
    Ok(Some((why, into)))
}
