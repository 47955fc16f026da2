//! What Cairn does to an agent's change: made when the agent starts (`start`) or reaches review
//! (`record`), rewritten as the proposal changes (`update`), abandoned (`remove`), brought
//! back (`bring_back`); and what it finds users did to it (`judge`, `gone`).
//!
//! A rewrite is one `jj diffedit` (no workspace, one operation) when jj checks out every path
//! it names, i.e. the change touches them already; else it goes through the agent's workspace
//! (`change.rs`): attached for the agent's working life (each write one snapshot), or for this
//! one write.

use super::change::{self, Written};
use super::editor::{self, Bases, Rewrite, Want};
use super::{diff_print, fingerprint, live, message, wanted, wants, workspace, Cli};
use crate::error::{Error, Result};
use crate::project::Project;
use crate::store::bin::{AgentRecord, Bin, JjRow};


/// A change a killed process made for `rec` already (its trailer finds it): that one is taken
/// (and written again), never a second; any further ones are abandoned.
fn found(cli: &Cli, project: &Project, rec: &AgentRecord, status: &str) -> Result<Option<JjRow>> {
    let pattern = format!("description(regex:\"(?m)^Cairn-Agent: {}$\")", rec.id);
    let out = cli.run_quiet(&project.root, &["log", "--no-graph", "-r", &pattern, "-T", "change_id ++ \" \" ++ commit_id ++ \"\\n\""])?;
    let mut found = out.lines().filter_map(|l| l.split_once(' '));
    let Some((change, commit)) = found.next() else { return Ok(None) };
    for (_, extra) in found {
        cli.run_quiet(&project.root, &["abandon", extra])?;
    }
    let diff = diff_print(cli, project, commit)?;
    // Its content is not known: the next write rewrites it.
    Ok(Some(JjRow { agent: rec.id.clone(), change: change.to_string(), commit: commit.to_string(), wanted: "?".into(), diff, status: status.into(), note: None, op: None }))
}

/// The agent started working: its change is made, empty, as the working copy of the agent's
/// workspace (`working`).
pub(super) fn start(cli: &Cli, project: &Project, bin: &Bin, rec: &AgentRecord) -> Result<()> {
    if let Some(row) = found(cli, project, rec, "working")? {
        return bin.jj_put(&row);
    }
    let w = change::open_new(cli, project, &rec.id, &message(project, rec))?;
    bin.jj_event(&rec.id, &w.change, "made: the agent works in it (`jj log` shows it, `jj diff -r` what it has written)")?;
    let row = JjRow { agent: rec.id.clone(), change: w.change, commit: w.commit, wanted: String::new(), diff: fingerprint(&w.diff), status: "working".into(), note: None, op: None };
    bin.jj_put(&row)?;
    // An agent that has written already (made late: the start's jj failed, the setting changed).
    if rec.state == crate::lifecycle::State::Executing && !crate::review::changes(project, &rec.id)?.is_empty() {
        return update(cli, project, bin, rec, row, true);
    }
    Ok(())
}

/// The agent reached review without a change: one is made holding the proposal.
pub(super) fn record(cli: &Cli, project: &Project, bin: &Bin, rec: &AgentRecord) -> Result<()> {
    if let Some(row) = found(cli, project, rec, "working")? {
        bin.jj_put(&row)?;
        return update(cli, project, bin, rec, row, false);
    }
    let changes = crate::review::changes(project, &rec.id)?;
    let wanted = wanted(&changes);
    let made = change::open_new(cli, project, &rec.id, &message(project, rec));
    let written = made.and_then(|_| change::write(cli, project, &rec.id, &wants(changes), None));
    change::detach(cli, project, &rec.id);
    let w = written?;
    let diff = fingerprint(&w.diff);
    bin.jj_event(&rec.id, &w.change, "recorded: the proposal (`jj diff -r` shows it)")?;
    bin.jj_put(&JjRow { agent: rec.id.clone(), change: w.change, commit: w.commit, wanted, diff, status: "proposed".into(), note: None, op: None })
}

