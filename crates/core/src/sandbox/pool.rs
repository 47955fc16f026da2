//! Pre-started sandbox children for long-running processes (`cairn up`, the Neovim host): a
//! child builds its interpreter while it waits, so a run only pays for the script.

use super::spawn::{spawn, Spawned};
use crate::error::Result;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::Duration;

/// Pre-started sandbox children. Each has built its interpreter and waits for a script; each
/// runs exactly one script and exits, so no interpreter is ever reused across agents.
///
/// One long-lived filler thread starts every child: a child's parent-death signal fires when
/// the *thread* that forked it exits, so short-lived spawner threads would kill their children.
pub struct Pool {
    exe: PathBuf,
    /// Children start with the runtime guards (the syntax layer's test switch).
    guards: bool,
    size: usize,
    idle: Mutex<Vec<Spawned>>,
    wake: Condvar,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool").field("exe", &self.exe).field("size", &self.size).finish()
    }
}

impl Pool {
    /// A pool of `size` children of `exe`, filled in the background.
    pub fn new(exe: &Path, guards: bool, size: usize) -> Arc<Pool> {
        let pool = Arc::new(Pool { exe: exe.to_path_buf(), guards, size, idle: Mutex::new(Vec::new()), wake: Condvar::new() });
        let weak = Arc::downgrade(&pool);
        std::thread::spawn(move || Pool::fill(weak));
        pool
    }

    /// The filler: keeps `size` children idle until the pool is dropped.
    fn fill(weak: Weak<Pool>) {
        let mut failures = 0;
        loop {
            let Some(pool) = weak.upgrade() else { return };
            let need = pool.idle.lock().map(|i| i.len() < pool.size).unwrap_or(false);
            if need && failures < 3 {
                match spawn(&pool.exe, pool.guards) {
                    Ok(child) => {
                        failures = 0;
                        if let Ok(mut idle) = pool.idle.lock() {
                            idle.push(child);
                        }
                    }
                    Err(e) => {
                        failures += 1;
                        tracing::warn!("sandbox pool: {e}");
                    }
                }
                continue;
            }
            if let Ok(guard) = pool.idle.lock() {
                let _ = pool.wake.wait_timeout(guard, Duration::from_millis(500));
            }
            failures = 0;
        }
    }

    /// A ready child (or a fresh one when none is idle); the pool refills behind it.
    pub(super) fn take(&self) -> Result<Spawned> {
        let mut found = None;
        if let Ok(mut idle) = self.idle.lock() {
            while let Some(mut s) = idle.pop() {
                if matches!(s.child.try_wait(), Ok(None)) {
                    found = Some(s);
                    break;
                }
                let _ = s.child.wait();
            }
        }
        self.wake.notify_one();
        match found {
            Some(s) => Ok(s),
            None => spawn(&self.exe, self.guards),
        }
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        if let Ok(mut idle) = self.idle.lock() {
            for mut s in idle.drain(..) {
                let _ = s.child.kill();
                let _ = s.child.wait();
            }
        }
    }
}

