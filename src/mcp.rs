//! `cairn mcp`: an MCP server on stdio (rmcp) through which any coding agent proposes changes.
//! Every tool is a thin adapter over the core: tasks ([`cairn_core::tasks`]), sessions and
//! their file tools ([`cairn_core::tasks::sessions`], which run the same externals as a
//! `.pym` run). The identity is fixed: `--actor`, else `agent:<clientInfo.name>`. Failures
//! are MCP errors with a clear message (and, for refusals, structured `data`); the server
//! stays up. Core calls block, so they run on the blocking pool.

use cairn_core::error::Error;
use cairn_core::project::Project;
use cairn_core::tasks::{self, sessions, Check, Filter};
use rmcp::handler::server::{router::tool::ToolRouter, wrapper::Parameters};
use rmcp::model::{ServerCapabilities, ServerConfig};
use rmcp::service::RequestContext;
use rmcp::{tool, tool_handler, tool_router, ErrorData, RoleServer, ServerHandler, ServiceExt};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::sync::Arc;

#[derive(Clone)]
pub struct Server {
    project: Arc<Project>,
    actor: Option<String>,
    #[allow(dead_code)] // read through #[tool_handler]
    tool_router: ToolRouter<Self>,
}

type Reply = Result<String, ErrorData>;

/// Runs the server until stdin closes (or carries something that is not MCP).
pub fn run(project: Project, actor: Option<String>) -> cairn_core::error::Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(|e| Error::io("tokio runtime", e))?;
    // Without a `cairn up` keeping the index live, this server keeps it fresh itself: an
    // agent never reads a file the user deleted or misses one the user created.
    let project = Arc::new(project);
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let indexer = (!cairn_core::index::index_is_live(&project)).then(|| {
        let watcher = crate::daemon::start_watcher(&project).map_err(|e| tracing::warn!("mcp: {e}; the index is reconciled every second")).ok();
        if let Err(e) = cairn_core::sync::init(&project) {
            tracing::warn!("mcp: catch-up of the index: {e}");
        }
        let (project, stop) = (Arc::clone(&project), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut watcher = watcher;
            crate::daemon::keep_index(&project, watcher.as_mut(), &stop);
        })
    });
    let served = rt.block_on(async move {
        let server = Server { project, actor, tool_router: Server::tool_router() };
        match server.serve(rmcp::transport::stdio()).await {
            Ok(running) => {
                let _ = running.waiting().await;
            }
            Err(e) => tracing::warn!("mcp: the client did not initialize: {e}"),
        }
    });
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    if let Some(t) = indexer {
        let _ = t.join();
    }
    Ok(served)
}

fn to_error(e: Error) -> ErrorData {
    let data = json!({ "error": e.code(), "message": e.to_string() });
    match e {
        Error::Internal(_) | Error::Db(_) | Error::Io { .. } | Error::Database { .. } => ErrorData::internal_error(e.to_string(), Some(data)),
        _ => ErrorData::invalid_params(e.to_string(), Some(data)),
    }
}

fn text(v: &impl serde::Serialize) -> Reply {
    serde_json::to_string_pretty(v).map_err(|e| ErrorData::internal_error(e.to_string(), None))
}

impl Server {
    fn actor(&self, ctx: &RequestContext<RoleServer>) -> String {
        self.actor.clone().unwrap_or_else(|| {
            let name = ctx.peer.peer_info().map(|i| i.client_info.name.clone()).unwrap_or_default();
            format!("agent:{}", if name.is_empty() { "unknown" } else { &name })
        })
    }

    /// Runs `f` with the project and actor on the blocking pool.
    async fn core<T: serde::Serialize + Send + 'static>(&self, ctx: &RequestContext<RoleServer>, f: impl FnOnce(&Project, &str) -> cairn_core::error::Result<T> + Send + 'static) -> Reply {
        let project = Arc::clone(&self.project);
        let actor = self.actor(ctx);
        let out = tokio::task::spawn_blocking(move || f(&project, &actor)).await.map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        text(&out.map_err(to_error)?)
    }

    /// A file tool: the external `name` in the session's overlay.
    async fn file(&self, ctx: &RequestContext<RoleServer>, session: String, name: &'static str, args: Vec<Value>, kwargs: Map<String, Value>) -> Reply {
        let project = Arc::clone(&self.project);
        let actor = self.actor(ctx);
        let out = tokio::task::spawn_blocking(move || sessions::tool(&project, &actor, &session, name, &args, &kwargs))
            .await
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?
            .map_err(to_error)?;
        match out {
            Ok(Value::String(s)) => Ok(s),
            Ok(v) => text(&v),
            Err((exc, message)) => Err(ErrorData::invalid_params(format!("{exc}: {message}"), Some(json!({ "error": exc, "message": message })))),
        }
    }
}

