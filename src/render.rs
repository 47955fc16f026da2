//! How the CLI shows a command's output in a terminal. Agent-controlled text (summaries, tasks,
//! errors, paths) goes through [`cairn_core::display`]: control characters are shown, never
//! obeyed.

use cairn_core::command::{self, Output, Status};
use cairn_core::lifecycle::State;
use cairn_core::project::Project;
use std::io::Write;

/// `cairn check`: diagnostics as `file:line:col: message`, or JSON.
pub(crate) fn check(out: &command::CheckReport, json: bool) -> i32 {
    if json {
        let _ = print_json(out);
    } else if out.ok {
        outln!("{}: ok", out.file);
    } else {
        for d in &out.diagnostics {
            outln!("{}:{}:{}: {}", out.file, d.line, d.col, d.message);
        }
    }
    if out.ok {
        0
    } else {
        1
    }
}

fn age(ms: i64) -> String {
    let s = (cairn_core::time::now_ms() - ms).max(0) / 1000;
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m", s / 60),
        3600..=86_399 => format!("{}h", s / 3600),
        _ => format!("{}d", s / 86_400),
    }
}

/// The submission's summary, escaped for the terminal (agent-controlled text).
fn summary(s: &Status) -> String {
    esc(s.submission.as_ref().and_then(|v| v.get("summary")).and_then(|v| v.as_str()).unwrap_or(""))
}

/// Agent-controlled text on one line of the terminal: control characters shown, not obeyed.
fn esc(text: &str) -> String {
    cairn_core::display::escape_line(text)
}

/// Renders a command's output for a terminal; returns the exit code.
pub(crate) fn output(project: &Project, out: &Output) -> i32 {
    match out {
        Output::Init(r) => {
            if let Some(what) = &r.set_aside {
                errln!("cairn: warning: Cairn's state here was not made by this Cairn ({}); nothing in it is used. `cairn init --adopt` instead keeps such a state as yours", esc(what));
            }
            if let Some(why) = &r.rebuilt {
                errln!("cairn: warning: the index was damaged ({}): set aside as .agentfs/stable.db.damaged and rebuilt from the tree", esc(why));
            }
            outln!("indexed {} files and {} directories in {} ({} hashed)", r.files, r.dirs, project.root.display(), r.hashed);
        }
        Output::Agent(s) if s.state == State::Errored && s.error.is_some() => {
            outln!("{}", s.id);
            errln!("cairn: agent {} errored ({}): {}", s.id, s.error_kind.map_or("error", |k| k.as_str()), cairn_core::display::escape(s.error.as_deref().unwrap_or("")));
            return 1;
        }
        Output::Agent(s) if s.state == State::Rejected => outln!("rejected {}", s.id),
        Output::Agent(s) => outln!("{}", s.id),
        Output::Status(s) => status(s),
        Output::Agents { agents, order } => agents_list(agents, order),
        Output::Diff(d) => {
            let _ = write!(std::io::stdout().lock(), "{}", d.text);
        }
        Output::Accepted(r) => accepted(project, r),
        Output::Undone(r) if r.unrejected => outln!("reject of {} undone: reviewing again", r.id),
        Output::Undone(r) => outln!("undone {}: {} restored, {} removed", r.id, r.restored.len(), r.removed.len()),
        Output::Preview(m) => outln!("{}", m.path.display()),
        Output::Check(c) => return check(c, false),
        Output::Gc(r) => outln!("removed {} agents and {} workspaces; {:.1} MB left in overlays and workspaces", r.agents_removed.len(), r.workspaces_removed.len(), r.total_bytes as f64 / 1_048_576.0),
        Output::Hunks { files, .. } => {
            for f in files {
                outln!("{}: {} hunk(s){}", esc(&f.path), f.hunks.len(), f.file_conflict.as_ref().map(|w| format!("  CONFLICT: {}", esc(w))).unwrap_or_default());
                for (i, h) in f.hunks.iter().enumerate() {
                    let conflict = if f.in_conflict(h) { format!("  CONFLICT with {}", esc(&f.conflict_with.join(", "))) } else { String::new() };
                    let overlaps = f.overlaps.get(i).filter(|o| !o.is_empty()).map(|o| format!("  OVERLAPS agent {}", o.join(", "))).unwrap_or_default();
                    outln!("  {}. line {}: -{} +{}{conflict}{overlaps}", i + 1, h.old_start + 1, h.removed.len(), h.added.len());
                    for l in &h.removed {
                        outln!("    -{}", esc(l));
                    }
                    for l in &h.added {
                        outln!("    +{}", esc(l));
                    }
                }
            }
        }
        Output::Search { hits } => {
            for h in hits {
                outln!("{}:{}:{}", esc(&h.file), h.line, esc(&h.text));
            }
            return i32::from(hits.is_empty());
        }
        Output::Board(_) | Output::ThreeWay(_) | Output::Resolved { .. } => many(out),
        Output::Revised(r) => outln!("{}: revision {} started ({} piece(s) of feedback; {}), agent {}", r.id, r.revision, r.sent, delivery(r.delivery, &r.id), r.state),
        Output::Commented { id } => outln!("noted for {id}: `cairn revise {id}` sends it"),
        Output::Log(l) => log(l),
        Output::Hunk(r) => {
            if r.finished_interrupted {
                errln!("cairn: finished the hunk accept a crash had interrupted (in {}); the hunk asked for now was not applied: list the hunks again (`cairn hunks {}`)", esc(&r.path), r.id);
            }
            outln!("{} {}: {} hunk(s) left in it, {} in all, agent {}", r.id, esc(&r.path), r.remaining, r.remaining_all, r.state);
            if r.landed {
                rebased(project, &r.id, std::slice::from_ref(&r.path));
            }
        }
    }
    0
}

