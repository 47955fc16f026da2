//! The status object of one agent (`cairn status ID`, `list-agents --json`, RPC), and how it
//! is built from the agent's record, its overlay and its task.

use crate::error::{Error, Result};
use crate::lifecycle::{ErrorKind, Priority, Provider, State};
use crate::project::Project;
use crate::review::{self, ChangeKind};
use crate::store::bin::AgentRecord;
use serde::Serialize;

/// One changed path in a status.
#[derive(Debug, Clone, Serialize)]
pub struct ChangeSummary {
    pub path: String,
    pub kind: ChangeKind,
    /// Another tool runs or obeys this file on its own (see [`crate::paths::runs_by_itself`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runs_by_itself: Option<&'static str>,
}

/// The status object of one agent (`status --json`, `list-agents --json`, RPC).
#[derive(Debug, Clone, Serialize)]
pub struct Status {
    pub id: String,
    /// Its mark (`A`, `B`, ...) while it is pending: the one signs, ghost headers and status
    /// lines show, kept for its life ([`crate::review::board`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mark: Option<String>,
    pub state: State,
    pub task: String,
    pub priority: Priority,
    pub provider: Provider,
    pub created_at: String,
    pub state_changed_at: String,
    pub submission: Option<serde_json::Value>,
    pub result: Option<serde_json::Value>,
    pub error: Option<String>,
    pub error_kind: Option<ErrorKind>,
    pub changes: Vec<ChangeSummary>,
    /// Why the agent's overlay cannot be read, when it cannot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub damage: Option<String>,
    pub attempts: u32,
    pub accept_pending: bool,
    pub undone: bool,
    /// The revision of the proposal: 1, then one more per revise (or new turn of a live agent).
    pub revision: u32,
    /// The agent is still at work on it (ghost text and diffs show it as it grows).
    pub in_progress: bool,
    /// The task whose proposal this agent is, with its status and check results.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub for_task: Option<TaskBrief>,
    /// The agent's jj change (`crate::jj`), in a jj project.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jj: Option<crate::store::bin::JjRow>,
    /// Whether the jj integration is on here, which jj, and why not (a single agent's status
    /// in a jj repository, or with `[jj] enabled = true`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jj_integration: Option<crate::jj::Detection>,
    /// Unix milliseconds of `state_changed_at` (for ages; not serialized).
    #[serde(skip)]
    pub state_changed_ms: i64,
    /// Other pending agents whose hunks overlap this one's ([`review::board`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub overlaps: Vec<String>,
}

/// A task as an agent's status shows it.
#[derive(Debug, Clone, Serialize)]
pub struct TaskBrief {
    pub id: String,
    pub status: String,
    /// `{desc, result}` of each check.
    pub checks: Vec<serde_json::Value>,
}

/// The task whose proposal agent `id` is.
pub fn task_brief(project: &Project, id: &str) -> Option<TaskBrief> {
    let bin = project.bin().ok()?;
    let t = bin.task_get(&bin.task_of_agent(id).ok()??).ok()?;
    // `by`: the agent that wrote a check (none for a human's); `counts`: whether it gates.
    let checks = t.checks.iter().map(|c| serde_json::json!({ "desc": c.desc, "result": c.result, "by": c.author.as_deref().filter(|a| !crate::tasks::is_human(a)), "counts": c.counts() })).collect();
    Some(TaskBrief { id: t.id, status: t.status, checks })
}

/// The changed paths of a decided agent's overlay, by what its entries do; `None` when it cannot
/// be read (the full review then says why).
fn decided_changes(project: &Project, id: &str) -> Option<Vec<ChangeSummary>> {
    use crate::store::overlay::Kinded;
    let kinds = project.existing_overlay(id).ok()??.kinds().ok()?;
    let kind = |k: Kinded| match k {
        Kinded::Added => ChangeKind::Added,
        Kinded::Modified => ChangeKind::Modified,
        Kinded::Deleted => ChangeKind::Deleted,
    };
    Some(kinds.into_iter().map(|(path, k)| ChangeSummary { runs_by_itself: crate::paths::runs_by_itself(&path, None, None), path, kind: kind(k) }).collect())
}

/// Builds the status of an agent record: `changes` always; `detailed` (one agent's own
/// status) adds its task and the jj integration, and fails where reading its changes fails,
/// where a listing of many shows the agent without them.
pub fn status_of(project: &Project, rec: &AgentRecord, detailed: bool) -> Result<Status> {
    // A damaged overlay does not hide the agent: its status says so instead of failing. One
    // being created (a running agent's) is not damage.
    // A decided agent in a listing: what its overlay holds, read cheaply (no three-way review
    // of the project as it is now, which says nothing about a decided proposal).
    let listed = if !detailed && rec.state.is_terminal() { decided_changes(project, &rec.id) } else { None };
    let (changes, damage) = match listed.map_or_else(|| review::changes(project, &rec.id).map(|c| c.into_iter().map(|c| ChangeSummary { path: c.path, kind: c.kind, runs_by_itself: c.runs_by_itself }).collect()), Ok) {
        Ok(c) => (c, None),
        Err(e @ Error::Overlay { .. }) if detailed || !rec.state.is_running() => (Vec::new(), Some(e.to_string())),
        Err(e) if detailed => return Err(e),
        Err(e) => {
            tracing::debug!("changes of {} not listed: {e}", rec.id);
            (Vec::new(), None)
        }
    };
    let mark = if rec.state.is_terminal() { None } else { project.bin()?.mark_of(&rec.id)? };
    Ok(Status {
        id: rec.id.clone(),
        mark,
        state: rec.state,
        task: rec.task.clone(),
        priority: rec.priority,
        provider: rec.provider,
        created_at: crate::time::rfc3339(rec.created_ms),
        state_changed_at: crate::time::rfc3339(rec.state_changed_ms),
        submission: rec.submission.clone(),
        result: rec.result.clone(),
        error: rec.error.clone(),
        error_kind: rec.error_kind,
        changes,
        damage,
        attempts: rec.attempts,
        accept_pending: rec.accept_pending,
        undone: rec.state == State::Undone,
        revision: rec.revision,
        in_progress: rec.state.is_running(),
        for_task: if detailed { task_brief(project, &rec.id) } else { None },
        jj: project.bin()?.jj_get(&rec.id)?,
        jj_integration: (detailed && (project.root.join(".jj").is_dir() || project.config.jj.enabled == "true")).then(|| crate::jj::detect(project).0),
        state_changed_ms: rec.state_changed_ms,
        overlaps: Vec::new(),
    })
}
