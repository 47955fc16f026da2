//! Confined runs: every command Cairn runs for a task or an agent (a check, `run_command`,
//! `cairn session exec`) runs here, in a *run workspace* — the project as accept would leave
//! it, copy-on-write, thrown away afterwards — inside an OS boundary made for untrusted code:
//! own user, mount, pid, ipc, uts and network namespaces, the host read-only, home, `/tmp`
//! and `$CAIRN_HOME` replaced by empty private directories, a cleared environment, one
//! budget for the whole tree ([`budget`]: a cgroup where there is one, else derived limits),
//! no capabilities, no new privileges, and the whole process tree killed at the timeout or
//! when `cairn` goes away.
//!
//! The parent side is here: it stages the proposal as a lower layer (only its files are
//! written: the project itself is the layer below), starts `cairn-confine` ([`enter`]),
//! keeps the output's tail, filtered as all a confined command prints ([`term`]), and reads
//! back what the command wrote ([`capture`]).

pub mod budget;
mod capture;
mod cgroup;
pub mod chain;
mod command;
pub mod dial;
pub mod enter;
mod home;
mod ids;
mod install;
mod launch;
mod mounts;
pub mod net;
mod own;
mod procfs;
pub mod proxy;
pub mod pty;
mod report;
mod spec;
mod stage;
pub mod streamed;
mod sys;
pub mod term;
pub mod typed;
mod unconfined;
mod view;
pub mod wrap;

pub use capture::{scan, scan_home, stamps, Limits, Stamp, Written, MAX_DEPTH};
pub use home::{entry_path, plan as home_plan, Plan as HomePlan};
pub(crate) use install::which;
pub use launch::settle;
pub use stage::remove_tree;
pub use report::probe;
use crate::error::{Error, Result};
use crate::project::Project;
use crate::review::diff::FileChange;
use spec::Spec;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// Environment variables every confined command gets (when the host has them).
pub const BASE_ENV: [&str; 3] = ["PATH", "LANG", "TERM"];
/// `PATH` when the host has none.
const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
/// The system directories every view shows read-only (the allow-list; missing ones are
/// skipped, symlinked ones stay symlinks). `/opt` and anything else only through
/// `read_paths`.
pub const SYSTEM: [&str; 8] = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc"];
/// Directories of `/etc` that hold secrets, covered by an empty directory.
pub const HIDDEN_DIRS: [&str; 8] = ["/etc/ssh", "/etc/ssl/private", "/etc/sudoers.d", "/etc/credstore", "/etc/credstore.encrypted", "/etc/NetworkManager/system-connections", "/etc/wireguard", "/etc/ipsec.d"];
/// Files of `/etc` that hold secrets, covered by `/dev/null`.
pub const HIDDEN_FILES: [&str; 9] = ["/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-", "/etc/sudoers", "/etc/security/opasswd", "/etc/ppp/chap-secrets", "/etc/ppp/pap-secrets", "/etc/ipsec.secrets"];
/// Slack the parent gives pid 1 past the timeout before killing the run from outside.
const KILL_GRACE: Duration = Duration::from_secs(5);

/// One command to run.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    pub cmd: &'a str,
    /// Working directory, relative to the project root (`""`: the root).
    pub cwd: &'a str,
    pub timeout: Duration,
    /// Read back what the command wrote ([`Outcome::written`]).
    pub capture: bool,
}

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Code(i32),
    Signal(i32),
    TimedOut,
}

impl Exit {
    pub fn success(self) -> bool {
        self == Exit::Code(0)
    }
}

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exit::Code(c) => write!(f, "exited with {c}"),
            Exit::Signal(s) => write!(f, "was killed by signal {s}"),
            Exit::TimedOut => write!(f, "timed out"),
        }
    }
}

