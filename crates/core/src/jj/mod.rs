//! Jujutsu (`[jj]`): every agent is a jj change.
//!
//! | Cairn                     | jj                                                              |
//! |---------------------------|-----------------------------------------------------------------|
//! | agent starts working      | with `[jj] create_change_on_spawn`: a change on the parents of `@`, the working copy of the agent's workspace |
//! | agent writes              | the change rewritten to hold what it has written so far (one snapshot of its workspace) |
//! | agent reaches `reviewing` | the change holds exactly the proposal (made now without `create_change_on_spawn`); its workspace is forgotten |
//! | hunk accepted / rejected  | the change rewritten to what is still proposed (same change id, `jj diffedit`) |
//! | accept                    | content lands in the files (journaled, as without jj); the change is abandoned once jj has snapshotted them into `@` |
//! | reject                    | the change is abandoned                                         |
//! | undo                      | the abandon operation is reverted: the change is back           |
//! | preview                   | a jj workspace whose working copy is the change                 |
//!
//! Cairn drives the user's `jj` CLI (see ARCHITECTURE.md, "Why the jj CLI"): `cli.rs` runs it,
//! `editor.rs` rewrites a change in place through `jj diffedit`, `change.rs` makes a change and
//! grows it through the agent's sparse workspace, `write.rs` decides which. Every call runs
//! under the project's review lock, reads pass `--ignore-working-copy`, and nothing here moves
//! `@` or writes the user's files. jj failures never fail the Cairn operation that triggered
//! them: they are kept as the agent's jj note and logged.
//!
//! What jj users do to an agent's change is noticed, never overwritten: a change abandoned
//! there is `gone`, one edited there is `edited` (a rebase by jj is neither), one visible again
//! after an accept (`jj undo`) is `back`.

pub mod cli;
mod change;
mod detect;
pub mod editor;
mod workspace;
mod write;

pub use cli::Cli;
pub use detect::{detect, Detection, OLDEST};
pub use workspace::{collect, forget_preview, preview};

use crate::error::{Error, Result};
use crate::lifecycle::State;
use crate::project::Project;
use crate::review::lock::ReviewLock;
use crate::review::FileChange;
use crate::store::bin::{AgentRecord, JjRow};
use editor::Want;

/// Brings agent `id`'s jj change in line with the agent, under the review lock the caller
/// holds: made when the agent starts working (`[jj] create_change_on_spawn`) or reaches
/// review, rewritten as it writes and whenever the proposal changed, abandoned (or brought
/// back) as the agent is accepted, rejected or undone. Never fails: a problem is kept as the
/// agent's jj note.
pub fn sync(project: &Project, _lock: &ReviewLock, id: &str) {
    let (detection, cli) = detect(project);
    let Some(cli) = cli else {
        if detection.error {
            // `[jj] enabled = true` and no usable jj: said on the agent, not silently off.
            note(project, id, &detection.why);
        }
        return;
    };
    // jj refuses now and then while the user's own jj commands run (a lock, a concurrent
    // operation): a failed step is tried again a little later; each step is idempotent.
    let mut result = sync_one(&cli, project, id);
    for pause in [100, 400, 1000] {
        if !matches!(result, Err(Error::Jj(_))) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(pause));
        result = sync_one(&cli, project, id);
    }
    if let Err(e) = result {
        tracing::warn!(target: "cairn::jj", "agent {id}: {e}");
        note(project, id, &e.to_string());
    }
}

fn note(project: &Project, id: &str, what: &str) {
    if let Ok(bin) = project.bin() {
        let mut row = bin.jj_get(id).ok().flatten().unwrap_or_else(|| blank(id));
        if row.note.as_deref() != Some(what) {
            row.note = Some(what.to_string());
            let _ = bin.jj_put(&row);
        }
    }
}

/// [`sync`], taking the review lock (for callers that do not hold it).
pub fn sync_locked(project: &Project, id: &str) {
    let enabled = project.config.jj.enabled.as_str();
    if enabled == "false" || (enabled != "true" && !project.root.join(".jj").is_dir()) {
        return;
    }
    if let Ok(lock) = crate::review::lock::acquire(project) {
        sync(project, &lock, id);
    }
}

