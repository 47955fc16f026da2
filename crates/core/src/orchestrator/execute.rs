//! Running one claimed agent through the rest of its life: generating (the provider and the
//! pre-flight check), executing (the sandbox), submitting, reviewing.

use crate::error::{Error, Result};
use crate::externals::Host;
use crate::lifecycle::{ErrorKind, State};
use crate::project::Project;
use crate::providers;
use crate::sandbox::pool::Pool;
use crate::sandbox::{runner, script};
use crate::store::bin::{AgentRecord, TransitionExtra};
use crate::view::View;
use serde_json::{json, Map, Value};
use std::io::Write;

/// Writes `.grail/agents/<id>/check.json` and returns whether the check passed.
fn write_check(project: &Project, id: &str, diags: &[script::Diagnostic]) -> Result<()> {
    let dir = project.agent_dir(id);
    let body = json!({ "ok": diags.is_empty(), "file": "task.pym", "diagnostics": diags });
    std::fs::write(dir.join("check.json"), serde_json::to_vec_pretty(&body)?).map_err(|e| Error::io(dir.join("check.json"), e))
}

/// How long after its creation a run that found no file descriptor is re-queued.
const RETRY_DESCRIPTORS_MS: i64 = 10 * 60 * 1000;

/// Moves a claimed agent (state `generating`) through the rest of its run. Failures of the
/// agent itself end in `errored`; only storage failures are returned as errors.
pub fn execute(project: &Project, pool: Option<&Pool>, rec: AgentRecord) -> Result<AgentRecord> {
    let id = rec.id.clone();
    // A panic anywhere in a run ends the agent `errored` (internal): never left executing.
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| execute_inner(project, pool, &rec)))
        .unwrap_or_else(|_| Err(Failure::Agent(ErrorKind::Internal, "the run failed inside cairn (a panic); see the log".into())));
    // Rejected while it ran (`cairn reject`, `:CairnReject` on its live ghost text): the
    // decision stands whatever the run failed with (stopped, or its next step refused); its
    // overlay, closed now, is set aside as reject does for a run that is over.
    if outcome.is_err() {
        let now = project.bin()?.get(&id)?;
        if now.state.is_terminal() {
            tracing::info!(agent = %id, "{} while it ran; the run is over", now.state);
            if now.state == State::Rejected {
                project.archive_overlay(&id)?;
            }
            return Ok(now);
        }
    }
    match outcome {
        Ok(done) => Ok(done),
        Err(Failure::Agent(kind, message)) => {
            tracing::info!(agent = %id, %kind, "errored: {message}");
            let errored = project.bin()?.transition(&id, State::Errored, "error", TransitionExtra { error: Some((kind, &message)), ..Default::default() });
            // The change it worked in (`[jj] create_change_on_spawn`) is abandoned.
            crate::jj::sync_locked(project, &id);
            errored
        }
        // Retried for a while only: a failure that lasts is not a shortage of descriptors.
        Err(Failure::RateLimited(retry_after_secs, message)) => rate_limited(project, &id, retry_after_secs, &message),
        Err(Failure::Host(e)) if e.out_of_descriptors() && crate::time::now_ms() - rec.created_ms < RETRY_DESCRIPTORS_MS => {
            // Not the agent's fault and not lasting: it goes back to the queue (said in its
            // events) and runs again once descriptors are free; this worker backs off first.
            tracing::warn!(agent = %id, "re-queued: {e}");
            let why = format!("re-queued: {e} (raise `ulimit -n`); it runs again when descriptors are free");
            project.bin()?.requeue(&id, &why)?;
            std::thread::sleep(std::time::Duration::from_secs(1));
            project.bin()?.get(&id)
        }
        Err(Failure::Host(e)) => {
            tracing::error!(agent = %id, "host failure: {e}");
            let msg = e.to_string();
            let _ = project.bin()?.transition(&id, State::Errored, "error", TransitionExtra { error: Some((ErrorKind::Host, &msg)), ..Default::default() });
            crate::jj::sync_locked(project, &id);
            Err(e)
        }
    }
}

enum Failure {
    /// The agent failed (bad code, limit, exception): it ends errored with this kind.
    Agent(ErrorKind, String),
    /// The LLM endpoint is rate-limiting (its `Retry-After` in seconds, the message): the
    /// agent waits in the queue, not in this worker.
    RateLimited(Option<u64>, String),
    /// Cairn itself failed (storage, I/O).
    Host(Error),
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure::Host(e)
    }
}

