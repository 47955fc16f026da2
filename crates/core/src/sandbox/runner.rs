//! The parent side of the sandbox: starts the child with a cleared environment, sends the
//! script, serves each external call through [`Host`], and kills the child at the wall-clock
//! limit or when a parent-side limit is exceeded.

use super::protocol::{ChildMsg, Reply, Start};
use crate::error::Result;
use crate::lifecycle::ErrorKind;
use crate::externals::{CallError, Host};
use serde_json::{Map, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;

use super::pool::Pool;
use super::spawn::{spawn, Killer, Proc, Spawned};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Longest line the child may send (a 10 MiB write_file, JSON-escaped, with room to spare).
const MAX_LINE: u64 = 64 * 1024 * 1024;
/// Most arguments (positional and keyword) one call may carry; no external takes more than 3.
const MAX_CALL_ARGS: usize = 8;
/// Longest error message kept from the child.
const MAX_ERROR_BYTES: usize = 16 * 1024;

/// How a run ended.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Value of the script's last expression (JSON), when it finished.
    pub result: Option<Value>,
    /// `(kind, message)` when it did not: `timeout`, `memory`, `recursion`, `limit`,
    /// `exception`, `syntax` or `crash`.
    pub error: Option<(ErrorKind, String)>,
    /// Wall time of the run.
    pub elapsed: Duration,
}

impl Outcome {
    fn failed(kind: ErrorKind, message: impl Into<String>, start: Instant) -> Outcome {
        Outcome { result: None, error: Some((kind, message.into())), elapsed: start.elapsed() }
    }
}

/// Runs `source` in a sandbox child (from `pool` when given, else freshly started from `exe`),
/// serving its calls with `host`.
pub fn run(exe: &Path, pool: Option<&Pool>, source: &str, filename: &str, mut inputs: Map<String, Value>, host: &mut Host) -> Result<Outcome> {
    file_inputs(&mut inputs, host);
    let limits = host.limits.clone();
    let Spawned { mut proc, mut stdin, stdout, stderr } = match pool {
        Some(p) => p.take()?,
        None => spawn(exe, limits.syntax_layer)?,
    };
    let started = Instant::now();
    let killer = proc.killer();
    let dog = killer.clone();

    // Watchdog: SIGKILL at the wall-clock limit (the caller's deadline when it set one) unless
    // told the run is over. Host-side work stops at the same instant (`Host::deadline`).
    let (stop_tx, stop_rx) = mpsc::channel::<()>();
    let deadline = *host.deadline.get_or_insert(started + Duration::from_secs(limits.timeout_seconds));
    let timeout = deadline.saturating_duration_since(started);
    let watchdog = std::thread::spawn(move || match stop_rx.recv_timeout(timeout) {
        Err(mpsc::RecvTimeoutError::Timeout) => {
            dog.kill();
            true
        }
        _ => false,
    });
    // Drain stderr (bounded) so the child never blocks on it.
    let stderr_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = stderr.take(64 * 1024).read_to_end(&mut buf);
        String::from_utf8_lossy(&buf).into_owned()
    });

    let start_msg = Start {
        source: source.to_string(),
        filename: filename.to_string(),
        inputs,
        max_recursion: limits.max_recursion,
        max_memory_mb: limits.max_memory_mb,
        timeout_seconds: limits.timeout_seconds,
        seed: u64::try_from(limits.random_seed).unwrap_or_else(|_| rand::random()),
        now_ns: std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64),
    };
    let mut outcome = None;
    if write_line(&mut stdin, &serde_json::to_string(&start_msg)?).is_ok() {
        let mut reader = BufReader::new(stdout);
        outcome = serve(&mut reader, &mut stdin, host, started, &killer);
    }
    drop(stdin);
    let _ = stop_tx.send(());
    let timed_out = watchdog.join().unwrap_or(false);
    if outcome.is_none() || timed_out {
        killer.kill();
    }
    if let (Some(done), false, Proc::Forked { .. }) = (&outcome, timed_out, &proc) {
        // A finished run needs nothing more from its child: a forked one is ended now and
        // reaped by the zygote (the stderr drain ends with it), without waiting for either.
        killer.kill();
        return Ok(done.clone());
    }
    let status = proc.wait()?;
    let stderr_text = stderr_reader.join().unwrap_or_default();
    if timed_out {
        return Ok(Outcome::failed(ErrorKind::Timeout, format!("exceeded timeout_seconds = {}", limits.timeout_seconds), started));
    }
    Ok(match outcome {
        Some(o) => o,
        None => {
            let detail = match std::os::unix::process::ExitStatusExt::signal(&status) {
                Some(sig) => format!("killed by signal {sig}"),
                None => format!("exited with {status}"),
            };
            let tail: String = stderr_text.lines().rev().take(5).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>().join("\n");
            if tail.contains("memory allocation") || tail.contains("out of memory") {
                Outcome::failed(ErrorKind::Memory, format!("exceeded max_memory_mb = {}", limits.max_memory_mb), started)
            } else {
                Outcome::failed(ErrorKind::Crash, format!("the sandbox process {detail}{}", if tail.is_empty() { String::new() } else { format!(": {tail}") }), started)
            }
        }
    })
}