/// How feedback reaches the agent, in words.
fn delivery(how: &str, id: &str) -> String {
    match how {
        "terminal" => "typed into its terminal".into(),
        "review_wait" => "its MCP client gets it from review_wait".into(),
        "prompt" => "re-queued with it in its prompt".into(),
        _ => format!("run `cairn wrap --agent {id}` to re-run its command with it"),
    }
}

fn log(l: &cairn_core::review::revise::LogReport) {
    outln!("agent {}  {}  revision {}", l.id, l.state, l.revision);
    let mut revisions: Vec<(u32, String)> = vec![(1, "first proposal".into())];
    revisions.extend(l.revisions.iter().map(|r| (r.revision, format!("{}  {}", cairn_core::time::rfc3339(r.ts_ms), esc(&r.why)))));
    for (n, why) in revisions {
        outln!("revision {n}: {why}");
        for f in l.feedback.iter().filter(|f| f.revision == n) {
            let at = match (&f.path, f.lines) {
                (Some(p), Some((a, b))) if a == b => format!(" {}:{a}", esc(p)),
                (Some(p), Some((a, b))) => format!(" {}:{a}-{b}", esc(p)),
                _ => String::new(),
            };
            let state = match (&f.delivered_via, f.sent_in) {
                (Some(via), _) => format!("delivered ({via})"),
                (None, Some(_)) => "sent, not delivered yet".into(),
                (None, None) => "not sent yet".into(),
            };
            outln!("  {:?}{at}: {}  [{state}]", f.kind, esc(&f.text));
        }
    }
}

fn status(s: &Status) {
    outln!("agent     {}{}", s.id, s.mark.as_ref().map(|m| format!("  mark {m}")).unwrap_or_default());
    outln!("state     {}{}  revision {}", s.state, if s.in_progress { " (in progress)" } else { "" }, s.revision);
    outln!("task      {}", esc(s.task.lines().next().unwrap_or("")));
    outln!("provider  {}  priority {}", s.provider, s.priority);
    outln!("created   {}  changed {}", s.created_at, s.state_changed_at);
    if !summary(s).is_empty() {
        outln!("summary   {}", summary(s));
    }
    if let Some(e) = &s.error {
        outln!("error     ({}) {}", s.error_kind.map_or("error", |k| k.as_str()), cairn_core::display::escape(e));
    }
    if let Some(d) = &s.damage {
        outln!("DAMAGED   {}", esc(d));
    }
    if let Some(d) = &s.jj_integration {
        match (&d.version, &d.program) {
            (Some(v), Some(p)) if d.on => outln!("jj        on: jj {v} ({})", esc(&p.display().to_string())),
            _ => outln!("jj        {}: {}", if d.error { "ERROR" } else { "off" }, esc(&d.why)),
        }
    }
    if let Some(j) = s.jj.as_ref().filter(|j| !j.change.is_empty()) {
        outln!("change    {} ({}){}", j.change, j.status, j.note.as_ref().map(|n| format!(": {}", esc(n))).unwrap_or_default());
    } else if let Some(n) = s.jj.as_ref().and_then(|j| j.note.as_ref()) {
        outln!("change    not recorded: {}", esc(n));
    }
    if s.accept_pending {
        outln!("PENDING   an accept was interrupted: `cairn accept {}` finishes it, `cairn reject {}` rolls it back", s.id, s.id);
    }
    for c in &s.changes {
        let flag = c.runs_by_itself.map(|why| format!("  ! {why}")).unwrap_or_default();
        outln!("  {:<9} {}{flag}", format!("{:?}", c.kind).to_lowercase(), esc(&c.path));
    }
}


