//! `cairn mcp`: an MCP server on stdio (rmcp) through which any coding agent proposes changes.
//! Every tool is a thin adapter over the core: tasks ([`cairn_core::tasks`]), sessions and
//! their file tools ([`cairn_core::tasks::sessions`], which run the same externals as a
//! `.pym` run). The identity is fixed for the server's life ([`identity`]): `--actor`, else
//! `agent:<the client's name>-<a suffix of its client process>`. Paths are the client's: an
//! absolute one names a file only inside the project ([`cairn_core::paths::Rooted::Host`]).
//!
//! Every tool answers with a JSON object (`structuredContent`, declared by its
//! `outputSchema`) and a text rendering beside it; a tool that fails answers a result with
//! `isError` and a message the model can act on, as do arguments of the wrong shape (the MCP
//! specification has input validation errors as tool results). JSON-RPC errors are left to
//! protocol faults (an unknown tool). Core calls block, so they run on the blocking pool.
//! - [`calls`]: tool calls on the blocking pool and the processes they start;
//! - [`identity`]: who the server acts as;
//! - [`params`]: the tools' arguments;
//! - [`task_tools`]: the task graph and sessions;
//! - [`file_tools`]: the file tools on a session's overlay.

mod calls;
mod file_tools;
mod identity;
mod params;
mod schema;
mod task_tools;

use cairn_core::error::Error;
use cairn_core::project::Project;
use cairn_core::tasks::{implicit, sessions};
use calls::{blocking, end_calls};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::{CallToolResult, ContentBlock, ServerCapabilities, ServerConfig};
use rmcp::service::RequestContext;
use rmcp::{tool_handler, ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{json, Value};
use std::sync::Arc;

/// What the initialize result tells the model about this server.
const INSTRUCTIONS: &str = "Cairn holds your changes as a proposal that a human reviews: nothing you write reaches the \
project's files until a person accepts it, so write freely. Use these tools instead of your own file and shell tools \
for this project. Flow: read_file / list_dir / search_content / search_files to look; edit_file (old_text -> new_text) \
for changes, write_file for new files, move_file and delete_file; run_command to run tests or builds against your \
proposal (confined, no network); session_diff to review your work; then session_finish with a summary, and \
review_wait: it returns when the human has decided, or with their feedback when they ask for a revision (revise in \
the same session, session_finish and review_wait again). File tools \
work without a session (this connection's own is opened on first use and finished when you disconnect); for a \
tracked task, task_create then session_begin and pass its id as `session`. Paths are relative to the project root \
(an absolute path works only inside the project).";

#[derive(Clone)]
pub struct Server {
    project: Arc<Project>,
    identity: Arc<identity::Identity>,
    /// This connection's own session, opened by the first file tool called without one.
    implicit: Arc<tokio::sync::Mutex<Option<Implicit>>>,
    /// This connection's own session after session_finish, for review_wait (a revise makes
    /// it this connection's own again).
    finished: Arc<tokio::sync::Mutex<Option<Implicit>>>,
    /// This connection's mark on its own sessions ([`implicit::Connection`]), made when it
    /// first needs one; `None` when it could not be made (nothing is then adopted).
    connection: Arc<tokio::sync::OnceCell<Option<Arc<implicit::Connection>>>>,
    #[allow(dead_code)] // read through #[tool_handler]
    tool_router: ToolRouter<Self>,
}

#[derive(Clone)]
struct Implicit {
    session: String,
    actor: String,
    client: String,
}

type Reply = Result<CallToolResult, ErrorData>;

/// Runs the server until stdin closes (or carries something that is not MCP).
pub fn run(project: Project, actor: Option<String>) -> cairn_core::error::Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(|e| Error::io("tokio runtime", e))?;
    // Without a `cairn up` keeping the index live, this server keeps it fresh itself: an
    // agent never reads a file the user deleted or misses one the user created.
    let project = Arc::new(project);
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let indexer = (!cairn_core::index::index_is_live(&project)).then(|| {
        let watcher = crate::daemon::start_watcher(&project).map_err(|e| tracing::warn!("mcp: {e}; the index is reconciled every second")).ok();
        if let Err(e) = cairn_core::sync::catch_up(&project) {
            tracing::warn!("mcp: catch-up of the index: {e}");
        }
        let (project, stop) = (Arc::clone(&project), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut watcher = watcher;
            crate::daemon::keep_index(&project, watcher.as_mut(), &stop);
        })
    });
    let implicit = Arc::new(tokio::sync::Mutex::new(None));
    let connection = Arc::new(tokio::sync::OnceCell::new());
    let server = Server {
        project: Arc::clone(&project),
        identity: Arc::new(identity::Identity::new(actor)),
        implicit: Arc::clone(&implicit),
        finished: Arc::default(),
        connection: Arc::clone(&connection),
        tool_router: schema::decorate(Server::task_tools() + Server::file_tools()),
    };
    rt.block_on(async move {
        // The moment stdin ends, what runs for the client is killed: its calls end at once
        // and the server does not wait out their work.
        let (io, writer) = pipe();
        // SIGTERM or SIGHUP (a client that stops its servers so, as `claude -p` does; a closed
        // terminal) ends the server as a disconnect does: its implicit session is finished.
        use tokio::signal::unix::{signal, SignalKind};
        let (mut term, mut hup) = (signal(SignalKind::terminate()).ok(), signal(SignalKind::hangup()).ok());
        let stopped = async move {
            tokio::select! {
                () = next_signal(&mut term) => {}
                () = next_signal(&mut hup) => {}
            }
        };
        match server.serve(io).await {
            Ok(running) => {
                tokio::select! {
                    _ = running.waiting() => {}
                    () = stopped => tracing::info!("mcp: stopped by a signal"),
                }
            }
            Err(e) => tracing::warn!("mcp: the client did not initialize: {e}"),
        }
        // Every answer rmcp wrote reaches the client.
        let _ = tokio::time::timeout(std::time::Duration::from_secs(2), writer).await;
    });
    // The client is gone: what still runs for it is killed (its calls then end and release
    // their sessions), its own session becomes a proposal (or ends, when it changed nothing).
    end_calls();
    if let Some(i) = rt.block_on(implicit.lock()).take() {
        let summary = format!("Changes by {} (its connection's own session, finished when it disconnected)", i.client);
        if let Err(e) = implicit::end_implicit(&project, &i.actor, &i.session, &summary) {
            tracing::error!("mcp: ending the implicit session {}: {e}", i.session);
        }
    }
    if let Some(Some(c)) = connection.get() {
        c.forget();
    }
    tracing::info!("mcp: done with the client's session");
    rt.shutdown_background();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    if let Some(t) = indexer {
        let _ = t.join();
    }
    Ok(())
}

