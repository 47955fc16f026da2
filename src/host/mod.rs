//! The Neovim RPC host (`cairn nvim`), started by the Lua plugin with
//! `jobstart({..}, {rpc = true})`. Only this module knows msgpack-RPC.
//!
//! - Requests from the plugin (`rpcrequest(chan, method, {args})`) parse into a
//!   [`Command`](crate::command::Command) where one exists and run through
//!   [`command::execute`] on a blocking thread. Domain failures come back as
//!   `{ok = false, error = {code, message, hint}}`; only an unknown method or malformed
//!   arguments is an RPC error. The host keeps serving after either.
//! - The host is a worker too: it runs [`crate::daemon::services`] (agents, watcher, signals).
//! - A poller follows `bin.db` events (from this process, the CLI, `cairn up`, signal files)
//!   and pushes state changes (`vim.notify`) and the selected agent's ghost text, one
//!   `nvim_exec_lua` batch per update.
//!
//! Stdout is the RPC pipe: nothing here prints; logs go to `$CAIRN_HOME/logs/`.

use cairn_core::command::{self, Command, Output};
use cairn_core::error::{Error, Result};
use cairn_core::lifecycle::{Priority, Provider};
use cairn_core::project::Project;
use cairn_core::review::Hunk;
use async_trait::async_trait;
use nvim_rs::{compat::tokio::Compat, Neovim};
use rmpv::Value;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

mod health;
mod many;
mod targets;
mod views;
mod ready;
mod wire;

use ready::Ready;
use wire::{from_value, rpc_error, to_value, Args};

type Writer = Compat<tokio::fs::File>;

/// What the host remembers between requests.
#[derive(Default)]
struct HostState {
    /// The agent whose ghost text is shown; `None` = the latest reviewing one.
    selected: Option<String>,
}

/// The RPC handler: cheap to clone, state behind `Arc`.
#[derive(Clone)]
struct Handler {
    project: Arc<Project>,
    state: Arc<Mutex<HostState>>,
    /// Wakes the poller to push ghost text now rather than at its next tick.
    refresh: Arc<tokio::sync::Notify>,
    ready: Arc<Ready>,
    /// The last error the services loop survived (shown by :checkhealth).
    last_error: Arc<crate::daemon::LastError>,
}

/// Runs the host on stdin/stdout until Neovim closes the channel or sends SIGTERM.
pub fn run(project: Project) -> Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Error::io("tokio runtime", e))?;
    let result = rt.block_on(serve(project));
    // Do not wait for blocking threads: one of them is parked reading stdin.
    rt.shutdown_background();
    result
}

async fn serve(project: Project) -> Result<()> {
    // First of all: from here on SIGTERM means "exit cleanly".
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).map_err(|e| Error::io("SIGTERM handler", e))?;
    let project = Arc::new(project);
    let ready = Arc::new(Ready::default());
    if project.ensure_initialized().is_ok() {
        ready.set(String::new());
    }
    let last_error: Arc<crate::daemon::LastError> = Arc::default();
    let handler = Handler { project: Arc::clone(&project), state: Arc::default(), refresh: Arc::default(), ready: Arc::clone(&ready), last_error: Arc::clone(&last_error) };
    let (nvim, io) = nvim_rs::create::tokio::new_parent(handler.clone()).await.map_err(|e| Error::Rpc(e.to_string()))?;

    let stop = Arc::new(AtomicBool::new(false));
    let services = {
        let (project, stop) = (Arc::clone(&project), Arc::clone(&stop));
        std::thread::spawn(move || {
            if !ready.is_ready() {
                let started = std::time::Instant::now();
                match cairn_core::sync::catch_up(&project) {
                    // Only a first index the user may have waited for is worth a message.
                    Ok(r) if started.elapsed() >= Duration::from_secs(1) => ready.set(format!("indexed {} files in {:.1} s", r.files, started.elapsed().as_secs_f64())),
                    Ok(_) => ready.set(String::new()),
                    Err(e) => {
                        tracing::error!("first index failed: {e}");
                        ready.set(format!("the first index failed: {e}"));
                        return;
                    }
                }
            }
            if let Err(e) = crate::daemon::services(&project, &stop, &|line| tracing::warn!("{line}"), &last_error) {
                tracing::error!("services stopped: {e}");
            }
        })
    };
    let poller = tokio::spawn(poll_events(handler.clone(), nvim.clone()));
    tokio::select! {
        r = io => match r {
            Ok(Err(e)) if !e.is_channel_closed() => tracing::warn!("rpc loop ended: {e}"),
            _ => tracing::info!("neovim closed the channel"),
        },
        _ = term.recv() => tracing::info!("SIGTERM"),
    }
    poller.abort();
    stop.store(true, Ordering::Relaxed);
    // Neovim sends SIGKILL about 2 s after SIGTERM: give the services a second to stop, then
    // leave. An agent still running is re-queued by the next worker's recovery.
    let _ = tokio::time::timeout(Duration::from_secs(1), tokio::task::spawn_blocking(move || services.join())).await;
    Ok(())
}

