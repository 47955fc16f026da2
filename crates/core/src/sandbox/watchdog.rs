//! A run's watchdog: kills the run's process at its deadline, or as soon as it is told to stop
//! (its agent rejected while it runs). Shared by the RustPython runner and the CPython path.

use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Why the watchdog ended a run.
pub(super) enum Ended {
    Timeout,
    Stopped,
}

/// How often a run asks its `stop` (a query of `bin.db`).
const STOP_POLL: Duration = Duration::from_millis(250);

/// The watchdog of a run: `kill` at `deadline` (when it keeps one), or as soon as `stop` says
/// so, unless told first (over `done`) that the run is over.
pub(super) fn watch(deadline: Option<Instant>, stop: Option<crate::externals::Stop>, done: mpsc::Receiver<()>, kill: impl Fn()) -> Option<Ended> {
    let deadline = deadline.unwrap_or_else(|| Instant::now() + Duration::from_secs(365 * 24 * 3600));
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let wait = if stop.is_some() { left.min(STOP_POLL) } else { left };
        match done.recv_timeout(wait) {
            Err(mpsc::RecvTimeoutError::Timeout) if Instant::now() >= deadline => {
                kill();
                return Some(Ended::Timeout);
            }
            Err(mpsc::RecvTimeoutError::Timeout) if stop.as_ref().is_some_and(|s| s()) => {
                kill();
                return Some(Ended::Stopped);
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            _ => return None,
        }
    }
}