/// `cairn status` without an id: the project, its agents by state, the jj integration.
pub(crate) fn overview(o: &cairn_core::command::Overview, json: bool) -> cairn_core::error::Result<i32> {
    if json {
        print_json(o)?;
        return Ok(0);
    }
    outln!("project   {}", esc(&o.root.display().to_string()));
    let counts: Vec<String> = o.agents.iter().map(|(state, n)| format!("{n} {state}")).collect();
    outln!("agents    {}", if counts.is_empty() { "none".to_string() } else { counts.join(", ") });
    board(&o.board);
    outln!("disk      {:.1} MB in overlays and preview workspaces (`[gc] max_total_size_mb` caps it; `cairn gc`, or by itself)", o.disk_bytes as f64 / 1_048_576.0);
    match (&o.jj.version, &o.jj.program) {
        (Some(v), Some(p)) if o.jj.on => outln!("jj        on: jj {v} ({}): proposals are jj changes", esc(&p.display().to_string())),
        _ => outln!("jj        {}: {}", if o.jj.error { "ERROR" } else { "off" }, esc(&o.jj.why)),
    }
    Ok(0)
}

/// `cairn list-agents`: one line per agent (with the agents it overlaps), then the suggested
/// landing order when several proposals are pending.
fn agents_list(agents: &[Status], order: &[String]) {
    if agents.is_empty() {
        outln!("no agents");
    }
    for s in agents {
        let extra = if s.state == State::Errored { s.error_kind.map(|k| k.to_string()).unwrap_or_default() } else { summary(s) };
        let task: String = esc(s.task.lines().next().unwrap_or("")).chars().take(50).collect();
        let mut state = if s.accept_pending { format!("{} (accept pending)", s.state) } else { s.state.to_string() };
        if s.revision > 1 {
            state.push_str(&format!(" r{}", s.revision));
        }
        let overlaps = if s.overlaps.is_empty() { String::new() } else { format!("  [overlaps {}]", s.overlaps.join(", ")) };
        outln!("{:<8} {:<10} {:<7} {:>4}  {}{}{overlaps}", s.id, state, s.priority, age(s.state_changed_ms), task, if extra.is_empty() { String::new() } else { format!("  ({extra})") });
    }
    if order.len() > 1 {
        outln!("land in this order (fewest conflicts): {}", order.join(", "));
    }
}

fn accepted(project: &Project, r: &cairn_core::review::AcceptReport) {
    outln!("accepted {}: {} written, {} deleted{}", r.id, r.written.len(), r.deleted.len(), if r.resumed { " (finished an interrupted accept)" } else { "" });
    rebased(project, &r.id, &[r.written.clone(), r.deleted.clone()].concat());
    if !r.forced.is_empty() {
        errln!("cairn: warning: --force overwrote changes to {}", esc(&r.forced.join(", ")));
    }
}

/// After a landing: what it did to the other pending proposals (read-only, at the edge).
fn rebased(project: &Project, id: &str, paths: &[String]) {
    for r in cairn_core::review::board::rebased_by(project, id, paths).unwrap_or_default() {
        outln!("{}", r.describe(id));
    }
}

/// The outputs of many proposals at once.
fn many(out: &Output) {
    match out {
        Output::Board(b) => board(b),
        Output::ThreeWay(t) => {
            let _ = print_json(t);
        }
        Output::Resolved { id, path } => outln!("resolved {} in {id}'s proposal: `cairn accept {id}` lands it", esc(path)),
        _ => {}
    }
}

/// `cairn status --format tmux`: the board's one line (ids and states: nothing an agent wrote).
pub(crate) fn status_line(project: &cairn_core::project::Project) -> cairn_core::error::Result<i32> {
    let Output::Board(b) = cairn_core::command::execute(project, cairn_core::command::Command::Board)? else { return Ok(1) };
    outln!("{}", b.short());
    Ok(0)
}

