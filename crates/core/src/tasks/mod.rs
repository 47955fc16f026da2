//! Tasks: a graph of work items with deps and checks, written by people (`cairn task`) and
//! coding agents (`cairn mcp`) alike. The rules are here, once:
//! - **the deps gate**: a task leaves its first status only when every dep is closed;
//! - **the checks gate**: a task enters the closing status (`done`) only when every check
//!   passes; `cmd` checks not yet passing are run first, a pending manual check blocks;
//! - `ready` (deps all closed) is derived on read, never stored;
//! - every write appends one provenance entry `{who, at, did}` (and an event).
//!
//! Statuses come from `[tasks] statuses` ([`Flow`]). Checks run in the task's agent's
//! materialized workspace ([`checks`]). Rows live in `bin.db` ([`crate::store::Bin`]).

pub mod checks;
pub mod sessions;
pub mod implicit;
pub mod review_wait;
pub mod exec;
mod seal;

use crate::error::{Error, Result};
use crate::project::Project;
use crate::store::bin::Bin;
use serde::Serialize;

pub use crate::store::bin::{is_human, Check, CheckResult, Provenance, TaskRow};

/// A task as read: the row plus what is derived.
#[derive(Debug, Clone, Serialize)]
pub struct Task {
    #[serde(flatten)]
    pub row: TaskRow,
    /// Every dep is closed.
    pub ready: bool,
    /// How its work goes: `active` or `stalled` (an open session, by its heartbeats),
    /// `awaiting_review` (a finished session's proposal is reviewing); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub execution: Option<String>,
    /// What the agent of its open session last said it is doing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub progress: Option<String>,
}

/// The configured statuses and their roles.
pub struct Flow<'a> {
    pub statuses: &'a [String],
}

