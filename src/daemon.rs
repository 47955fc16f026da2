//! The loop of a long-running cairn process (`cairn up`, the Neovim host), until `stop` is
//! set: recovery of interrupted agents, the file watcher (and the marker that says the index
//! is live), the worker pool with pre-started sandbox children, and signal files.

use cairn_core::error::{Error, Result};
use cairn_core::index::LiveIndex;
use cairn_core::orchestrator;
use cairn_core::project::Project;
use cairn_core::sandbox::pool::Pool;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// How soon after activity in the tree (or how often, without a watcher) the index is
/// reconciled with the tree by a stat walk.
const RECONCILE_EVERY: Duration = Duration::from_secs(1);
/// How often it is reconciled while nothing happens.
const RECONCILE_IDLE: Duration = Duration::from_secs(60);

/// Starts the file watcher. `CAIRN_TEST_INOTIFY_EXHAUSTED=1` (test-only) fails it as an
/// exhausted inotify limit would, to prove the fallback.
pub(crate) fn start_watcher(project: &Project) -> Result<cairn_core::watcher::Watcher> {
    if std::env::var_os("CAIRN_TEST_INOTIFY_EXHAUSTED").is_some_and(|v| v == "1") {
        return Err(Error::Watch(cairn_core::watcher::exhausted()));
    }
    cairn_core::watcher::Watcher::start(project)
}

/// The last error the loop survived, for `:checkhealth cairn`.
pub type LastError = std::sync::Mutex<Option<String>>;

/// Serves `project` until `stop` is set. `report` receives one-line messages for the user;
/// errors the loop survives (it logs them, backs off and goes on) are also kept in `last_error`.
pub fn services(project: &Project, stop: &AtomicBool, report: &(dyn Fn(String) + Sync), last_error: &LastError) -> Result<()> {
    for (id, state) in orchestrator::recover(project)? {
        report(format!("agent {id} {state} after an interrupted run"));
    }
    for id in cairn_core::wrap::recover(project)? {
        report(format!("agent {id} reviewing: its `cairn wrap` ended first; what it wrote is kept"));
    }
    for id in cairn_core::tasks::sessions::recover(project)? {
        report(format!("agent {id} reviewing: its session's interrupted finish was completed"));
    }
    let _registered = crate::signals::register(project).map_err(|e| tracing::warn!("{e}")).ok();
    // Without a watcher (the inotify limit is exhausted, typically on a very large tree) the
    // index still converges: the stat scan below runs every second. Said, never silent.
    let mut watcher = match start_watcher(project) {
        Ok(w) => Some(w),
        Err(e) => {
            let line = format!("file watcher unavailable: {e}; falling back to a stat scan of the directories (every {} s or more on a large tree; commands catch up themselves)", RECONCILE_EVERY.as_secs());
            tracing::warn!("{line}");
            if let Ok(mut last) = last_error.lock() {
                *last = Some(line.clone());
            }
            report(line);
            None
        }
    };
    // The watcher starts before this catch-up, so nothing between the two is missed.
    cairn_core::sync::catch_up(project)?;
    // Only a watcher makes the index live: without one, each command catches up itself (a
    // pruned scan), which is fresher than this process's scan of a second ago.
    let _live = match watcher.is_some().then(|| LiveIndex::claim(project)) {
        Some(Ok(live)) => Some(live),
        Some(Err(e)) => {
            tracing::warn!("{e}");
            None
        }
        None => None,
    };
    let pool = Pool::new(&project.exe, project.config.sandbox.syntax_layer);
    std::thread::scope(|s| {
        s.spawn(|| keep_index(project, watcher.as_mut(), stop));
        let polling = project.config.orchestrator.signal_polling;
        let mut housekeeping = Housekeeping::new(project);
        let mut tick = || {
            if polling {
                for h in crate::signals::poll(project) {
                    match h.outcome {
                        Ok(_) => tracing::info!("signal {} done", h.name),
                        Err(e) => report(format!("signal {} failed: {e}", h.name)),
                    }
                }
            }
            housekeeping.tick(project);
        };
        let on_error = |e: &cairn_core::error::Error| {
            tracing::error!("orchestrator: {e} (backing off, then trying again)");
            if let Ok(mut last) = last_error.lock() {
                *last = Some(format!("{}: {e}", cairn_core::time::rfc3339(cairn_core::time::now_ms())));
            }
        };
        let result = orchestrator::serve(project, Some(&pool), &|| stop.load(Ordering::Relaxed), &mut tick, &on_error);
        stop.store(true, Ordering::Relaxed);
        result
    })
}

