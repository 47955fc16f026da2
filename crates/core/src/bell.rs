//! Wake-ups on new events: a bell that rings when any process writes `bin.db` (its WAL
//! content changes), so the worker loop of `cairn up` and the Neovim host react to a queued agent or
//! a new event at once instead of at their next poll. Polling stays as the fallback: a bell
//! that cannot start (no inotify left) only makes them wait for the poll interval.
//!
//! Only content changes ring. Metadata events must not: as root, SQLite `fchown`s the WAL
//! each time a connection opens it, so a bell on `IN_ATTRIB` woke the loop, which opened
//! `bin.db`, which rang the bell again — a busy loop at 100% of a core.

use crate::project::Project;
use notify::{RecursiveMode, Watcher as _};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::time::Duration;

/// Rings on writes to `.agentfs/bin.db` and its WAL.
pub struct Bell {
    _inner: Option<notify::RecommendedWatcher>,
    rx: Receiver<()>,
}

impl Bell {
    /// Starts listening; never fails (without a watcher, [`Bell::wait`] just sleeps).
    pub fn new(project: &Project) -> Bell {
        let (tx, rx) = channel();
        let dir = project.agentfs();
        let inner = notify::recommended_watcher(move |ev: notify::Result<notify::Event>| {
            let rings = ev.is_ok_and(|e| rings_on(&e));
            if rings {
                let _ = tx.send(());
            }
        })
        .ok()
        .and_then(|mut w| w.watch(&dir, RecursiveMode::NonRecursive).ok().map(|_| w));
        if inner.is_none() {
            tracing::warn!("no watcher on {}: waiting for the poll interval instead", dir.display());
        }
        Bell { _inner: inner, rx }
    }

    /// Waits until `bin.db` changes or `timeout` passes; drains rings that piled up.
    pub fn wait(&self, timeout: Duration) {
        match self.rx.recv_timeout(timeout) {
            Ok(()) => while self.rx.try_recv().is_ok() {},
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => std::thread::sleep(timeout),
        }
    }
}

/// Does `e` say that `bin.db` or its WAL got new content? (Not: metadata, opens, reads, the
/// `-shm` index, which readers write too.)
fn rings_on(e: &notify::Event) -> bool {
    use notify::event::{EventKind, ModifyKind};
    let content = matches!(e.kind, EventKind::Modify(ModifyKind::Data(_) | ModifyKind::Any) | EventKind::Create(_));
    content && e.paths.iter().any(|p| p.file_name().is_some_and(|n| n == "bin.db" || n == "bin.db-wal"))
}

#[cfg(test)]
mod tests {
    use super::rings_on;
    use notify::event::{DataChange, EventKind, MetadataKind, ModifyKind};

    fn ev(kind: EventKind, name: &str) -> notify::Event {
        notify::Event::new(kind).add_path(std::path::PathBuf::from("/p/.agentfs").join(name))
    }

    #[test]
    fn only_content_changes_of_bin_db_ring() {
        assert!(rings_on(&ev(EventKind::Modify(ModifyKind::Data(DataChange::Any)), "bin.db-wal")));
        assert!(rings_on(&ev(EventKind::Modify(ModifyKind::Data(DataChange::Any)), "bin.db")));
        // SQLite's fchown of the WAL as root: an IN_ATTRIB that must not ring.
        assert!(!rings_on(&ev(EventKind::Modify(ModifyKind::Metadata(MetadataKind::Any)), "bin.db-wal")));
        assert!(!rings_on(&ev(EventKind::Modify(ModifyKind::Data(DataChange::Any)), "bin.db-shm")));
        assert!(!rings_on(&ev(EventKind::Modify(ModifyKind::Data(DataChange::Any)), "stable.db-wal")));
    }
}
