//! The parent side of the sandbox: starts the child with a cleared environment, sends the
//! script, serves each external call through [`Host`], and kills the child at the wall-clock
//! limit or when a parent-side limit is exceeded.

use super::protocol::{ChildMsg, Reply, Start};
use crate::error::{Error, Result};
use crate::externals::{CallError, Host};
use serde_json::{Map, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{mpsc, Arc, Condvar, Mutex, Weak};
use std::time::{Duration, Instant};

/// Longest line the child may send (a 10 MiB write_file, JSON-escaped, with room to spare).
const MAX_LINE: u64 = 64 * 1024 * 1024;

/// How a run ended.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Value of the script's last expression (JSON), when it finished.
    pub result: Option<Value>,
    /// `(kind, message)` when it did not: `timeout`, `memory`, `recursion`, `limit`,
    /// `exception`, `syntax` or `crash`.
    pub error: Option<(String, String)>,
    /// Wall time of the run.
    pub elapsed: Duration,
}

impl Outcome {
    fn failed(kind: &str, message: impl Into<String>, start: Instant) -> Outcome {
        Outcome { result: None, error: Some((kind.to_string(), message.into())), elapsed: start.elapsed() }
    }
}

/// An empty, read-only directory: the sandbox child's working directory.
fn empty_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cairn-sandbox-empty-{}", rustix::process::getuid().as_raw()));
    if std::fs::create_dir_all(&dir).is_ok() {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o555));
    }
    dir
}

/// The one way a sandbox child is started: cleared environment, empty working directory,
/// only the three protocol pipes.
fn command(exe: &Path) -> Command {
    let mut cmd = Command::new(exe);
    cmd.arg("__sandbox").env_clear().current_dir(empty_dir()).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd
}

/// A started child with its pipes.
struct Spawned {
    child: Child,
    stdin: ChildStdin,
    stdout: ChildStdout,
    stderr: ChildStderr,
}

fn spawn(exe: &Path) -> Result<Spawned> {
    let mut child = command(exe).spawn().map_err(|e| Error::Sandbox(format!("cannot start {}: {e}", exe.display())))?;
    match (child.stdin.take(), child.stdout.take(), child.stderr.take()) {
        (Some(stdin), Some(stdout), Some(stderr)) => Ok(Spawned { child, stdin, stdout, stderr }),
        _ => {
            let _ = child.kill();
            let _ = child.wait();
            Err(Error::Sandbox("child pipes missing".into()))
        }
    }
}

/// Pre-started sandbox children. Each has built its interpreter and waits for a script; each
/// runs exactly one script and exits, so no interpreter is ever reused across agents.
///
/// One long-lived filler thread starts every child: a child's parent-death signal fires when
/// the *thread* that forked it exits, so short-lived spawner threads would kill their children.
pub struct Pool {
    exe: PathBuf,
    size: usize,
    idle: Mutex<Vec<Spawned>>,
    wake: Condvar,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool").field("exe", &self.exe).field("size", &self.size).finish()
    }
}

impl Pool {
    /// A pool of `size` children of `exe`, filled in the background.
    pub fn new(exe: &Path, size: usize) -> Arc<Pool> {
        let pool = Arc::new(Pool { exe: exe.to_path_buf(), size, idle: Mutex::new(Vec::new()), wake: Condvar::new() });
        let weak = Arc::downgrade(&pool);
        std::thread::spawn(move || Pool::fill(weak));
        pool
    }

    /// The filler: keeps `size` children idle until the pool is dropped.
    fn fill(weak: Weak<Pool>) {
        let mut failures = 0;
        loop {
            let Some(pool) = weak.upgrade() else { return };
            let need = pool.idle.lock().map(|i| i.len() < pool.size).unwrap_or(false);
            if need && failures < 3 {
                match spawn(&pool.exe) {
                    Ok(child) => {
                        failures = 0;
                        if let Ok(mut idle) = pool.idle.lock() {
                            idle.push(child);
                        }
                    }
                    Err(e) => {
                        failures += 1;
                        tracing::warn!("sandbox pool: {e}");
                    }
                }
                continue;
            }
            if let Ok(guard) = pool.idle.lock() {
                let _ = pool.wake.wait_timeout(guard, Duration::from_millis(500));
            }
            failures = 0;
        }
    }

    /// A ready child (or a fresh one when none is idle); the pool refills behind it.
    fn take(&self) -> Result<Spawned> {
        let mut found = None;
        if let Ok(mut idle) = self.idle.lock() {
            while let Some(mut s) = idle.pop() {
                if matches!(s.child.try_wait(), Ok(None)) {
                    found = Some(s);
                    break;
                }
                let _ = s.child.wait();
            }
        }
        self.wake.notify_one();
        match found {
            Some(s) => Ok(s),
            None => spawn(&self.exe),
        }
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        if let Ok(mut idle) = self.idle.lock() {
            for mut s in idle.drain(..) {
                let _ = s.child.kill();
                let _ = s.child.wait();
            }
        }
    }
}