#[derive(Deserialize, JsonSchema)]
pub struct Id {
    /// Task id (any unique prefix).
    id: String,
}
#[derive(Deserialize, JsonSchema)]
pub struct ListArgs {
    /// Only tasks in this status.
    status: Option<String>,
    /// Only tasks assigned to this actor.
    assignee: Option<String>,
    /// Only tasks whose deps are all closed (true) or not (false).
    ready: Option<bool>,
}
#[derive(Deserialize, JsonSchema)]
pub struct CheckArg {
    /// What the check verifies.
    desc: String,
    /// Shell command run in the agent's workspace; exit 0 passes. Omit for a manual check.
    cmd: Option<String>,
    /// "manual" for a check a person attests.
    #[serde(rename = "type")]
    kind: Option<String>,
    /// Working directory relative to the workspace root.
    cwd: Option<String>,
    /// Seconds before the command is killed.
    timeout: Option<u64>,
}
#[derive(Deserialize, JsonSchema)]
pub struct CreateArgs {
    title: String,
    /// Markdown intent.
    body: Option<String>,
    /// Ids of tasks that must be closed before this one starts (they must exist).
    deps: Option<Vec<String>>,
    /// Checks that gate closing the task and accepting its proposal.
    checks: Option<Vec<CheckArg>>,
}
#[derive(Deserialize, JsonSchema)]
pub struct TransitionArgs {
    id: String,
    /// Target status (backlog, in_progress, review, done, cancelled by default).
    to: String,
}
#[derive(Deserialize, JsonSchema)]
pub struct ChecksArgs {
    id: String,
    /// Check indices to run; all command checks when omitted.
    only: Option<Vec<usize>>,
}
#[derive(Deserialize, JsonSchema)]
pub struct NoteArgs {
    id: String,
    text: String,
}
#[derive(Deserialize, JsonSchema)]
pub struct BeginArgs {
    /// The task to work on (it is claimed and moved to in_progress).
    task: String,
    /// Any string; retrying with the same key returns the same session.
    idempotency_key: String,
}
#[derive(Deserialize, JsonSchema)]
pub struct SessionArg {
    session: String,
}
#[derive(Deserialize, JsonSchema)]
pub struct FinishArgs {
    session: String,
    /// What the proposal does, for the reviewer.
    summary: String,
}
#[derive(Deserialize, JsonSchema)]
pub struct CancelArgs {
    session: String,
    reason: Option<String>,
}
#[derive(Deserialize, JsonSchema)]
pub struct ReadArgs {
    session: String,
    /// Project-relative path.
    path: String,
    /// Prefix each line with its tag `N:hash|` for edit_lines.
    tagged: Option<bool>,
}
#[derive(Deserialize, JsonSchema)]
pub struct WriteArgs {
    session: String,
    path: String,
    content: String,
}
#[derive(Deserialize, JsonSchema)]
pub struct PathArgs {
    session: String,
    path: Option<String>,
}
#[derive(Deserialize, JsonSchema)]
pub struct PatternArgs {
    session: String,
    /// Glob (search_files: `**` crosses directories) or regex (search_content).
    pattern: String,
    /// Directory to search under (search_content).
    path: Option<String>,
}
#[derive(Deserialize, JsonSchema)]
pub struct ScriptArgs {
    session: String,
    /// Python for the sandbox (see `:help cairn-scripts`): read_file, write_file, ... act on
    /// the session's overlay; the value of the last expression is returned.
    code: String,
}
#[derive(Deserialize, JsonSchema)]
pub struct EditOp {
    /// replace, insert_after or delete.
    op: String,
    /// The line's tag from a tagged read (`0:` with insert_after: before the first line).
    tag: String,
    /// Last line of a range (replace, delete).
    end: Option<String>,
    /// New lines (replace, insert_after), without line breaks.
    lines: Option<Vec<String>>,
}
#[derive(Deserialize, JsonSchema)]
pub struct EditArgs {
    session: String,
    path: String,
    /// Applied together, or not at all when a tag is stale or missing.
    ops: Vec<EditOp>,
}

#[derive(Deserialize, JsonSchema)]
pub struct CommandArgs {
    session: String,
    /// Shell command (`sh -c`), e.g. "python3 -m pytest -q" or "cargo test".
    command: String,
    /// Working directory, relative to the project root.
    cwd: Option<String>,
    /// Seconds before the whole process tree is killed (at most `[run] timeout_seconds`).
    timeout_seconds: Option<u64>,
    /// Files the command creates, changes or deletes become part of your proposal (default
    /// true); false throws them away.
    capture: Option<bool>,
}

