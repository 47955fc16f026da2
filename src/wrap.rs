//! `cairn wrap [--task T] [--agent ID] [--network host|none] -- CMD ARGS...`: the edge of
//! [`cairn_core::wrap`]. The terminal belongs to CMD: this process ignores Ctrl-C and
//! Ctrl-\ (CMD gets them) and waits; it prints the session's agent id before CMD starts and
//! how it ended after, on stderr.

use cairn_core::error::{Error, Result};
use cairn_core::project::Project;
use std::io::Write;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// Runs a wrap session; returns CMD's exit code.
pub fn run(project: &Project, task: Option<String>, agent: Option<String>, network: &str, cmd: Vec<String>) -> Result<i32> {
    let no_network = match network {
        "host" => false,
        "none" => true,
        other => return Err(Error::Usage(format!("--network takes host or none, not {other:?}"))),
    };
    let interrupted = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGQUIT] {
        signal_hook::flag::register(sig, Arc::clone(&interrupted)).map_err(|e| Error::io("signal handler", e))?;
    }
    let cwd = std::env::current_dir().ok().and_then(|d| d.strip_prefix(&project.root).ok().map(|r| r.to_string_lossy().into_owned())).unwrap_or_default();
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let opts = cairn_core::wrap::Options { argv: cmd, task, agent, no_network, cwd, home };
    let id = cairn_core::wrap::begin(project, &opts)?;
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "cairn: wrap session {id}: what `{}` writes becomes a proposal (`cairn diff {id}`)", cairn_core::display::escape(&opts.argv.join(" ")));
    drop(err);
    let done = cairn_core::wrap::run(project, &id, &opts)?;
    let _ = writeln!(std::io::stderr().lock(), "cairn: wrap session {id}: `{}` {}; {} path(s) changed, reviewing (`cairn diff {id}`, `cairn accept {id}`)", cairn_core::display::escape(&opts.argv.join(" ")), done.exit, done.changed);
    Ok(match done.exit {
        cairn_core::runbox::Exit::Code(c) => c,
        cairn_core::runbox::Exit::Signal(s) => 128 + s,
        cairn_core::runbox::Exit::TimedOut => 124,
    })
}
