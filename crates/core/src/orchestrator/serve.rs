//! The worker pool of a long-running process: up to `max_concurrent_agents` threads, each
//! claiming from `bin.db`, until told to stop.

use super::{execute, this_worker};
use crate::error::Result;
use crate::project::Project;
use crate::sandbox::pool::Pool;
use std::time::Duration;

/// Runs queued agents until `stop` returns true: up to `max_concurrent_agents` worker threads,
/// each claiming from `bin.db`. `tick` runs once per poll interval (signals, recovery).
pub fn serve(project: &Project, pool: Option<&Pool>, stop: &dyn Fn() -> bool, tick: &mut dyn FnMut()) -> Result<()> {
    let poll = Duration::from_millis(project.config.orchestrator.poll_interval_ms);
    let max = project.config.orchestrator.max_concurrent_agents as usize;
    std::thread::scope(|s| -> Result<()> {
        let mut handles: Vec<std::thread::ScopedJoinHandle<'_, ()>> = Vec::new();
        while !stop() {
            tick();
            handles.retain(|h| !h.is_finished());
            while handles.len() < max {
                match project.bin()?.claim(this_worker(), max as u32, None)? {
                    Some(rec) => handles.push(s.spawn(move || {
                        if let Err(e) = execute(project, pool, rec) {
                            tracing::error!("agent run failed: {e}");
                        }
                    })),
                    None => break,
                }
            }
            std::thread::sleep(poll);
        }
        for h in handles {
            let _ = h.join();
        }
        Ok(())
    })
}

