//! `cairn acp [--task T] [--network N] -- AGENT-CMD ARGS...`: the edge of [`cairn_core::acp`].
//! An editor starts it in place of an ACP agent: stdin and stdout are the protocol's pipe
//! (nothing else is printed there; logs go to `$CAIRN_HOME/logs/`), the agent's stderr and
//! Cairn's own notes go to stderr.

use cairn_core::error::{Error, Result};
use cairn_core::project::Project;
use std::io::Write;
use std::os::fd::AsFd;

/// `cairn acp`'s arguments.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The task's description (default: the command).
    #[arg(long)]
    task: Option<String>,
    /// As `cairn wrap --network`. Default: `[wrap] network`.
    #[arg(long)]
    network: Option<String>,
    /// The agent's command and its arguments (the editor starts `cairn acp -- AGENT-CMD`).
    #[arg(last = true, required = true)]
    cmd: Vec<String>,
}

/// Runs an ACP session; returns AGENT-CMD's exit code.
pub fn run(project: &Project, args: Args) -> Result<i32> {
    let Args { task, network, cmd } = args;
    let cwd = std::env::current_dir().ok().and_then(|d| d.strip_prefix(&project.root).ok().map(|r| r.to_string_lossy().into_owned())).unwrap_or_default();
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let dup = |fd: std::os::fd::BorrowedFd<'_>| fd.try_clone_to_owned().map_err(|e| Error::io("standard streams", e));
    let opts = cairn_core::acp::Options {
        argv: cmd,
        task,
        network,
        cwd,
        home,
        editor_in: dup(std::io::stdin().as_fd())?,
        editor_out: dup(std::io::stdout().as_fd())?,
        stderr: dup(std::io::stderr().as_fd())?,
    };
    let (notes, id) = cairn_core::acp::begin(project, &opts)?;
    let mut err = std::io::stderr().lock();
    for note in notes {
        let _ = writeln!(err, "cairn: note: {}", cairn_core::display::escape(&note));
    }
    let _ = writeln!(err, "cairn: acp session {id}: what the agent writes becomes a proposal (`cairn diff {id}`)");
    drop(err);
    tracing::info!(agent = %id, "acp session started");
    let done = cairn_core::acp::run(project, &id, opts)?;
    let _ = writeln!(std::io::stderr(), "cairn: acp session {id}: the agent {}; {} path(s) changed", done.exit, done.changed);
    Ok(match done.exit {
        cairn_core::runbox::Exit::Code(c) => c,
        cairn_core::runbox::Exit::Signal(s) => 128 + s,
        cairn_core::runbox::Exit::TimedOut => 124,
    })
}