/// Agent `id` started working (a run claimed, a wrap or MCP session begun): with `[jj]
/// create_change_on_spawn`, its change is made now.
pub fn started(project: &Project, id: &str) {
    if project.config.jj.create_change_on_spawn {
        sync_locked(project, id);
    }
}

fn blank(id: &str) -> JjRow {
    JjRow { agent: id.to_string(), change: String::new(), commit: String::new(), wanted: String::new(), diff: String::new(), status: "unrecorded".into(), note: None, op: None }
}

fn sync_one(cli: &Cli, project: &Project, id: &str) -> Result<()> {
    let bin = project.bin()?;
    let rec = bin.get(id)?;
    let row = bin.jj_get(id)?.filter(|r| !r.change.is_empty());
    let id = rec.id.as_str();
    let status = row.as_ref().map(|r| r.status.clone()).unwrap_or_default();
    let status = status.as_str();
    let as_ = |verb: &str| cli.acting(&format!("{verb} {id}"));
    let spawn = project.config.jj.create_change_on_spawn;
    match (rec.state, row) {
        (State::Generating | State::Executing, None) if spawn => write::start(&as_("spawn"), project, &bin, &rec),
        (State::Executing, Some(row)) if matches!(status, "working" | "proposed") => write::update(&as_("write"), project, &bin, &rec, row, true),
        (State::Reviewing, _) if rec.accept_pending => Ok(()),
        (State::Reviewing, None) => write::record(&as_("propose"), project, &bin, &rec),
        (State::Reviewing, Some(row)) if status == "working" => write::update(&as_("propose"), project, &bin, &rec, row, false),
        (State::Reviewing, Some(row)) if status == "proposed" => write::update(&as_("review"), project, &bin, &rec, row, false),
        (State::Accepted, Some(row)) if matches!(status, "proposed" | "working") => write::remove(&as_("accept"), project, &bin, row, "squashed"),
        (State::Undone, Some(row)) if matches!(status, "squashed" | "back") => write::bring_back(&as_("undo"), project, &bin, &rec, row),
        (State::Rejected | State::Errored, Some(row)) if matches!(status, "proposed" | "working") => write::remove(&as_("reject"), project, &bin, row, "abandoned"),
        _ => Ok(()),
    }
}

/// The summary agent `rec` gave of its proposal itself (`submit_result`, an MCP session's
/// finish), if any: not one Cairn derived from the changed paths or a wrap session's turn.
fn own_summary(rec: &AgentRecord) -> Option<&str> {
    let s = rec.submission.as_ref().filter(|s| s.get("derived").and_then(|d| d.as_bool()) != Some(true))?;
    s.get("summary").and_then(|s| s.as_str()).filter(|s| !s.trim().is_empty() && rec.provider != crate::lifecycle::Provider::Wrap)
}

/// The description of agent `rec`'s change: the `[jj] describe` template on one line (its own
/// summary, else its task's first line), and the trailer that finds it again.
fn message(project: &Project, rec: &AgentRecord) -> String {
    let summary = own_summary(rec).map(str::to_string).unwrap_or_else(|| rec.task.lines().next().unwrap_or_default().to_string());
    let summary: String = crate::display::escape_line(&summary).chars().take(200).collect();
    let line = project.config.jj.describe.replace("{agent}", &rec.id).replace("{summary}", &summary);
    format!("{}\n\nCairn-Agent: {}\n", crate::display::escape_line(line.trim()), rec.id)
}

fn hex(h: &[u8]) -> String {
    h.iter().map(|b| format!("{b:02x}")).collect()
}

/// What the change should hold, as a fingerprint: each path with its old and new content.
fn wanted(changes: &[FileChange]) -> String {
    let mut all = Vec::new();
    for c in changes {
        all.extend_from_slice(c.path.as_bytes());
        for side in [&c.old, &c.new] {
            all.push(0);
            all.extend_from_slice(&side.as_deref().map(crate::store::hash_bytes).unwrap_or_default());
        }
        all.extend_from_slice(&c.new_mode.unwrap_or(0).to_le_bytes());
    }
    hex(&crate::store::hash_bytes(&all))
}

fn wants(changes: Vec<FileChange>) -> Vec<Want> {
    changes.into_iter().map(|c| Want { path: c.path, old: c.old, new: c.new.map(|b| (b, c.new_mode.unwrap_or(0o644))) }).collect()
}

