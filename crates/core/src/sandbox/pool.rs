//! Ready sandbox children for long-running processes (`cairn up`, the Neovim host): a zygote
//! ([`super::zygote`]) builds the interpreter once and forks a child per run, so a run only
//! pays for a fork and its script, whatever the pace of runs.

use super::spawn::{spawn, Spawned};
use super::zygote::Zygote;
use crate::error::Result;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};

/// Where runs get their child. Each child runs exactly one script and exits, so no
/// interpreter is ever reused across agents; the zygote itself never runs one.
///
/// One long-lived starter thread starts every zygote: a child's parent-death signal fires when
/// the *thread* that started it exits, so a zygote started by a short-lived thread would die
/// with it. A zygote that fails is replaced once per request; when none can run (no pidfd on
/// this kernel, say), runs fall back to a freshly started child.
pub struct Pool {
    exe: PathBuf,
    /// Children start with the runtime guards (the syntax layer's test switch).
    guards: bool,
    zygote: Mutex<Option<Zygote>>,
    /// Set when two zygotes in a row could not fork: this machine cannot run one.
    unusable: AtomicBool,
    starter: Mutex<mpsc::Sender<mpsc::Sender<Result<Zygote>>>>,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool").field("exe", &self.exe).finish()
    }
}

impl Pool {
    /// A pool for children of `exe`; its zygote starts now and builds while nothing waits.
    pub fn new(exe: &Path, guards: bool) -> Arc<Pool> {
        let (tx, rx) = mpsc::channel::<mpsc::Sender<Result<Zygote>>>();
        let (exe_owned, g) = (exe.to_path_buf(), guards);
        std::thread::spawn(move || {
            for answer in rx {
                let _ = answer.send(Zygote::start(&exe_owned, g));
            }
        });
        let pool = Pool { exe: exe.to_path_buf(), guards, zygote: Mutex::new(None), unusable: AtomicBool::new(false), starter: Mutex::new(tx) };
        let first = pool.start_zygote();
        if let Ok(mut z) = pool.zygote.lock() {
            *z = first.map_err(|e| tracing::warn!("sandbox zygote: {e}")).ok();
        }
        Arc::new(pool)
    }

    fn start_zygote(&self) -> Result<Zygote> {
        let (tx, rx) = mpsc::channel();
        let gone = || crate::error::Error::Sandbox("the zygote starter is gone".into());
        self.starter.lock().map_err(|_| gone())?.send(tx).map_err(|_| gone())?;
        rx.recv().map_err(|_| gone())?
    }

    /// A child forked by the zygote (restarted once if it died), else a freshly started one.
    pub(super) fn take(&self) -> Result<Spawned> {
        if self.unusable.load(Ordering::Relaxed) {
            return spawn(&self.exe, self.guards);
        }
        let Ok(mut zygote) = self.zygote.lock() else { return spawn(&self.exe, self.guards) };
        for attempt in 0..2 {
            if zygote.is_none() || attempt > 0 {
                *zygote = None;
                *zygote = self.start_zygote().map_err(|e| tracing::warn!("sandbox zygote: {e}")).ok();
            }
            match zygote.as_ref().map(Zygote::fork) {
                Some(Ok(child)) => return Ok(child),
                // A shortage of descriptors here is not the zygote's fault: replacing it would
                // kill the runs it forked (they die with it). The run waits and is retried.
                Some(Err(e)) if e.out_of_descriptors() => return Err(e),
                Some(Err(e)) => tracing::warn!("sandbox zygote: {e}; starting another"),
                None => break,
            }
            if attempt == 1 {
                tracing::warn!("sandbox zygote: unusable here; runs start a fresh child each");
                self.unusable.store(true, Ordering::Relaxed);
            }
        }
        drop(zygote);
        spawn(&self.exe, self.guards)
    }
}