/// The next delivery of `sig` (never, without a handler).
async fn next_signal(sig: &mut Option<tokio::signal::unix::Signal>) {
    match sig.as_mut() {
        Some(s) => {
            s.recv().await;
        }
        None => std::future::pending::<()>().await,
    }
}

/// The pipe between the client and rmcp, a line at a time: a line that is not JSON is answered
/// with a JSON-RPC parse error (-32700, id null) and dropped, the server serving on; at the end
/// of stdin what runs for the client is killed at once and rmcp sees the end. Returns the
/// server's side (what rmcp reads, where rmcp writes) and the task writing stdout, which ends
/// once rmcp is done writing.
fn pipe() -> ((tokio::io::DuplexStream, tokio::io::DuplexStream), tokio::task::JoinHandle<()>) {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let (mut to_rmcp, rmcp_reads) = tokio::io::duplex(1 << 16);
    let (rmcp_writes, from_rmcp) = tokio::io::duplex(1 << 16);
    let (faults, mut fault_rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    tokio::spawn(async move {
        let mut input = tokio::io::BufReader::new(tokio::io::stdin());
        let mut line = Vec::new();
        loop {
            line.clear();
            match input.read_until(b'\n', &mut line).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            if let Err(e) = serde_json::from_slice::<serde::de::IgnoredAny>(&line) {
                let _ = faults.send(json!({ "jsonrpc": "2.0", "id": null, "error": { "code": -32700, "message": format!("Parse error: {e}") } }).to_string());
                continue;
            }
            if !line.ends_with(b"\n") {
                line.push(b'\n');
            }
            if to_rmcp.write_all(&line).await.is_err() {
                break;
            }
        }
        tracing::info!("mcp: the client closed the connection");
        // rmcp sees the end at once; what runs for the client is killed meanwhile.
        drop(to_rmcp);
        let _ = tokio::task::spawn_blocking(end_calls).await;
    });
    let writer = tokio::spawn(async move {
        let mut out = tokio::io::stdout();
        let mut replies = tokio::io::BufReader::new(from_rmcp).lines();
        loop {
            let line = tokio::select! {
                r = replies.next_line() => match r { Ok(Some(l)) => l, _ => break },
                Some(f) = fault_rx.recv() => f,
            };
            if out.write_all(format!("{line}\n").as_bytes()).await.and(out.flush().await).is_err() {
                return;
            }
        }
        // rmcp ended after the reader did, so every parse error is queued by now.
        while let Ok(f) = fault_rx.try_recv() {
            if out.write_all(format!("{f}\n").as_bytes()).await.and(out.flush().await).is_err() {
                return;
            }
        }
    });
    ((rmcp_reads, rmcp_writes), writer)
}

/// A tool's answer: `value` as structured content (an object; anything else is wrapped as
/// `{"result": ...}`) and `text` beside it (pretty JSON when none is given).
fn done(value: Value, text: Option<String>) -> CallToolResult {
    let value = if value.is_object() { value } else { json!({ "result": value }) };
    let text = text.unwrap_or_else(|| serde_json::to_string_pretty(&value).unwrap_or_default());
    let mut r = CallToolResult::success(vec![ContentBlock::text(text)]);
    r.structured_content = Some(value);
    r
}

/// A tool that failed: `isError`, the message for the model, and `{error, message}`.
fn failed(code: &str, message: String) -> CallToolResult {
    let mut r = CallToolResult::error(vec![ContentBlock::text(message.clone())]);
    r.structured_content = Some(json!({ "error": code, "message": message }));
    r
}

/// A core error as the model should read it: the message and, when there is one, what to do.
fn refused(e: &Error) -> CallToolResult {
    let message = match e.hint() {
        Some(h) => format!("{e} ({h})"),
        None => e.to_string(),
    };
    failed(e.code(), message)
}

/// The answer to a cancelled call (the client no longer waits for it).
fn cancelled() -> CallToolResult {
    failed("cancelled", "the call was cancelled; its work was stopped".into())
}

fn internal(e: impl std::fmt::Display) -> ErrorData {
    ErrorData::internal_error(e.to_string(), None)
}

impl Server {
    /// Who calls: this server's identity, bound on the first call ([`identity`]).
    async fn actor(&self, ctx: &RequestContext<RoleServer>) -> String {
        self.identity.get(ctx).await.actor.clone()
    }

    /// This connection's mark, made on first use.
    async fn connection(&self) -> Option<Arc<implicit::Connection>> {
        let project = Arc::clone(&self.project);
        let made = self.connection.get_or_init(|| async move {
            let opened = tokio::task::spawn_blocking(move || implicit::Connection::open(&project)).await.unwrap_or_else(|e| Err(Error::Internal(e.to_string())));
            opened.map(Arc::new).map_err(|e| tracing::warn!("mcp: this connection cannot mark its sessions ({e}); a server started after a kill opens a new one")).ok()
        });
        made.await.clone()
    }

    /// This connection's own session when it has none yet: the open one a killed server of the
    /// same actor left (the client started this server again), else, when `begin` gives a
    /// title, a new one. Called with the `implicit` slot held.
    async fn own_session(&self, ctx: &RequestContext<RoleServer>, slot: &mut Option<Implicit>, begin: Option<String>) -> Result<Option<String>, CallToolResult> {
        let me = self.identity.get(ctx).await;
        let (project, actor, client) = (Arc::clone(&self.project), me.actor.clone(), me.client.name.clone());
        let connection = self.connection().await;
        let a = actor.clone();
        let made = tokio::task::spawn_blocking(move || -> cairn_core::error::Result<Option<sessions::Session>> {
            if let Some(s) = connection.as_deref().map(|c| implicit::adopt_implicit(&project, &a, c)).transpose()?.flatten() {
                return Ok(Some(s));
            }
            begin.map(|title| implicit::begin_implicit(&project, &a, &title, connection.as_deref())).transpose()
        });
        let made = made.await.map_err(|e| failed("internal", e.to_string()))?.map_err(|e| refused(&e))?;
        Ok(made.map(|s| {
            *slot = Some(Implicit { session: s.row.id.clone(), actor, client });
            s.row.id
        }))
    }

    /// Runs `f` with the project and actor on the blocking pool; its value is the answer.
    async fn core<T: serde::Serialize + Send + 'static>(&self, ctx: &RequestContext<RoleServer>, f: impl FnOnce(&Project, &str) -> cairn_core::error::Result<T> + Send + 'static) -> Reply {
        let project = Arc::clone(&self.project);
        let actor = self.actor(ctx).await;
        let Some(out) = blocking(ctx, move || f(&project, &actor)).await? else { return Ok(cancelled()) };
        Ok(match out {
            Ok(v) => done(serde_json::to_value(v).map_err(internal)?, None),
            Err(e) => refused(&e),
        })
    }

    /// The session a file tool acts in: `given`, else this connection's own (opened now,
    /// for a task titled from the client's name and `first_path`).
    async fn session(&self, ctx: &RequestContext<RoleServer>, given: Option<String>, first_path: &str) -> Result<String, CallToolResult> {
        if let Some(s) = given.filter(|s| !s.is_empty()) {
            return Ok(s);
        }
        let mut slot = self.implicit.lock().await;
        if let Some(i) = slot.as_ref() {
            return Ok(i.session.clone());
        }
        let client = self.identity.get(ctx).await.client.name.clone();
        let title: String = format!("{client}: changes from {first_path}").chars().take(cairn_core::tasks::MAX_TITLE_CHARS).collect();
        let made = self.own_session(ctx, &mut slot, Some(title)).await?;
        made.ok_or_else(|| failed("internal", "no session was opened".into()))
    }

    /// The session a session tool (`session_get`, `_heartbeat`, `_diff`, `_finish`) names:
    /// `given`, else this connection's own if a file tool opened one (or a killed server of
    /// this actor left one open); never a new one.
    async fn existing_session(&self, ctx: &RequestContext<RoleServer>, given: Option<String>) -> Result<String, CallToolResult> {
        if let Some(s) = given.filter(|s| !s.is_empty()) {
            return Ok(s);
        }
        let mut slot = self.implicit.lock().await;
        if let Some(i) = slot.as_ref() {
            return Ok(i.session.clone());
        }
        if let Some(i) = self.finished.lock().await.as_ref() {
            return Ok(i.session.clone());
        }
        match self.own_session(ctx, &mut slot, None).await? {
            Some(s) => Ok(s),
            None => Err(failed("usage", "no session: pass `session` (from session_begin), or call a file tool first to open this connection's own".into())),
        }
    }

    /// A path argument the externals do not read (a filter, a working directory), as they read
    /// an MCP client's: relative to the project root, or absolute inside it; any other is
    /// refused, naming the root.
    fn host_path(&self, raw: &str) -> Result<String, CallToolResult> {
        cairn_core::paths::normalize_as(raw, &self.project.root, cairn_core::paths::Rooted::Host).map_err(|e| refused(&e))
    }

    /// Runs external `name` in the session's overlay; `render` makes the answer of its value.
    async fn external(&self, ctx: &RequestContext<RoleServer>, session: Option<String>, first_path: &str, name: &'static str, args: Vec<Value>, kwargs: serde_json::Map<String, Value>) -> Result<Result<Value, CallToolResult>, ErrorData> {
        let session = match self.session(ctx, session, first_path).await {
            Ok(s) => s,
            Err(r) => return Ok(Err(r)),
        };
        let project = Arc::clone(&self.project);
        let actor = self.actor(ctx).await;
        let Some(out) = blocking(ctx, move || sessions::tool(&project, &actor, &session, name, &args, &kwargs)).await? else { return Ok(Err(cancelled())) };
        Ok(match out {
            Ok(Ok(v)) => Ok(v),
            Ok(Err((exc, message))) => Err(failed(&exc, format!("{name}: {exc}: {message}"))),
            Err(e) => Err(refused(&e)),
        })
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Server {
    /// As the router calls tools, except that arguments of the wrong shape are refused naming
    /// the argument at fault: a failed result (`isError`), as rmcp answers them, or, should a
    /// JSON-RPC invalid-params error come back, that error with the same explanation.
    async fn call_tool(&self, request: rmcp::model::CallToolRequestParams, context: RequestContext<RoleServer>) -> Result<rmcp::model::CallToolResponse, ErrorData> {
        let tool = self.tool_router.get(&request.name).cloned();
        let args = request.arguments.clone();
        let tcc = rmcp::handler::server::tool::ToolCallContext::new(self, request, context);
        let why = || tool.as_ref().and_then(|t| schema::explain(&t.input_schema, args.as_ref()));
        match self.tool_router.call(tcc).await {
            Err(e) if e.code == rmcp::model::ErrorCode::INVALID_PARAMS => match why() {
                Some(why) => Err(ErrorData::invalid_params(format!("{why} ({})", e.message), None)),
                None => Err(e),
            },
            // rmcp answers a deserialization failure as a failed result, whatever the version.
            Ok(rmcp::model::CallToolResponse::Complete(r)) if r.is_error == Some(true) && r.structured_content.is_none() => Ok(rmcp::model::CallToolResponse::Complete(match why() {
                Some(why) => failed("usage", format!("{why}; see the tool's input schema")),
                None => r,
            })),
            other => other,
        }
    }

    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(rmcp::model::Implementation::new("cairn", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }
}