fn execute_inner(project: &Project, pool: Option<&Pool>, rec: &AgentRecord) -> std::result::Result<AgentRecord, Failure> {
    let id = rec.id.as_str();
    let dir = project.agent_dir(id);
    project.state_dir(&dir)?;
    set_aside_previous_attempt(project, id, &dir)?;
    crate::jj::started(project, id);

    // generating
    let task = revised_task(project, rec)?;
    let code = providers::get_code(project, rec.provider, &task).map_err(|e| match e {
        Error::RateLimited { retry_after_secs, .. } => Failure::RateLimited(retry_after_secs, e.to_string()),
        e => Failure::Agent(ErrorKind::Provider, e.to_string()),
    })?;
    if rec.provider == crate::lifecycle::Provider::Llm && project.bin()?.rate_limits(id)? > 0 {
        project.bin()?.clear_rate_limits(id)?;
    }
    std::fs::write(dir.join("task.pym"), &code).map_err(|e| Error::io(dir.join("task.pym"), e))?;
    let (interpreter, diags) = crate::sandbox::interpreter::pre_flight(&code, &project.config.sandbox);
    write_check(project, id, &diags)?;
    if !diags.is_empty() {
        let text = diags.iter().map(|d| format!("task.pym:{}:{}: {}", d.line, d.col, d.message)).collect::<Vec<_>>().join("\n");
        return Err(Failure::Agent(ErrorKind::Check, text));
    }
    let source = crate::sandbox::interpreter::prepare(&code, interpreter).map_err(|d| Failure::Agent(ErrorKind::Check, d.message))?;

    // executing
    let mut bin = project.bin()?;
    bin.transition(id, State::Executing, "execute", TransitionExtra::default())?;
    // timeout_seconds counts from here: setting up the overlay is part of the run.
    let began = std::time::Instant::now();
    let deadline = began + std::time::Duration::from_secs(project.config.sandbox.timeout_seconds);
    let overlay = project.overlay(id)?;
    let log_path = dir.join("run.log");
    let log_file = std::fs::OpenOptions::new().create(true).append(true).open(&log_path).map_err(|e| Error::io(&log_path, e))?;
    let ask = |prompt: &str, context: &str, budget: std::time::Duration| crate::llm::ask(project, prompt, context, budget);
    // One connection for the run's events (log lines, tool calls): appends stay cheap.
    let events = project.bin()?;
    let on_event = |kind: &crate::events::EventKind| {
        if let Err(e) = events.append(id, State::Executing, kind) {
            tracing::warn!("event append failed: {e}");
        }
    };
    let view = View::new(project, &overlay)?;
    let mut host = Host::new(view, project.config.sandbox.clone(), &ask, Some(log_file), &on_event);
    host.deadline = Some(deadline);
    host.stop = Some(rejected_meanwhile(project, id));
    host.limits.interpreter = interpreter;
    let mut inputs = Map::new();
    inputs.insert("task_description".into(), Value::String(rec.task.clone()));
    inputs.insert("agent_id".into(), Value::String(id.to_string()));
    let outcome = runner::run(&project.exe, pool, &source, "task.pym", inputs, &mut host)?;
    let submitted = host.submitted();
    drop(host);
    let ended = match &outcome.error {
        Some((kind, message)) => format!("error ({kind}): {message}\nrun ended after {} ms", began.elapsed().as_millis()),
        None => format!("run ended after {} ms", began.elapsed().as_millis()),
    };
    log_line(&log_path, &ended);
    if let Some((kind, message)) = outcome.error {
        return Err(Failure::Agent(kind, message));
    }

    Ok(submit(project, &mut bin, id, &overlay, submitted, outcome.result.unwrap_or(Value::Null))?)
}

/// Whether agent `id` was decided (rejected) while its run goes on: asked by the run's
/// watchdog, which then stops the sandbox child.
fn rejected_meanwhile(project: &Project, id: &str) -> crate::externals::Stop {
    let (project, id) = (project.clone(), id.to_string());
    std::sync::Arc::new(move || project.bin().and_then(|b| b.get(&id)).is_ok_and(|r| r.state.is_terminal()))
}

/// A rate-limited request (HTTP 429): the agent goes back to the queue, claimed again no
/// earlier than the server's `Retry-After`, else 1, 2, 4, ... seconds, both capped at `[llm]
/// rate_limit_max_wait_seconds`; the worker is free meanwhile. After `[llm]
/// rate_limit_retries` re-queues it ends errored (kind `provider`), saying so.
fn rate_limited(project: &Project, id: &str, retry_after_secs: Option<u64>, message: &str) -> Result<AgentRecord> {
    let cfg = &project.config.llm;
    let mut bin = project.bin()?;
    let done = bin.rate_limits(id)?;
    if u64::from(done) >= cfg.rate_limit_retries {
        bin.clear_rate_limits(id)?;
        let why = format!("{message}; gave up after {} attempts ([llm] rate_limit_retries = {})", done + 1, cfg.rate_limit_retries);
        tracing::info!(agent = %id, "errored: {why}");
        return bin.transition(id, State::Errored, "error", TransitionExtra { error: Some((ErrorKind::Provider, &why)), ..Default::default() });
    }
    let wait = retry_after_secs.unwrap_or(1 << done.min(20)).min(cfg.rate_limit_max_wait_seconds);
    let why = format!("re-queued: {message}; tried again in {wait} s (attempt {} of {})", done + 2, cfg.rate_limit_retries + 1);
    tracing::warn!(agent = %id, "{why}");
    bin.requeue_later(id, &why, crate::time::now_ms() + (wait as i64) * 1000)?;
    bin.get(id)
}

