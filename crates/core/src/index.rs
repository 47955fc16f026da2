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

/// How long a live watcher's marker may go without being touched before it is not believed
/// (its process hangs, or was stopped with Ctrl-Z).
const LIVE_FOR: std::time::Duration = std::time::Duration::from_secs(3);

/// Is a watcher (`cairn up`, the Neovim host) keeping `stable.db` in step with the disk now?
/// Its process must exist, not be stopped, and have touched its marker within [`LIVE_FOR`]:
/// a stopped or hung daemon is not trusted, and the caller re-indexes itself.
pub fn index_is_live(project: &Project) -> bool {
    let marker = watcher_marker(project);
    let Ok(text) = std::fs::read_to_string(&marker) else { return false };
    let fresh = std::fs::metadata(&marker).and_then(|m| m.modified()).ok().and_then(|t| t.elapsed().ok()).is_some_and(|age| age <= LIVE_FOR);
    let mut parts = text.split_whitespace().map(|p| p.parse::<i64>());
    match (parts.next(), parts.next()) {
        (Some(Ok(pid)), Some(Ok(start))) => fresh && worker_alive(Worker { pid, start }) && !stopped(pid),
        _ => false,
    }
}

/// Is process `pid` stopped (`T`: a signal such as Ctrl-Z; `t`: a debugger)?
fn stopped(pid: i64) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let state = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().next());
    matches!(state, Some("T" | "t"))
}

/// Says that the watcher of this process is still at work (a long-running process calls it
/// about every second; see [`index_is_live`]).
pub fn touch_live(project: &Project) {
    let marker = watcher_marker(project);
    if let Ok(f) = std::fs::OpenOptions::new().write(true).open(&marker) {
        let _ = f.set_modified(std::time::SystemTime::now());
    }
}

/// Brings `stable.db` up to date unless a live watcher already does: a pruned scan (only the
/// directories whose stamp moved are read, see [`crate::sync::scan`]). Runs before an agent is
/// queued from the CLI or a signal, so an agent sees files created since the last `init`.
pub fn ensure_index(project: &Project) -> Result<()> {
    if !index_is_live(project) {
        crate::sync::catch_up(project)?;
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