/// Follows `bin.db` events: notifications for state changes, ghost text when a proposal
/// appears or goes away.
async fn poll_events(h: Handler, nvim: Neovim<Writer>) {
    // New events (a run moving on, an MCP session finishing) ring at once; the poll below
    // stays for files changed outside the events.
    let rung = Arc::new(tokio::sync::Notify::new());
    {
        let (project, rung) = (Arc::clone(&h.project), Arc::clone(&rung));
        std::thread::spawn(move || {
            let bell = cairn_core::bell::Bell::new(&project);
            loop {
                bell.wait(Duration::from_secs(3600));
                rung.notify_one();
            }
        });
    }
    let mut last = h.project.bin().and_then(|b| b.last_event_seq()).unwrap_or(0);
    let mut shown: Option<serde_json::Value> = None;
    let mut tick = 0u64;
    loop {
        let events = {
            let project = Arc::clone(&h.project);
            tokio::task::spawn_blocking(move || project.bin().and_then(|b| b.events_since(last))).await
        };
        if let Some(notice) = h.ready.take_notice() {
            let _ = nvim.exec_lua("require('cairn.notify').notify(...)", vec![Value::from(notice)]).await;
        }
        if !h.ready.is_ready() {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        }
        // Files change outside the events too (saves, other tools): look again every second.
        tick += 1;
        let mut ghost_dirty = shown.is_none() || tick % 5 == 0;
        if let Ok(Ok(events)) = events {
            for ev in events {
                last = ev.seq;
                // Log lines and reads change no proposal: no ghost recomputation for them; a
                // live agent's writes do, without a notification.
                ghost_dirty |= ev.kind.changes_proposal();
                // An accept, hunk accept or undo, from anywhere: open buffers follow the files
                // it changed, and the other proposals it rebased say what that did to them.
                if let Some(landing) = {
                    let (project, ev) = (Arc::clone(&h.project), ev.clone());
                    tokio::task::spawn_blocking(move || many::landing(&project, &ev)).await.ok().flatten()
                } {
                    let _ = nvim.exec_lua("require('cairn.buffers').landed(...)", vec![to_value(&landing.paths)]).await;
                    for note in landing.rebased {
                        let _ = nvim.exec_lua("require('cairn').on_event(...)", vec![to_value(&note)]).await;
                    }
                }
                if ev.kind.is_activity() {
                    continue;
                }
                let mark = waiting_mark(&h.project, &ev).await;
                let payload = serde_json::json!({ "id": ev.agent_id, "state": ev.state, "message": ev.message, "type": ev.kind.type_name(), "mark": mark });
                let _ = nvim.exec_lua("require('cairn').on_event(...)", vec![to_value(&payload)]).await;
            }
        }
        if ghost_dirty {
            let payload = {
                let h = h.clone();
                tokio::task::spawn_blocking(move || views::ghost_payload(&h.project, h.shown_agent()?)).await
            };
            if let Ok(Ok(payload)) = payload {
                if shown.as_ref() != Some(&payload) {
                    let _ = nvim.exec_lua("require('cairn.ghost').set(...)", vec![to_value(&payload)]).await;
                    shown = Some(payload);
                }
            }
        }
        let poll = Duration::from_millis(h.project.config.orchestrator.poll_interval_ms.min(200));
        tokio::select! {
            _ = tokio::time::sleep(poll) => {}
            _ = rung.notified() => {}
            _ = h.refresh.notified() => { shown = None; }
        }
    }
}