/// A fingerprint of jj's diff of a change (`git`, no context) without its positions (line
/// numbers, blob ids): a rebase keeps it, an edit changes it.
fn fingerprint(diff: &str) -> String {
    let kept: String = diff.lines().filter(|l| !l.starts_with("@@") && !l.starts_with("index ")).flat_map(|l| [l, "\n"]).collect();
    hex(&crate::store::hash_bytes(kept.as_bytes()))
}

/// The [`fingerprint`] of `commit`'s diff.
fn diff_print(cli: &Cli, project: &Project, commit: &str) -> Result<String> {
    Ok(fingerprint(&cli.run_quiet(&project.root, &["log", "--no-graph", "-r", commit, "-T", "diff.git(0)"])?))
}

/// The visible commit of change `change` (None: abandoned or hidden).
fn live(cli: &Cli, project: &Project, change: &str) -> Result<Option<String>> {
    let out = cli.run_quiet(&project.root, &["log", "--no-graph", "-r", &format!("change_id({change})"), "-T", "commit_id ++ \"\\n\""])?;
    let commits: Vec<&str> = out.lines().filter(|l| !l.is_empty()).collect();
    match commits.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some(one.to_string())),
        _ => Err(Error::Jj(format!("change {change} is divergent in jj ({} commits): resolve it with `jj abandon` of all but one", commits.len()))),
    }
}

/// Notices what jj users did to agents' changes (abandoned, edited, brought back after an
/// accept) and records it on the rows; for `status` and `list-agents`.
pub fn notice(project: &Project) -> Result<()> {
    let (_, Some(cli)) = detect(project) else { return Ok(()) };
    let _lock = crate::review::lock::acquire(project)?;
    let bin = project.bin()?;
    // Reviewing agents whose change a killed process (or a failed jj) did not record, or left
    // as it was while the agent worked, get it now; so do agents that ended while working.
    for rec in bin.in_state(State::Reviewing)? {
        let row = bin.jj_get(&rec.id)?;
        if !rec.accept_pending && row.as_ref().is_none_or(|r| r.change.is_empty() || r.status == "working") {
            if let Err(e) = sync_one(&cli, project, &rec.id) {
                tracing::warn!(target: "cairn::jj", "agent {}: {e}", rec.id);
            }
        }
    }
    for row in bin.jj_all()?.into_iter().filter(|r| r.status == "working") {
        if matches!(bin.get(&row.agent).map(|r| r.state), Ok(State::Rejected | State::Errored | State::Accepted)) {
            if let Err(e) = sync_one(&cli, project, &row.agent) {
                tracing::warn!(target: "cairn::jj", "agent {}: {e}", row.agent);
            }
        }
    }
    let rows = bin.jj_all()?;
    if rows.is_empty() {
        return Ok(());
    }
    let out = cli.run_quiet(&project.root, &["log", "--no-graph", "-r", "description(regex:\"(?m)^Cairn-Agent: \")", "-T", "change_id ++ \" \" ++ commit_id ++ \"\\n\""])?;
    let visible: Vec<(&str, &str)> = out.lines().filter_map(|l| l.split_once(' ')).collect();
    for mut row in rows.into_iter().filter(|r| !r.change.is_empty()) {
        let seen = visible.iter().find(|(c, _)| *c == row.change).map(|(_, commit)| commit.to_string());
        match (row.status.as_str(), seen) {
            ("proposed" | "working", None) => write::gone(&cli, project, &bin, &mut row)?,
            ("proposed" | "working", Some(commit)) if commit != row.commit => {
                write::judge(&cli, project, &bin, &mut row, commit)?;
            }
            ("squashed", Some(_)) => {
                row.status = "back".into();
                row.note = Some("visible again in jj after Cairn accepted it (jj undo?): its content is in the working copy; `cairn undo` takes it out, `jj abandon` drops the change".into());
                bin.jj_put(&row)?;
                bin.jj_event(&row.agent, &row.change, "is visible again in jj after the accept (jj undo?)")?;
            }
            ("back", None) => {
                row.status = "squashed".into();
                row.note = None;
                bin.jj_put(&row)?;
            }
            _ => {}
        }
    }
    Ok(())
}
