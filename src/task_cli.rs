//! `cairn task ...`: the task graph from the command line, over [`cairn_core::tasks`] (the
//! same functions `cairn mcp` calls). Reads take `--json`; writes print the task.

use cairn_core::error::{Error, Result};
use cairn_core::project::Project;
use cairn_core::tasks::{self, Check, Filter, Task};
use clap::Subcommand;
use std::io::Write;

#[derive(Subcommand, Debug)]
pub enum SessionCmd {
    /// Run a command confined in a copy of the session's proposal (see `:help cairn-runs`);
    /// what it writes becomes part of the proposal. Exits with the command's status.
    Exec {
        /// The session id.
        session: String,
        /// The session's owner (default: this user, `human:<login>`).
        #[arg(long)]
        actor: Option<String>,
        /// Working directory, relative to the project root.
        #[arg(long, default_value = "")]
        cwd: String,
        /// Seconds (at most `[run] timeout_seconds`).
        #[arg(long)]
        timeout: Option<u64>,
        /// Throw away what the command writes.
        #[arg(long)]
        no_capture: bool,
        /// Print the run (status, output, changes) as JSON.
        #[arg(long)]
        json: bool,
        /// The command and its arguments (joined by spaces for `sh -c`).
        #[arg(last = true, required = true)]
        cmd: Vec<String>,
    },
}

/// Runs `cairn session ...`; returns the exit code.
pub fn session(project: &Project, cmd: SessionCmd) -> Result<i32> {
    let SessionCmd::Exec { session, actor, cwd, timeout, no_capture, json, cmd } = cmd;
    let args = tasks::exec::ExecArgs { cmd: cmd.join(" "), cwd, timeout_seconds: timeout, capture: !no_capture };
    let ran = tasks::exec::exec(project, actor.as_deref().unwrap_or(&project.actor), &session, &args)?;
    let mut out = std::io::stdout().lock();
    if json {
        let _ = writeln!(out, "{}", serde_json::to_string_pretty(&ran)?);
    } else {
        let _ = out.write_all(ran.output.as_bytes());
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "cairn: `{}` {} after {} ms; {} changed, {} deleted", cairn_core::display::escape(&args.cmd), ran.status, ran.duration_ms, ran.changed.len(), ran.deleted.len());
        for s in &ran.skipped {
            let _ = writeln!(err, "cairn: not in the proposal: {}: {}", cairn_core::display::escape(&s.path), cairn_core::display::escape(&s.why));
        }
    }
    Ok(match (ran.exit_code, ran.timed_out) {
        (Some(c), _) => c,
        (None, true) => 124,
        (None, false) => 128 + ran.signal.unwrap_or(9),
    })
}

