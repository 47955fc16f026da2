//! A run's directory under `$CAIRN_HOME/runs/` and the proposal's layer in it: each changed
//! file written whole, each deleted one an overlay whiteout (a 0/0 character device, which
//! an ordinary user may create). Nothing of the unchanged project is copied.

use crate::error::{Error, Result};
use crate::project::Project;
use crate::review::diff::{ChangeKind, FileChange};
use rustix::fs::{Mode, OFlags};
use std::os::fd::AsFd;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// A run's directory, removed when dropped.
pub(super) struct RunDir {
    pub path: PathBuf,
}

impl RunDir {
    pub fn create(project: &Project) -> Result<RunDir> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let name = format!("{}-{}-{}", std::process::id(), crate::time::now_ms(), NEXT.fetch_add(1, Ordering::Relaxed));
        let runs = project.home.dir.join("runs");
        sweep(&runs);
        let path = runs.join(name);
        for d in ["stage", "box"] {
            std::fs::create_dir_all(path.join(d)).map_err(|e| Error::io(path.join(d), e))?;
        }
        // Only this user may look into a run's files (its spec holds the allowed environment).
        let _ = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o700));
        Ok(RunDir { path })
    }
}

impl Drop for RunDir {
    fn drop(&mut self) {
        let _ = remove_tree(&self.path);
    }
}

/// Removes the directories of runs whose `cairn` is gone (killed before its own tear-down):
/// `<pid>-<ms>-<n>` with no process `pid`.
fn sweep(runs: &Path) {
    for e in std::fs::read_dir(runs).into_iter().flatten().flatten() {
        let name = e.file_name();
        let pid = name.to_str().and_then(|n| n.split('-').next()).and_then(|p| p.parse::<u32>().ok());
        if pid.is_some_and(|p| p != std::process::id() && !Path::new(&format!("/proc/{p}")).exists()) {
            let _ = remove_tree(&e.path());
        }
    }
}

/// Removes `path` whole (a run's, a session's or a preview's directory, an agent CLI's state
/// layer). What is below `path` was written by a confined command, maybe still at work: it
/// is removed descriptor-relative, never through a symlink (a link is removed, not
/// followed), and a directory it cannot list or empty (overlayfs's work directory has no
/// permissions; an ordinary user cannot open it) is opened up through its own descriptor.
pub fn remove_tree(path: &Path) -> Result<()> {
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else { return Err(Error::InvalidPath(path.display().to_string())) };
    let dir = rustix::fs::open(parent, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty()).map_err(|e| Error::io(parent, e.into()));
    match dir {
        Ok(dir) => crate::store::fsx::remove_tree_at(dir.as_fd(), name).map_err(|e| Error::io(path, e)),
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// A relative path that stays inside the stage (the overlay's own paths are checked when
/// written; this is the last line).
fn inside(stage: &Path, rel: &str) -> Result<PathBuf> {
    let ok = !rel.is_empty() && !rel.starts_with('/') && rel.split('/').all(|c| !c.is_empty() && c != "." && c != "..");
    if !ok {
        return Err(Error::InvalidPath(rel.to_string()));
    }
    Ok(stage.join(rel))
}

/// Writes the proposal's layer.
pub(super) fn stage(stage: &Path, changes: &[FileChange]) -> Result<()> {
    for c in changes {
        let path = inside(stage, &c.path)?;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        }
        match (c.kind, &c.new) {
            (ChangeKind::Deleted, _) | (_, None) => whiteout(&path)?,
            (_, Some(bytes)) => {
                std::fs::write(&path, bytes).map_err(|e| Error::io(&path, e))?;
                let mode = c.new_mode.unwrap_or(0o644) & 0o777;
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).map_err(|e| Error::io(&path, e))?;
            }
        }
    }
    Ok(())
}

fn whiteout(path: &Path) -> Result<()> {
    rustix::fs::mknodat(rustix::fs::CWD, path, rustix::fs::FileType::CharacterDevice, rustix::fs::Mode::empty(), 0).map_err(|e| Error::io(path, e.into()))
}
