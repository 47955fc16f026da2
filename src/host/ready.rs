//! The first index of a project, in the background: the host answers at once.

use std::sync::Mutex;

/// The first index of a project runs in the background: the host answers `ping` at once, and
/// requests that need the index wait for it (on their blocking thread, never in Neovim).
#[derive(Default)]
pub(super) struct Ready {
    /// `None` while indexing; then what to tell the user (once), or an empty string.
    done: Mutex<Option<String>>,
    cv: std::sync::Condvar,
}

impl Ready {
    pub(super) fn set(&self, notice: String) {
        if let Ok(mut d) = self.done.lock() {
            *d = Some(notice);
        }
        self.cv.notify_all();
    }
    pub(super) fn is_ready(&self) -> bool {
        self.done.lock().map(|d| d.is_some()).unwrap_or(true)
    }
    /// Waits until the index exists.
    pub(super) fn wait(&self) {
        let Ok(mut d) = self.done.lock() else { return };
        while d.is_none() {
            match self.cv.wait(d) {
                Ok(g) => d = g,
                Err(_) => return,
            }
        }
    }
    /// The notice of a finished first index, once.
    pub(super) fn take_notice(&self) -> Option<String> {
        self.done.lock().ok().and_then(|mut d| d.as_mut().map(std::mem::take)).filter(|n| !n.is_empty())
    }
}