#[derive(Subcommand, Debug)]
pub enum TaskCmd {
    /// Create a task (in the first status).
    Create {
        /// What the task is.
        title: String,
        /// Its description.
        #[arg(long, default_value = "")]
        body: String,
        /// A task id that must be closed before this one starts (repeatable).
        #[arg(long = "dep")]
        deps: Vec<String>,
        /// A check command run in the agent's workspace (repeatable): `desc=cmd`.
        #[arg(long = "check")]
        checks: Vec<String>,
        /// A manual check to attest (repeatable): its description.
        #[arg(long = "manual")]
        manual: Vec<String>,
        /// Print the new task as JSON.
        #[arg(long)]
        json: bool,
    },
    /// List tasks, oldest first.
    List {
        /// Only tasks in this status.
        #[arg(long)]
        status: Option<String>,
        /// Only tasks assigned to this actor.
        #[arg(long)]
        assignee: Option<String>,
        /// Only tasks whose deps are all closed (or, with `--ready=false`, not).
        #[arg(long)]
        ready: Option<bool>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Show one task: body, deps, checks with results, provenance.
    Show {
        /// Task id.
        id: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Assign the task to yourself.
    Claim {
        /// Task id.
        id: String,
    },
    /// Move the task to another status (deps gate and checks gate apply).
    Transition {
        /// Task id.
        id: String,
        /// The status to move it to.
        to: String,
    },
    /// Run the task's command checks in its agent's workspace.
    Check {
        /// Task id.
        id: String,
        /// Only these check indices (repeatable).
        #[arg(long = "only")]
        only: Vec<usize>,
        /// Also run checks an agent wrote that no human approved (confined, as every check;
        /// their results still do not count).
        #[arg(long)]
        unapproved: bool,
    },
    /// Attest a manual check: pass, or `--fail`.
    Attest {
        /// Task id.
        id: String,
        /// The manual check's index (as `cairn task show` numbers them).
        index: usize,
        /// It failed.
        #[arg(long)]
        fail: bool,
    },
    /// Approve an agent-written check, so that it counts for the gates (only checks a human
    /// wrote or approved do).
    ApproveCheck {
        /// Task id.
        id: String,
        /// The check's index (as `cairn task show` numbers them).
        index: usize,
    },
    /// Append a note to the task's provenance.
    Note {
        /// Task id.
        id: String,
        /// The note.
        text: String,
    },
}

fn parse_check(spec: &str) -> Result<Check> {
    let (desc, cmd) = spec.split_once('=').ok_or_else(|| Error::Usage(format!("--check takes desc=cmd, got '{spec}'")))?;
    Ok(Check { desc: desc.trim().to_string(), cmd: Some(cmd.to_string()), kind: None, cwd: None, timeout: None, result: Default::default(), log: None, author: None, approved_by: None })
}

/// Runs one `cairn task` command; returns the exit code.
pub fn run(project: &Project, cmd: TaskCmd) -> Result<i32> {
    let who = project.actor.clone();
    let (task, json) = match cmd {
        TaskCmd::Create { title, body, deps, checks, manual, json } => {
            let mut all = checks.iter().map(|c| parse_check(c)).collect::<Result<Vec<_>>>()?;
            all.extend(manual.into_iter().map(|desc| Check { desc, cmd: None, kind: Some("manual".into()), cwd: None, timeout: None, result: Default::default(), log: None, author: None, approved_by: None }));
            (tasks::create(project, &who, &title, &body, &deps, all)?, json)
        }
        TaskCmd::List { status, assignee, ready, json } => {
            let list = tasks::list(project, &Filter { status, assignee, ready, execution: None })?;
            if json {
                print_json(&serde_json::json!({ "tasks": list }))?;
            } else {
                for t in &list {
                    outln(&summary_line(t));
                }
            }
            return Ok(0);
        }
        TaskCmd::Show { id, json } => (tasks::get(project, &id)?, json),
        TaskCmd::Claim { id } => (tasks::claim(project, &who, &id)?, false),
        TaskCmd::Transition { id, to } => (tasks::transition(project, &who, &id, &to)?, false),
        TaskCmd::Check { id, only, unapproved } => {
            let only = (!only.is_empty()).then_some(only);
            let t = tasks::checks::run(project, &who, &id, only.as_deref(), unapproved)?;
            let failing = t.row.checks.iter().any(|c| c.result == tasks::CheckResult::Fail);
            show(&t);
            if !unapproved {
                for i in tasks::checks::waiting_for_approval(&t.row) {
                    let c = &t.row.checks[i];
                    outln(&format!("check {i} waits for approval, not run: {} (by {}); `cairn task approve-check {} {i}`, or `cairn task check {} --unapproved`", c.desc, c.author.as_deref().unwrap_or("?"), t.row.id, t.row.id));
                }
            }
            return Ok(i32::from(failing));
        }
        TaskCmd::Attest { id, index, fail } => (tasks::attest(project, &who, &id, index, !fail)?, false),
        TaskCmd::ApproveCheck { id, index } => (tasks::approve_check(project, &who, &id, index)?, false),
        TaskCmd::Note { id, text } => (tasks::note(project, &who, &id, &text)?, false),
    };
    if json {
        print_json(&task)?;
    } else {
        show(&task);
    }
    Ok(0)
}

fn outln(line: &str) {
    let _ = writeln!(std::io::stdout().lock(), "{}", cairn_core::display::escape(line));
}

fn print_json<T: serde::Serialize>(v: &T) -> Result<()> {
    let text = serde_json::to_string_pretty(v).map_err(|e| Error::Internal(e.to_string()))?;
    let _ = writeln!(std::io::stdout().lock(), "{text}");
    Ok(())
}

fn mark(r: tasks::CheckResult) -> &'static str {
    match r {
        tasks::CheckResult::Pass => "✓",
        tasks::CheckResult::Fail => "✗",
        tasks::CheckResult::Pending => "…",
    }
}

fn summary_line(t: &Task) -> String {
    let checks: String = t.row.checks.iter().map(|c| mark(c.result)).collect();
    format!(
        "{}  {:<12} {:<5} {:<16} {:<6} {}  {}",
        t.row.id,
        t.row.status,
        if t.ready { "ready" } else { "" },
        t.row.assignee.as_deref().unwrap_or("-"),
        t.row.agent.as_deref().unwrap_or("-"),
        if checks.is_empty() { "-".to_string() } else { checks },
        t.row.title
    )
}

fn show(t: &Task) {
    let r = &t.row;
    outln(&format!("task      {}  {}", r.id, r.title));
    outln(&format!("status    {}{}", r.status, if t.ready { "  (ready)" } else { "" }));
    outln(&format!("assignee  {}", r.assignee.as_deref().unwrap_or("-")));
    outln(&format!("agent     {}", r.agent.as_deref().unwrap_or("-")));
    if let Some(e) = &t.execution {
        let progress = t.progress.as_deref().map(|p| format!(": {}", cairn_core::display::escape_line(p))).unwrap_or_default();
        outln(&format!("execution {e}{progress}"));
    }
    if !r.deps.is_empty() {
        outln(&format!("deps      {}", r.deps.join(", ")));
    }
    for (i, c) in r.checks.iter().enumerate() {
        let how = c.cmd.as_deref().map_or("manual".to_string(), |c| format!("`{c}`"));
        outln(&format!("check {i}   {} {} {how}  [{}]{}", mark(c.result), c.desc, c.authority(), c.log.as_deref().map(|l| format!("  ({l})")).unwrap_or_default()));
    }
    if !r.body.is_empty() {
        outln("");
        outln(&r.body);
    }
    for p in &r.provenance {
        outln(&format!("  {} {} {}", p.at, p.who, p.did));
    }
}