impl<'a> Flow<'a> {
    pub fn of(project: &'a Project) -> Flow<'a> {
        Flow { statuses: &project.config.tasks.statuses }
    }
    fn at(&self, i: usize, fallback: &'static str) -> &str {
        self.statuses.get(i).map(String::as_str).unwrap_or(fallback)
    }
    /// Where tasks start.
    pub fn initial(&self) -> &str {
        self.at(0, "backlog")
    }
    /// Where a session works.
    pub fn working(&self) -> &str {
        self.at(1, "in_progress")
    }
    /// Where a finished session puts its task.
    pub fn review(&self) -> &str {
        self.at(2, "review")
    }
    /// The status that closes a task once its checks pass.
    pub fn done(&self) -> &str {
        self.at(3, "done")
    }
    /// Closed statuses: `done` and any after it.
    pub fn is_closed(&self, status: &str) -> bool {
        self.statuses.iter().skip(3).any(|s| s == status)
    }
}

/// Filters of [`list`]; `None` ignores one.
#[derive(Debug, Default, Clone)]
pub struct Filter {
    pub status: Option<String>,
    pub assignee: Option<String>,
    pub ready: Option<bool>,
    /// `active`, `stalled` or `awaiting_review` ([`Task::execution`]).
    pub execution: Option<String>,
}

/// A fresh task id: `t` and six hex digits.
fn new_id(project: &Project) -> Result<String> {
    let bin = project.bin()?;
    loop {
        let id = format!("t{:06x}", rand::random::<u32>() & 0xff_ffff);
        match bin.task_get(&id) {
            Err(Error::UnknownTask(_)) => return Ok(id),
            Err(e) => return Err(e),
            Ok(_) => continue,
        }
    }
}

/// The identity of the `cairn mcp` servers of one MCP client process, run without `--actor`:
/// `agent:<client>-<6 hex digits of a hash of key>`. `key` names the client process (the edge
/// reads it: boot, pid and start time), so the servers it starts, again after a crash or side by
/// side, are one actor and two client processes are two. `client` is the MCP client's name,
/// kept to letters, digits, `-`, `_` and `.`.
pub fn client_actor(client: &str, key: &str) -> String {
    let name: String = client.chars().take(40).map(|c| if c.is_alphanumeric() || "-_.".contains(c) { c } else { '-' }).collect();
    let name = if name.chars().all(|c| c == '-') { "unknown".to_string() } else { name };
    format!("agent:{name}-{}", &blake3::hash(key.as_bytes()).to_hex()[..6])
}

fn refused(task: &str, message: impl Into<String>) -> Error {
    Error::TaskRefused { task: task.to_string(), message: message.into() }
}

/// Longest title or check description, in characters; longest body, note, summary or
/// command, in bytes; most checks on one task. Every text an agent supplies is bounded.
pub const MAX_TITLE_CHARS: usize = 200;
pub const MAX_TEXT_BYTES: usize = 64 * 1024;
pub const MAX_CHECKS: usize = 50;

/// Refuses `text` (the argument `name`) beyond `max` bytes.
pub fn bounded(name: &str, text: &str, max: usize) -> Result<()> {
    refuse_over(name, text.len(), max, "bytes")
}

/// Refuses a one-line `text` (a title) beyond [`MAX_TITLE_CHARS`] characters.
pub fn bounded_title(name: &str, text: &str) -> Result<()> {
    refuse_over(name, text.chars().count(), MAX_TITLE_CHARS, "characters")
}

fn refuse_over(name: &str, size: usize, max: usize, unit: &str) -> Result<()> {
    if size > max {
        return Err(Error::Usage(format!("{name} is {size} {unit}; at most {max}")));
    }
    Ok(())
}

/// Creates a task in the first status. Deps must exist (no dangling graph); checks need a
/// description and either a command or `type: manual`.
pub fn create(project: &Project, who: &str, title: &str, body: &str, deps: &[String], checks: Vec<Check>) -> Result<Task> {
    let bin = project.bin()?;
    if title.trim().is_empty() {
        return Err(Error::Usage("a task needs a title".into()));
    }
    bounded_title("title", title)?;
    bounded("body", body, MAX_TEXT_BYTES)?;
    if checks.len() > MAX_CHECKS {
        return Err(Error::Usage(format!("checks: at most {MAX_CHECKS}, not {}", checks.len())));
    }
    for c in &checks {
        bounded_title("checks[].desc", &c.desc)?;
        bounded("checks[].cmd", c.cmd.as_deref().unwrap_or(""), MAX_TEXT_BYTES)?;
    }
    let mut resolved = Vec::new();
    for d in deps {
        resolved.push(bin.task_resolve(d).map_err(|_| Error::Usage(format!("dep '{d}' is not a task (deps must exist)")))?);
    }
    for (i, c) in checks.iter().enumerate() {
        if c.desc.trim().is_empty() {
            return Err(Error::Usage(format!("check {i} needs a desc")));
        }
        if c.cmd.is_none() && c.kind.as_deref() != Some("manual") {
            return Err(Error::Usage(format!("check {i} ({}) needs a cmd, or type \"manual\"", c.desc)));
        }
    }
    // The author is who creates the task, whatever the input says.
    let checks = checks.into_iter().map(|c| Check { result: CheckResult::Pending, log: None, author: Some(who.to_string()), approved_by: None, ..c }).collect();
    let row = TaskRow {
        id: new_id(project)?,
        title: title.to_string(),
        body: body.to_string(),
        status: Flow::of(project).initial().to_string(),
        assignee: None,
        deps: resolved,
        checks,
        agent: None,
        created_ms: crate::time::now_ms(),
        provenance: Vec::new(),
    };
    bin.task_insert(&row, who)?;
    get(project, &row.id)
}

/// The task `id` (any unique prefix), with `ready` derived.
pub fn get(project: &Project, id: &str) -> Result<Task> {
    let bin = project.bin()?;
    let row = bin.task_get(&bin.task_resolve(id)?)?;
    let ready = deps_open(project, &row, |d| bin.task_get(d).ok().map(|t| t.status))?.is_empty();
    let (execution, progress) = execution(&bin, &row, &bin.session_list(Some(&row.id))?)?;
    Ok(Task { row, ready, execution, progress })
}

/// A task's execution and progress, from its sessions (any order) and its agent's state.
fn execution(bin: &Bin, row: &TaskRow, sessions: &[crate::store::bin::SessionRow]) -> Result<(Option<String>, Option<String>)> {
    let mine = sessions.iter().filter(|s| s.task == row.id);
    if let Some(open) = mine.clone().filter(|s| s.status == "active").max_by_key(|s| s.heartbeat_ms) {
        let stalled = crate::time::now_ms() - open.heartbeat_ms > sessions::STALLED_AFTER_MS;
        return Ok((Some(if stalled { "stalled" } else { "active" }.into()), open.progress.clone()));
    }
    let reviewing = match &row.agent {
        Some(a) if mine.clone().any(|s| &s.agent == a) => bin.get(a).map(|r| r.state == crate::lifecycle::State::Reviewing).unwrap_or(false),
        _ => false,
    };
    Ok((reviewing.then(|| "awaiting_review".to_string()), None))
}

/// Ids of the deps of `row` that are not closed; `status_of` gives a task's status.
fn deps_open(project: &Project, row: &TaskRow, status_of: impl Fn(&str) -> Option<String>) -> Result<Vec<String>> {
    let flow = Flow::of(project);
    Ok(row.deps.iter().filter(|d| !status_of(d).is_some_and(|s| flow.is_closed(&s))).cloned().collect())
}

/// Tasks matching `filter`, oldest first.
pub fn list(project: &Project, filter: &Filter) -> Result<Vec<Task>> {
    let bin = project.bin()?;
    let rows = bin.task_list()?;
    // One read of every task: deps resolve against it, not one query each.
    let status: std::collections::HashMap<String, String> = rows.iter().map(|r| (r.id.clone(), r.status.clone())).collect();
    let sessions = bin.session_list(None)?;
    let mut out = Vec::new();
    for row in rows {
        let ready = deps_open(project, &row, |d| status.get(d).cloned())?.is_empty();
        let (execution, progress) = execution(&bin, &row, &sessions)?;
        let keep = filter.status.as_ref().is_none_or(|s| *s == row.status)
            && filter.assignee.as_ref().is_none_or(|a| row.assignee.as_ref() == Some(a))
            && filter.ready.is_none_or(|r| r == ready)
            && filter.execution.as_ref().is_none_or(|e| execution.as_ref() == Some(e));
        if keep {
            out.push(Task { row, ready, execution, progress });
        }
    }
    Ok(out)
}

/// Sets the assignee to `who`. Re-claiming one's own task changes nothing; a task held by
/// someone else is refused.
pub fn claim(project: &Project, who: &str, id: &str) -> Result<Task> {
    let mut t = get(project, id)?.row;
    match t.assignee.as_deref() {
        Some(a) if a == who => return get(project, &t.id),
        Some(a) => return Err(refused(&t.id, format!("already claimed by {a}: it is theirs to work on; pick another task"))),
        None => {}
    }
    t.assignee = Some(who.to_string());
    project.bin()?.task_update(&t, who, "claimed")?;
    get(project, &t.id)
}

/// Moves a task to `to`, through the deps gate and the checks gate.
pub fn transition(project: &Project, who: &str, id: &str, to: &str) -> Result<Task> {
    let flow = Flow::of(project);
    let mut t = get(project, id)?.row;
    if !flow.statuses.iter().any(|s| s == to) {
        return Err(refused(&t.id, format!("unknown status '{to}' (statuses: {})", flow.statuses.join(", "))));
    }
    // Closing follows a human's accept or transition, never an agent's own word.
    if flow.is_closed(to) && !is_human(who) {
        return Err(refused(&t.id, format!("{who} cannot move it to {to}: an agent does not close tasks (a human's accept or transition does)")));
    }
    // Leaving the first status needs every dep closed; cancelling does not.
    let cancelling = flow.is_closed(to) && to != flow.done();
    if t.status == flow.initial() && to != flow.initial() && !cancelling {
        let bin = project.bin()?;
        let open = deps_open(project, &t, |d| bin.task_get(d).ok().map(|t| t.status))?;
        if !open.is_empty() {
            return Err(refused(&t.id, format!("deps not closed: {}", open.join(", "))));
        }
    }
    if to == flow.done() {
        checks::run_unpassed(project, who, &mut t)?;
        let blocking = checks::blocking(&t);
        if !blocking.is_empty() {
            return Err(refused(&t.id, format!("checks not passing: {}", blocking.join("; "))));
        }
    }
    let from = std::mem::replace(&mut t.status, to.to_string());
    project.bin()?.task_update(&t, who, &format!("{from} -> {to}"))?;
    get(project, &t.id)
}

/// Appends a free-text provenance entry.
pub fn note(project: &Project, who: &str, id: &str, text: &str) -> Result<Task> {
    bounded("text", text, MAX_TEXT_BYTES)?;
    let t = get(project, id)?.row;
    project.bin()?.task_update(&t, who, &format!("note: {text}"))?;
    get(project, &t.id)
}

/// Records the outcome of manual check `index`.
pub fn attest(project: &Project, who: &str, id: &str, index: usize, pass: bool) -> Result<Task> {
    let mut t = get(project, id)?.row;
    let check = t.checks.get_mut(index).ok_or_else(|| refused(id, format!("has no check {index}")))?;
    if !check.is_manual() {
        return Err(refused(id, format!("check {index} ({}) runs a command; `cairn task check` runs it", check.desc)));
    }
    check.result = if pass { CheckResult::Pass } else { CheckResult::Fail };
    let did = format!("attested check {index} ({}): {}", check.desc, if pass { "pass" } else { "fail" });
    project.bin()?.task_update(&t, who, &did)?;
    get(project, &t.id)
}

/// Approves agent-written check `index` so it counts for the gates; only a human may.
pub fn approve_check(project: &Project, who: &str, id: &str, index: usize) -> Result<Task> {
    let mut t = get(project, id)?.row;
    if !is_human(who) {
        return Err(refused(id, format!("{who} cannot approve checks: only a human can")));
    }
    let check = t.checks.get_mut(index).ok_or_else(|| refused(id, format!("has no check {index}")))?;
    if check.counts() {
        return get(project, &t.id);
    }
    check.approved_by = Some(who.to_string());
    let did = format!("approved check {index} ({}) by {}", check.desc, check.author.as_deref().unwrap_or("?"));
    project.bin()?.task_update(&t, who, &did)?;
    get(project, &t.id)
}

/// Makes `agent` the task's current proposal (a session began, or a script was queued for it).
pub fn link_agent(project: &Project, who: &str, id: &str, agent: &str) -> Result<Task> {
    let mut t = get(project, id)?.row;
    t.agent = Some(agent.to_string());
    for c in t.checks.iter_mut().filter(|c| !c.is_manual()) {
        c.result = CheckResult::Pending;
    }
    project.bin()?.task_update(&t, who, &format!("proposal: agent {agent}"))?;
    get(project, &t.id)
}

/// Before accepting `agent`: refuses when its task has failing or pending checks, naming
/// them, unless `force` (recorded in the task's provenance). `bin`: the accept's connection.
pub fn gate_accept(bin: &Bin, who: &str, agent: &str, force: bool) -> Result<()> {
    let Some(id) = bin.task_of_agent(agent)? else { return Ok(()) };
    let t = bin.task_get(&id)?;
    let blocking = checks::blocking(&t);
    if blocking.is_empty() {
        return Ok(());
    }
    if !force {
        return Err(refused(&id, format!("accept of agent {agent} refused: checks not passing: {} (run `cairn task check {id}`, or accept --force)", blocking.join("; "))));
    }
    bin.task_update(&t, who, &format!("accepted agent {agent} with --force despite: {}", blocking.join("; ")))
}

/// After accepting `agent`: closes its task when every check passes.
pub fn after_accept(project: &Project, bin: &Bin, who: &str, agent: &str) -> Result<()> {
    let Some(id) = bin.task_of_agent(agent)? else { return Ok(()) };
    let mut t = bin.task_get(&id)?;
    let flow = Flow::of(project);
    if checks::blocking(&t).is_empty() && !flow.is_closed(&t.status) {
        let from = std::mem::replace(&mut t.status, flow.done().to_string());
        bin.task_update(&t, who, &format!("accepted agent {agent}: {from} -> {}", t.status))?;
    }
    Ok(())
}
