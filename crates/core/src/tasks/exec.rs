//! An agent runs a command (`run_command` over MCP, `cairn session exec`): confined, in a
//! run workspace built from the session's current proposal ([`crate::runbox`]). What the
//! command created, changed or deleted becomes the session's own changes, through the same
//! host as the file tools (protected paths, limits, base recording); `capture: false` throws
//! them away. Ignored paths (`.gitignore`, caches, build output) never enter the proposal.

use super::sessions;
use crate::error::Result;
use crate::events::EventKind;
use crate::externals::{CallError, Host};
use crate::lifecycle::State;
use crate::project::Project;
use crate::runbox::{self, Exit, Written};
use serde::Serialize;
use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

/// One command for a session.
#[derive(Debug, Clone)]
pub struct ExecArgs {
    pub cmd: String,
    /// Working directory, relative to the project root.
    pub cwd: String,
    /// Seconds; `[run] timeout_seconds` when `None` (never more).
    pub timeout_seconds: Option<u64>,
    pub capture: bool,
}

/// A path the command wrote that did not become part of the proposal, and why.
#[derive(Debug, Clone, Serialize)]
pub struct Skipped {
    pub path: String,
    pub why: String,
}

/// What the agent gets back.
#[derive(Debug, Clone, Serialize)]
pub struct Ran {
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub timed_out: bool,
    /// "exited with 0", "timed out", ...
    pub status: String,
    /// The output's tail (stdout and stderr as written), lossily decoded.
    pub output: String,
    /// Bytes of output dropped before the tail.
    pub output_dropped: u64,
    pub duration_ms: u64,
    pub network: String,
    /// Run without the boundary (`[run] allow_unconfined`), and the layer that was missing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unconfined: Option<String>,
    /// Paths the command created or changed, now in the proposal.
    pub changed: Vec<String>,
    /// Paths it deleted, now deleted in the proposal.
    pub deleted: Vec<String>,
    pub skipped: Vec<Skipped>,
}

/// Runs `args` for `actor`'s open session `id`.
pub fn exec(project: &Project, actor: &str, id: &str, args: &ExecArgs) -> Result<Ran> {
    let s = sessions::open(project, actor, id)?;
    if args.cmd.trim().is_empty() {
        return Err(crate::Error::Usage("run_command needs a command".into()));
    }
    let changes = crate::review::diff::changes(project, &s.agent)?;
    let limit = project.config.run.timeout_seconds;
    let timeout = Duration::from_secs(args.timeout_seconds.unwrap_or(limit).clamp(1, limit));
    let req = runbox::Request { cmd: &args.cmd, cwd: &args.cwd, timeout, capture: args.capture };
    let outcome = runbox::run(project, &changes, &req)?;
    let staged: HashMap<&str, Option<(&[u8], u32)>> = changes.iter().map(|c| (c.path.as_str(), c.new.as_deref().map(|b| (b, c.new_mode.unwrap_or(0o644) & 0o777)))).collect();
    let (mut changed, mut deleted, mut skipped) = (Vec::new(), Vec::new(), Vec::new());
    if args.capture && !outcome.written.is_empty() {
        sessions::with_host(project, actor, id, |host| {
            let mut apply = Apply { project, staged: &staged, ignore: crate::paths::IgnoreRules::new(&project.root), changed: &mut changed, deleted: &mut deleted, skipped: &mut skipped };
            apply.all(host, &outcome.written)
        })?;
    }
    let (exit_code, signal) = match outcome.exit {
        Exit::Code(c) => (Some(c), None),
        Exit::Signal(s) => (None, Some(s)),
        Exit::TimedOut => (None, None),
    };
    let kind = EventKind::CommandRan { command: args.cmd.chars().take(200).collect(), exit: outcome.exit.to_string(), duration_ms: outcome.duration.as_millis() as i64, changed: changed.len() + deleted.len() };
    project.bin()?.append(&s.agent, State::Executing, &kind)?;
    Ok(Ran {
        exit_code,
        signal,
        timed_out: outcome.exit == Exit::TimedOut,
        status: outcome.exit.to_string(),
        output: String::from_utf8_lossy(&outcome.output).into_owned(),
        output_dropped: outcome.output_dropped,
        duration_ms: outcome.duration.as_millis() as u64,
        network: outcome.network,
        unconfined: outcome.unconfined,
        changed,
        deleted,
        skipped,
    })
}

/// Puts what a command wrote into the session's overlay.
struct Apply<'a> {
    project: &'a Project,
    /// The proposal the run started from: path → new content and mode (`None`: deleted).
    staged: &'a HashMap<&'a str, Option<(&'a [u8], u32)>>,
    ignore: crate::paths::IgnoreRules,
    changed: &'a mut Vec<String>,
    deleted: &'a mut Vec<String>,
    skipped: &'a mut Vec<Skipped>,
}

impl Apply<'_> {
    fn all(&mut self, host: &mut Host, written: &[Written]) -> Result<()> {
        let files: BTreeSet<&str> = written.iter().filter_map(|w| if let Written::File { path, .. } = w { Some(path.as_str()) } else { None }).collect();
        for w in written {
            match w {
                Written::File { path, mode, content } => {
                    if self.keep_out(path) || self.before(path)?.is_some_and(|(b, m)| b == *content && m == mode & 0o777) {
                        continue;
                    }
                    let done = host.write_bytes(path, content, Some(*mode));
                    self.record(path, done, true);
                }
                Written::Deleted { path } => self.delete_under(host, path, &BTreeSet::new())?,
                Written::Replaced { path } => self.delete_under(host, path, &files)?,
                Written::Symlink { path } => self.skipped.push(Skipped { path: path.clone(), why: "a symlink (proposals hold regular files)".into() }),
            }
        }
        Ok(())
    }

    /// Ignored or protected: never part of a proposal (not reported for ignored paths: a test
    /// run writes many caches).
    fn keep_out(&mut self, path: &str) -> bool {
        if self.ignore.is_ignored(path, false) {
            return true;
        }
        if let Some(rule) = crate::paths::protected(path) {
            self.skipped.push(Skipped { path: path.to_string(), why: rule.to_string() });
            return true;
        }
        false
    }

    /// What the run started with at `path`: the proposal's version, else the project's.
    fn before(&self, path: &str) -> Result<Option<(Vec<u8>, u32)>> {
        match self.staged.get(path) {
            Some(Some((b, m))) => Ok(Some((b.to_vec(), *m))),
            Some(None) => Ok(None),
            None => Ok(crate::store::fsx::read(&self.project.root, path)?.map(|(b, m)| (b, m & 0o777))),
        }
    }

    /// Deletes `path` (a file) or every file below it (a directory), except `keep`.
    fn delete_under(&mut self, host: &mut Host, path: &str, keep: &BTreeSet<&str>) -> Result<()> {
        let prefix = format!("{path}/");
        let targets: Vec<String> = host.view.files()?.into_iter().filter(|f| (f == path || f.starts_with(&prefix)) && !keep.contains(f.as_str())).collect();
        for t in targets {
            if self.keep_out(&t) {
                continue;
            }
            let done = host.delete_file(&t);
            self.record(&t, done, false);
        }
        Ok(())
    }

    fn record(&mut self, path: &str, done: std::result::Result<serde_json::Value, CallError>, write: bool) {
        match done {
            Ok(_) if write => self.changed.push(path.to_string()),
            Ok(_) => self.deleted.push(path.to_string()),
            Err(CallError::Raise { message, .. } | CallError::Fatal { message, .. }) => self.skipped.push(Skipped { path: path.to_string(), why: message }),
        }
    }
}
