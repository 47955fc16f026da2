//! Wake-ups on new events: a bell that rings when any process writes `bin.db` (its WAL
//! changes), so the worker loop of `cairn up` and the Neovim host react to a queued agent or
//! a new event at once instead of at their next poll. Polling stays as the fallback: a bell
//! that cannot start (no inotify left) only makes them wait for the poll interval.

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
            let rings = ev.is_ok_and(|e| e.kind.is_modify() && e.paths.iter().any(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("bin.db"))));
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