/// What a run gave.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub exit: Exit,
    /// The last `[run] max_output_bytes` of stdout and stderr, interleaved as written.
    pub output: Vec<u8>,
    /// Bytes of output dropped before the tail.
    pub output_dropped: u64,
    pub duration: Duration,
    /// What the command wrote, deleted or replaced in the workspace (with `capture`).
    pub written: Vec<Written>,
    /// `"none"` or `"host"`.
    pub network: String,
    /// Run without the boundary (`[run] allow_unconfined`), and the layer that was missing.
    pub unconfined: Option<String>,
    /// How memory and processes were bounded (a cgroup, or per process and why).
    pub budget: String,
}

/// Runs `req` in a run workspace of the project with `changes` (a proposal, rebased) on top.
pub fn run(project: &Project, changes: &[FileChange], req: &Request) -> Result<Outcome> {
    let started = Instant::now();
    let dir = stage::RunDir::create(project)?;
    stage::stage(&dir.path.join("stage"), changes)?;
    let spec = spec_for(project, &dir.path, req)?;
    let keep = project.config.run.max_output_bytes as usize;
    let (side, output, output_dropped) = start_and_wait(project, &spec, req.timeout + KILL_GRACE, keep)?;
    let (mut ended, exiting) = side.finish(&spec.result_file());
    if let Some(e) = ended.setup_error.take() {
        let cgroups = std::mem::take(&mut ended.cgroups);
        exiting.then(move || cgroup::remove(&cgroups));
        if !project.config.run.allow_unconfined {
            return Err(Error::Sandbox(format!("the confined run could not start: {e} (see `cairn doctor` and :help cairn-runs)")));
        }
        let (exit, output, output_dropped, written) = unconfined::run(&spec, &dir.path.join("copy"), changes, req.timeout, keep)?;
        let network = "host (unconfined)".to_string();
        return Ok(Outcome { exit, output, output_dropped, duration: started.elapsed(), written, network, unconfined: Some(e), budget: "none (unconfined)".into() });
    }
    let written = match (req.capture, ended.capture_error.take()) {
        (true, Some(e)) => Err(Error::Sandbox(format!("the command ran ({}), but what it wrote could not be read back: {e}", ended.exit()))),
        (true, None) => capture::read(&spec.capture_file()).map_err(|e| Error::io(spec.capture_file(), e)),
        (false, _) => Ok(Vec::new()),
    };
    let cgroups = std::mem::take(&mut ended.cgroups);
    exiting.then(move || {
        cgroup::remove(&cgroups);
        drop(dir);
    });
    let (exit, written) = (ended.exit(), written?);
    let network = project.config.run.network.clone();
    Ok(Outcome { exit, output, output_dropped, duration: started.elapsed(), written, network, unconfined: None, budget: ended.budget })
}

/// The spec of one run: the boundary's paths, the cleared environment, the limits.
fn spec_for(project: &Project, dir: &Path, req: &Request) -> Result<Spec> {
    let run = &project.config.run;
    let home = project.env.get("HOME").map(PathBuf::from).filter(|h| h.is_absolute()).unwrap_or_else(|| PathBuf::from("/root"));
    let mut env: Vec<(String, String)> = Vec::new();
    for name in BASE_ENV.iter().copied().chain(run.env.iter().map(String::as_str)) {
        if let Some(v) = project.env.get(name) {
            if !env.iter().any(|(k, _)| k == name) && name != "HOME" {
                env.push((name.to_string(), v.to_string()));
            }
        }
    }
    if !env.iter().any(|(k, _)| k == "PATH") {
        env.push(("PATH".into(), DEFAULT_PATH.into()));
    }
    env.push(("HOME".into(), home.to_string_lossy().into_owned()));
    let read_paths = run.read_paths.iter().map(|p| expand(p, &home, &project.root)).collect();
    let (workspace_masks, cwd) = workspace_paths(project, req.cwd)?;
    Ok(Spec {
        parent_pid: std::process::id() as i32,
        root: project.root.clone(),
        dir: dir.to_path_buf(),
        cmd: req.cmd.to_string(),
        cwd,
        env,
        system: SYSTEM.iter().map(PathBuf::from).collect(),
        home,
        hidden_dirs: hidden_dirs(project),
        hidden_files: HIDDEN_FILES.iter().map(PathBuf::from).collect(),
        read_paths,
        workspace_masks,
        host_network: run.network == "host",
        timeout_ms: req.timeout.as_millis() as u64,
        max_memory_mb: run.max_memory_mb,
        max_processes: run.max_processes,
        no_cgroup: project.env.get("CAIRN_TEST_NO_CGROUP").is_some_and(|v| v == "1"),
        capture: req.capture,
        capture_limits: capture_limits(project),
        wrap: None,
    })
}