/// Keeps the index current until `stop`: events keep it within milliseconds; a pruned scan
/// (`sync::catch_up`: the directories whose stamp moved) makes it right whatever the events
/// missed or misordered (directory swaps, renames then re-creation). It runs
/// [`RECONCILE_EVERY`] after activity in the tree, and every [`RECONCILE_IDLE`] when nothing
/// happens; an overflow of the kernel's queue (events lost, files rewritten in place among
/// them) is answered by a full scan. Without a watcher (the inotify limit is exhausted), the
/// pruned scan is the change source: every [`RECONCILE_EVERY`], or fifty times its own
/// cost on a tree where it takes longer (commands then catch up themselves: see `LiveIndex`).
pub(crate) fn keep_index(project: &Project, mut watcher: Option<&mut cairn_core::watcher::Watcher>, stop: &AtomicBool) {
    let mut last_reconcile = std::time::Instant::now();
    let mut due: Option<std::time::Instant> = None;
    let mut last_touch = std::time::Instant::now();
    let mut last_cost = Duration::ZERO;
    while !stop.load(Ordering::Relaxed) {
        if last_touch.elapsed() >= Duration::from_secs(1) {
            // The liveness stamp: a stopped or hung process is not trusted for long.
            cairn_core::index::touch_live(project);
            last_touch = std::time::Instant::now();
        }
        let interval = match watcher.as_mut() {
            Some(w) => {
                if let Err(e) = w.pump(Duration::from_millis(200)) {
                    tracing::warn!("watcher: {e}");
                }
                if w.take_overflow() {
                    if let Err(e) = cairn_core::sync::init(project) {
                        tracing::warn!("full scan after an overflow: {e}");
                    }
                }
                if w.take_activity() {
                    due.get_or_insert_with(|| std::time::Instant::now() + RECONCILE_EVERY);
                }
                RECONCILE_IDLE
            }
            None => {
                std::thread::sleep(Duration::from_millis(200));
                // At most a fiftieth of a core on scanning, however large the tree.
                RECONCILE_EVERY.max(last_cost * 50)
            }
        };
        let now = std::time::Instant::now();
        if due.is_some_and(|d| now >= d) || now - last_reconcile >= interval {
            if let Err(e) = cairn_core::sync::catch_up(project) {
                tracing::warn!("reconcile: {e}");
            }
            last_cost = now.elapsed();
            last_reconcile = std::time::Instant::now();
            due = None;
        }
    }
}

/// Held by the one `cairn up` of a project: an `flock` on `.agentfs/up.lock`, which holds its
/// pid (released by the kernel when the process dies).
pub struct UpLock {
    _file: std::fs::File,
}

/// Takes the project's `up` lock, or says which process holds it.
pub fn one_up(project: &Project) -> Result<UpLock> {
    use std::io::{Read, Seek, Write};
    let path = project.agentfs().join("up.lock");
    let mut file = std::fs::OpenOptions::new().create(true).truncate(false).read(true).write(true).open(&path).map_err(|e| Error::io(&path, e))?;
    match rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => {
            let _ = file.set_len(0);
            let _ = file.rewind();
            let _ = write!(file, "{}", std::process::id());
            Ok(UpLock { _file: file })
        }
        Err(_) => {
            let mut holder = String::new();
            let _ = file.read_to_string(&mut holder);
            Err(Error::Busy(format!("another `cairn up` (pid {}) already serves {}", holder.trim(), project.root.display())))
        }
    }
}

/// Garbage collection by itself (`[gc] auto_interval_minutes`): once soon after start, then
/// every interval, each time only when no agent runs and no accept holds the review lock
/// (otherwise at the next tick).
struct Housekeeping {
    every: Option<Duration>,
    next: std::time::Instant,
}

impl Housekeeping {
    fn new(project: &Project) -> Housekeeping {
        let minutes = project.config.gc.auto_interval_minutes;
        Housekeeping { every: (minutes > 0).then(|| Duration::from_secs(minutes * 60)), next: std::time::Instant::now() }
    }

    fn tick(&mut self, project: &Project) {
        let Some(every) = self.every else { return };
        if std::time::Instant::now() < self.next {
            return;
        }
        match cairn_core::gc::auto(project) {
            Ok(Some(r)) => {
                tracing::info!("gc: removed {} agents and {} workspaces; {} bytes left", r.agents_removed.len(), r.workspaces_removed.len(), r.total_bytes);
                self.next = std::time::Instant::now() + every;
            }
            Ok(None) => {}
            Err(e) => {
                tracing::warn!("gc: {e}");
                self.next = std::time::Instant::now() + every;
            }
        }
    }
}