#[tool_router]
impl Server {
    #[tool(description = "Who this server acts as (fixed at start-up), and the server's version.")]
    async fn identity(&self, ctx: RequestContext<RoleServer>) -> Reply {
        text(&json!({ "actor": self.actor(&ctx), "server": "cairn", "version": env!("CARGO_PKG_VERSION") }))
    }

    #[tool(description = "List tasks with filters; `ready` = all deps closed. list(ready=true, status=\"backlog\") is what can start now.")]
    async fn task_list(&self, ctx: RequestContext<RoleServer>, Parameters(a): Parameters<ListArgs>) -> Reply {
        self.core(&ctx, move |p, _| Ok(json!({ "tasks": tasks::list(p, &Filter { status: a.status, assignee: a.assignee, ready: a.ready })? }))).await
    }

    #[tool(description = "A task: body, deps, checks with results, provenance, its agent.")]
    async fn task_get(&self, ctx: RequestContext<RoleServer>, Parameters(a): Parameters<Id>) -> Reply {
        self.core(&ctx, move |p, _| tasks::get(p, &a.id)).await
    }

    #[tool(description = "Create a task. Deps must exist. Checks: {desc, cmd} run in the proposal's workspace, or {desc, type: \"manual\"}.")]
    async fn task_create(&self, ctx: RequestContext<RoleServer>, Parameters(a): Parameters<CreateArgs>) -> Reply {
        let checks: Vec<Check> = a.checks.unwrap_or_default().into_iter().map(|c| Check { desc: c.desc, cmd: c.cmd, kind: c.kind, cwd: c.cwd, timeout: c.timeout, result: Default::default(), log: None, author: None, approved_by: None }).collect();
        self.core(&ctx, move |p, who| tasks::create(p, who, &a.title, a.body.as_deref().unwrap_or(""), &a.deps.unwrap_or_default(), checks)).await
    }

    #[tool(description = "Assign the task to yourself (refused when someone else holds it).")]
    async fn task_claim(&self, ctx: RequestContext<RoleServer>, Parameters(a): Parameters<Id>) -> Reply {
        self.core(&ctx, move |p, who| tasks::claim(p, who, &a.id)).await
    }

    #[tool(description = "Move a task to a status. Leaving backlog needs all deps closed; done needs every check passing (command checks are run first).")]
    async fn task_transition(&self, ctx: RequestContext<RoleServer>, Parameters(a): Parameters<TransitionArgs>) -> Reply {
        self.core(&ctx, move |p, who| tasks::transition(p, who, &a.id, &a.to)).await
    }

    #[tool(description = "Run the task's command checks in its proposal's workspace and record pass/fail.")]
    async fn task_run_checks(&self, ctx: RequestContext<RoleServer>, Parameters(a): Parameters<ChecksArgs>) -> Reply {
        self.core(&ctx, move |p, who| tasks::checks::run(p, who, &a.id, a.only.as_deref())).await
    }

    #[tool(description = "Append a note to the task's provenance.")]
    async fn task_note(&self, ctx: RequestContext<RoleServer>, Parameters(a): Parameters<NoteArgs>) -> Reply {
        self.core(&ctx, move |p, who| tasks::note(p, who, &a.id, &a.text)).await
    }

    #[tool(description = "Begin working on a task: claims it, moves it to in_progress and opens a session with its own overlay for the file tools. Same idempotency_key, same session.")]
    async fn session_begin(&self, ctx: RequestContext<RoleServer>, Parameters(a): Parameters<BeginArgs>) -> Reply {
        self.core(&ctx, move |p, who| sessions::begin(p, who, &a.task, &a.idempotency_key)).await
    }

    #[tool(description = "Tell the server the session is alive (a session without one for 60 s is stalled).")]
    async fn session_heartbeat(&self, ctx: RequestContext<RoleServer>, Parameters(a): Parameters<SessionArg>) -> Reply {
        self.core(&ctx, move |p, who| sessions::heartbeat(p, who, &a.session)).await
    }

    #[tool(description = "Submit the session's changes for human review with a summary; the task goes to review. Nothing reaches the project before a human accepts.")]
    async fn session_finish(&self, ctx: RequestContext<RoleServer>, Parameters(a): Parameters<FinishArgs>) -> Reply {
        self.core(&ctx, move |p, who| sessions::finish(p, who, &a.session, &a.summary)).await
    }

