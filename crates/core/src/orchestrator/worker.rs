//! Worker identity: a process is a worker by its pid plus its start time, so a recycled pid is
//! never mistaken for the original worker.

use crate::store::bin::Worker;

/// This process as a worker.
pub fn this_worker() -> Worker {
    let pid = std::process::id() as i64;
    Worker { pid, start: process_start(pid).unwrap_or(0) }
}

/// Start time of a process (clock ticks since boot), from `/proc/<pid>/stat`.
fn process_start(pid: i64) -> Option<i64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may contain spaces; fields after the closing parenthesis are fixed.
    let rest = &stat[stat.rfind(')')? + 2..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// Is the worker process still running?
pub fn worker_alive(w: Worker) -> bool {
    match process_start(w.pid) {
        Some(start) => w.start == 0 || start == w.start,
        None => false,
    }
}

