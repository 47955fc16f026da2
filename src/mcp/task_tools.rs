//! The task graph and sessions over MCP: thin adapters over [`cairn_core::tasks`].

use super::params::*;
use super::{done, Reply, Server};
use cairn_core::tasks::{self, sessions, Check, Filter};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::service::RequestContext;
use rmcp::{tool, tool_router, RoleServer};
use serde_json::json;

#[tool_router(router = task_tools, vis = "pub(super)")]
impl Server {
    #[tool(description = "Who this server acts as (fixed for the server's life; pass it as session_begin's expected_actor), the client it serves (name and version, from initialize), and the server's version.")]
    async fn identity(&self, ctx: RequestContext<RoleServer>) -> Reply {
        let me = self.identity.get(&ctx).await;
        Ok(done(json!({ "actor": me.actor, "client": me.client, "server": "cairn", "version": env!("CARGO_PKG_VERSION") }), None))
    }

    #[tool(description = "List tasks, optionally by status, assignee or readiness (ready: all deps closed). Use it to find work that can start now.")]
    async fn task_list(&self, ctx: RequestContext<RoleServer>, Parameters(a): Parameters<ListArgs>) -> Reply {
        self.core(&ctx, move |p, _| Ok(json!({ "tasks": tasks::list(p, &Filter { status: a.status, assignee: a.assignee, ready: a.ready, execution: a.execution })? }))).await
    }

    #[tool(description = "One task with its body, deps, checks and their results, provenance and agent.")]
    async fn task_get(&self, ctx: RequestContext<RoleServer>, Parameters(a): Parameters<Id>) -> Reply {
        self.core(&ctx, move |p, _| tasks::get(p, &a.id)).await
    }

    #[tool(description = "Create a task to track a piece of work. Deps must exist; checks are {desc, cmd} (run confined against the proposal) or {desc, type: \"manual\"}.")]
    async fn task_create(&self, ctx: RequestContext<RoleServer>, Parameters(a): Parameters<CreateArgs>) -> Reply {
        let mut checks = Vec::new();
        for c in a.checks.unwrap_or_default() {
            let cwd = match c.cwd.map(|d| self.host_path(&d)).transpose() {
                Ok(cwd) => cwd,
                Err(r) => return Ok(r),
            };
            checks.push(Check { desc: c.desc, cmd: c.cmd, kind: c.kind, cwd, timeout: c.timeout.map(u64::from), result: Default::default(), log: None, author: None, approved_by: None });
        }
        self.core(&ctx, move |p, who| tasks::create(p, who, &a.title, a.body.as_deref().unwrap_or(""), &a.deps.unwrap_or_default(), checks)).await
    }

    #[tool(description = "Assign a task to yourself; refused when someone else holds it.")]
    async fn task_claim(&self, ctx: RequestContext<RoleServer>, Parameters(a): Parameters<Id>) -> Reply {
        self.core(&ctx, move |p, who| tasks::claim(p, who, &a.id)).await
    }

    #[tool(description = "Move a task to another status. Leaving backlog needs all deps closed; closing a task is the human's.")]
    async fn task_transition(&self, ctx: RequestContext<RoleServer>, Parameters(a): Parameters<TransitionArgs>) -> Reply {
        self.core(&ctx, move |p, who| tasks::transition(p, who, &a.id, &a.to)).await
    }

    #[tool(description = "Run the task's command checks, confined, against its proposal, and record pass or fail.")]
    async fn task_run_checks(&self, ctx: RequestContext<RoleServer>, Parameters(a): Parameters<ChecksArgs>) -> Reply {
        let only: Option<Vec<usize>> = a.only.map(|v| v.into_iter().map(|i| i as usize).collect());
        self.core(&ctx, move |p, who| tasks::checks::run(p, who, &a.id, only.as_deref(), false)).await
    }

    #[tool(description = "Add a note to a task's history, for the reviewer.")]
    async fn task_note(&self, ctx: RequestContext<RoleServer>, Parameters(a): Parameters<NoteArgs>) -> Reply {
        self.core(&ctx, move |p, who| tasks::note(p, who, &a.id, &a.text)).await
    }