    #[tool(description = "End the session and discard its changes; the task stays open and unassigned.")]
    async fn session_cancel(&self, ctx: RequestContext<RoleServer>, Parameters(a): Parameters<CancelArgs>) -> Reply {
        self.core(&ctx, move |p, who| sessions::cancel(p, who, &a.session, a.reason.as_deref().unwrap_or("cancelled"))).await
    }

    #[tool(description = "Read a file as the session sees it (its own edits over the project). tagged=true prefixes each line with 'N:hash|' for edit_lines.")]
    async fn read_file(&self, ctx: RequestContext<RoleServer>, Parameters(a): Parameters<ReadArgs>) -> Reply {
        self.file(&ctx, a.session, "read_file", vec![json!(a.path), json!(a.tagged.unwrap_or(false))], Map::new()).await
    }

    #[tool(description = "Create or replace a file in the session's overlay.")]
    async fn write_file(&self, ctx: RequestContext<RoleServer>, Parameters(a): Parameters<WriteArgs>) -> Reply {
        self.file(&ctx, a.session, "write_file", vec![json!(a.path), json!(a.content)], Map::new()).await
    }

    #[tool(description = "Delete a file in the session's overlay.")]
    async fn delete_file(&self, ctx: RequestContext<RoleServer>, Parameters(a): Parameters<PathArgs>) -> Reply {
        self.file(&ctx, a.session, "delete_file", vec![json!(a.path.unwrap_or_default())], Map::new()).await
    }

    #[tool(description = "List a directory (sorted; directories end with '/').")]
    async fn list_dir(&self, ctx: RequestContext<RoleServer>, Parameters(a): Parameters<PathArgs>) -> Reply {
        self.file(&ctx, a.session, "list_dir", vec![json!(a.path.unwrap_or_else(|| ".".into()))], Map::new()).await
    }

    #[tool(description = "Find files by glob ('**' crosses directories, '*' does not).")]
    async fn search_files(&self, ctx: RequestContext<RoleServer>, Parameters(a): Parameters<PatternArgs>) -> Reply {
        self.file(&ctx, a.session, "search_files", vec![json!(a.pattern)], Map::new()).await
    }

    #[tool(description = "Regex search of file contents: {file, line, text} with 1-based lines.")]
    async fn search_content(&self, ctx: RequestContext<RoleServer>, Parameters(a): Parameters<PatternArgs>) -> Reply {
        self.file(&ctx, a.session, "search_content", vec![json!(a.pattern), json!(a.path.unwrap_or_else(|| ".".into()))], Map::new()).await
    }

    #[tool(description = "Run a Python script in Cairn's sandbox against the session's overlay (its read_file, write_file, edit_lines, ... act on the session's files). Returns {result} or {error: {kind, message}}.")]
    async fn run_script(&self, ctx: RequestContext<RoleServer>, Parameters(a): Parameters<ScriptArgs>) -> Reply {
        self.core(&ctx, move |p, who| sessions::run_script(p, who, &a.session, &a.code)).await
    }

    #[tool(description = "Run a shell command against your proposal: in a throwaway copy of the project with your changes applied, confined (no network, nothing outside the project writable, a cleared environment, a timeout). Returns exit status, the output's tail, and the paths the command changed, which become part of your proposal unless capture=false.")]
    async fn run_command(&self, ctx: RequestContext<RoleServer>, Parameters(a): Parameters<CommandArgs>) -> Reply {
        let args = tasks::exec::ExecArgs { cmd: a.command, cwd: a.cwd.unwrap_or_default(), timeout_seconds: a.timeout_seconds, capture: a.capture.unwrap_or(true) };
        self.core(&ctx, move |p, who| tasks::exec::exec(p, who, &a.session, &args)).await
    }

    #[tool(description = "Edit lines by the tags of a tagged read_file. ops: {op: replace|insert_after|delete, tag, end?, lines?}. A stale or missing tag fails the whole edit, naming it.")]
    async fn edit_lines(&self, ctx: RequestContext<RoleServer>, Parameters(a): Parameters<EditArgs>) -> Reply {
        let ops: Vec<Value> = a.ops.into_iter().map(|o| json!({ "op": o.op, "tag": o.tag, "end": o.end, "lines": o.lines.unwrap_or_default() })).collect();
        self.file(&ctx, a.session, "edit_lines", vec![json!(a.path), Value::Array(ops)], Map::new()).await
    }
}

#[tool_handler]
impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(rmcp::model::Implementation::new("cairn", env!("CARGO_PKG_VERSION")))
    }
}