/// Starts a child exactly as a run does, in self-test mode, and returns its report.
pub fn selftest(exe: &Path) -> Result<super::confine::SelfTest> {
    let mut cmd = command(exe);
    cmd.arg("--selftest");
    let out = cmd.output().map_err(|e| Error::Sandbox(format!("cannot start {}: {e}", exe.display())))?;
    serde_json::from_slice(&out.stdout).map_err(|e| Error::Sandbox(format!("selftest output: {e}: {}", String::from_utf8_lossy(&out.stdout))))
}

/// Runs `source` in a sandbox child (from `pool` when given, else freshly started from `exe`),
/// serving its calls with `host`.
pub fn run(exe: &Path, pool: Option<&Arc<Pool>>, source: &str, filename: &str, inputs: Map<String, Value>, host: &mut Host) -> Result<Outcome> {
    let limits = host.limits.clone();
    let Spawned { mut child, mut stdin, stdout, stderr } = match pool {
        Some(p) => p.take()?,
        None => spawn(exe)?,
    };
    let started = Instant::now();
    let pid = child.id() as i32;

    // Watchdog: SIGKILL at the wall-clock limit unless told the run is over.
    let (stop_tx, stop_rx) = mpsc::channel::<()>();
    let timeout = Duration::from_secs(limits.timeout_seconds);
    let watchdog = std::thread::spawn(move || match stop_rx.recv_timeout(timeout) {
        Err(mpsc::RecvTimeoutError::Timeout) => {
            kill(pid);
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
    };
    let mut outcome = None;
    if write_line(&mut stdin, &serde_json::to_string(&start_msg)?).is_ok() {
        let mut reader = BufReader::new(stdout);
        outcome = serve(&mut reader, &mut stdin, host, started, pid);
    }
    drop(stdin);
    let _ = stop_tx.send(());
    let timed_out = watchdog.join().unwrap_or(false);
    if outcome.is_none() || timed_out {
        kill(pid);
    }
    let status = child.wait().map_err(|e| Error::Sandbox(format!("wait: {e}")))?;
    let stderr_text = stderr_reader.join().unwrap_or_default();
    if timed_out {
        return Ok(Outcome::failed("timeout", format!("exceeded timeout_seconds = {}", limits.timeout_seconds), started));
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
                Outcome::failed("memory", format!("exceeded max_memory_mb = {}", limits.max_memory_mb), started)
            } else {
                Outcome::failed("crash", format!("the sandbox process {detail}{}", if tail.is_empty() { String::new() } else { format!(": {tail}") }), started)
            }
        }
    })
}

fn write_line(w: &mut impl Write, line: &str) -> std::io::Result<()> {
    w.write_all(line.as_bytes())?;
    w.write_all(b"\n")?;
    w.flush()
}

fn kill(pid: i32) {
    if let Some(pid) = rustix::process::Pid::from_raw(pid) {
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
    }
}

/// Serves calls until the child says it is done. `None` when the child died or misbehaved.
fn serve(reader: &mut impl BufRead, stdin: &mut impl Write, host: &mut Host, started: Instant, pid: i32) -> Option<Outcome> {
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = reader.by_ref().take(MAX_LINE).read_until(b'\n', &mut line).ok()?;
        if n == 0 {
            return None;
        }
        if line.last() != Some(&b'\n') {
            kill(pid);
            return Some(Outcome::failed("limit", "a call from the script exceeded the message size limit", started));
        }
        let msg: ChildMsg = match serde_json::from_slice(&line) {
            Ok(m) => m,
            Err(_) => {
                kill(pid);
                return Some(Outcome::failed("crash", "the sandbox sent a malformed message", started));
            }
        };
        match msg {
            ChildMsg::Call { name, args, kwargs } => {
                let reply = match host.call(&name, &args, &kwargs) {
                    Ok(ok) => Reply::Ok { ok },
                    Err(CallError::Raise { exc, message }) => Reply::Raise { exc: exc.to_string(), message },
                    Err(CallError::Fatal { kind, message }) => {
                        kill(pid);
                        return Some(Outcome::failed(kind, message, started));
                    }
                };
                let text = serde_json::to_string(&reply).ok()?;
                write_line(stdin, &text).ok()?;
            }
            ChildMsg::Done { result, error } => {
                if let Some(r) = &result {
                    if r.to_string().len() as u64 > host.limits.max_log_bytes {
                        return Some(Outcome::failed("limit", format!("the result exceeded max_log_bytes = {}", host.limits.max_log_bytes), started));
                    }
                }
                return Some(Outcome { result, error: error.map(|e| (e.kind, e.message)), elapsed: started.elapsed() });
            }
        }
    }
}
