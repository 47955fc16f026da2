//! The orchestrator: queues agents and runs them through the lifecycle of SPEC §3.
//!
//! Any number of cairn processes may serve one project (the CLI's `run`, `cairn up`, the
//! Neovim host). They coordinate only through `bin.db`: [`Bin::claim`] hands each queued agent
//! to exactly one worker and enforces `max_concurrent_agents` across processes; a worker is a
//! pid plus its start time, so [`recover`] can tell a dead worker from a live one.

mod execute;
pub(crate) use execute::submit;
mod serve;
mod worker;

pub use execute::execute;
pub use serve::serve;
pub use worker::{this_worker, worker_alive};

use crate::error::{Error, Result};
use crate::lifecycle::{Priority, Provider, State};
use crate::project::Project;
use crate::providers;
use crate::sandbox::pool::Pool;
use crate::store::bin::AgentRecord;
use std::time::Duration;

/// Queues a new agent; returns its record (state `queued`).
pub fn queue(project: &Project, reference: &str, provider: Option<Provider>, priority: Priority) -> Result<AgentRecord> {
    queue_once(project, reference, provider, priority, None)
}

/// Like [`queue`], idempotent under `key`: a retried request (a signal file taken again after
/// a crash) returns the agent it queued the first time.
/// With `[orchestrator] auto_spawn = false` the agent is held until [`start`].
pub fn queue_once(project: &Project, reference: &str, provider: Option<Provider>, priority: Priority, key: Option<&str>) -> Result<AgentRecord> {
    queue_at(project, reference, provider, priority, key, (!project.config.orchestrator.auto_spawn).then_some(crate::store::bin::HELD))
}

fn queue_at(project: &Project, reference: &str, provider: Option<Provider>, priority: Priority, key: Option<&str>, not_before: Option<i64>) -> Result<AgentRecord> {
    if reference.trim().is_empty() {
        return Err(Error::Usage("the task reference is empty".into()));
    }
    let provider = provider.unwrap_or_else(|| providers::default_for(project, reference));
    project.bin()?.insert(reference, provider, priority, key, not_before)
}

/// `cairn start [id]`: lets held agents (queued with `auto_spawn = false`) start; all of them
/// without an id. Returns the ids released.
pub fn start(project: &Project, id: Option<&str>) -> Result<Vec<String>> {
    project.bin()?.release(id)
}

/// Re-queues or errors agents whose worker died (SPEC §3 restart rule).
pub fn recover(project: &Project) -> Result<Vec<(String, State)>> {
    recover_in(&mut project.bin()?)
}

/// [`recover`] on an open `bin.db` (a long-running loop keeps one).
pub fn recover_in(bin: &mut crate::store::bin::Bin) -> Result<Vec<(String, State)>> {
    let me = this_worker();
    bin.recover(&|w| w == me || worker_alive(w))
}

/// Claims and runs the next queued agent in this thread. `None` when nothing could be
/// claimed (queue empty or concurrency limit reached).
pub fn run_next(project: &Project, pool: Option<&Pool>) -> Result<Option<AgentRecord>> {
    let claimed = project.bin()?.claim(this_worker(), project.config.orchestrator.max_concurrent_agents, None)?;
    match claimed {
        Some(rec) => Ok(Some(execute(project, pool, rec)?)),
        None => Ok(None),
    }
}

/// How long an agent `cairn run` queued is its own to claim.
const RESERVED_MS: i64 = 3000;

/// Queues `reference` and runs it now in this process, waiting for a free slot if the
/// concurrency limit is reached, and for its turn again when it goes back to the queue (a
/// rate-limited LLM). Returns the final record (reviewing or errored).
/// The child comes from `pool` (started by the caller early, so that its zygote builds the
/// interpreter while the caller re-indexes), else it is started cold.
pub fn run_now(project: &Project, reference: &str, provider: Option<Provider>, pool: Option<&Pool>) -> Result<AgentRecord> {
    // `cairn run` runs now, whatever auto_spawn says: reserved for a moment, so that no other
    // worker (a `cairn up` beside) claims it first and leaves this process waiting; claimed
    // by id. Killed before its claim, it is anyone's once the moment is over.
    let reserved = crate::time::now_ms() + RESERVED_MS;
    let rec = queue_at(project, reference, provider, Priority::Normal, None, Some(reserved))?;
    let poll = Duration::from_millis(project.config.orchestrator.poll_interval_ms);
    loop {
        recover(project)?;
        let claimed = project.bin()?.claim(this_worker(), project.config.orchestrator.max_concurrent_agents, Some(&rec.id))?;
        if let Some(claimed) = claimed {
            let done = execute(project, pool, claimed)?;
            // Back in the queue (a rate limit, a shortage of descriptors): claimed again when due.
            if done.state != State::Queued {
                return Ok(done);
            }
            continue;
        }
        let now = project.bin()?.get(&rec.id)?;
        if now.state != State::Queued {
            // Another worker took it: wait for it to settle.
            if !now.state.is_running() {
                return Ok(now);
            }
        }
        std::thread::sleep(poll);
    }
}