/// Brings the change in line with the proposal as it is now. `keep`: the agent is working (its
/// workspace may stay; `working`); else it has stopped (its workspace is forgotten;
/// `proposed`). Nothing runs in jj when the change holds the proposal already.
pub(super) fn update(cli: &Cli, project: &Project, bin: &Bin, rec: &AgentRecord, mut row: JjRow, keep: bool) -> Result<()> {
    let changes = crate::review::changes(project, &rec.id)?;
    let wanted = wanted(&changes);
    let status = if keep { "working" } else { "proposed" };
    if wanted == row.wanted && row.status == status {
        return Ok(());
    }
    let Some(commit) = check_live(cli, project, bin, &mut row)? else { return Ok(()) };
    let wrote = wanted != row.wanted;
    if wrote {
        let w = write(cli, project, rec, &row, &commit, &wants(changes))?;
        row.diff = fingerprint(&w.diff);
        row.commit = w.commit;
        row.wanted = wanted;
        row.note = None;
    }
    if !keep {
        change::detach(cli, project, &rec.id);
    }
    if row.status == "working" && !keep && super::own_summary(rec).is_some() {
        // Made when the agent started, described by its task: now by its own summary.
        cli.run_quiet(&project.root, &["describe", "-r", &row.commit, "-m", &message(project, rec)])?;
        row.commit = live(cli, project, &row.change)?.ok_or_else(|| Error::Jj(format!("change {} is gone after its description", row.change)))?;
    }
    let was = std::mem::replace(&mut row.status, status.into());
    bin.jj_put(&row)?;
    if was == "working" && !keep {
        bin.jj_event(&rec.id, &row.change, "proposed: the change holds the proposal")?;
    }
    if wrote && !keep {
        workspace::refresh_preview(cli, project, &rec.id);
    }
    Ok(())
}

/// Writes `wants` into the change at `commit`: in the agent's workspace when it is attached,
/// else by `jj diffedit`, else through the workspace attached now (it stays while the agent
/// works; `update` forgets it otherwise).
fn write(cli: &Cli, project: &Project, rec: &AgentRecord, row: &JjRow, commit: &str, wants: &[Want]) -> Result<Written> {
    let id = rec.id.as_str();
    let through_workspace = |bases: Option<&Bases>| {
        let w = change::write_to(cli, project, id, &row.change, wants, bases);
        editor::clear(project, id);
        w
    };
    if change::attached(project, id) {
        // Right after it was made, the change touches nothing: what jj checks out in the
        // workspace is the parents' version of every path.
        if row.wanted.is_empty() {
            return through_workspace(None);
        }
        return match editor::rewrite(cli, project, id, commit, &[], true)? {
            Rewrite::Missing(bases) => through_workspace(Some(&bases)),
            Rewrite::Done => Err(Error::Jj("the diff editor wrote where it was asked to read".into())),
        };
    }
    match editor::rewrite(cli, project, id, commit, wants, false)? {
        Rewrite::Done => {
            let out = cli.run_quiet(&project.root, &["log", "--no-graph", "-r", &format!("change_id({})", row.change), "-T", "commit_id ++ \"\\n\" ++ diff.git(0)"])?;
            let (commit, diff) = out.split_once('\n').ok_or_else(|| Error::Jj(format!("change {} is gone after its rewrite", row.change)))?;
            Ok(Written { change: row.change.clone(), commit: commit.to_string(), diff: diff.to_string() })
        }
        Rewrite::Missing(bases) => {
            if let Err(e) = change::attach(cli, project, id, commit) {
                editor::clear(project, id);
                return Err(e);
            }
            through_workspace(Some(&bases))
        }
    }
}

/// Abandons the change (accept: after a snapshot, so `@` holds the content that landed).
pub(super) fn remove(cli: &Cli, project: &Project, bin: &Bin, mut row: JjRow, status: &str) -> Result<()> {
    change::detach(cli, project, &row.agent);
    super::forget_preview(project, &row.agent);
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
pub(super) fn bring_back(cli: &Cli, project: &Project, bin: &Bin, rec: &AgentRecord, mut row: JjRow) -> Result<()> {
    if row.status == "back" {
        // `jj undo` brought it back already.
        row.status = "proposed".into();
        row.op = None;
        bin.jj_put(&row)?;
        return update(cli, project, bin, rec, row, false);
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
                return update(cli, project, bin, rec, row, false);
            }
        }
    }
    record(cli, project, bin, rec)
}

/// What became of a change Cairn wrote: `Ok(Some(commit))` to go on with, `Ok(None)` when it
/// was abandoned or edited in jj (recorded on the row, left alone).
fn check_live(cli: &Cli, project: &Project, bin: &Bin, row: &mut JjRow) -> Result<Option<String>> {
    match live(cli, project, &row.change)? {
        None => gone(cli, project, bin, row).map(|_| None),
        Some(commit) => judge(cli, project, bin, row, commit),
    }
}

/// A change seen at `commit`: rebased by jj (same diff: kept, the row follows) or edited there
/// (recorded, left alone: `Ok(None)`).
pub(super) fn judge(cli: &Cli, project: &Project, bin: &Bin, row: &mut JjRow, commit: String) -> Result<Option<String>> {
    if commit != row.commit {
        if diff_print(cli, project, &commit)? != row.diff {
            change::detach(cli, project, &row.agent);
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
pub(super) fn gone(cli: &Cli, project: &Project, bin: &Bin, row: &mut JjRow) -> Result<()> {
    change::detach(cli, project, &row.agent);
    row.status = "gone".into();
    row.note = Some("abandoned in jj: Cairn does not re-create it".into());
    bin.jj_put(row)?;
    bin.jj_event(&row.agent, &row.change, "was abandoned in jj: Cairn does not re-create it")
}
