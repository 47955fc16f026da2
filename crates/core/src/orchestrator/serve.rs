//! The worker pool of a long-running process: up to `max_concurrent_agents` threads, each
//! claiming from `bin.db`, until told to stop.

use super::{execute, this_worker};
use crate::error::{Error, Result};
use crate::project::Project;
use crate::sandbox::pool::Pool;
use std::time::Duration;

/// Longest pause after repeated database errors.
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// Runs queued agents until `stop` returns true: up to `max_concurrent_agents` worker threads,
/// each claiming from `bin.db`. `tick` runs once per poll interval (signals, recovery).
///
/// A database error (a locked or corrupt `bin.db`, a full disk) never ends the loop: it goes to
/// `on_error`, the loop backs off (doubling up to [`MAX_BACKOFF`]) and tries again, so one bad
/// moment does not stop the workers for the rest of the session.
pub fn serve(project: &Project, pool: Option<&Pool>, stop: &dyn Fn() -> bool, tick: &mut dyn FnMut(), on_error: &dyn Fn(&Error)) -> Result<()> {
    let poll = Duration::from_millis(project.config.orchestrator.poll_interval_ms);
    let max = project.config.orchestrator.max_concurrent_agents as usize;
    // A queued agent (from any process) rings the bell: it starts at once, not at the poll.
    let bell = crate::bell::Bell::new(project);
    std::thread::scope(|s| -> Result<()> {
        let mut handles: Vec<std::thread::ScopedJoinHandle<'_, ()>> = Vec::new();
        let mut backoff = poll;
        let mut bin = Held::default();
        while !stop() {
            tick();
            // Leases: agents whose worker process is gone are re-queued (or errored) by any
            // live process, so a killed `cairn run` never holds a slot.
            if let Err(e) = bin.get(project).and_then(super::recover_in) {
                on_error(&e);
                bin.drop_it();
            }
            handles.retain(|h| !h.is_finished());
            let mut failed = false;
            while handles.len() < max {
                match bin.get(project).and_then(|b| b.claim(this_worker(), max as u32, None)) {
                    Ok(Some(rec)) => handles.push(s.spawn(move || {
                        if let Err(e) = execute(project, pool, rec) {
                            tracing::error!("agent run failed: {e}");
                        }
                    })),
                    Ok(None) => break,
                    Err(e) => {
                        on_error(&e);
                        bin.drop_it();
                        failed = true;
                        break;
                    }
                }
            }
            backoff = if failed { (backoff * 2).min(MAX_BACKOFF) } else { poll };
            if failed {
                std::thread::sleep(backoff);
            } else {
                bell.wait(backoff);
            }
        }
        for h in handles {
            let _ = h.join();
        }
        Ok(())
    })
}


/// The loop's one connection to `bin.db` (opening it parses the schema and runs the
/// migrations: every poll would cost that while idle), opened again after an error or when
/// the file is another one (the project initialized afresh).
#[derive(Default)]
struct Held {
    open: Option<(u64, crate::store::bin::Bin)>,
}

impl Held {
    fn get(&mut self, project: &Project) -> Result<&mut crate::store::bin::Bin> {
        use std::os::unix::fs::MetadataExt;
        let ino = std::fs::metadata(project.agentfs().join("bin.db")).map(|m| m.ino()).unwrap_or(0);
        if self.open.as_ref().is_none_or(|(i, _)| *i != ino || ino == 0) {
            self.open = Some((ino, project.bin()?));
        }
        match &mut self.open {
            Some((_, bin)) => Ok(bin),
            None => Err(Error::Internal("bin.db connection".into())),
        }
    }

    fn drop_it(&mut self) {
        self.open = None;
    }
}