/// `executing` → `submitting` → `reviewing`: the submission (the agent's own when
/// `submitted`, else one derived from its changes) and the result are stored in the overlay
/// and on the record, and recorded as a jj change in a jj project. Runs, MCP sessions and
/// wrap sessions all end here.
pub(crate) fn submit(project: &Project, bin: &mut crate::store::bin::Bin, id: &str, overlay: &crate::store::overlay::Overlay, submitted: bool, result: Value) -> Result<AgentRecord> {
    // A finish interrupted after this step resumes past it.
    if bin.get(id)?.state != State::Submitting {
        bin.transition(id, State::Submitting, "submit", TransitionExtra::default())?;
    }
    let submission = match (submitted, overlay.kv_get("submission")?) {
        (true, Some(s)) => serde_json::from_str(&s).map_err(Error::from)?,
        _ => {
            // The changed paths only: no content is read to name them.
            let paths = overlay.paths()?;
            let files: Vec<&str> = paths.iter().map(|(p, _)| p.as_str()).collect();
            let summary = match files.len() {
                0 => "no changes".to_string(),
                1 => format!("changed {}", files[0]),
                n => format!("changed {n} files"),
            };
            json!({ "summary": summary, "changed_files": files, "derived": true })
        }
    };
    overlay.kv_set("submission", &submission.to_string())?;
    overlay.kv_set("result", &result.to_string())?;
    overlay.kv_delete(crate::review::revise::REVISING)?;
    // What the user reviews now, before anyone can act on it: the left side of the next
    // revision's interdiff.
    if let Err(e) = crate::review::revise::snapshot(project, overlay, id) {
        tracing::warn!(agent = %id, "no interdiff snapshot: {e}");
    }
    let rec = bin.transition(id, State::Reviewing, "review", TransitionExtra { submission: Some(&submission), result: Some(&result), ..Default::default() })?;
    // The overlay is final: after the transition (nobody waits on this), it becomes one file.
    overlay.fold();
    // A hunk rejected before and proposed again unchanged stays rejected.
    if let Err(e) = crate::review::hunk_review::carry_over(project, id) {
        tracing::warn!(agent = %id, "earlier decisions not carried over: {e}");
    }
    // In a jj project the proposal becomes a change, off the user's path (the agent is
    // reviewing already).
    crate::jj::sync_locked(project, id);
    // Carried-over decisions may have decided the whole revision.
    Ok(bin.get(&rec.id)?)
}

/// A re-run (its worker died mid-run) starts from an empty overlay: whatever the interrupted
/// attempt wrote is set aside, never run again on top of.
fn set_aside_previous_attempt(project: &Project, id: &str, dir: &std::path::Path) -> Result<()> {
    // A revision re-runs from its proposal (the mark stays until it reaches review: a re-run
    // after a kill keeps it too).
    if project.existing_overlay(id)?.is_some_and(|o| o.kv_get(crate::review::revise::REVISING).ok().flatten().is_some()) {
        return Ok(());
    }
    if let Some(aside) = project.set_aside_overlay(id)? {
        log_line(&dir.join("run.log"), &format!("re-run: the interrupted attempt's overlay was set aside as {}", aside.display()));
    }
    Ok(())
}

/// The task a revision's code is generated from: for an LLM agent with feedback sent and not
/// delivered, the task, its previous proposal and the feedback (delivered here, once).
fn revised_task(project: &Project, rec: &AgentRecord) -> Result<String> {
    if rec.revision <= 1 {
        return Ok(rec.task.clone());
    }
    if rec.provider != crate::lifecycle::Provider::Llm {
        // A script is re-run as it is: it takes no text.
        crate::review::feedback::take(project, &rec.id, "rerun")?;
        return Ok(rec.task.clone());
    }
    let previous = crate::review::unified(&crate::review::revise::reviewed(project, &rec.id)?);
    let Some(feedback) = crate::review::feedback::take(project, &rec.id, "prompt")? else { return Ok(rec.task.clone()) };
    Ok(format!(
        "{}\n\nThis is revision {} of your proposal. What you proposed last time, against the project as it is now:\n```diff\n{}```\n{}\nThe project as your script sees it holds what was accepted and what was not decided; rejected changes were dropped. Write a script that revises the proposal accordingly.",
        rec.task, rec.revision, previous, feedback
    ))
}

/// Appends a line to the run log (best effort: the log never fails a run).
fn log_line(path: &std::path::Path, line: &str) {
    if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(path) {
        let _ = writeln!(f, "{line}");
    }
}