/// The directories every view covers: `/etc`'s secrets and `$CAIRN_HOME` (visible if a
/// read path holds it).
pub(super) fn hidden_dirs(project: &Project) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = HIDDEN_DIRS.iter().map(PathBuf::from).collect();
    dirs.push(project.home.dir.clone());
    dirs
}

/// How much of a command's writes is read back: `[sandbox] max_write_bytes`, per file and in
/// total, as for an agent's own writes.
pub fn capture_limits(project: &Project) -> Limits {
    let max = project.config.sandbox.max_write_bytes;
    Limits { file: max, total: max }
}

/// What every boundary hides inside the workspace (Cairn's state, and `$CAIRN_HOME` when it
/// lies in the project), and the working directory for `cwd` (relative to the root).
pub(super) fn workspace_paths(project: &Project, cwd: &str) -> Result<(Vec<PathBuf>, PathBuf)> {
    let mut masks = vec![project.agentfs(), project.root.join(".grail")];
    if project.home.dir.starts_with(&project.root) {
        masks.push(project.home.dir.clone());
    }
    let cwd = match cwd.trim_matches('/') {
        "" | "." => project.root.clone(),
        c => project.root.join(crate::paths::normalize(c, &project.root)?),
    };
    Ok((masks, cwd))
}

/// `~` → home, relative → under the project (`[run] read_paths`, `[wrap]` lists).
pub(crate) fn expand(p: &str, home: &Path, root: &Path) -> PathBuf {
    match p.strip_prefix('~') {
        Some(rest) => home.join(rest.trim_start_matches('/')),
        None if Path::new(p).is_absolute() => PathBuf::from(p),
        None => root.join(p),
    }
}

/// Starts the confined side, keeps the output's last `keep` bytes, kills the run from outside
/// if it outlives `limit`. Returns once pid 1 has ended, with the tail and how many bytes
/// were dropped before it.
fn start_and_wait(project: &Project, spec: &Spec, limit: Duration, keep: usize) -> Result<(launch::Started, Vec<u8>, u64)> {
    let (r, w) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).map_err(|e| Error::Sandbox(format!("pipe: {e}")))?;
    let w2 = w.try_clone().map_err(|e| Error::Sandbox(format!("pipe: {e}")))?;
    let side = launch::start(project, spec, [Stdio::null(), Stdio::from(w), Stdio::from(w2)], None)?;
    let reader = std::thread::spawn(move || tail(std::fs::File::from(r), keep));
    side.wait_ended(limit);
    let (output, dropped) = reader.join().map_err(|_| Error::Internal("the output reader of a run panicked".into()))?;
    Ok((side, output, dropped))
}

/// Reads `r` to its end, filtered ([`term`]: whoever shows it, a terminal acts on what it
/// holds), keeping the last `keep` bytes.
pub(super) fn tail(mut r: impl Read, keep: usize) -> (Vec<u8>, u64) {
    let mut buf = std::collections::VecDeque::with_capacity(keep.min(1 << 20));
    let mut dropped = 0u64;
    let mut chunk = [0u8; 16 * 1024];
    let (mut filter, mut clean) = (term::Filter::new(term::Profile::Output), Vec::with_capacity(chunk.len()));
    loop {
        clean.clear();
        let n = r.read(&mut chunk).unwrap_or(0);
        if n == 0 {
            filter.end(&mut clean);
        } else {
            filter.pass(&chunk[..n], &mut clean);
        }
        buf.extend(&clean);
        if buf.len() > keep {
            let over = buf.len() - keep;
            buf.drain(..over);
            dropped += over as u64;
        }
        if n == 0 {
            break;
        }
    }
    (buf.into_iter().collect(), dropped)
}
