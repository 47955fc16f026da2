//! Test fixtures: a temp project with a temp CAIRN_HOME, the real `cairn` binary, and the
//! library opened on the same directories. Waiting is always on a condition with a deadline.

#![allow(dead_code)]

use cairn::command::{self, Command, Output, Status};
use cairn::config::Config;
use cairn::project::{Home, Project};
use std::path::{Path, PathBuf};
use std::process::{Command as Proc, Output as ProcOutput};
use std::time::{Duration, Instant};

/// The built `cairn` binary.
pub fn exe() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_cairn"))
}

/// A temp project plus CAIRN_HOME.
pub struct Fixture {
    pub dir: tempfile::TempDir,
    pub root: PathBuf,
    pub home: PathBuf,
    pub config: Config,
}

impl Fixture {
    /// An empty project (not yet initialized).
    pub fn new() -> Fixture {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("proj");
        let home = dir.path().join("home");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        let root = root.canonicalize().unwrap();
        Fixture { dir, root, home, config: Config::default() }
    }

    /// A project with `files` written and `cairn init` done (through the library).
    pub fn with_files(files: &[(&str, &str)]) -> Fixture {
        let f = Fixture::new();
        for (p, c) in files {
            f.write(p, c);
        }
        f.init();
        f
    }

    pub fn write(&self, rel: &str, content: impl AsRef<[u8]>) {
        let p = self.root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
    }

    pub fn read(&self, rel: &str) -> Option<Vec<u8>> {
        std::fs::read(self.root.join(rel)).ok()
    }

    pub fn read_str(&self, rel: &str) -> Option<String> {
        self.read(rel).map(|b| String::from_utf8(b).unwrap())
    }

    /// Writes `$CAIRN_HOME/config.toml`.
    pub fn home_config(&self, toml: &str) {
        std::fs::write(self.home.join("config.toml"), toml).unwrap();
    }

    /// The library's view of this project (binary set to the built `cairn`).
    pub fn project(&self) -> Project {
        let loaded = cairn::config::load(&self.home, Some(&self.root), &|_| None).expect("config");
        Project::new(&self.root, Home::new(&self.home), loaded.config, exe()).unwrap()
    }

    pub fn init(&self) {
        command::execute(&self.project(), Command::Init).expect("init");
    }

    /// Runs an inline script to reviewing/errored through the library; returns its status.
    pub fn run_inline(&self, code: &str) -> Status {
        match command::execute(&self.project(), Command::Run { reference: code.to_string(), provider: Some(cairn::lifecycle::Provider::Inline), interpreter: None }) {
            Ok(Output::Agent(s)) => s,
            other => panic!("run failed: {other:?}"),
        }
    }

    /// Runs an inline script that must reach reviewing.
    pub fn run_ok(&self, code: &str) -> Status {
        let s = self.run_inline(code);
        assert_eq!(s.state.as_str(), "reviewing", "agent errored: {:?} {:?}", s.error_kind, s.error);
        s
    }

    pub fn status(&self, id: &str) -> Status {
        match command::execute(&self.project(), Command::Status { id: id.to_string() }) {
            Ok(Output::Status(s)) => s,
            other => panic!("status failed: {other:?}"),
        }
    }

    /// The real binary with this fixture's project and home.
    pub fn cmd(&self) -> Proc {
        let mut c = Proc::new(exe());
        c.arg("--project-root").arg(&self.root).arg("--cairn-home").arg(&self.home);
        c.env_remove("CAIRN_HOME");
        c
    }

    /// Runs the binary with `args`.
    pub fn cairn(&self, args: &[&str]) -> Run {
        let out = self.cmd().args(args).output().expect("spawn cairn");
        Run::from(out)
    }

    /// stable.db bytes, for byte-exact "untouched" checks (after a checkpoint).
    pub fn stable_rows(&self) -> Vec<(String, i64, u32, Option<Vec<u8>>)> {
        let conn = rusqlite::Connection::open(self.root.join(".agentfs/stable.db")).unwrap();
        let mut st = conn.prepare("SELECT path, kind, mode, hash FROM entries ORDER BY path").unwrap();
        st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))).unwrap().map(|r| r.unwrap()).collect()
    }

    /// Every project file (excluding .agentfs and .grail) with its content.
    pub fn tree(&self) -> Vec<(String, Vec<u8>)> {
        let mut out = Vec::new();
        walk(&self.root, &self.root, &mut out);
        out.sort();
        out
    }
}

/// A failing test shows the tail of cairn's log (warnings of background work: a wrap session's
/// sync, the daemon's loop), the only trace of what went wrong once the temp dir is gone.
impl Drop for Fixture {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            return;
        }
        if let Ok(log) = std::fs::read_to_string(self.home.join("logs/cairn.log")) {
            let lines: Vec<&str> = log.lines().collect();
            eprintln!("--- tail of $CAIRN_HOME/logs/cairn.log ---\n{}", lines[lines.len().saturating_sub(60)..].join("\n"));
        }
    }
}

fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, Vec<u8>)>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        let rel = p.strip_prefix(root).unwrap().to_string_lossy().to_string();
        if rel == ".agentfs" || rel == ".grail" {
            continue;
        }
        let ft = e.file_type().unwrap();
        if ft.is_dir() {
            walk(root, &p, out);
        } else if ft.is_file() {
            out.push((rel, std::fs::read(&p).unwrap()));
        }
    }
}

/// Output of one run of the binary.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl From<ProcOutput> for Run {
    fn from(o: ProcOutput) -> Run {
        Run {
            code: o.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }
}

impl Run {
    pub fn ok(self) -> Run {
        assert_eq!(self.code, 0, "cairn failed: {self:?}");
        self
    }
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.stdout))
    }
}

/// Waits until `cond` holds, polling every 5 ms, for at most `secs` seconds.
pub fn wait_until(secs: u64, what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A `cairn up` child that is killed when dropped.
pub struct Up {
    pub child: std::process::Child,
}

impl Up {
    pub fn start(f: &Fixture) -> Up {
        let child = f
            .cmd()
            .arg("up")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("spawn cairn up");
        Up { child }
    }

    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for Up {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// How long agent `id`'s run took, by the run's own clock: from its `executing` transition
/// to the end of the sandbox and host-side work, as `run.log` records it ("run ended after N
/// ms"). Test-side timing would count process start-up and storage latency under load.
pub fn run_time(p: &cairn::project::Project, id: &str) -> Duration {
    run_time_if_ran(p, id).unwrap_or_else(|| panic!("no run time in the log of {id}"))
}

/// [`run_time`], or `None` when the agent never ran (refused by the pre-flight check).
pub fn run_time_if_ran(p: &cairn::project::Project, id: &str) -> Option<Duration> {
    let log = std::fs::read_to_string(p.agent_dir(id).join("run.log")).unwrap_or_default();
    let ms = log.lines().rev().find_map(|l| l.strip_prefix("run ended after ")?.strip_suffix(" ms")?.parse::<u64>().ok())?;
    Some(Duration::from_millis(ms))
}

/// A session of `agent:probe` on a new task, as `cairn mcp` opens one: (session id, agent id).
pub fn probe_session(f: &Fixture) -> (String, String) {
    let p = f.project();
    let t = cairn::tasks::create(&p, "agent:probe", "probe", "", &[], Vec::new()).unwrap();
    let s = cairn::tasks::sessions::begin(&p, "agent:probe", &t.row.id, "key").unwrap();
    (s.row.id.clone(), s.row.agent.clone())
}
