//! `cairn wrap [--task T] [--agent ID] [--network proxy|none|host] -- CMD ARGS...`: the edge
//! of [`cairn_core::wrap`]. CMD gets a terminal of its own, relayed to this one; this process
//! ignores Ctrl-C and Ctrl-\ (they reach CMD through the relay) and waits; it prints the
//! session's agent id before CMD starts and how it ended after, on stderr. `cairn wrap state
//! ...` shows, applies or drops an agent CLI's copy-on-write state.

use cairn_core::error::{Error, Result};
use cairn_core::lifecycle::State;
use cairn_core::project::Project;
use std::io::Write;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// Runs a wrap session; returns CMD's exit code.
pub fn run(project: &Project, task: Option<String>, agent: Option<String>, network: Option<String>, cmd: Vec<String>) -> Result<i32> {
    let interrupted = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGQUIT] {
        signal_hook::flag::register(sig, Arc::clone(&interrupted)).map_err(|e| Error::io("signal handler", e))?;
    }
    let cwd = std::env::current_dir().ok().and_then(|d| d.strip_prefix(&project.root).ok().map(|r| r.to_string_lossy().into_owned())).unwrap_or_default();
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let dup = |fd: std::os::fd::BorrowedFd<'_>| fd.try_clone_to_owned().map_err(|e| Error::io("standard streams", e));
    use std::os::fd::AsFd;
    let streams = cairn_core::runbox::pty::Streams { stdin: dup(std::io::stdin().as_fd())?, stdout: dup(std::io::stdout().as_fd())?, stderr: dup(std::io::stderr().as_fd())? };
    let opts = cairn_core::wrap::Options { argv: cmd, task, agent, network, cwd, home, streams: Some(std::sync::Arc::new(streams)), turns: None };
    // What the view cannot show is refused before anything starts.
    for note in cairn_core::wrap::check(project, &opts)? {
        let _ = writeln!(std::io::stderr(), "cairn: note: {}", cairn_core::display::escape(&note));
    }
    let id = cairn_core::wrap::begin(project, &opts)?;
    // A resumed session without a command runs the one it was started with.
    let argv = if opts.argv.is_empty() { cairn_core::wrap::recorded(project, &id)? } else { opts.argv.clone() };
    let mut err = std::io::stderr().lock();
    let shown = cairn_core::display::escape(&cairn_core::wrap::command_text(&argv)).into_owned();
    let _ = writeln!(err, "cairn: wrap session {id}: what `{shown}` writes becomes a proposal (`cairn diff {id}`)");
    drop(err);
    let done = cairn_core::wrap::run(project, &id, &opts)?;
    // Its real state: the user may have decided a turn's proposal while the session ran.
    let rec = project.bin()?.get(&id)?;
    let mut err = std::io::stderr().lock();
    let exit = done.exit;
    let _ = match rec.state {
        State::Accepted => writeln!(err, "cairn: wrap session {id}: `{shown}` {exit}; its proposal was accepted (`cairn undo {id}` puts it back)"),
        State::Rejected if rec.submission.is_some() => writeln!(err, "cairn: wrap session {id}: `{shown}` {exit}; its proposal was rejected"),
        _ if done.changed == 0 => writeln!(err, "cairn: wrap session {id}: `{shown}` {exit}; nothing proposed"),
        state => writeln!(err, "cairn: wrap session {id}: `{shown}` {exit}; {} path(s) changed, {state} (`cairn diff {id}`, `cairn accept {id}`)", done.changed),
    };
    if done.exit == cairn_core::runbox::Exit::Code(127) {
        let _ = writeln!(
            err,
            "cairn: wrap session {id}: 127 is \"command not found\": a program it runs may not be in the wrapped view, which shows the system directories, the project, [wrap] home, [wrap] read_paths and the installations of the programs the command line names (through env, nice, timeout, npx, uv run, ...); add the program's directory to [wrap] read_paths (see :help cairn-wrap-programs)"
        );
    }
    if !done.denied.is_empty() {
        let hosts = done.denied.iter().map(|h| cairn_core::display::escape(h)).collect::<Vec<_>>().join(", ");
        let _ = writeln!(err, "cairn: wrap session {id}: the proxy refused {hosts} (add to [wrap] allow_hosts to allow; see :help cairn-wrap)");
    }
    Ok(match done.exit {
        cairn_core::runbox::Exit::Code(c) => c,
        cairn_core::runbox::Exit::Signal(s) => 128 + s,
        cairn_core::runbox::Exit::TimedOut => 124,
    })
}

/// `cairn wrap state ...`.
#[derive(Debug, clap::Subcommand)]
pub enum StateCmd {
    /// The agent CLIs with a state layer.
    List,
    /// What the CLI's layer changes against your real home, and its fingerprint.
    Diff {
        /// The CLI (as `cairn wrap state list` names it).
        name: String,
    },
    /// Copies the layer into your real home (after a login, say), then drops it.
    Apply {
        /// The CLI (as `cairn wrap state list` names it).
        name: String,
        /// Only if the layer still shows what `diff` showed with this fingerprint.
        #[arg(long)]
        expect: Option<String>,
    },
    /// Drops the layer: the CLI starts from your real home again.
    Reset {
        /// The CLI (as `cairn wrap state list` names it).
        name: String,
    },
}

/// Runs `cairn wrap state ...`; returns the exit code.
pub fn state(project: &Project, cmd: StateCmd) -> Result<i32> {
    use cairn_core::display::escape;
    use cairn_core::wrap::state;
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from).filter(|h| h.is_absolute()).ok_or_else(|| Error::Usage("HOME is not set".into()))?;
    let mut out = std::io::stdout().lock();
    let show = |out: &mut std::io::StdoutLock, changes: &[state::Change], verbose: bool| {
        for c in changes {
            if c.kind == "left out" {
                let _ = writeln!(out, "L ~/{} (left out: {})", escape(&c.path), escape(&c.diff));
                continue;
            }
            let _ = writeln!(out, "{} ~/{}", &c.kind[..1].to_ascii_uppercase(), escape(&c.path));
            if verbose && !c.diff.is_empty() {
                let _ = write!(out, "{}", escape(&c.diff));
            }
        }
    };
    match cmd {
        StateCmd::List => {
            for name in state::list(project) {
                let _ = writeln!(out, "{}", escape(&name));
            }
        }
        StateCmd::Diff { name } => {
            let shown = state::diff(project, &name, &home)?;
            show(&mut out, &shown.changes, true);
            let fp = &shown.fingerprint;
            let _ = writeln!(out, "fingerprint {fp} (`cairn wrap state apply {} --expect {fp}` applies exactly this)", escape(&name));
        }
        StateCmd::Apply { name, expect } => {
            let applied = state::apply(project, &name, &home, expect.as_deref())?;
            show(&mut out, &applied.shown.changes, false);
            let n = applied.shown.changes.iter().filter(|c| c.kind != "left out").count();
            let kept = if applied.kept { format!("; the layer is kept: a wrap session of {} runs on it", escape(&name)) } else { String::new() };
            let _ = writeln!(out, "applied {n} change(s) of {} to your home (fingerprint {}){kept}", escape(&name), applied.shown.fingerprint);
        }
        StateCmd::Reset { name } => {
            state::reset(project, &name)?;
            let _ = writeln!(out, "dropped the state of {}", escape(&name));
        }
    }
    Ok(0)
}
