//! The file watcher (notify): keeps `stable.db` in step with creates, modifies, deletes and
//! renames in the working tree while `cairn up` or the Neovim host runs. Events inside the
//! directories cairn never mirrors (`.agentfs`, `.git`, ...) are dropped before any work.

use crate::error::{Error, Result};
use crate::paths::{self, IgnoreRules};
use crate::project::Project;
use notify::{RecursiveMode, Watcher as _};
use std::collections::BTreeSet;
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::time::Duration;

/// A running watcher over one project.
pub struct Watcher {
    _inner: notify::RecommendedWatcher,
    rx: Receiver<notify::Result<notify::Event>>,
    rules: IgnoreRules,
    project: Project,
    /// An event about the tree (or an overflow) arrived since [`Watcher::take_activity`].
    activity: bool,
    /// The kernel's queue overflowed since [`Watcher::take_overflow`]: events were lost.
    overflow: bool,
}

/// Can `kind` mean that something in the tree changed? Opens, reads and closes after reading
/// cannot (the index's own walk makes them: waking on them would walk again, forever); a
/// close after writing can.
fn changes_content(kind: &notify::EventKind) -> bool {
    use notify::event::{AccessKind, AccessMode, EventKind};
    match kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) => false,
        _ => true,
    }
}

/// A watch error in words; the exhausted inotify limit names the sysctl to raise.
pub fn describe(e: &notify::Error) -> String {
    match &e.kind {
        notify::ErrorKind::MaxFilesWatch => exhausted(),
        notify::ErrorKind::Io(io) if io.raw_os_error() == Some(libc::ENOSPC) => exhausted(),
        _ => e.to_string(),
    }
}

/// The message for an exhausted inotify watch limit.
pub fn exhausted() -> String {
    let limit = std::fs::read_to_string("/proc/sys/fs/inotify/max_user_watches").map(|s| s.trim().to_string()).unwrap_or_else(|_| "?".into());
    format!("the kernel's inotify watch limit is exhausted (fs.inotify.max_user_watches = {limit}); raise it with `sysctl fs.inotify.max_user_watches=<more>`")
}

impl Watcher {
    /// Starts watching the project root recursively.
    pub fn start(project: &Project) -> Result<Watcher> {
        let (tx, rx) = channel();
        let mut inner = notify::recommended_watcher(move |ev| {
            let _ = tx.send(ev);
        })
        .map_err(|e| Error::Watch(e.to_string()))?;
        inner.watch(&project.root, RecursiveMode::Recursive).map_err(|e| Error::Watch(describe(&e)))?;
        Ok(Watcher { _inner: inner, rx, rules: IgnoreRules::new(&project.root), project: project.clone(), activity: false, overflow: false })
    }

    /// Waits up to `timeout` for events, then syncs every path they name (and any that
    /// arrive meanwhile). Returns the number of `stable.db` changes; `Ok(0)` on timeout.
    /// Did anything happen in the tree since the last call? (For a reconcile soon after
    /// activity, and rarely when idle.)
    pub fn take_activity(&mut self) -> bool {
        std::mem::take(&mut self.activity)
    }

    /// Were events lost since the last call (the kernel's queue overflowed)?
    pub fn take_overflow(&mut self) -> bool {
        std::mem::take(&mut self.overflow)
    }

    pub fn pump(&mut self, timeout: Duration) -> Result<usize> {
        let first = match self.rx.recv_timeout(timeout) {
            Ok(ev) => ev,
            Err(RecvTimeoutError::Timeout) => return Ok(0),
            Err(RecvTimeoutError::Disconnected) => return Err(Error::Watch("watcher stopped".into())),
        };
        let mut rels = BTreeSet::new();
        let (activity, overflow) = (&mut self.activity, &mut self.overflow);
        let mut add = |ev: notify::Result<notify::Event>| {
            if let Ok(ev) = ev {
                // An overflow names no path: the tree must be walked again.
                *activity |= ev.need_rescan();
                *overflow |= ev.need_rescan();
                if !changes_content(&ev.kind) {
                    return;
                }
                for p in ev.paths {
                    if let Ok(rel) = p.strip_prefix(&self.project.root) {
                        if let Some(rel) = rel.to_str() {
                            if !rel.is_empty() && !paths::has_skipped_component(rel) {
                                rels.insert(rel.to_string());
                            }
                        }
                    }
                }
            }
        };
        add(first);
        while let Ok(ev) = self.rx.try_recv() {
            add(ev);
        }
        self.activity |= !rels.is_empty();
        if rels.is_empty() {
            return Ok(0);
        }
        let rels: Vec<String> = rels.into_iter().collect();
        crate::sync::sync_paths(&self.project, &mut self.rules, &rels)
    }
}