/// The mark of the agent of `ev` when it starts waiting for the user (reviewing): whatever
/// tells them names it by its mark.
async fn waiting_mark(project: &Arc<Project>, ev: &cairn_core::events::Event) -> Option<String> {
    if ev.state != cairn_core::lifecycle::State::Reviewing {
        return None;
    }
    let (project, id) = (Arc::clone(project), ev.agent_id.clone());
    tokio::task::spawn_blocking(move || project.bin().and_then(|b| b.mark_of(&id)).ok().flatten()).await.ok().flatten()
}

impl Handler {
    /// Runs one request (on a blocking thread). `Err` only for protocol errors.
    fn dispatch(&self, method: &str, args: &Args) -> std::result::Result<Result<serde_json::Value>, Value> {
        let project = &self.project;
        let exec = |cmd: Command| command::execute(project, cmd).and_then(|o| Ok(serde_json::to_value(o)?));
        let hunk = || -> std::result::Result<Hunk, Value> {
            let v = args.0.get("hunk").cloned().ok_or_else(|| rpc_error("bad_args", "missing argument 'hunk'".into()))?;
            serde_json::from_value(v).map_err(|e| rpc_error("bad_args", format!("bad hunk: {e}")))
        };
        if !matches!(method, "ping" | "health") {
            self.ready.wait();
        }
        Ok(match method {
            "ping" => Ok(serde_json::json!({ "version": env!("CARGO_PKG_VERSION"), "root": project.root, "home": project.home.dir, "ui": project.config.ui, "indexing": !self.ready.is_ready(), "config_warnings": health::config_warnings(project) })),
            "queue" => {
                let task = args.required("task")?;
                let high = args.0.get("high").and_then(|v| v.as_bool()).unwrap_or(false);
                let provider = args.str("provider").map(|p| cairn_core::providers::parse(&p)).transpose();
                let priority = if high { Priority::High } else { Priority::Normal };
                provider.and_then(|p| queue_checked(project, task, p, priority)).and_then(|o| Ok(serde_json::to_value(o)?))
            }
            "accept" => self.target(args.str("id")).and_then(|id| {
                let force = args.0.get("force").and_then(|v| v.as_bool()).unwrap_or(false);
                exec(Command::Accept { id, force })
            }),
            "reject" => self.reject_words(args).and_then(|(id, reason)| exec(Command::Reject { id, reason })),
            "comment" => {
                let (path, text) = (args.required("path")?, args.required("text")?);
                let path = std::path::Path::new(&path).strip_prefix(&project.root).map(|p| p.display().to_string()).unwrap_or(path.clone());
                let line = |k: &str| args.0.get(k).and_then(|v| v.as_u64()).map(|n| n as u32);
                let (first, last) = (line("first").unwrap_or(1), line("last").or(line("first")).unwrap_or(1));
                self.feedback_target(args.str("id")).and_then(|id| exec(Command::Comment { id, path, lines: (first, last), text }))
            }
            "revise" => self.feedback_target(args.str("id")).and_then(|id| exec(Command::Revise { id })),
            "revisions" => self.target(args.str("id")).and_then(|id| exec(Command::Log { id })),
            // Without an id: the latest decision that can be undone (an accept, or the reject
            // of a proposal under review).
            "undo" => match args.str("id").filter(|s| !s.is_empty()) {
                Some(id) => command::resolve(project, &id),
                None => self.last_decision(),
            }
            .and_then(|id| exec(Command::Undo { id })),
            "accept_hunk" | "reject_hunk" => {
                let (path, hunk) = (args.required("path")?, hunk()?);
                let force = args.0.get("force").and_then(|v| v.as_bool()).unwrap_or(false);
                self.target(args.str("id")).and_then(|id| {
                    let path = std::path::Path::new(&path).strip_prefix(&project.root).map(|p| p.display().to_string()).unwrap_or(path.clone());
                    if method == "accept_hunk" { exec(Command::AcceptHunk { id, path, hunk, force }) } else { exec(Command::RejectHunk { id, path, hunk, reason: args.str("reason") }) }
                })
            }
            "status" => self.target(args.str("id")).and_then(|id| exec(Command::Status { id })),
            "diff" => self.target(args.str("id")).and_then(|id| exec(Command::Diff { id, stat: false, since_review: args.0.get("since_review").and_then(|v| v.as_bool()).unwrap_or(false) })),
            "list" => exec(Command::ListAgents { all: true }),
            "select" => command::resolve(project, &args.required("id")?).map(|id| {
                if let Ok(mut s) = self.state.lock() {
                    s.selected = Some(id.clone());
                }
                serde_json::json!({ "id": id })
            }),
            "preview" => self.target(args.str("id")).and_then(|id| self.preview(&id, args)),
            "ghost" => self.shown_agent().and_then(|id| views::ghost_payload(project, id)),
            "tasks" => cairn_core::tasks::list(project, &Default::default()).map(|t| serde_json::json!({ "tasks": t })),
            "log" => self.target(args.str("id")).and_then(|id| views::agent_log(project, &id)),
            "health" => Ok(self.health()),
            // `:CairnWrap`: the command line that runs a wrap session on this project (the
            // plugin starts it in a tmux split or a terminal buffer).
            "wrap_argv" => Ok(serde_json::json!({ "argv": [self.project.exe.display().to_string(), "--project-root", self.project.root.display().to_string(), "--cairn-home", self.project.home.dir.display().to_string(), "wrap"] })),
            other => match self.dispatch_many(other, args) {
                Some(reply) => reply?,
                None => return Err(rpc_error("unknown_method", format!("unknown method '{other}'"))),
            },
        })
    }

