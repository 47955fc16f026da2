//! What runs for the client: tool calls on the blocking pool ([`blocking`]), the processes
//! they start (a sandbox child, a confined run's init), and their ends: a cancelled call's
//! work is killed ([`KillOnDrop`]); when the client goes away, all of it ([`end_calls`]).

use super::internal;
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use std::sync::Arc;

/// Tool calls running on the blocking pool ([`blocking`]).
static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// For a client that went away: kills what runs for it until its calls have ended, since a
/// call may be starting a child right now (one kill would miss it, and the call would run to
/// its timeout). At most 30 s: a call that ignores its children's deaths is given up on.
pub(super) fn end_calls() {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        kill_children();
        if CALLS.load(std::sync::atomic::Ordering::SeqCst) == 0 {
            return;
        }
        if std::time::Instant::now() >= deadline {
            tracing::warn!("mcp: a call of the gone client still runs after 30 s; the server ends without it");
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Counts a call in [`CALLS`] while it lives (a panic included).
struct Counted;

impl Counted {
    fn new() -> Counted {
        CALLS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Counted
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        CALLS.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Kills this process's children (a sandbox child, a confined run's init: its whole pid
/// namespace goes with it), for a client that went away: the children of each of its threads.
fn kill_children() {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else { return };
    for t in tasks.flatten() {
        kill_children_of(&t.path().join("children").to_string_lossy());
    }
}

/// Runs `f` on the blocking pool. When the client cancels the call, the processes `f`
/// started (a sandbox child, a confined run's init and with it its pid namespace) are killed,
/// so the work stops instead of running to its timeout; `None` then. rmcp may also drop this
/// future on a cancellation: the killing is done by a guard's drop, so it happens either way.
pub(super) async fn blocking<T: Send + 'static>(ctx: &RequestContext<RoleServer>, f: impl FnOnce() -> T + Send + 'static) -> Result<Option<T>, ErrorData> {
    let guard = KillOnDrop { tid: Arc::new(std::sync::atomic::AtomicI32::new(0)), done: Arc::new(std::sync::atomic::AtomicBool::new(false)), armed: true };
    let (t, d) = (Arc::clone(&guard.tid), Arc::clone(&guard.done));
    let counted = Counted::new();
    let task = tokio::task::spawn_blocking(move || {
        let _counted = counted;
        t.store(rustix::thread::gettid().as_raw_nonzero().get(), std::sync::atomic::Ordering::SeqCst);
        let out = f();
        d.store(true, std::sync::atomic::Ordering::SeqCst);
        out
    });
    let mut guard = guard;
    tokio::select! {
        out = task => {
            guard.armed = false;
            out.map(Some).map_err(internal)
        }
        () = ctx.ct.cancelled() => Ok(None),
    }
}

/// Kills, when dropped armed, what the blocking thread `tid` starts until its work is `done`
/// (at most 5 s: it may be starting a child right now).
struct KillOnDrop {
    tid: Arc<std::sync::atomic::AtomicI32>,
    done: Arc<std::sync::atomic::AtomicBool>,
    armed: bool,
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let (tid, done) = (Arc::clone(&self.tid), Arc::clone(&self.done));
        std::thread::spawn(move || {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
            while !done.load(std::sync::atomic::Ordering::SeqCst) && std::time::Instant::now() < deadline {
                let tid = tid.load(std::sync::atomic::Ordering::SeqCst);
                if tid != 0 {
                    kill_children_of(&format!("/proc/self/task/{tid}/children"));
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        });
    }
}

/// SIGKILLs the pids listed in `file` (a `/proc/.../children` list).
fn kill_children_of(file: &str) {
    for pid in std::fs::read_to_string(file).unwrap_or_default().split_whitespace().filter_map(|p| p.parse::<i32>().ok()) {
        if let Some(pid) = rustix::process::Pid::from_raw(pid) {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
        }
    }
}