/// The inputs of the script's file layer (`child/py/_cairnfs.py`): its working directory (the
/// project root: absolute paths inside it are files) and what it refuses up front, as CPython
/// refuses a permission error.
fn file_inputs(inputs: &mut Map<String, Value>, host: &Host) {
    inputs.insert("project_root".into(), Value::String(host.view.project.root.display().to_string()));
    inputs.insert("protected".into(), serde_json::json!({ "dirs": crate::paths::PROTECTED_DIRS, "files": crate::paths::PROTECTED_FILES }));
}

fn write_line(w: &mut impl Write, line: &str) -> std::io::Result<()> {
    w.write_all(line.as_bytes())?;
    w.write_all(b"\n")?;
    w.flush()
}

/// Serves calls until the child says it is done. `None` when the child died or misbehaved.
fn serve(reader: &mut impl BufRead, stdin: &mut impl Write, host: &mut Host, started: Instant, killer: &Killer) -> Option<Outcome> {
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = reader.by_ref().take(MAX_LINE).read_until(b'\n', &mut line).ok()?;
        if n == 0 {
            return None;
        }
        if line.last() != Some(&b'\n') {
            killer.kill();
            return Some(Outcome::failed(ErrorKind::Limit, "a call from the script exceeded the message size limit", started));
        }
        let msg: ChildMsg = match serde_json::from_slice(&line) {
            Ok(m) => m,
            Err(_) => {
                killer.kill();
                return Some(Outcome::failed(ErrorKind::Crash, "the sandbox sent a malformed message", started));
            }
        };
        match msg {
            ChildMsg::Call { name, args, kwargs } => {
                let result = if args.len() + kwargs.len() > MAX_CALL_ARGS {
                    Err(CallError::Raise { exc: "TypeError", message: format!("too many arguments (at most {MAX_CALL_ARGS})") })
                } else {
                    host.call(&name, &args, &kwargs)
                };
                let reply = match result {
                    Ok(ok) => Reply::Ok { ok },
                    Err(CallError::Raise { exc, message }) => Reply::Raise { exc: exc.to_string(), message },
                    Err(CallError::Fatal { kind, message }) => {
                        killer.kill();
                        return Some(Outcome::failed(kind, message, started));
                    }
                };
                let text = serde_json::to_string(&reply).ok()?;
                write_line(stdin, &text).ok()?;
            }
            ChildMsg::Done { result, error } => {
                if let Some(r) = &result {
                    if r.to_string().len() as u64 > host.limits.max_log_bytes {
                        return Some(Outcome::failed(ErrorKind::Limit, format!("the result exceeded max_log_bytes = {}", host.limits.max_log_bytes), started));
                    }
                }
                return Some(Outcome { result, error: error.map(|e| (claimed_kind(e.kind), bounded(e.message))), elapsed: started.elapsed() });
            }
        }
    }
}

/// The kinds a child may report about its own script (`internal`: the interpreter failed
/// inside an operation, not the script); any other claim (`timeout`, `limit`, ...) is the
/// parent's to make, so it reads as a crash.
fn claimed_kind(kind: ErrorKind) -> ErrorKind {
    match kind {
        ErrorKind::Exception | ErrorKind::Syntax | ErrorKind::Recursion | ErrorKind::Memory | ErrorKind::Crash | ErrorKind::Internal => kind,
        _ => ErrorKind::Crash,
    }
}

/// An error message from the child, cut to [`MAX_ERROR_BYTES`] at a character boundary.
fn bounded(mut message: String) -> String {
    if message.len() > MAX_ERROR_BYTES {
        let mut end = MAX_ERROR_BYTES;
        while !message.is_char_boundary(end) {
            end -= 1;
        }
        message.truncate(end);
        message.push_str(" [truncated]");
    }
    message
}