    fn preview(&self, id: &str, args: &Args) -> Result<serde_json::Value> {
        let Output::Preview(m) = command::execute(&self.project, Command::Preview { id: id.to_string() })? else {
            return Err(Error::Internal("preview produced no workspace".into()));
        };
        // The current buffer's file, relative to the project, opened at the same line.
        let file = args.str("file").and_then(|f| {
            std::path::Path::new(&f).strip_prefix(&self.project.root).ok().map(|p| p.display().to_string())
        });
        // The line the diff maps the cursor's line to in the agent's version.
        let line = args.0.get("line").and_then(|l| l.as_u64()).map(|l| l as usize);
        let line = match (&file, line) {
            (Some(f), Some(l)) => Some(cairn_core::review::hunk_review::file_hunks(&self.project, id)?.iter().find(|h| &h.path == f).map_or(l, |h| cairn_core::review::hunks::map_line(&h.hunks, l))),
            _ => line,
        };
        let amend = args.0.get("amend").and_then(|v| v.as_bool()).unwrap_or(false);
        let ports: Vec<u16> = args.0.get("ports").and_then(|v| v.as_array()).map(|a| a.iter().filter_map(|p| p.as_u64()).filter_map(|p| u16::try_from(p).ok()).filter(|p| *p > 0).collect()).unwrap_or_default();
        let a = crate::preview::Args { file: file.clone(), line, amend, ports, editor: args.str("editor"), ..Default::default() };
        // A jj workspace opens in the editor as a directory; else the session's command line
        // (in a tmux pane, or a terminal tab the plugin opens).
        let (argv, dir) = if m.jj { (crate::preview::inner_argv(&self.project, &a), m.path.clone()) } else { (crate::preview::session_argv(&self.project, id, &a), self.project.root.clone()) };
        let opened = if crate::tmux::available(&self.project) { Some(crate::tmux::open_preview(&self.project, id, &argv, &dir)?) } else { None };
        let (pane, session) = opened.map_or((None, None), |o| (Some(o.pane), o.session));
        Ok(serde_json::json!({
            "id": id, "path": m.path, "pane": pane, "session": session, "jj": m.jj, "argv": argv,
            "file": file.map(|f| m.path.join(f)), "line": line,
        }))
    }

