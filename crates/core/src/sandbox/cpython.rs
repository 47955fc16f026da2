//! Agent scripts on the host's CPython (`[sandbox] interpreter = "cpython"`): the script runs
//! as `python3 -c <shim>` in a confined run workspace of the agent's proposal ([`runbox`]: no
//! network, the run's budgets of time, memory and processes, the output bounded). The shim
//! (`cpython_shim.py`) speaks the sandbox child's protocol on the command's stdout, a unix
//! socket, and the runner's own loop ([`super::runner::serve`]) answers it through the same
//! [`Host`]: one protocol, one host path. The script comes transformed as RustPython's does
//! ([`super::script::transform_cpython`]) and imports the child's own `asyncio`, so it means
//! the same on both interpreters; a crash CPython cannot raise as an error is named as one,
//! with the script's line (`faulthandler`). What the script wrote with plain file I/O (`open`,
//! `pathlib`, `os`, `shutil`, its subprocesses) is captured when it ends and applied on top of
//! what its externals wrote, as a `run_command`'s writes are ([`crate::tasks::exec`]).

use super::protocol::Start;
use super::serve::{serve, write_line, Outcome};
use super::spawn::Killer;
use crate::error::Result;
use crate::externals::{Applied, Host, Staged};
use crate::lifecycle::ErrorKind;
use crate::review::diff::FileChange;
use crate::runbox::{self, streamed, Exit};
use crate::store::overlay::Change;
use std::io::BufReader;
use std::time::{Duration, Instant};

const SHIM: &str = include_str!("cpython_shim.py");
/// The sandbox child's `asyncio`, the script's `asyncio` on CPython too.
const ASYNCIO: &str = include_str!("child/py/asyncio.py");
/// What the shim writes to stderr when the Python it runs on is older than 3.10.
const TOO_OLD: &str = "cairn-python-too-old: ";

/// Runs `start` on CPython, serving its calls with `host`.
pub(super) fn run(start: &Start, host: &mut Host) -> Result<Outcome> {
    let started = Instant::now();
    let deadline = *host.deadline.get_or_insert(started + Duration::from_secs(host.limits.timeout_seconds));
    let mut project = host.view.project.clone();
    // The script's budget is the sandbox's: its memory (the workspace's tmpfs included).
    project.config.run.max_memory_mb = host.limits.max_memory_mb;
    let changes = proposal(host)?;
    let cmd = command(&host.limits.python);
    let timeout = deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(1));
    let req = runbox::Request { cmd: &cmd, cwd: "", timeout, capture: true };
    let run = streamed::start(&project, &changes, &req)?;
    let killer = Killer::Pid(run.pid());
    // Stopped when rejected meanwhile; the time limit is the run workspace's own.
    let (done, done_rx) = std::sync::mpsc::channel::<()>();
    let (dog, stop) = (killer.clone(), host.stop.clone());
    let watchdog = std::thread::spawn(move || stop.is_some() && super::watchdog::watch(None, stop, done_rx, || dog.kill()).is_some());
    let served = match run.socket.as_ref().map(|s| (s.try_clone(), s.try_clone())) {
        Some((Ok(mut tx), Ok(rx))) => match write_line(&mut tx, &serde_json::to_string(start)?) {
            Ok(()) => serve(&mut BufReader::new(rx), &mut tx, host, started, &killer),
            Err(_) => None,
        },
        _ => None,
    };
    // Before `finish` reaps it: the pid cannot be another process's yet.
    let _ = done.send(());
    let _ = watchdog.join();
    let mut ended = run.finish()?;
    let mut applied = Applied::default();
    let staged: Staged = changes.iter().map(|c| (c.path.as_str(), c.new.as_deref().map(|b| (b, c.new_mode.unwrap_or(0o644) & 0o777)))).collect();
    let written = not_in_overlay(host, std::mem::take(&mut ended.written))?;
    host.apply_written(&written, &staged, &mut crate::paths::IgnoreRules::new(&project.root), &mut applied)?;
    for s in &applied.skipped {
        let line = format!("cairn: a write to {} was left out of the proposal: {}", s.path, s.why);
        let _ = host.call("log", &[serde_json::Value::String(line)], &serde_json::Map::new());
    }
    Ok(match served {
        Some(outcome) => outcome,
        None => unfinished(&ended, &host.limits, &start.filename, started),
    })
}

