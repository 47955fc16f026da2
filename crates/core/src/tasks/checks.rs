//! Running a task's `cmd` checks: each in a fresh confined run workspace of the task's
//! proposal, or of the project as it is when the task has none ([`crate::runbox`]), with a timeout, and the output's tail in
//! `.grail/runs/<task>-<timestamp>-<n>.log`. The result is stored on the task.

use super::{refused, CheckResult, TaskRow};
use crate::error::{Error, Result};
use crate::project::Project;
use crate::runbox;
use std::time::Duration;

/// The checks that keep a task from closing, as `desc (result)`: those that count (a
/// human wrote or approved them) and do not pass.
pub fn blocking(t: &TaskRow) -> Vec<String> {
    t.checks
        .iter()
        .filter(|c| c.counts() && c.result != CheckResult::Pass)
        .map(|c| format!("{} ({})", c.desc, if c.result == CheckResult::Fail { "fail" } else { "pending" }))
        .collect()
}

/// Runs the `cmd` checks of task `id` (`only`: these indices) and stores the results. When a
/// human asks, checks an agent wrote and no human approved are not run (they would run the
/// agent's command on the human's word) unless `unapproved`; they stay pending, listed by
/// [`waiting_for_approval`].
pub fn run(project: &Project, who: &str, id: &str, only: Option<&[usize]>, unapproved: bool) -> Result<super::Task> {
    let mut t = super::get(project, id)?.row;
    let indices: Vec<usize> = match only {
        Some(list) => list.to_vec(),
        None => (0..t.checks.len()).collect(),
    };
    if let Some(bad) = indices.iter().find(|i| **i >= t.checks.len()) {
        return Err(refused(&t.id, format!("has no check {bad}")));
    }
    let indices: Vec<usize> = if crate::store::bin::is_human(who) && !unapproved {
        indices.into_iter().filter(|i| t.checks[*i].counts()).collect()
    } else {
        indices
    };
    run_these(project, who, &mut t, &indices)?;
    super::get(project, &t.id)
}

/// The `cmd` checks of `t` an agent wrote that wait for a human's approval (not run on a
/// human's `cairn task check` without `--unapproved`).
pub fn waiting_for_approval(t: &TaskRow) -> Vec<usize> {
    t.checks.iter().enumerate().filter(|(_, c)| c.cmd.is_some() && !c.counts()).map(|(i, _)| i).collect()
}

/// Runs the `cmd` checks that do not pass yet (before closing).
pub(super) fn run_unpassed(project: &Project, who: &str, t: &mut TaskRow) -> Result<()> {
    let indices: Vec<usize> = t.checks.iter().enumerate().filter(|(_, c)| c.cmd.is_some() && c.counts() && c.result != CheckResult::Pass).map(|(i, _)| i).collect();
    if indices.is_empty() {
        return Ok(());
    }
    run_these(project, who, t, &indices)
}

fn run_these(project: &Project, who: &str, t: &mut TaskRow, indices: &[usize]) -> Result<()> {
    // Every check gets a fresh run workspace of the proposal as accept would leave it: never
    // the preview the user may be editing, never the working tree. A task without a proposal
    // (work done by hand) is checked on the project as it is: an empty proposal.
    let changes = match &t.agent {
        Some(agent) => crate::review::diff::changes(project, agent)?,
        None => Vec::new(),
    };
    let mut summary = Vec::new();
    for &i in indices {
        let check = &mut t.checks[i];
        let Some(cmd) = check.cmd.clone() else { continue };
        let timeout = Duration::from_secs(check.timeout.unwrap_or(project.config.tasks.check_timeout_seconds));
        let log_rel = format!(".grail/runs/{}-{}-{i}.log", t.id, crate::time::now_ms());
        let req = runbox::Request { cmd: &cmd, cwd: check.cwd.as_deref().unwrap_or(""), timeout, capture: false };
        let passed = run_one(project, &changes, &req, &log_rel)?;
        check.result = if passed { CheckResult::Pass } else { CheckResult::Fail };
        check.log = Some(log_rel);
        summary.push(format!("{}: {}", check.desc, if passed { "pass" } else { "fail" }));
    }
    project.bin()?.task_update(t, who, &format!("ran checks: {}", summary.join("; ")))
}

/// Runs one check confined; writes its log; true when it exits 0 in time.
fn run_one(project: &Project, changes: &[crate::review::diff::FileChange], req: &runbox::Request, log_rel: &str) -> Result<bool> {
    let log_path = project.root.join(log_rel);
    if let Some(dir) = log_path.parent() {
        project.state_dir(dir)?;
    }
    let outcome = runbox::run(project, changes, req)?;
    let mut log = Vec::new();
    log.extend_from_slice(&header(&outcome));
    if outcome.output_dropped > 0 {
        log.extend_from_slice(format!("[cairn] ... {} earlier bytes of output dropped\n", outcome.output_dropped).as_bytes());
    }
    log.extend_from_slice(&outcome.output);
    log.extend_from_slice(format!("\n[cairn] `{}` {} after {} ms\n", req.cmd, outcome.exit, outcome.duration.as_millis()).as_bytes());
    std::fs::write(&log_path, &log).map_err(|e| Error::io(&log_path, e))?;
    Ok(outcome.exit.success())
}

/// The first line of a run's log: how it was confined (the network opt-in is always said).
pub fn header(outcome: &runbox::Outcome) -> Vec<u8> {
    if let Some(missing) = &outcome.unconfined {
        return format!("[cairn] UNCONFINED run ([run] allow_unconfined; missing: {missing}): a throwaway copy and a cleared environment only\n").into_bytes();
    }
    match outcome.network.as_str() {
        "host" => b"[cairn] confined run, network: HOST (opted in by [run] network = \"host\")\n".to_vec(),
        _ => b"[cairn] confined run, network: none\n".to_vec(),
    }
}
