//! Is `stable.db` live? A long-running process (`cairn up`, the Neovim host) that watches the
//! tree says so with `.agentfs/watcher` (its worker identity); a short-lived command that
//! finds no live watcher re-indexes incrementally before it queues an agent.

use crate::error::{Error, Result};
use crate::orchestrator::{this_worker, worker_alive};
use crate::project::Project;
use crate::store::bin::Worker;

/// `.agentfs/watcher`: the worker identity of the process whose watcher keeps `stable.db` live.
pub(crate) fn watcher_marker(project: &Project) -> std::path::PathBuf {
    project.agentfs().join("watcher")
}

/// Is a watcher (`cairn up`, the Neovim host) keeping `stable.db` in step with the disk now?
pub fn index_is_live(project: &Project) -> bool {
    let Ok(text) = std::fs::read_to_string(watcher_marker(project)) else { return false };
    let mut parts = text.split_whitespace().map(|p| p.parse::<i64>());
    match (parts.next(), parts.next()) {
        (Some(Ok(pid)), Some(Ok(start))) => worker_alive(Worker { pid, start }),
        _ => false,
    }
}

/// Brings `stable.db` up to date (an incremental re-index: only changed files are read) unless
/// a live watcher already does. Runs before an agent is queued from the CLI or a signal, so an
/// agent sees files created since the last `init`.
pub fn ensure_index(project: &Project) -> Result<()> {
    if !index_is_live(project) {
        crate::sync::init(project)?;
    }
    Ok(())
}

/// The marker of a live watcher: written by [`LiveIndex::claim`], removed on drop, and only
/// by the process that wrote it.
pub struct LiveIndex {
    path: std::path::PathBuf,
    me: Worker,
}

impl LiveIndex {
    /// Marks this process as the one keeping `stable.db` live.
    pub fn claim(project: &Project) -> Result<LiveIndex> {
        let me = this_worker();
        let path = watcher_marker(project);
        std::fs::write(&path, format!("{} {}", me.pid, me.start)).map_err(|e| Error::io(&path, e))?;
        Ok(LiveIndex { path, me })
    }
}

impl Drop for LiveIndex {
    fn drop(&mut self) {
        let mine = std::fs::read_to_string(&self.path).is_ok_and(|t| t.trim() == format!("{} {}", self.me.pid, self.me.start));
        if mine {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}
