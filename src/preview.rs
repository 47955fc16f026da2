//! `cairn preview ID [--tmux] [--file F --line N] [--shell] [--amend] [--port P]...`: the
//! edge of [`cairn_core::workspace`]. In a terminal, the preview session runs here: the
//! editor (or `$SHELL`) inside the confined copy-on-write view of the agent's version, its
//! own terminal relayed to this one (this process ignores Ctrl-C and Ctrl-\, which reach the
//! editor). With `--tmux`, a tmux pane runs that same command line. A jj workspace preview
//! prints its path (and opens `nvim` there with `--tmux`).

use cairn_core::command::{self, Command, Output};
use cairn_core::error::{Error, Result};
use cairn_core::project::Project;
use std::io::Write;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// What `cairn preview` (and `:CairnPreview`) asks for.
#[derive(Debug, Clone, Default)]
pub struct Args {
    pub tmux: bool,
    pub file: Option<String>,
    pub line: Option<usize>,
    pub shell: bool,
    pub amend: bool,
    pub ports: Vec<u16>,
    pub editor: Option<String>,
}

/// The command inside the view: `EDITOR +LINE -- FILE`, or the user's shell.
pub fn inner_argv(project: &Project, a: &Args) -> Vec<String> {
    if a.shell {
        return vec![project.env.get("SHELL").filter(|s| s.starts_with('/')).unwrap_or("/bin/sh").to_string()];
    }
    let mut argv = vec![a.editor.clone().unwrap_or_else(|| "nvim".into())];
    if let Some(f) = &a.file {
        if let Some(l) = a.line {
            argv.push(format!("+{l}"));
        }
        argv.push("--".into());
        argv.push(f.clone());
    }
    argv
}

/// `cairn preview ID ...` as a tmux pane (or a Neovim terminal) runs it: the session here.
pub fn session_argv(project: &Project, id: &str, a: &Args) -> Vec<String> {
    let mut argv: Vec<String> = vec![project.exe.display().to_string(), "--project-root".into(), project.root.display().to_string(), "--cairn-home".into(), project.home.dir.display().to_string(), "preview".into(), id.to_string()];
    let mut flag = |name: &str, value: Option<String>| {
        argv.push(format!("--{name}"));
        argv.extend(value);
    };
    if let Some(f) = &a.file {
        flag("file", Some(f.clone()));
    }
    if let Some(l) = a.line {
        flag("line", Some(l.to_string()));
    }
    if let Some(e) = &a.editor {
        flag("editor", Some(e.clone()));
    }
    for p in &a.ports {
        flag("port", Some(p.to_string()));
    }
    if a.shell {
        flag("shell", None);
    }
    if a.amend {
        flag("amend", None);
    }
    argv
}

/// `cairn preview`; returns the exit code.
pub fn run(project: &Project, id: &str, a: Args) -> Result<i32> {
    let id = command::resolve(project, id)?;
    let Output::Preview(m) = command::execute(project, Command::Preview { id: id.clone() })? else {
        return Err(Error::Internal("preview produced nothing to open".into()));
    };
    if m.jj {
        println!("{}", m.path.display());
        if a.tmux {
            let argv = inner_argv(project, &Args { shell: false, ..a });
            announce(crate::tmux::open_preview(project, &id, &argv, &m.path)?);
        }
        return Ok(0);
    }
    if a.tmux {
        announce(crate::tmux::open_preview(project, &id, &session_argv(project, &id, &a), &project.root)?);
        return Ok(0);
    }
    here(project, &id, &a)
}

fn announce(opened: crate::tmux::Opened) {
    if let Some(s) = opened.session {
        let _ = writeln!(std::io::stderr(), "cairn: the preview is in tmux session {s} (tmux attach -t {s})");
    }
}

/// The session in this terminal, to its end.
fn here(project: &Project, id: &str, a: &Args) -> Result<i32> {
    use std::os::fd::AsFd;
    if !rustix::termios::isatty(std::io::stdin()) {
        return Err(Error::Preview("the preview runs an editor: run it in a terminal, or pass --tmux".into()));
    }
    let interrupted = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGQUIT] {
        signal_hook::flag::register(sig, Arc::clone(&interrupted)).map_err(|e| Error::io("signal handler", e))?;
    }
    let dup = |fd: std::os::fd::BorrowedFd<'_>| fd.try_clone_to_owned().map_err(|e| Error::io("standard streams", e));
    let streams = cairn_core::runbox::pty::Streams { stdin: dup(std::io::stdin().as_fd())?, stdout: dup(std::io::stdout().as_fd())?, stderr: dup(std::io::stderr().as_fd())? };
    let ports = if a.ports.is_empty() { project.config.preview.ports.clone() } else { a.ports.clone() };
    let session = cairn_core::workspace::Session {
        argv: inner_argv(project, a),
        amend: a.amend,
        ports,
        cwd: String::new(),
        home: std::env::var_os("HOME").map(std::path::PathBuf::from),
        streams: Some(Arc::new(streams)),
    };
    // `:CairnAccept` / `:CairnReject` typed in the preview, confirmed in tmux.
    let mut relay = crate::relay::Relay::default();
    let closed = cairn_core::workspace::session(project, id, &session, &mut |console| relay.handle(project, id, console))?;
    let n = closed.written.len();
    let what = match (n, closed.amended) {
        (0, _) => "nothing written".to_string(),
        (_, true) => format!("{n} path(s) you wrote joined the proposal as your amendment (`cairn log {id}`)"),
        (_, false) => format!("{n} path(s) you wrote were thrown away (`--amend` / :CairnPreview! keeps them)"),
    };
    let said = format!("cairn: preview of {id} ended ({}); {what}", closed.exit);
    let _ = writeln!(std::io::stderr(), "{said}");
    // A tmux pane closes with the session: the line above goes with it. Said on the client
    // the pane was shown on too, until a key is pressed.
    tell_tmux_client(&said);
    Ok(match closed.exit {
        cairn_core::runbox::Exit::Code(c) => c,
        cairn_core::runbox::Exit::Signal(s) => 128 + s,
        cairn_core::runbox::Exit::TimedOut => 124,
    })
}

/// Shows `message` on the status line of the tmux client showing this pane (none: outside
/// tmux, or a session no one is attached to), until a key is pressed.
fn tell_tmux_client(message: &str) {
    let pane = std::env::var("TMUX_PANE").unwrap_or_default();
    if std::env::var_os("TMUX").is_none() || pane.is_empty() {
        return;
    }
    let tmux = |args: &[&str]| std::process::Command::new("tmux").args(args).stderr(std::process::Stdio::null()).output().ok().filter(|o| o.status.success());
    let client = tmux(&["display-message", "-p", "-t", &pane, "#{client_name}"]).map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string()).unwrap_or_default();
    if client.is_empty() {
        return;
    }
    // tmux expands formats in a message: an agent's id or an exit status is shown as it is.
    let _ = tmux(&["display-message", "-c", &client, "-d", "0", &cairn_core::display::tmux_literal(message)]);
}
