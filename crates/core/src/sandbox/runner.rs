//! The parent side of the sandbox: starts the child with a cleared environment, sends the
//! script, serves each external call through [`Host`], and kills the child at the wall-clock
//! limit or when a parent-side limit is exceeded.

use super::protocol::Start;
pub use super::serve::Outcome;
use super::serve::{serve, write_line};
use crate::error::Result;
use crate::lifecycle::ErrorKind;
use crate::externals::Host;
use serde_json::{Map, Value};
use std::io::{BufReader, Read};
use std::path::Path;

use super::pool::Pool;
use super::spawn::{spawn, Proc, Spawned};
use super::watchdog::{watch, Ended};
use std::sync::mpsc;
use std::time::{Duration, Instant};



/// Runs `source` in a sandbox child (from `pool` when given, else freshly started from `exe`),
/// serving its calls with `host`.
///
/// On CPython (`host.limits.interpreter`, as [`super::interpreter::choose`] set it), the script
/// runs in a confined run workspace instead ([`super::cpython`]), served by the same loop.
pub fn run(exe: &Path, pool: Option<&Pool>, source: &str, filename: &str, mut inputs: Map<String, Value>, host: &mut Host) -> Result<Outcome> {
    file_inputs(&mut inputs, host);
    let limits = host.limits.clone();
    let start_msg = start_message(source, filename, inputs, &limits);
    if limits.interpreter == super::interpreter::Interpreter::Cpython {
        return super::cpython::run(&start_msg, host);
    }
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
    let stop = host.stop.clone();
    let watchdog = std::thread::spawn(move || watch(Some(deadline), stop, stop_rx, || dog.kill()));
    // Drain stderr (bounded) so the child never blocks on it.
    let stderr_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = stderr.take(64 * 1024).read_to_end(&mut buf);
        String::from_utf8_lossy(&buf).into_owned()
    });

    let mut outcome = None;
    if write_line(&mut stdin, &serde_json::to_string(&start_msg)?).is_ok() {
        let mut reader = BufReader::new(stdout);
        outcome = serve(&mut reader, &mut stdin, host, started, &killer);
    }
    drop(stdin);
    let _ = stop_tx.send(());
    let ended = watchdog.join().unwrap_or(None);
    let killed = ended.is_some();
    if outcome.is_none() || killed {
        killer.kill();
    }
    if let (Some(done), false, Proc::Forked { .. }) = (&outcome, killed, &proc) {
        // A finished run needs nothing more from its child: a forked one is ended now and
        // reaped by the zygote (the stderr drain ends with it), without waiting for either.
        killer.kill();
        return Ok(done.clone());
    }
    let status = proc.wait()?;
    let stderr_text = stderr_reader.join().unwrap_or_default();
    match ended {
        Some(Ended::Timeout) => return Ok(Outcome::failed(ErrorKind::Timeout, format!("exceeded timeout_seconds = {}", limits.timeout_seconds), started)),
        Some(Ended::Stopped) => return Ok(Outcome::failed(ErrorKind::Interrupted, "stopped: rejected while it ran".to_string(), started)),
        None => {}
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

/// The first message of a run.
fn start_message(source: &str, filename: &str, inputs: Map<String, Value>, limits: &crate::config::Sandbox) -> Start {
    Start {
        source: source.to_string(),
        filename: filename.to_string(),
        inputs,
        max_recursion: limits.max_recursion,
        max_memory_mb: limits.max_memory_mb,
        timeout_seconds: limits.timeout_seconds,
        seed: u64::try_from(limits.random_seed).unwrap_or_else(|_| rand::random()),
        now_ns: std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64),
    }
}

/// The inputs of the script's file layer (`child/py/_cairnfs.py`): its working directory (the
/// project root: absolute paths inside it are files) and what it refuses up front, as CPython
/// refuses a permission error.
fn file_inputs(inputs: &mut Map<String, Value>, host: &Host) {
    inputs.insert("project_root".into(), Value::String(host.view.project.root.display().to_string()));
    inputs.insert("protected".into(), serde_json::json!({ "dirs": crate::paths::PROTECTED_DIRS, "files": crate::paths::PROTECTED_FILES }));
}


