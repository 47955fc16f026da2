//! Jujutsu (`[jj]`): every proposal is a jj change.
//!
//! | Cairn                     | jj                                                              |
//! |---------------------------|-----------------------------------------------------------------|
//! | agent reaches `reviewing` | a change on the parents of `@`, holding exactly the proposal    |
//! | hunk accepted / rejected  | the change rewritten to what is still proposed (same change id) |
//! | accept                    | content lands in the files (journaled, as without jj); the change is abandoned, its content is `@`'s at the snapshot |
//! | reject                    | the change is abandoned                                         |
//! | undo                      | the abandon operation is reverted: the change is back           |
//! | preview                   | a jj workspace whose working copy is the change                 |
//!
//! Cairn drives the user's `jj` CLI (see ARCHITECTURE.md, "Why the jj CLI"): `cli.rs` runs it,
//! `change.rs` writes a change's tree through a sparse scratch workspace. Every call runs under
//! the project's review lock, reads pass `--ignore-working-copy`, and nothing here moves `@`
//! or writes the user's files. jj failures never fail the Cairn operation that triggered them:
//! they are kept as the agent's jj note and logged.
//!
//! What jj users do to an agent's change is noticed, never overwritten: a change abandoned
//! there is `gone`, one edited there is `edited` (a rebase by jj is neither), one visible again
//! after an accept (`jj undo`) is `back`.

pub mod cli;
mod change;
mod detect;
mod workspace;

pub use cli::Cli;
pub use detect::{detect, Detection, OLDEST};
pub use workspace::{collect, forget_preview, preview};

use crate::error::{Error, Result};
use crate::lifecycle::State;
use crate::project::Project;
use crate::review::lock::ReviewLock;
use crate::review::FileChange;
use crate::store::bin::{AgentRecord, Bin, JjRow};
use change::{Target, Want};

/// Brings agent `id`'s jj change in line with the agent, under the review lock the caller
/// holds: records it once the agent is reviewing, rewrites it when the proposal changed, and
/// abandons it (or brings it back) as the agent is accepted, rejected or undone. Never fails:
/// a problem is kept as the agent's jj note.
pub fn sync(project: &Project, _lock: &ReviewLock, id: &str) {
    let (_, Some(cli)) = detect(project) else { return };
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
        if let Ok(bin) = project.bin() {
            let mut row = bin.jj_get(id).ok().flatten().unwrap_or_else(|| blank(id));
            row.note = Some(e.to_string());
            let _ = bin.jj_put(&row);
        }
    }
}