    #[tool(description = "Start working on a task: claims it and opens a session (its own proposal) whose id the file tools take as `session`. The same idempotency_key returns the same session.")]
    async fn session_begin(&self, ctx: RequestContext<RoleServer>, Parameters(a): Parameters<BeginArgs>) -> Reply {
        let me = self.actor(&ctx).await;
        if let Some(expected) = a.expected_actor.as_ref().filter(|e| **e != me) {
            return Ok(super::failed("usage", format!("expected_actor is {expected}, but this server acts as {me}; begin no session here")));
        }
        let meta = a.meta.map(serde_json::Value::Object);
        self.core(&ctx, move |p, who| sessions::begin_with(p, who, &a.task, &a.idempotency_key, meta.as_ref())).await
    }

    #[tool(description = "List sessions, optionally by task, actor, status or health (stalled: open without heartbeats).")]
    async fn session_list(&self, ctx: RequestContext<RoleServer>, Parameters(a): Parameters<SessionListArgs>) -> Reply {
        let filter = sessions::SessionFilter { task: a.task, actor: a.actor, status: a.status, health: a.health };
        self.core(&ctx, move |p, _| Ok(json!({ "sessions": sessions::list(p, &filter)? }))).await
    }

    #[tool(description = "Tell the server a long-running session is alive (one silent for 60 s is shown as stalled), with what you are doing now as progress.")]
    async fn session_heartbeat(&self, ctx: RequestContext<RoleServer>, Parameters(a): Parameters<HeartbeatArgs>) -> Reply {
        let session = match self.existing_session(&ctx, a.session).await {
            Ok(s) => s,
            Err(r) => return Ok(r),
        };
        self.core(&ctx, move |p, who| sessions::heartbeat(p, who, &session, a.progress.as_deref())).await
    }

    #[tool(description = "A session: its task, agent, status, health and summary.")]
    async fn session_get(&self, ctx: RequestContext<RoleServer>, Parameters(a): Parameters<SessionArg>) -> Reply {
        let session = match self.existing_session(&ctx, a.session).await {
            Ok(s) => s,
            Err(r) => return Ok(r),
        };
        self.core(&ctx, move |p, _| cairn_core::tasks::review_wait::get_with_review(p, &session)).await
    }

    #[tool(description = "After session_finish: wait until the human has reviewed your proposal. Returns the decision (accepted, rejected, undone) or, when they ask for a revision, their feedback (reasons, notes on lines, which hunks were accepted or rejected): then revise in the same session, session_finish and review_wait again. Each piece of feedback is returned once.")]
    async fn review_wait(&self, ctx: RequestContext<RoleServer>, Parameters(a): Parameters<WaitArgs>) -> Reply {
        let session = match self.waited_session(&ctx, a.session).await {
            Ok(s) => s,
            Err(r) => return Ok(r),
        };
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(u64::from(a.timeout_s.unwrap_or(600).clamp(1, 3600)));
        let actor = self.actor(&ctx).await;
        loop {
            let (project, s, who) = (std::sync::Arc::clone(&self.project), session.clone(), actor.clone());
            let out = tokio::task::spawn_blocking(move || cairn_core::tasks::review_wait::review_poll(&project, &who, &s)).await.map_err(super::internal)?;
            match out {
                Ok(Some(v)) => {
                    if v["decision"] == "revise" {
                        self.resume_implicit(&session).await;
                    }
                    let text = v["feedback"].as_str().map(str::to_string).unwrap_or_else(|| format!("decision: {}", v["decision"].as_str().unwrap_or("")));
                    return Ok(done(v, Some(text)));
                }
                Ok(None) => {}
                Err(e) => return Ok(super::refused(&e)),
            }
            if tokio::time::Instant::now() >= deadline {
                let (project, s) = (std::sync::Arc::clone(&self.project), session.clone());
                let get = tokio::task::spawn_blocking(move || cairn_core::tasks::review_wait::get_with_review(&project, &s)).await.map_err(super::internal)?;
                let (agent, state, revision) = match &get {
                    Ok(v) => (v["agent"].clone(), v["state"].clone(), v["revision"].clone()),
                    Err(_) => (json!(null), json!(null), json!(null)),
                };
                let next = "Still under review: call review_wait again.";
                return Ok(done(json!({ "session": session, "agent": agent, "state": state, "revision": revision, "decision": "waiting", "next": next }), None));
            }
            tokio::select! {
                _ = tokio::time::sleep(std::time::Duration::from_millis(200)) => {}
                () = ctx.ct.cancelled() => return Ok(super::failed("cancelled", "review_wait was cancelled".into())),
            }
        }
    }

