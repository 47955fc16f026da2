//! The orchestrator: queues agents and runs them through the lifecycle of SPEC §3.
//!
//! Any number of cairn processes may serve one project (the CLI's `run`, `cairn up`, the
//! Neovim host). They coordinate only through `bin.db`: [`Bin::claim`] hands each queued agent
//! to exactly one worker and enforces `max_concurrent_agents` across processes; a worker is a
//! pid plus its start time, so [`recover`] can tell a dead worker from a live one.

use crate::error::{Error, Result};
use crate::externals::Host;
use crate::lifecycle::{Priority, State};
use crate::project::Project;
use crate::providers;
use crate::sandbox::{runner, script};
use crate::store::bin::{AgentRecord, TransitionExtra, Worker};
use crate::view::View;
use serde_json::{json, Map, Value};
use std::io::Write;
use std::time::Duration;

/// This process as a worker.
pub fn this_worker() -> Worker {
    let pid = std::process::id() as i64;
    Worker { pid, start: process_start(pid).unwrap_or(0) }
}

/// Start time of a process (clock ticks since boot), from `/proc/<pid>/stat`.
fn process_start(pid: i64) -> Option<i64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may contain spaces; fields after the closing parenthesis are fixed.
    let rest = &stat[stat.rfind(')')? + 2..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// Is the worker process still running?
pub fn worker_alive(w: Worker) -> bool {
    match process_start(w.pid) {
        Some(start) => w.start == 0 || start == w.start,
        None => false,
    }
}

/// Queues a new agent; returns its record (state `queued`).
pub fn queue(project: &Project, reference: &str, provider: Option<&str>, priority: Priority) -> Result<AgentRecord> {
    if reference.trim().is_empty() {
        return Err(Error::Usage("the task reference is empty".into()));
    }
    let provider = provider.map_or_else(|| providers::default_for(project, reference).to_string(), str::to_string);
    providers::validate(&provider)?;
    project.bin()?.insert(reference, &provider, priority)
}

/// Re-queues or errors agents whose worker died (SPEC §3 restart rule).
pub fn recover(project: &Project) -> Result<Vec<(String, State)>> {
    let me = this_worker();
    project.bin()?.recover(&|w| w == me || worker_alive(w))
}

/// Claims and runs the next queued agent in this thread. `None` when nothing could be
/// claimed (queue empty or concurrency limit reached).
pub fn run_next(project: &Project) -> Result<Option<AgentRecord>> {
    let claimed = project.bin()?.claim(this_worker(), project.config.orchestrator.max_concurrent_agents, None)?;
    match claimed {
        Some(rec) => Ok(Some(execute(project, rec)?)),
        None => Ok(None),
    }
}

/// Queues `reference` and runs it now in this process, waiting for a free slot if the
/// concurrency limit is reached. Returns the final record (reviewing or errored).
pub fn run_now(project: &Project, reference: &str, provider: Option<&str>) -> Result<AgentRecord> {
    let rec = queue(project, reference, provider, Priority::Normal)?;
    let poll = Duration::from_millis(project.config.orchestrator.poll_interval_ms);
    loop {
        let claimed = project.bin()?.claim(this_worker(), project.config.orchestrator.max_concurrent_agents, Some(&rec.id))?;
        if let Some(claimed) = claimed {
            return execute(project, claimed);
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

/// Writes `.grail/agents/<id>/check.json` and returns whether the check passed.
fn write_check(project: &Project, id: &str, diags: &[script::Diagnostic]) -> Result<()> {
    let dir = project.agent_dir(id);
    let body = json!({ "ok": diags.is_empty(), "file": "task.pym", "diagnostics": diags });
    std::fs::write(dir.join("check.json"), serde_json::to_vec_pretty(&body)?).map_err(|e| Error::io(dir.join("check.json"), e))
}

/// Moves a claimed agent (state `generating`) through the rest of its run. Failures of the
/// agent itself end in `errored`; only storage failures are returned as errors.
pub fn execute(project: &Project, rec: AgentRecord) -> Result<AgentRecord> {
    let id = rec.id.clone();
    match execute_inner(project, &rec) {
        Ok(done) => Ok(done),
        Err(Failure::Agent(kind, message)) => {
            tracing::info!(agent = %id, kind, "errored: {message}");
            let mut bin = project.bin()?;
            bin.transition(&id, State::Errored, "error", TransitionExtra { error: Some((&kind, &message)), ..Default::default() })
        }
        Err(Failure::Host(e)) => {
            tracing::error!(agent = %id, "host failure: {e}");
            let msg = e.to_string();
            let _ = project.bin()?.transition(&id, State::Errored, "error", TransitionExtra { error: Some(("host", &msg)), ..Default::default() });
            Err(e)
        }
    }
}

enum Failure {
    /// The agent failed (bad code, limit, exception): it ends errored with this kind.
    Agent(String, String),
    /// Cairn itself failed (storage, I/O).
    Host(Error),
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure::Host(e)
    }
}

fn execute_inner(project: &Project, rec: &AgentRecord) -> std::result::Result<AgentRecord, Failure> {
    let id = rec.id.as_str();
    let dir = project.agent_dir(id);
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;

    // generating
    let code = providers::get_code(project, &rec.provider, &rec.task).map_err(|e| Failure::Agent("provider".into(), e.to_string()))?;
    std::fs::write(dir.join("task.pym"), &code).map_err(|e| Error::io(dir.join("task.pym"), e))?;
    let diags = script::check(&code);
    write_check(project, id, &diags)?;
    if !diags.is_empty() {
        let text = diags.iter().map(|d| format!("task.pym:{}:{}: {}", d.line, d.col, d.message)).collect::<Vec<_>>().join("\n");
        return Err(Failure::Agent("check".into(), text));
    }
    let source = script::transform(&code).map_err(|d| Failure::Agent("check".into(), d.message))?;

    // executing
    let mut bin = project.bin()?;
    bin.transition(id, State::Executing, "execute", TransitionExtra::default())?;
    let overlay = project.overlay(id)?;
    let log_path = dir.join("run.log");
    let log_file = std::fs::OpenOptions::new().create(true).append(true).open(&log_path).map_err(|e| Error::io(&log_path, e))?;
    let ask = |prompt: &str, context: &str| crate::llm::ask(project, prompt, context);
    let on_log = |line: &str| {
        if let Ok(bin) = project.bin() {
            let _ = bin.note(id, State::Executing, &format!("log: {line}"));
        }
    };
    let view = View::new(project, &overlay)?;
    let mut host = Host::new(view, project.config.sandbox.clone(), &ask, Some(log_file), &on_log);
    let mut inputs = Map::new();
    inputs.insert("task_description".into(), Value::String(rec.task.clone()));
    inputs.insert("agent_id".into(), Value::String(id.to_string()));
    let outcome = runner::run(&project.exe, project.pool.as_ref(), &source, "task.pym", inputs, &mut host)?;
    let submitted = host.submitted();
    drop(host);
    if let Some((kind, message)) = outcome.error {
        if let Ok(mut f) = std::fs::OpenOptions::new().append(true).open(&log_path) {
            let _ = writeln!(f, "error ({kind}): {message}");
        }
        return Err(Failure::Agent(kind, message));
    }

    // submitting
    bin.transition(id, State::Submitting, "submit", TransitionExtra::default())?;
    let changes = overlay.changes()?;
    let submission = match (submitted, overlay.kv_get("submission")?) {
        (true, Some(s)) => serde_json::from_str(&s).map_err(Error::from)?,
        _ => {
            let files: Vec<&str> = changes.iter().map(|c| c.path.as_str()).collect();
            let summary = match files.len() {
                0 => "no changes".to_string(),
                1 => format!("changed {}", files[0]),
                n => format!("changed {n} files"),
            };
            json!({ "summary": summary, "changed_files": files, "derived": true })
        }
    };
    overlay.kv_set("submission", &submission.to_string())?;
    let result = outcome.result.unwrap_or(Value::Null);
    overlay.kv_set("result", &result.to_string())?;

    // reviewing
    Ok(bin.transition(
        id,
        State::Reviewing,
        "review",
        TransitionExtra { submission: Some(&submission), result: Some(&result), ..Default::default() },
    )?)
}

/// Runs queued agents until `stop` returns true: up to `max_concurrent_agents` worker threads,
/// each claiming from `bin.db`. `tick` runs once per poll interval (signals, recovery).
pub fn serve(project: &Project, stop: &dyn Fn() -> bool, tick: &mut dyn FnMut()) -> Result<()> {
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
                        if let Err(e) = execute(project, rec) {
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

/// `.agentfs/watcher`: the worker identity of the process whose watcher keeps `stable.db` live.
fn watcher_marker(project: &Project) -> std::path::PathBuf {
    project.agentfs().join("watcher")
}

/// Is a watcher (`cairn up`, the Neovim host) keeping `stable.db` in step with the disk now?
pub fn index_is_live(project: &Project) -> bool {
    let Ok(text) = std::fs::read_to_string(watcher_marker(project)) else { return false };
    let mut parts = text.split_whitespace().map(|p| p.parse::<i64>());
    match (parts.next(), parts.next()) {
        (Some(Ok(pid)), Some(Ok(start))) => worker_alive(Worker { pid, start }),
        _ => false,
    }
}

/// Brings `stable.db` up to date (an incremental re-index: only changed files are read) unless
/// a live watcher already does. Runs before an agent is queued from the CLI or a signal, so an
/// agent sees files created since the last `init`.
pub fn ensure_index(project: &Project) -> Result<()> {
    if !index_is_live(project) {
        crate::sync::init(project)?;
    }
    Ok(())
}

/// Everything a long-running cairn process does for a project until `stop` is set: recovery
/// of interrupted agents, the worker pool, the file watcher and signal polling. `cairn up` and
/// the Neovim host both run exactly this. `report` receives one-line messages for the user.
pub fn services(project: &Project, stop: &std::sync::atomic::AtomicBool, report: &(dyn Fn(String) + Sync)) -> Result<()> {
    use std::sync::atomic::Ordering;
    for (id, state) in recover(project)? {
        report(format!("agent {id} {state} after an interrupted run"));
    }
    let mut watcher = crate::watcher::Watcher::start(project)?;
    // The watcher starts before this catch-up, so nothing between the two is missed.
    crate::sync::init(project)?;
    let me = this_worker();
    let marker = watcher_marker(project);
    if let Err(e) = std::fs::write(&marker, format!("{} {}", me.pid, me.start)) {
        tracing::warn!("{}: {e}", marker.display());
    }
    let result = std::thread::scope(|s| {
        s.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                if let Err(e) = watcher.pump(Duration::from_millis(200)) {
                    tracing::warn!("watcher: {e}");
                }
            }
        });
        let polling = project.config.orchestrator.signal_polling;
        let mut tick = || {
            if polling {
                for h in crate::signals::poll(project) {
                    match h.outcome {
                        Ok(_) => tracing::info!("signal {} done", h.name),
                        Err(e) => report(format!("signal {} failed: {e}", h.name)),
                    }
                }
            }
        };
        let result = serve(project, &|| stop.load(Ordering::Relaxed), &mut tick);
        stop.store(true, Ordering::Relaxed);
        result
    });
    let _ = std::fs::remove_file(&marker);
    result
}
