//! The serving loop both interpreters' runs share: the child's calls answered through
//! [`Host`], its end read as an [`Outcome`] ([`super::runner`] for RustPython's child,
//! [`super::cpython`] for CPython's shim).

use super::protocol::{ChildMsg, Reply};
use super::spawn::Killer;
use crate::externals::{CallError, Host};
use crate::lifecycle::ErrorKind;
use serde_json::Value;
use std::io::{BufRead, Read, Write};
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
    pub(super) fn failed(kind: ErrorKind, message: impl Into<String>, start: Instant) -> Outcome {
        Outcome { result: None, error: Some((kind, message.into())), elapsed: start.elapsed() }
    }
}

pub(super) fn write_line(w: &mut impl Write, line: &str) -> std::io::Result<()> {
    w.write_all(line.as_bytes())?;
    w.write_all(b"\n")?;
    w.flush()
}

/// Serves calls until the child says it is done. `None` when the child died or misbehaved.
pub(super) fn serve(reader: &mut impl BufRead, stdin: &mut impl Write, host: &mut Host, started: Instant, killer: &Killer) -> Option<Outcome> {
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
                // Compact as CPython prints a deep traceback, so its last line arrives
                // (RustPython's child sends it compact already, CPython's shim as CPython has it).
                let error = error.map(|e| (claimed_kind(e.kind), bounded(super::child::stack::compact_traceback(&e.message))));
                return Some(Outcome { result, error, elapsed: started.elapsed() });
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