    #[tool(description = "Your proposal so far as the reviewer will see it: a unified diff (renames shown as such). Use it to check your work before session_finish.")]
    async fn session_diff(&self, ctx: RequestContext<RoleServer>, Parameters(a): Parameters<SessionArg>) -> Reply {
        let session = match self.existing_session(&ctx, a.session).await {
            Ok(s) => s,
            Err(r) => return Ok(r),
        };
        let project = std::sync::Arc::clone(&self.project);
        let out = tokio::task::spawn_blocking(move || -> cairn_core::error::Result<(String, Vec<String>)> {
            let s = sessions::get_session(&project, &session)?;
            let changes = cairn_core::review::diff::changes(&project, &s.row.agent)?;
            Ok((cairn_core::review::diff::unified(&changes), changes.iter().map(|c| c.path.clone()).collect()))
        })
        .await
        .map_err(super::internal)?;
        Ok(match out {
            Ok((diff, paths)) => {
                let text = if diff.is_empty() { "no changes yet".to_string() } else { diff.clone() };
                done(json!({ "diff": diff, "paths": paths }), Some(text))
            }
            Err(e) => super::refused(&e),
        })
    }

    #[tool(description = "Submit the session's changes for human review with a summary of what they do. Nothing reaches the project before a human accepts.")]
    async fn session_finish(&self, ctx: RequestContext<RoleServer>, Parameters(a): Parameters<FinishArgs>) -> Reply {
        let implicit = a.session.is_none();
        let session = match self.existing_session(&ctx, a.session).await {
            Ok(s) => s,
            Err(r) => return Ok(r),
        };
        let out = self.core(&ctx, move |p, who| sessions::finish(p, who, &session, &a.summary)).await;
        if implicit && out.as_ref().is_ok_and(|r| r.is_error != Some(true)) {
            // The next file tool opens a new session of its own, unless a revise brings this
            // one back (review_wait).
            let mut slot = self.implicit.lock().await;
            let mut finished = self.finished.lock().await;
            *finished = slot.take();
        }
        out
    }

    #[tool(description = "End a session and throw its changes away; the task stays open and unassigned.")]
    async fn session_cancel(&self, ctx: RequestContext<RoleServer>, Parameters(a): Parameters<CancelArgs>) -> Reply {
        self.core(&ctx, move |p, who| sessions::cancel(p, who, &a.session, a.reason.as_deref().unwrap_or("cancelled"))).await
    }
}

/// `review_wait`'s side of this connection's own sessions.
impl Server {
    /// The session `review_wait` waits on: `given`, else this connection's own finished one
    /// (what it submitted), else its open one.
    pub(super) async fn waited_session(&self, ctx: &RequestContext<RoleServer>, given: Option<String>) -> Result<String, rmcp::model::CallToolResult> {
        if given.as_deref().is_none_or(str::is_empty) {
            if let Some(i) = self.finished.lock().await.as_ref() {
                return Ok(i.session.clone());
            }
        }
        self.existing_session(ctx, given).await
    }

    /// A revise reopened `session`: if it was this connection's own, file tools without
    /// `session` go to it again. (Locks in one order everywhere: `implicit`, then `finished`.)
    pub(super) async fn resume_implicit(&self, session: &str) {
        let mut slot = self.implicit.lock().await;
        let mut finished = self.finished.lock().await;
        if slot.is_none() && finished.as_ref().is_some_and(|i| i.session == session) {
            *slot = finished.take();
        }
    }
}
