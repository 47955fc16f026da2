//! Running a task's `cmd` checks: in its agent's materialized workspace (the preview
//! directory, never the working tree), with the project's environment, a timeout, and the
//! output's tail in `.grail/runs/<task>-<timestamp>.log`. The result is stored on the task.

use super::{refused, Check, CheckResult, TaskRow};
use crate::error::{Error, Result};
use crate::project::Project;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Bytes of output kept in a check's log (the tail).
const LOG_TAIL: u64 = 64 * 1024;

/// The checks that keep a task from closing, as `desc (result)`.
pub fn blocking(t: &TaskRow) -> Vec<String> {
    t.checks
        .iter()
        .filter(|c| c.result != CheckResult::Pass)
        .map(|c| format!("{} ({})", c.desc, if c.result == CheckResult::Fail { "fail" } else { "pending" }))
        .collect()
}

/// Runs the `cmd` checks of task `id` (`only`: these indices) and stores the results.
pub fn run(project: &Project, who: &str, id: &str, only: Option<&[usize]>) -> Result<super::Task> {
    let mut t = super::get(project, id)?.row;
    let indices: Vec<usize> = match only {
        Some(list) => list.to_vec(),
        None => (0..t.checks.len()).collect(),
    };
    if let Some(bad) = indices.iter().find(|i| **i >= t.checks.len()) {
        return Err(refused(&t.id, format!("has no check {bad}")));
    }
    run_these(project, who, &mut t, &indices)?;
    super::get(project, &t.id)
}

/// Runs the `cmd` checks that do not pass yet (before closing).
pub(super) fn run_unpassed(project: &Project, who: &str, t: &mut TaskRow) -> Result<()> {
    let indices: Vec<usize> = t.checks.iter().enumerate().filter(|(_, c)| c.cmd.is_some() && c.result != CheckResult::Pass).map(|(i, _)| i).collect();
    if indices.is_empty() {
        return Ok(());
    }
    run_these(project, who, t, &indices)
}

fn run_these(project: &Project, who: &str, t: &mut TaskRow, indices: &[usize]) -> Result<()> {
    let Some(agent) = t.agent.clone() else {
        return Err(refused(&t.id, "has no proposal to check yet (checks run in its agent's workspace)"));
    };
    let workspace = crate::workspace::materialize(project, &agent)?.path;
    let mut summary = Vec::new();
    for &i in indices {
        let check = &mut t.checks[i];
        let Some(cmd) = check.cmd.clone() else { continue };
        let timeout = Duration::from_secs(check.timeout.unwrap_or(project.config.tasks.check_timeout_seconds));
        let log_rel = format!(".grail/runs/{}-{}-{i}.log", t.id, crate::time::now_ms());
        let passed = run_one(project, &workspace, check, &cmd, timeout, &log_rel)?;
        check.result = if passed { CheckResult::Pass } else { CheckResult::Fail };
        check.log = Some(log_rel);
        summary.push(format!("{}: {}", check.desc, if passed { "pass" } else { "fail" }));
    }
    project.bin()?.task_update(t, who, &format!("ran checks: {}", summary.join("; ")))
}

/// Runs one command under `sh -c` in the workspace; true when it exits 0 in time.
fn run_one(project: &Project, workspace: &Path, check: &Check, cmd: &str, timeout: Duration, log_rel: &str) -> Result<bool> {
    let cwd = match check.cwd.as_deref().filter(|c| !c.is_empty() && *c != ".") {
        Some(c) => workspace.join(crate::paths::normalize(c, workspace)?),
        None => workspace.to_path_buf(),
    };
    let log_path = project.root.join(log_rel);
    if let Some(dir) = log_path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    }
    let mut log = std::fs::OpenOptions::new().create(true).truncate(true).read(true).write(true).open(&log_path).map_err(|e| Error::io(&log_path, e))?;
    let out = log.try_clone().map_err(|e| Error::io(&log_path, e))?;
    let err = log.try_clone().map_err(|e| Error::io(&log_path, e))?;
    use std::os::unix::process::CommandExt;
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .current_dir(&cwd)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .process_group(0)
        .spawn()
        .map_err(|e| Error::io(&cwd, e))?;
    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Some(s) = child.try_wait().map_err(|e| Error::io("check command", e))? {
            break Some(s);
        }
        if Instant::now() >= deadline {
            if let Some(pid) = rustix::process::Pid::from_raw(child.id() as i32) {
                let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
            }
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let verdict = match status {
        Some(s) => format!("\n[cairn] `{cmd}` exited with {}\n", s.code().map_or("a signal".to_string(), |c| c.to_string())),
        None => format!("\n[cairn] `{cmd}` timed out after {} s\n", timeout.as_secs()),
    };
    let _ = log.write_all(verdict.as_bytes());
    keep_tail(&mut log);
    Ok(status.is_some_and(|s| s.success()))
}

/// Cuts a log down to its last [`LOG_TAIL`] bytes.
fn keep_tail(log: &mut std::fs::File) {
    let Ok(len) = log.seek(SeekFrom::End(0)) else { return };
    if len <= LOG_TAIL {
        return;
    }
    let mut tail = Vec::with_capacity(LOG_TAIL as usize);
    if log.seek(SeekFrom::Start(len - LOG_TAIL)).is_ok() && log.read_to_end(&mut tail).is_ok() {
        let _ = log.set_len(0).and_then(|_| log.seek(SeekFrom::Start(0))).and_then(|_| log.write_all(&tail));
    }
}