    fn health(&self) -> serde_json::Value {
        let last_error = self.last_error.lock().ok().and_then(|e| e.clone());
        health::report(&self.project, last_error, !self.ready.is_ready())
    }
}

/// `:CairnQueue` with text that names no script uses the `llm` provider, which must be
/// configured: say so instead of queueing an agent that can only fail.
fn queue_checked(project: &Project, task: String, provider: Option<Provider>, priority: Priority) -> Result<Output> {
    let provider = provider.unwrap_or_else(|| cairn_core::providers::default_for(project, &task));
    if provider == Provider::File && !cairn_core::providers::names_script(project, &task) {
        return Err(Error::Usage(format!(
            "'{task}' is not a .pym script and no LLM is configured: set [llm] endpoint or command in config.toml (see :help cairn-config-llm.endpoint)"
        )));
    }
    command::execute(project, Command::Queue { reference: task, provider: Some(provider), priority, key: None })
}

fn error_value(e: &Error) -> serde_json::Value {
    serde_json::json!({ "ok": false, "error": { "code": e.code(), "message": e.to_string(), "hint": e.hint() } })
}

impl Handler {
    /// Runs one request on a blocking thread; the reply `{ok, result}` or `{ok = false, error}`.
    async fn respond(&self, name: String, args: Args) -> std::result::Result<Value, Value> {
        let this = self.clone();
        let method = name.clone();
        let outcome = tokio::task::spawn_blocking(move || this.dispatch(&method, &args))
            .await
            .map_err(|e| rpc_error("internal", format!("request failed: {e}")))??;
        if matches!(name.as_str(), "accept" | "reject" | "accept_hunk" | "reject_hunk" | "undo" | "select" | "resolve") {
            self.refresh.notify_one();
        }
        let reply = match outcome {
            Ok(result) => serde_json::json!({ "ok": true, "result": result }),
            Err(e) => {
                tracing::info!("{name}: {e}");
                error_value(&e)
            }
        };
        Ok(to_value(&reply))
    }
}

#[async_trait]
impl nvim_rs::Handler for Handler {
    type Writer = Writer;

    async fn handle_request(&self, name: String, args: Vec<Value>, _nvim: Neovim<Writer>) -> std::result::Result<Value, Value> {
        let args = Args::parse(&args)?;
        self.respond(name, args).await
    }

    /// `refresh` recomputes the ghost text now. `call` is the asynchronous request of the
    /// plugin: `{seq, method, args}`, answered later with `require('cairn.rpc')._reply(seq,
    /// reply)`, so Neovim never waits for a slow command.
    async fn handle_notify(&self, name: String, args: Vec<Value>, nvim: Neovim<Writer>) {
        match name.as_str() {
            "refresh" => self.refresh.notify_one(),
            "call" => {
                // Notifications are handled one at a time, and calling back into Neovim from
                // here would wait on this very loop: the work goes to its own task.
                let this = self.clone();
                tokio::spawn(async move {
                    let call = from_value(args.first().unwrap_or(&Value::Nil));
                    let seq = call.get("seq").and_then(|s| s.as_i64()).unwrap_or(0);
                    let method = call.get("method").and_then(|m| m.as_str()).unwrap_or("").to_string();
                    let args = Args(call.get("args").and_then(|a| a.as_object()).cloned().unwrap_or_default());
                    let reply = match this.respond(method, args).await {
                        Ok(v) => v,
                        Err(e) => to_value(&serde_json::json!({ "ok": false, "error": { "code": "rpc", "message": from_value(&e).to_string() } })),
                    };
                    if let Err(e) = nvim.exec_lua("require('cairn.rpc')._reply(...)", vec![Value::from(seq), reply]).await {
                        tracing::warn!("reply {seq}: {e}");
                    }
                });
            }
            _ => {}
        }
    }
}
