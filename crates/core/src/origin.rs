//! Whose state is this? `.agentfs/` and `.grail/` are made by Cairn on this machine, never
//! taken from a clone: git ships them when a repository force-adds them, and overwrites the
//! files of an ignored directory at will on a pull. A shipped `bin.db` would list agents the
//! user never ran (queued ones would start by themselves) and name paths after their ids.
//!
//! When Cairn makes `.agentfs/` it records, in `.agentfs/origin`, the identity (inode number
//! and birth time) of the directory, of `bin.db` and `stable.db` and of their WAL files: files
//! a clone, a copy or a pull creates get new ones, which no repository can know in advance.
//! Every command checks them (with Cairn's state directories being real directories, not
//! links) before it reads anything there; `cairn init` sets a
//! foreign state aside (nothing is deleted) and starts afresh, or, with `--adopt`, keeps it
//! as the user's own (a project restored from a backup, or made by an older Cairn).

use crate::error::{Error, Result};
use std::path::{Path, PathBuf};

fn record(root: &Path) -> PathBuf {
    root.join(".agentfs").join("origin")
}

/// A file's identity: its inode number and birth time (a file made anew gets another, even
/// where the file system hands the freed inode number straight back); `None` for a link or
/// nothing.
fn ino(path: &Path) -> Option<String> {
    use rustix::fs::{AtFlags, StatxFlags};
    let st = rustix::fs::statx(rustix::fs::CWD, path, AtFlags::SYMLINK_NOFOLLOW, StatxFlags::TYPE | StatxFlags::INO | StatxFlags::BTIME).ok()?;
    if u32::from(st.stx_mode) & 0o170000 == 0o120000 {
        return None;
    }
    Some(match StatxFlags::from_bits_retain(st.stx_mask).contains(StatxFlags::BTIME) {
        true => format!("{}.{}.{}", st.stx_ino, st.stx_btime.tv_sec, st.stx_btime.tv_nsec),
        false => st.stx_ino.to_string(),
    })
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
    let (made, files) = parse(&text);
    if made != Some(dir) {
        return Some(format!("{} was made elsewhere (cloned, copied or restored)", agentfs.display()));
    }
    // A file recorded and there now must be the one recorded (one gone is another matter:
    // a lost `bin.db` is refused on its own, a WAL another program removed is made again).
    files.iter().find(|(name, was)| ino(&agentfs.join(name)).is_some_and(|now| now != *was)).map(|(name, _)| format!("{} was replaced (not by Cairn)", agentfs.join(name).display()))
}

/// The files of `.agentfs/` whose identity is recorded: the databases every command reads
/// and their WAL files (SQLite replays a WAL into its database on open).
const TRACKED: [&str; 4] = ["bin.db", "bin.db-wal", "stable.db", "stable.db-wal"];

/// The record: `<dir inode> name=inode...`.
fn parse(text: &str) -> (Option<String>, Vec<(String, String)>) {
    let mut words = text.split_whitespace();
    let made = words.next().map(str::to_string);
    let files = words.filter_map(|w| w.split_once('=')).filter(|(n, _)| TRACKED.contains(n)).map(|(n, i)| (n.to_string(), i.to_string())).collect();
    (made, files)
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
    let files = TRACKED.iter().filter_map(|n| ino(&root.join(".agentfs").join(n)).map(|i| (n.to_string(), i))).collect();
    write(root, dir, files)
}

/// Records the WAL of database `db` (in `.agentfs/`) that Cairn's own open just created.
pub fn mark_new_wal(db: &Path) -> Result<()> {
    let (Some(agentfs), Some(name)) = (db.parent(), db.file_name().and_then(|n| n.to_str())) else { return Ok(()) };
    let wal = format!("{name}-wal");
    let (Some(root), true) = (agentfs.parent(), agentfs.file_name().is_some_and(|n| n == ".agentfs") && TRACKED.contains(&wal.as_str())) else { return Ok(()) };
    let Ok(text) = std::fs::read_to_string(record(root)) else { return Ok(()) };
    let (Some(dir), mut files) = parse(&text) else { return Ok(()) };
    files.retain(|(n, _)| *n != wal);
    files.extend(ino(&agentfs.join(&wal)).map(|i| (wal, i)));
    write(root, dir, files)
}

fn write(root: &Path, dir: String, files: Vec<(String, String)>) -> Result<()> {
    let line: String = files.iter().map(|(n, i)| format!(" {n}={i}")).collect();
    let path = record(root);
    let tmp = path.with_extension(format!("part-{}", std::process::id()));
    // A fresh file (a link planted at the temporary's name is removed, never followed).
    let _ = std::fs::remove_file(&tmp);
    let written = std::fs::OpenOptions::new().write(true).create_new(true).open(&tmp).and_then(|mut f| std::io::Write::write_all(&mut f, format!("{dir}{line}\n").as_bytes()));
    written.and_then(|()| std::fs::rename(&tmp, &path)).map_err(|e| Error::io(&path, e))
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
    // (`init` goes on with `Project::state_dir`, which writes the new `.gitignore`.)
    mark(root)?;
    Ok(Some((why, into)))
}
