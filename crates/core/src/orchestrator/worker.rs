//! Worker identity: a process is a worker by its pid plus its start time, so a recycled pid is
//! never mistaken for the original worker.

use crate::store::bin::Worker;

/// This process as a worker (its start time read once per process: a forked child, with its
/// own pid, reads its own).
pub fn this_worker() -> Worker {
    static ME: std::sync::Mutex<Option<Worker>> = std::sync::Mutex::new(None);
    let pid = std::process::id() as i64;
    let mut me = ME.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    match *me {
        Some(w) if w.pid == pid => w,
        _ => {
            let w = Worker { pid, start: process_start(pid).unwrap_or(0) };
            *me = Some(w);
            w
        }
    }
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