/// The pending proposals together: one line each (mark, id, state, overlaps), the overlapping
/// lines, and the suggested landing order.
fn board(b: &cairn_core::review::board::Board) {
    for a in &b.agents {
        let mut flags = Vec::new();
        if a.waits {
            flags.push("waits for you".to_string());
        }
        if a.stalled {
            flags.push("stalled".into());
        }
        if a.checks_failed > 0 {
            flags.push(format!("{} check(s) failed", a.checks_failed));
        }
        if !a.overlaps.is_empty() {
            flags.push(format!("overlaps {}", a.overlaps.join(", ")));
        }
        let summary: String = esc(&a.summary).chars().take(40).collect();
        outln!("  {} {:<8} {:<10} {:>3} hunk(s)  {summary}{}", a.mark, a.id, a.state, a.hunks, if flags.is_empty() { String::new() } else { format!("  [{}]", flags.join("; ")) });
    }
    for o in &b.overlaps {
        outln!("  overlap   {}:{}-{}  {} and {}", esc(&o.path), o.lines.0, o.lines.1, o.agents[0], o.agents[1]);
    }
    if b.order.len() > 1 {
        outln!("  land in this order (fewest conflicts): {}", b.order.join(", "));
    }
}

/// Pretty JSON on stdout (`--json`): raw, agent text included, as JSON escapes it.
pub(crate) fn print_json(v: &impl serde::Serialize) -> cairn_core::error::Result<()> {
    outln!("{}", serde_json::to_string_pretty(v)?);
    Ok(())
}

/// `cairn doctor`: one line per database, then the index's drift; exit 1 when not ok.
pub(crate) fn doctor(report: &cairn_core::doctor::Report, json: bool) -> i32 {
    if json {
        let _ = print_json(report);
    } else {
        for d in &report.databases {
            outln!("{}: {}", d.path.display(), esc(&d.result));
        }
        for (what, paths) in [("on disk, not indexed", &report.unindexed), ("indexed, not on disk", &report.ghosts), ("changed since indexed", &report.stale)] {
            if !paths.is_empty() {
                outln!("{} path(s) {what}: {}", paths.len(), esc(&paths.iter().take(10).cloned().collect::<Vec<_>>().join(", ")));
            }
        }
        if !report.orphans.is_empty() {
            outln!("{} overlay(s) with no agent record (bin.db lost commits, e.g. its -wal file was deleted): {}", report.orphans.len(), esc(&report.orphans.join(", ")));
        }
        if let Some(why) = &report.foreign {
            outln!("state: not this Cairn's ({}): `cairn init` sets it aside, `cairn init --adopt` keeps it (see :help cairn-state-origin)", esc(why));
        }
        for p in &report.set_aside {
            outln!("set aside by init (kept, never read; yours to look at or remove): {}", esc(&p.display().to_string()));
        }
        if !report.special.is_empty() {
            outln!("{} special file(s) (FIFOs, sockets, devices: never indexed or opened): {}", report.special.len(), esc(&report.special.iter().take(10).cloned().collect::<Vec<_>>().join(", ")));
        }
        match (&report.jj.version, &report.jj.program) {
            (Some(v), Some(p)) if report.jj.on => outln!("jj: on, jj {v} ({}): proposals are jj changes (see :help cairn-jj)", esc(&p.display().to_string())),
            _ if report.jj.error => outln!("jj: ERROR ({})", esc(&report.jj.why)),
            _ => outln!("jj: off ({})", esc(&report.jj.why)),
        }
        match report.confined_runs.as_str() {
            "ok" => outln!("confined runs: ok (checks, run_command and session exec, see :help cairn-runs)"),
            why => outln!("confined runs: unavailable, runs are refused: {}", esc(why)),
        }
        for layer in &report.runs_layers {
            outln!("  {}", esc(layer));
        }
        outln!("{}", if report.ok { "ok" } else { "problems found (see above)" });
    }
    i32::from(!report.ok)
}

/// Prints an error the one way the CLI does: message, then a hint.
pub fn render_error(e: &cairn_core::error::Error) {
    let mut err = std::io::stderr().lock();
    // Errors name paths and carry messages an agent controls.
    let _ = writeln!(err, "cairn: error: {}", cairn_core::display::escape(&e.to_string()));
    if let Some(h) = e.hint() {
        let _ = writeln!(err, "hint: {h}");
    }
}