/// How a script that never said it was done ended.
fn unfinished(ended: &runbox::Outcome, limits: &crate::config::Sandbox, filename: &str, started: Instant) -> Outcome {
    let text = String::from_utf8_lossy(&ended.output);
    let tail: Vec<&str> = text.lines().rev().take(5).collect::<Vec<_>>().into_iter().rev().collect();
    let tail = tail.join("\n");
    if let Some(found) = text.lines().find_map(|l| l.strip_prefix(TOO_OLD)) {
        return Outcome::failed(ErrorKind::Internal, format!("[sandbox] python = \"{}\" is Python {found}; interpreter = \"cpython\" needs Python 3.10 or newer", limits.python), started);
    }
    match ended.exit {
        Exit::TimedOut => Outcome::failed(ErrorKind::Timeout, format!("exceeded timeout_seconds = {}", limits.timeout_seconds), started),
        Exit::Code(127) => Outcome::failed(ErrorKind::Internal, format!("[sandbox] python = \"{}\" was not found in the run workspace (a name on PATH, or an absolute path listed in [run] read_paths): {tail}", limits.python), started),
        Exit::Signal(9) => Outcome::failed(ErrorKind::Memory, format!("exceeded max_memory_mb = {} (the script was killed)", limits.max_memory_mb), started),
        Exit::Signal(n) => Outcome::failed(ErrorKind::Crash, crashed(n, &text, filename), started),
        exit => Outcome::failed(ErrorKind::Crash, format!("the Python process {exit} before the script finished{}", if tail.is_empty() { String::new() } else { format!(": {tail}") }), started),
    }
}

/// What a CPython killed by signal `n` did: the signal, faulthandler's verdict and the script's
/// innermost line in `output` (faulthandler lists the innermost frame first).
fn crashed(n: i32, output: &str, filename: &str) -> String {
    let name = match n {
        4 => ": SIGILL",
        6 => ": SIGABRT",
        7 => ": SIGBUS",
        8 => ": SIGFPE",
        11 => ": SIGSEGV",
        _ => "",
    };
    let fatal = output.lines().find_map(|l| l.strip_prefix("Fatal Python error: ")).map(|f| format!(", {}", f.trim())).unwrap_or_default();
    let frame = format!("File \"{filename}\", ");
    let at = output.lines().find_map(|l| l.trim().strip_prefix(&frame)).map(|l| format!(" at {filename}, {l}")).unwrap_or_default();
    format!("the interpreter crashed (signal {n}{name}{fatal}){at}: CPython raised no Python error for it")
}

/// What the script wrote, less what its writing externals already put in the overlay (the
/// shim does their writes to the workspace too, so that plain reads see them).
fn not_in_overlay(host: &Host, written: Vec<runbox::Written>) -> Result<Vec<runbox::Written>> {
    let mut out = Vec::with_capacity(written.len());
    for w in written {
        let same = match (&w, host.view.overlay.get(w.path())?) {
            (runbox::Written::File { content, mode, .. }, Some(Some((now, now_mode)))) => *content == now && mode & 0o777 == now_mode & 0o777,
            (runbox::Written::Deleted { .. }, Some(None)) => true,
            _ => false,
        };
        if !same {
            out.push(w);
        }
    }
    Ok(out)
}

/// The agent's proposal as it stands, staged as the workspace's layer.
fn proposal(host: &Host) -> Result<Vec<FileChange>> {
    let mut out = Vec::new();
    for c in host.view.overlay.changes()? {
        let change = match c.change {
            Change::Write { content, mode, .. } => FileChange::between(&c.path, None, Some(content)).map(|mut f| {
                f.new_mode = Some(mode);
                f
            }),
            Change::Delete => FileChange::between(&c.path, Some(Vec::new()), None),
        };
        out.extend(change);
    }
    Ok(out)
}

/// `sh -c` text that runs the shim on `python`, with the externals' names and the `asyncio`
/// source filled in (JSON strings are Python string literals).
fn command(python: &str) -> String {
    let names: Vec<String> = crate::externals::names().map(|n| format!("{n:?}")).collect();
    let asyncio = serde_json::Value::String(ASYNCIO.to_string()).to_string();
    let shim = SHIM.replace("__NAMES__", &format!("[{}]", names.join(", "))).replace("__ASYNCIO__", &asyncio);
    format!("exec {} -B -S -c {}", quote(python), quote(&shim))
}

/// `s` as one word of `sh`.
fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}
