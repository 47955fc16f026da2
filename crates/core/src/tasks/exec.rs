//! An agent runs a command (`run_command` over MCP, `cairn session exec`): confined, in a
//! run workspace built from the session's current proposal ([`crate::runbox`]). What the
//! command created, changed or deleted becomes the session's own changes, through the same
//! host as the file tools (protected paths, limits, base recording); `capture: false` throws
//! them away. Ignored paths (`.gitignore`, caches, build output) never enter the proposal.

use super::sessions;
use crate::error::Result;
use crate::events::EventKind;
use crate::externals::{Applied, Skipped, Staged};
use crate::lifecycle::State;
use crate::project::Project;
use crate::runbox::{self, Exit};
use serde::Serialize;
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
    // Never a run of a proposal that lost changes (the capture would fail after it anyway).
    super::seal::check(project, &s.agent, &project.overlay(&s.agent)?)?;
    let changes = crate::review::diff::changes(project, &s.agent)?;
    let limit = project.config.run.timeout_seconds;
    let timeout = Duration::from_secs(args.timeout_seconds.unwrap_or(limit).clamp(1, limit));
    let req = runbox::Request { cmd: &args.cmd, cwd: &args.cwd, timeout, capture: args.capture };
    let outcome = runbox::run(project, &changes, &req)?;
    let staged = staged(&changes);
    let mut applied = Applied::default();
    if args.capture && !outcome.written.is_empty() {
        sessions::with_host(project, actor, id, true, |host| host.apply_written(&outcome.written, &staged, &mut crate::paths::IgnoreRules::new(&project.root), &mut applied))?;
    }
    let Applied { changed, deleted, skipped } = applied;
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

/// The proposal a run starts from, by path (see [`Staged`]).
pub(crate) fn staged(changes: &[crate::review::diff::FileChange]) -> Staged<'_> {
    changes.iter().map(|c| (c.path.as_str(), c.new.as_deref().map(|b| (b, c.new_mode.unwrap_or(0o644) & 0o777)))).collect()
}