/// [`sync`], taking the review lock (for callers that do not hold it).
pub fn sync_locked(project: &Project, id: &str) {
    if !project.root.join(".jj").is_dir() || project.config.jj.enabled == "false" {
        return;
    }
    if let Ok(lock) = crate::review::lock::acquire(project) {
        sync(project, &lock, id);
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
    match (rec.state, row) {
        (State::Reviewing, _) if rec.accept_pending => Ok(()),
        (State::Reviewing, None) => record(&cli.acting(&format!("propose {id}")), project, &bin, &rec),
        (State::Reviewing, Some(row)) if row.status == "proposed" => rewrite(&cli.acting(&format!("review {id}")), project, &bin, &rec, row),
        (State::Accepted, Some(row)) if row.status == "proposed" => remove(&cli.acting(&format!("accept {id}")), project, &bin, row, "squashed"),
        (State::Undone, Some(row)) if row.status == "squashed" || row.status == "back" => bring_back(&cli.acting(&format!("undo {id}")), project, &bin, &rec, row),
        (State::Rejected | State::Errored, Some(row)) if row.status == "proposed" => remove(&cli.acting(&format!("reject {id}")), project, &bin, row, "abandoned"),
        _ => Ok(()),
    }
}

/// The description of agent `rec`'s change: the `[jj] describe` template on one line, and the
/// trailer that finds it again.
fn message(project: &Project, rec: &AgentRecord) -> String {
    let summary = rec.submission.as_ref().and_then(|s| s.get("summary")).and_then(|s| s.as_str()).map(str::to_string).unwrap_or_else(|| rec.task.lines().next().unwrap_or_default().to_string());
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

/// jj's diff of `commit` without its positions (line numbers, blob ids): a rebase keeps it,
/// an edit changes it.
fn diff_print(cli: &Cli, project: &Project, commit: &str) -> Result<String> {
    let diff = cli.run_quiet(&project.root, &["diff", "--git", "--context", "0", "-r", commit])?;
    let kept: String = diff.lines().filter(|l| !l.starts_with("@@") && !l.starts_with("index ")).flat_map(|l| [l, "\n"]).collect();
    Ok(hex(&crate::store::hash_bytes(kept.as_bytes())))
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

fn record(cli: &Cli, project: &Project, bin: &Bin, rec: &AgentRecord) -> Result<()> {
    let changes = crate::review::changes(project, &rec.id)?;
    let wanted = wanted(&changes);
    let message = message(project, rec);
    // A process killed while recording may have made the change already (the trailer finds
    // it): that one is written again, never a second.
    let pattern = format!("description(regex:\"(?m)^Cairn-Agent: {}$\")", rec.id);
    let found = cli.run_quiet(&project.root, &["log", "--no-graph", "-r", &pattern, "-T", "commit_id ++ \"\\n\""])?;
    let mut found = found.lines().filter(|l| !l.is_empty());
    let target = match found.next() {
        Some(commit) => {
            for extra in found {
                cli.run_quiet(&project.root, &["abandon", extra])?;
            }
            Target::Existing { commit }
        }
        // No parents given: jj puts a new workspace's change on the parents of `@` (after it
        // has snapshotted the working copy, so a git HEAD moved in a colocated repo is seen).
        None => Target::New { parents: &[], message: &message },
    };
    let w = change::write(cli, project, &rec.id, target, &wants(changes))?;
    let diff = diff_print(cli, project, &w.commit)?;
    bin.jj_event(&rec.id, &w.change, "recorded: the proposal (`jj diff -r` shows it)")?;
    bin.jj_put(&JjRow { agent: rec.id.clone(), change: w.change, commit: w.commit, wanted, diff, status: "proposed".into(), note: None, op: None })
}

/// What became of a `proposed` change in jj: `Ok(Some(commit))` to go on with, `Ok(None)`
/// when it was abandoned or edited there (recorded on the row, left alone).
fn check_live(cli: &Cli, project: &Project, bin: &Bin, row: &mut JjRow) -> Result<Option<String>> {
    match live(cli, project, &row.change)? {
        None => gone(bin, row).map(|_| None),
        Some(commit) => judge(cli, project, bin, row, commit),
    }
}

/// A `proposed` change seen at `commit`: rebased by jj (same diff: kept, the row follows) or
/// edited there (recorded, left alone: `Ok(None)`).
fn judge(cli: &Cli, project: &Project, bin: &Bin, row: &mut JjRow, commit: String) -> Result<Option<String>> {
    if commit != row.commit {
        if diff_print(cli, project, &commit)? != row.diff {
            row.status = "edited".into();
            row.note = Some("edited in jj since Cairn wrote it: Cairn leaves it as it is".into());
            bin.jj_put(row)?;
            bin.jj_event(&row.agent, &row.change, "was edited in jj: Cairn no longer rewrites it")?;
            return Ok(None);
        }
        row.commit = commit.clone();
        bin.jj_put(row)?;
    }
    Ok(Some(commit))
}

/// The change was abandoned in jj by someone else: said, not re-created.
fn gone(bin: &Bin, row: &mut JjRow) -> Result<()> {
    row.status = "gone".into();
    row.note = Some("abandoned in jj: Cairn does not re-create it".into());
    bin.jj_put(row)?;
    bin.jj_event(&row.agent, &row.change, "was abandoned in jj: Cairn does not re-create it")
}

fn rewrite(cli: &Cli, project: &Project, bin: &Bin, rec: &AgentRecord, mut row: JjRow) -> Result<()> {
    let Some(commit) = check_live(cli, project, bin, &mut row)? else { return Ok(()) };
    let changes = crate::review::changes(project, &rec.id)?;
    let wanted = wanted(&changes);
    if wanted == row.wanted {
        return Ok(());
    }
    let w = change::write(cli, project, &rec.id, Target::Existing { commit: &commit }, &wants(changes))?;
    row.diff = diff_print(cli, project, &w.commit)?;
    row.commit = w.commit;
    row.wanted = wanted;
    row.note = None;
    bin.jj_put(&row)?;
    workspace::refresh_preview(cli, project, &rec.id);
    Ok(())
}

/// Abandons the change (accept: after a snapshot, so `@` holds the content that landed).
fn remove(cli: &Cli, project: &Project, bin: &Bin, mut row: JjRow, status: &str) -> Result<()> {
    forget_preview(project, &row.agent);
    if let Some(commit) = live(cli, project, &row.change)? {
        if status == "squashed" {
            cli.run(&project.root, &["abandon", &commit], &[])?;
        } else {
            cli.run_quiet(&project.root, &["abandon", &commit])?;
        }
        row.op = abandon_op(cli, project, &commit)?;
        row.commit = commit;
    }
    row.status = status.into();
    row.note = None;
    bin.jj_event(&row.agent, &row.change, if status == "squashed" { "abandoned: its content is in the working copy" } else { "abandoned" })?;
    bin.jj_put(&row)
}

/// The operation that abandoned `commit`, from the newest operations.
fn abandon_op(cli: &Cli, project: &Project, commit: &str) -> Result<Option<String>> {
    let log = cli.run_quiet(&project.root, &["op", "log", "--no-graph", "--limit", "20", "-T", "id ++ \" \" ++ description.first_line() ++ \"\\n\""])?;
    Ok(log.lines().find(|l| l.contains("abandon") && l.contains(commit)).and_then(|l| l.split_whitespace().next()).map(str::to_string))
}

/// After an undo: the abandon is reverted (the same change comes back), or, when that cannot
/// be done cleanly, the proposal is recorded as a new change.
fn bring_back(cli: &Cli, project: &Project, bin: &Bin, rec: &AgentRecord, mut row: JjRow) -> Result<()> {
    if row.status == "back" {
        // `jj undo` brought it back already.
        row.status = "proposed".into();
        row.op = None;
        bin.jj_put(&row)?;
        return rewrite(cli, project, bin, rec, row);
    }
    if let Some(op) = row.op.clone() {
        if cli.run_quiet(&project.root, &["op", "revert", &op]).is_ok() {
            if let Ok(Some(commit)) = live(cli, project, &row.change) {
                row.commit = commit;
                row.status = "proposed".into();
                row.op = None;
                bin.jj_put(&row)?;
                bin.jj_event(&row.agent, &row.change, "back (the abandon was reverted)")?;
                // What came back is the change as abandoned; the undo gave back everything the
                // agent proposed (hunks accepted before included).
                return rewrite(cli, project, bin, rec, row);
            }
        }
    }
    record(cli, project, bin, rec)
}

/// Notices what jj users did to agents' changes (abandoned, edited, brought back after an
/// accept) and records it on the rows; for `status` and `list-agents`.
pub fn notice(project: &Project) -> Result<()> {
    let (_, Some(cli)) = detect(project) else { return Ok(()) };
    let _lock = crate::review::lock::acquire(project)?;
    let bin = project.bin()?;
    // Reviewing agents whose change a killed process (or a failed jj) did not record get it
    // now.
    for rec in bin.in_state(State::Reviewing)? {
        if !rec.accept_pending && bin.jj_get(&rec.id)?.is_none_or(|r| r.change.is_empty()) {
            if let Err(e) = sync_one(&cli, project, &rec.id) {
                tracing::warn!(target: "cairn::jj", "agent {}: {e}", rec.id);
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
            ("proposed", None) => gone(&bin, &mut row)?,
            ("proposed", Some(commit)) if commit != row.commit => {
                judge(&cli, project, &bin, &mut row, commit)?;
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
