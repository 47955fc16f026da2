//! Confined runs (`:help cairn-runs`), tested from outside: a hostile MCP client (official
//! Python SDK) and a proposal that plants a probe run by a human-written check try to reach
//! secrets, the environment, the host's files, the network, a bystander process, and to
//! outlive the run; ordinary work (a test suite, a formatter) passes and its writes become
//! the proposal.

use crate::support::*;
use serde_json::Value;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::os::unix::fs::PermissionsExt;
use std::process::{Child, Command, Stdio};

/// What the probe is aimed at; each `LEAK-*` line it prints is a hole.
struct Targets {
    _dir: tempfile::TempDir,
    home: PathBuf,
    tmp_token: PathBuf,
    outside: PathBuf,
    listener: TcpListener,
    bystander: Child,
    secret: String,
}

impl Targets {
    fn new(f: &Fixture) -> Targets {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("userhome");
        std::fs::create_dir_all(home.join(".ssh")).unwrap();
        std::fs::write(home.join(".ssh/id_ed25519"), "PRIVATE-KEY-home\n").unwrap();
        let tmp_token = dir.path().join("token");
        std::fs::write(&tmp_token, "TOKEN-tmp\n").unwrap();
        std::fs::write(f.home.join("secret.txt"), "SECRET-cairn-home\n").unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let bystander = Command::new("sleep").arg("600").stdin(Stdio::null()).spawn().unwrap();
        let secret = format!("sk-{}", std::process::id());
        Targets { outside: f.dir.path().join("escaped.txt"), _dir: dir, home, tmp_token, listener, bystander, secret }
    }

    /// A shell probe: prints `probe-ran`, then `LEAK-<what>` for each thing it could do.
    fn probe(&self, f: &Fixture) -> String {
        let port = self.listener.local_addr().unwrap().port();
        let by = self.bystander.id();
        [
            "echo probe-ran".to_string(),
            format!("cat {}/.ssh/id_ed25519 && echo LEAK-home", self.home.display()),
            "cat \"$HOME/.ssh/id_ed25519\" && echo LEAK-home-var".to_string(),
            format!("cat {} && echo LEAK-tmp", self.tmp_token.display()),
            format!("cat {}/secret.txt && echo LEAK-cairn-home", f.home.display()),
            format!("ls {}/.agentfs/bin.db && echo LEAK-agentfs", f.root.display()),
            format!("(env; cat /proc/*/environ) 2>/dev/null | grep -a -q {} && echo LEAK-env", self.secret),
            // Under /tmp the write lands in the run's private /tmp (checked on the host below);
            // the build directory is host file system that no mask covers.
            format!("echo x > {}", self.outside.display()),
            format!("echo x > {}/escaped-{} && echo LEAK-write", env!("CARGO_TARGET_TMPDIR"), std::process::id()),
            format!("echo x >> {}/src/app.py && echo wrote-workspace", f.root.display()),
            format!("python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=3); print('LEAK-net')\""),
            format!("kill -9 {by} && echo LEAK-kill"),
            format!("cat /proc/{by}/environ && echo LEAK-ptrace"),
            "(sleep 987651 &) ; nohup sleep 987652 >/dev/null 2>&1 &".to_string(),
            "true".to_string(),
        ]
        .join("\n")
    }

    /// The cairn binary's environment: the planted home and a secret variable.
    fn env(&self, c: &mut Command) {
        c.env("HOME", &self.home).env("CAIRN_TEST_API_KEY", &self.secret);
    }

    /// Asserts that a probe's output shows it ran and found no hole, and that nothing of it
    /// reached outside.
    fn assert_held(&mut self, f: &Fixture, output: &str) {
        assert!(output.contains("probe-ran"), "the probe did not run: {output}");
        assert!(!output.lines().any(|l| l.starts_with("LEAK")), "the boundary leaked:\n{output}");
        assert!(!self.outside.exists(), "a write landed outside the workspace");
        assert_eq!(f.read_str("src/app.py").unwrap(), "x = 1\n", "the working tree changed");
        assert!(self.listener.accept().is_err(), "a connection reached the host's loopback");
        assert!(self.bystander.try_wait().unwrap().is_none(), "the bystander was killed");
        wait_until(10, "the probe's processes to end", || leftovers().is_empty());
    }
}

impl Drop for Targets {
    fn drop(&mut self) {
        let _ = self.bystander.kill();
        let _ = self.bystander.wait();
    }
}

/// Processes of the probes still running anywhere on the machine.
fn leftovers() -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cmd) = std::fs::read(e.path().join("cmdline")) {
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            if cmd.contains("98765") && !cmd.contains("echo") {
                out.push(cmd);
            }
        }
    }
    out
}

fn sdk_python() -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv/mcp/bin/python");
    assert!(p.exists(), "the MCP Python SDK is missing: run `bash scripts/test.sh` (it installs .venv/mcp)");
    p
}

#[test]
fn a_hostile_mcp_client_reaches_nothing_through_its_checks_or_run_command() {
    let f = Fixture::with_files(&[("src/app.py", "x = 1\n")]);
    let mut t = Targets::new(&f);
    let probe = t.probe(&f);
    let mut c = Command::new(sdk_python());
    c.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/hostile.py")).arg(exe()).arg(&f.root).arg(&probe).env("CAIRN_HOME", &f.home);
    t.env(&mut c);
    let out = c.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "client failed:\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let r: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    let ran = r["run_command"]["output"].as_str().unwrap();
    t.assert_held(&f, ran);
    assert!(ran.contains("wrote-workspace"), "the run workspace is writable: {ran}");
    assert_eq!(r["run_command"]["network"], "none");
    let log = f.read_str(r["checks"][0]["log"].as_str().unwrap()).unwrap();
    t.assert_held(&f, &log);
    assert!(log.starts_with("[cairn] confined run, network: none"), "{log}");
}

#[test]
fn a_planted_probe_run_by_a_human_check_reaches_nothing() {
    let f = Fixture::with_files(&[("src/app.py", "x = 1\n")]);
    let mut t = Targets::new(&f);
    let probe = t.probe(&f);
    let s = f.run_ok(&format!("write_file('conftest.sh', {})\n", serde_json::to_string(&probe).unwrap()));
    let task = f.cairn(&["task", "create", "tests", "--check", "suite=sh conftest.sh", "--json"]).ok().json();
    let id = task["id"].as_str().unwrap();
    cairn::tasks::link_agent(&f.project(), "agent:test", id, &s.id).unwrap();
    let mut c = f.cmd();
    c.args(["task", "check", id]);
    t.env(&mut c);
    let r = Run::from(c.output().unwrap());
    assert_eq!(r.code, 0, "{r:?}");
    let shown = f.cairn(&["task", "show", id, "--json"]).ok().json();
    let log = f.read_str(shown["checks"][0]["log"].as_str().unwrap()).unwrap();
    t.assert_held(&f, &log);
}

/// Opens an MCP-style session through the library (as `cairn mcp` would) on a new task.
fn session(f: &Fixture, actor: &str) -> (String, String) {
    let p = f.project();
    let t = cairn::tasks::create(&p, actor, "work", "", &[], Vec::new()).unwrap();
    let s = cairn::tasks::sessions::begin(&p, actor, &t.row.id, "key").unwrap();
    (s.row.id.clone(), s.row.agent.clone())
}

#[test]
fn killing_cairn_kills_the_run() {
    let f = Fixture::with_files(&[("a.txt", "a\n")]);
    let (sid, _) = session(&f, "agent:sh");
    let mut child = f.cmd().args(["session", "exec", &sid, "--actor", "agent:sh", "--", "sleep 987653"]).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    wait_until(20, "the command to start", || !leftovers().is_empty());
    child.kill().unwrap();
    child.wait().unwrap();
    wait_until(10, "the run to die with cairn", || leftovers().is_empty());
}

/// The confined side starts from its own small binary beside `cairn` (`cairn-confine`); a
/// `cairn` without it beside starts `cairn __confine` instead. Either way, a run's directory
/// is gone once the command that ran it has exited (its tear-down ends in the background).
#[test]
fn the_confined_side_starts_from_its_own_binary_or_from_cairn_and_leaves_nothing() {
    let f = Fixture::with_files(&[("a.txt", "a\n")]);
    let (sid, _) = session(&f, "agent:sh");
    // What a `cairn` killed mid-run left (its pid is gone) goes with the next run.
    let stale = f.home.join("runs/4194999-1-0/stage");
    std::fs::create_dir_all(&stale).unwrap();
    std::fs::write(stale.join("secret.txt"), "proposal bytes").unwrap();
    let lone = tempfile::tempdir().unwrap();
    let alone = lone.path().join("cairn");
    std::fs::hard_link(exe(), &alone).or_else(|_| std::fs::copy(exe(), &alone).map(drop)).unwrap();
    for (program, pid_one) in [(exe(), "cairn-confine"), (alone, "cairn")] {
        let mut c = Command::new(&program);
        c.arg("--project-root").arg(&f.root).arg("--cairn-home").arg(&f.home).env_remove("CAIRN_HOME");
        let r = Run::from(c.args(["session", "exec", &sid, "--actor", "agent:sh", "--json", "--", "cat /proc/1/comm"]).output().unwrap());
        assert_eq!(r.code, 0, "{r:?}");
        let ran = r.json();
        assert_eq!(ran["output"].as_str().unwrap().trim(), pid_one, "{ran}");
        let left: Vec<_> = std::fs::read_dir(f.home.join("runs")).map(|d| d.flatten().map(|e| e.file_name()).collect()).unwrap_or_default();
        assert!(left.is_empty(), "{program:?} left {left:?}");
    }
}

/// What a command does to its own written layer (nesting past the walk's depth, or past the
/// descriptors pid 1 may open) is the run's result or the run's error: never a boundary that
/// "could not start", which `[run] allow_unconfined` would answer by running the command
/// again, unconfined, on the host.
#[test]
fn a_deep_written_layer_never_gets_a_command_run_again_unconfined() {
    let f = Fixture::with_files(&[("a.txt", "a\n")]);
    f.home_config("[run]\nallow_unconfined = true\n");
    let (sid, _) = session(&f, "agent:sh");
    let marker = f.home.join("ran-on-the-host");
    let nest = |levels: usize| format!("echo $$ >> {}; echo x > top.txt; for i in $(seq {levels}); do mkdir e && cd e || exit 9; done; echo deep > d.txt", marker.display());
    // Deeper than the walk goes: the deep part is reported, the rest captured.
    let r = f.cairn(&["session", "exec", &sid, "--actor", "agent:sh", "--json", "--", &nest(200)]);
    assert_eq!(r.code, 0, "{r:?}");
    let ran = r.json();
    assert_eq!(ran["changed"], serde_json::json!(["top.txt"]), "{ran}");
    assert!(ran["skipped"][0]["why"].as_str().unwrap().contains("deeper than"), "{ran}");
    // Within the depth, past pid 1's descriptors (it inherits this limit): the run's error.
    let mut c = Command::new("sh");
    c.arg("-c").arg("ulimit -n 48 && exec \"$@\"").arg("sh").arg(exe()).arg("--project-root").arg(&f.root).arg("--cairn-home").arg(&f.home).env_remove("CAIRN_HOME");
    let r = Run::from(c.args(["session", "exec", &sid, "--actor", "agent:sh", "--json", "--", &nest(100)]).output().unwrap());
    assert_ne!(r.code, 0, "{r:?}");
    assert!(r.stderr.contains("could not be read back"), "{r:?}");
    assert!(!r.stderr.contains("could not start") && r.stdout.is_empty(), "{r:?}");
    assert!(!marker.exists(), "the command ran on the host: {:?}", std::fs::read_to_string(&marker));
}

/// A command past its timeout is killed with everything it started, reported as timed out,
/// and what it wrote before is still read back.
#[test]
fn a_run_past_its_timeout_is_killed_and_reported() {
    let f = Fixture::with_files(&[("a.txt", "a\n")]);
    let (sid, _) = session(&f, "agent:sh");
    let r = f.cairn(&["session", "exec", &sid, "--actor", "agent:sh", "--timeout", "1", "--json", "--", "echo started > b.txt; sleep 987654 & sleep 987654"]);
    assert_eq!(r.code, 124, "{r:?}");
    let ran = r.json();
    assert_eq!(ran["timed_out"], true, "{ran}");
    assert_eq!(ran["changed"], serde_json::json!(["b.txt"]), "{ran}");
    wait_until(10, "the run's processes to be gone", || leftovers().iter().all(|c| !c.contains("987654")));
}

#[test]
fn a_formatter_run_through_session_exec_becomes_the_proposal() {
    let f = Fixture::with_files(&[("a.py", "x=1\n"), ("b.py", "y=2\n"), ("old.py", "z\n"), ("keep.py", "k\n")]);
    std::fs::write(f.root.join(".gitignore"), "*.log\n").unwrap();
    let (sid, agent) = session(&f, "agent:sh");
    let fmt = "import os\nfor n in ('a.py', 'b.py'):\n    s = open(n).read().replace('=', ' = ')\n    open(n, 'w').write(s)\nos.remove('old.py')\nopen('run.log', 'w').write('ignored')\n";
    let p = f.project();
    cairn::tasks::sessions::tool(&p, "agent:sh", &sid, "write_file", &[Value::from("fmt.py"), Value::from(fmt)], &Default::default()).unwrap().unwrap();
    let r = f.cairn(&["session", "exec", &sid, "--actor", "agent:sh", "--json", "--", "python3", "fmt.py"]);
    assert_eq!(r.code, 0, "{r:?}");
    let ran = r.json();
    assert_eq!(ran["changed"], serde_json::json!(["a.py", "b.py"]), "{ran}");
    assert_eq!(ran["deleted"], serde_json::json!(["old.py"]), "{ran}");
    assert_eq!(f.read_str("a.py").unwrap(), "x=1\n", "nothing landed");
    let diff = f.cairn(&["diff", &agent]).ok().stdout;
    for line in ["+x = 1", "+y = 2", "-z", "+++ b/fmt.py"] {
        assert!(diff.lines().any(|l| l == line), "{line} missing from:\n{diff}");
    }
    assert!(!diff.contains("b/run.log") && !diff.contains("b/keep.py"), "{diff}");
    // capture off: the run's writes are thrown away.
    let r = f.cairn(&["session", "exec", &sid, "--actor", "agent:sh", "--no-capture", "--json", "--", "rm keep.py"]).ok().json();
    assert_eq!(r["deleted"], serde_json::json!([]));
    assert!(!f.cairn(&["diff", &agent]).ok().stdout.contains("keep.py"));
    let events = f.cairn(&["events", "--json"]).ok().stdout;
    assert!(events.contains("command_ran") && events.contains("python3 fmt.py"), "{events}");
}

/// `cmd` as an ordinary user: uid/gid 65534 through `setpriv` when the tests run as root
/// (containers, CI), else as is.
pub fn as_ordinary_user(args: &[&std::ffi::OsStr]) -> Command {
    let root = is_root();
    let mut c = if root {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"]);
        c
    } else {
        Command::new(args[0])
    };
    c.args(if root { args } else { &args[1..] });
    c
}

/// Do the tests run as root?
pub fn is_root() -> bool {
    std::fs::metadata("/proc/self").map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0).unwrap_or(false)
}

/// A minimal MCP client over raw JSON-RPC lines (the SDK's interpreter may not be reachable
/// by another user): each call returns the tool's text.
pub struct RawMcp {
    child: Child,
    out: std::io::BufReader<std::process::ChildStdout>,
    next: u64,
}

impl RawMcp {
    pub fn start(mut c: Command) -> RawMcp {
        let mut child = c.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit()).spawn().unwrap();
        let out = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut m = RawMcp { child, out, next: 1 };
        let _ = m.request("initialize", serde_json::json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "ordinary", "version": "1"}}));
        m.send(serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        m
    }
    fn send(&mut self, v: Value) {
        use std::io::Write;
        let stdin = self.child.stdin.as_mut().unwrap();
        let _ = writeln!(stdin, "{v}").and_then(|_| stdin.flush());
    }
    fn request(&mut self, method: &str, params: Value) -> Option<Value> {
        use std::io::BufRead;
        let id = self.next;
        self.next += 1;
        self.send(serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            if self.out.read_line(&mut line).unwrap_or(0) == 0 {
                return None;
            }
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == id {
                return Some(v);
            }
        }
    }
    /// Sends a tool call without waiting for its answer; returns its id.
    pub fn send_call(&mut self, tool: &str, args: Value) -> u64 {
        let id = self.next;
        self.next += 1;
        self.send(serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": args}}));
        id
    }
    /// Sends a notification (e.g. `notifications/cancelled`).
    pub fn notify(&mut self, method: &str, params: Value) {
        self.send(serde_json::json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }
    /// The server's pid.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
    /// Closes the server's stdin, as a client that goes away.
    pub fn close(&mut self) {
        drop(self.child.stdin.take());
    }
    /// Has the server exited?
    pub fn exited(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(Some(_)))
    }
    pub fn call(&mut self, tool: &str, args: Value) -> Value {
        let r = self.request("tools/call", serde_json::json!({"name": tool, "arguments": args})).unwrap_or_else(|| panic!("the server died in {tool}"));
        let res = &r["result"];
        assert!(res["isError"] != Value::Bool(true) && !res.is_null(), "{tool} failed: {r}");
        assert!(res["structuredContent"].is_object(), "{tool}: no structured content: {r}");
        res["structuredContent"].clone()
    }
    /// `call`, or `None` when the server died before answering.
    pub fn try_call(&mut self, tool: &str, args: Value) -> Option<Value> {
        let r = self.request("tools/call", serde_json::json!({"name": tool, "arguments": args}))?;
        Some(if r["result"]["structuredContent"].is_object() { r["result"]["structuredContent"].clone() } else { r })
    }
}

impl Drop for RawMcp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn an_ordinary_user_runs_confined_commands_too() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let (root, home) = (dir.path().join("proj"), dir.path().join("home"));
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(root.join("src/app.py"), "x=1\n").unwrap();
    let chown = Command::new("chown").arg("-R").arg("65534:65534").arg(&root).arg(&home).status();
    let is_root = std::fs::metadata("/proc/self").map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0).unwrap_or(false);
    assert!(!is_root || chown.is_ok_and(|s| s.success()));
    let base = |sub: &str| -> Command {
        let exe = exe();
        let mut c = as_ordinary_user(&[exe.as_os_str(), "--project-root".as_ref(), root.as_os_str(), "--cairn-home".as_ref(), home.as_os_str(), sub.as_ref()]);
        c.env("HOME", &home).env_remove("CAIRN_HOME");
        c
    };
    let init = base("init").output().unwrap();
    assert!(init.status.success(), "{init:?}");
    let mut m = RawMcp::start(base("mcp"));
    let task = m.call("task_create", serde_json::json!({"title": "format"}));
    let s = m.call("session_begin", serde_json::json!({"task": task["id"], "idempotency_key": "k"}));
    let cmd = "id -u; sed -i 's/=/ = /' src/app.py; echo new > src/gen.txt; echo x > /etc/escaped && echo LEAK-write; python3 -c \"import socket; socket.create_connection(('1.1.1.1', 53), timeout=2); print('LEAK-net')\"; true";
    let ran = m.call("run_command", serde_json::json!({"session": s["id"], "command": cmd}));
    let out = ran["output"].as_str().unwrap();
    assert_eq!(ran["exit_code"], 0, "{ran}");
    assert!(!out.lines().any(|l| l.starts_with("LEAK")), "{out}");
    if is_root {
        assert!(out.starts_with("65534"), "ran as the ordinary user: {out}");
    }
    assert_eq!(ran["changed"], serde_json::json!(["src/app.py", "src/gen.txt"]), "{ran}");
    m.call("session_finish", serde_json::json!({"session": s["id"], "summary": "formatted"}));
    assert_eq!(std::fs::read_to_string(root.join("src/app.py")).unwrap(), "x=1\n", "nothing landed");
    let diff = base("diff").arg(s["agent"].as_str().unwrap()).output().unwrap();
    let diff = String::from_utf8_lossy(&diff.stdout);
    assert!(diff.contains("+x = 1") && diff.contains("+new"), "{diff}");
}

#[test]
fn an_edit_in_the_preview_workspace_does_not_change_a_check() {
    let f = Fixture::with_files(&[("src/app.py", "x = 1\n")]);
    let s = f.run_ok("write_file('src/app.py', 'x = 2\\n')\nwrite_file('marker.txt', 'm\\n')\n");
    let task = f.cairn(&["task", "create", "t", "--check", "proposal=grep -q 'x = 2' src/app.py && test -f marker.txt", "--json"]).ok().json();
    let id = task["id"].as_str().unwrap();
    cairn::tasks::link_agent(&f.project(), "agent:test", id, &s.id).unwrap();
    // The user edits in a preview: its written layer (as a session keeps it) changes nothing
    // a check sees.
    let upper = cairn::workspace::materialize(&f.project(), &s.id).unwrap().path.join("rw/upper");
    std::fs::create_dir_all(upper.join("src")).unwrap();
    std::fs::write(upper.join("src/app.py"), "x = 3\n").unwrap();
    f.cairn(&["task", "check", id]).ok();
    assert_eq!(f.cairn(&["task", "show", id, "--json"]).ok().json()["checks"][0]["result"], "pass", "the check ran on the proposal, not on the preview");
    // The other way: a failing proposal stays failing whatever the preview holds.
    let task = f.cairn(&["task", "create", "t2", "--check", "never=grep -q 'x = 3' src/app.py", "--json"]).ok().json();
    let id = task["id"].as_str().unwrap();
    cairn::tasks::link_agent(&f.project(), "agent:test", id, &s.id).unwrap();
    assert_eq!(f.cairn(&["task", "check", id]).code, 1);
}

/// `cairn <args>` where the kernel refuses user namespaces (a user namespace of its own whose
/// `max_user_namespaces` is 0), as on machines that disable them.
fn without_userns(f: &Fixture, args: &[&str]) -> Run {
    let out = Command::new("unshare")
        .args(["-Ur", "sh", "-c", "echo 0 > /proc/sys/user/max_user_namespaces && exec \"$@\"", "sh"])
        .arg(exe())
        .arg("--project-root")
        .arg(&f.root)
        .arg("--cairn-home")
        .arg(&f.home)
        .args(args)
        .env_remove("CAIRN_HOME")
        .output()
        .unwrap();
    Run::from(out)
}

#[test]
fn without_user_namespaces_runs_are_refused_unless_the_user_opts_in() {
    let f = Fixture::with_files(&[("a.txt", "a\n")]);
    let (sid, agent) = session(&f, "agent:sh");
    let doctor = without_userns(&f, &["doctor"]);
    assert!(doctor.stdout.contains("confined runs: unavailable") && doctor.stdout.contains("user namespaces"), "{doctor:?}");
    let r = without_userns(&f, &["session", "exec", &sid, "--actor", "agent:sh", "--", "echo b > b.txt"]);
    assert_ne!(r.code, 0);
    assert!(r.stderr.contains("could not start") && r.stderr.contains("user namespaces"), "{r:?}");
    assert!(!f.cairn(&["diff", &agent]).ok().stdout.contains("b.txt"), "nothing ran");
    f.home_config("[run]\nallow_unconfined = true\n");
    let r = without_userns(&f, &["session", "exec", &sid, "--actor", "agent:sh", "--json", "--", "echo b > b.txt; rm a.txt"]);
    assert_eq!(r.code, 0, "{r:?}");
    let ran = r.json();
    assert!(ran["unconfined"].as_str().unwrap().contains("user namespaces"), "{ran}");
    assert_eq!((ran["changed"].clone(), ran["deleted"].clone()), (serde_json::json!(["b.txt"]), serde_json::json!(["a.txt"])), "{ran}");
    assert_eq!(f.read_str("a.txt").unwrap(), "a\n", "the copy, not the tree");
}

/// The real prefix of the venv's interpreter (a venv links to it; under a masked home it must
/// be made readable, as a user would with `read_paths`).
fn python_prefix(python: &Path) -> PathBuf {
    let real = std::fs::canonicalize(python).unwrap();
    real.parent().unwrap().parent().unwrap().to_path_buf()
}

/// A small project of every kind users test: a Python package (pytest in a venv), a crate
/// (`cargo test --offline`), a Makefile, an npm package with its `node_modules`, all in git.
const ORDINARY: &[(&str, &str)] = &[
    ("pkg/__init__.py", ""),
    ("pkg/calc.py", "def add(a, b):\n    return a + b\n"),
    ("tests/test_calc.py", "from pkg.calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n"),
    ("crate/Cargo.toml", "[package]\nname = \"tiny\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n"),
    ("crate/src/lib.rs", "pub fn add(a: i32, b: i32) -> i32 { a + b }\n#[cfg(test)]\nmod t {\n    #[test]\n    fn adds() { assert_eq!(super::add(2, 2), 4); }\n}\n"),
    ("Makefile", "test:\n\t@python3 -c 'print(\"make-ok\")'\n"),
    ("web/package.json", "{\"name\": \"web\", \"version\": \"1.0.0\", \"scripts\": {\"test\": \"node test.js\"}}\n"),
    ("web/test.js", "const pad = require('leftpad');\nif (pad('7', 3) !== '007') process.exit(1);\nconsole.log('npm-ok');\n"),
    ("web/node_modules/leftpad/package.json", "{\"name\": \"leftpad\", \"version\": \"1.0.0\", \"main\": \"index.js\"}\n"),
    ("web/node_modules/leftpad/index.js", "module.exports = (s, n) => s.padStart(n, '0');\n"),
];

/// `git init` and a first commit of the project.
fn git_commit_all(root: &Path) {
    for args in [&["init", "-q"][..], &["add", "-A"], &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "first"]] {
        let ok = Command::new("git").args(args).current_dir(root).env("GIT_CONFIG_GLOBAL", "/dev/null").status().unwrap().success();
        assert!(ok, "git {args:?}");
    }
}

/// The checks every ordinary project runs, as `(desc=cmd, what its log shows)`.
fn ordinary_checks(venv: &Path, cargo: bool) -> Vec<(String, &'static str)> {
    let mut checks = vec![
        (format!("suite={} -m pytest -q -p no:cacheprovider tests", venv.display()), "1 passed"),
        ("make=make test".to_string(), "make-ok"),
        ("npm=cd web && npm test --silent".to_string(), "npm-ok"),
        ("git=git status --short && git diff --stat && echo git-ok".to_string(), "pkg/calc.py | 2 +-"),
    ];
    if cargo {
        checks.push(("crate=cd crate && cargo test --offline -q".to_string(), "test result: ok. 1 passed"));
    }
    checks
}

#[test]
fn ordinary_work_passes_confined_pytest_cargo_test_make_npm_and_git() {
    let f = Fixture::new();
    for (p, c) in ORDINARY {
        f.write(p, c);
    }
    git_commit_all(&f.root);
    f.init();
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv/mcp/bin/python");
    let home = std::env::var("HOME").unwrap();
    let cargo_home = std::env::var("CARGO_HOME").unwrap_or(format!("{home}/.cargo"));
    let rustup_home = std::env::var("RUSTUP_HOME").unwrap_or(format!("{home}/.rustup"));
    // The venv itself too: the checkout may live under /tmp, which a run does not see.
    let venv_dir = venv.parent().unwrap().parent().unwrap().display().to_string();
    let reads = [python_prefix(&venv).display().to_string(), venv_dir, cargo_home, rustup_home];
    f.home_config(&format!("[run]\nread_paths = {}\nenv = [\"CARGO_HOME\", \"RUSTUP_HOME\"]\n", serde_json::to_string(&reads).unwrap()));
    // The agent's proposal breaks nothing; human checks run the suites.
    let s = f.run_ok("write_file('pkg/calc.py', 'def add(a, b):\\n    return b + a\\n')\n");
    let checks = ordinary_checks(&venv, true);
    let mut args = vec!["task".to_string(), "create".into(), "t".into(), "--json".into()];
    for (c, _) in &checks {
        args.push("--check".into());
        args.push(c.clone());
    }
    let t = f.cairn(&args.iter().map(String::as_str).collect::<Vec<_>>()).ok().json();
    let id = t["id"].as_str().unwrap();
    cairn::tasks::link_agent(&f.project(), "agent:test", id, &s.id).unwrap();
    let r = f.cairn(&["task", "check", id]);
    let shown = f.cairn(&["task", "show", id, "--json"]).ok().json();
    let logs: Vec<String> = shown["checks"].as_array().unwrap().iter().map(|c| f.read_str(c["log"].as_str().unwrap()).unwrap()).collect();
    assert_eq!(r.code, 0, "{r:?}\n{}", logs.join("\n----\n"));
    for ((_, shows), log) in checks.iter().zip(&logs) {
        assert!(log.contains(shows), "{shows} missing from:\n{log}");
    }
    assert!(!f.root.join("crate/target").exists(), "the build stayed in the run workspace");
}

#[test]
fn ordinary_work_passes_confined_as_an_ordinary_user() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let (root, home) = (dir.path().join("proj"), dir.path().join("home"));
    for (p, c) in ORDINARY {
        std::fs::create_dir_all(root.join(p).parent().unwrap()).unwrap();
        std::fs::write(root.join(p), c).unwrap();
    }
    git_commit_all(&root);
    std::fs::create_dir_all(&home).unwrap();
    // A venv of the system's Python that the user can run (the test command's own venv may
    // link to an interpreter under root's home), with pytest from the MCP SDK's venv.
    let venv_dir = dir.path().join("venv");
    assert!(Command::new("/usr/bin/python3").args(["-m", "venv", "--without-pip"]).arg(&venv_dir).status().unwrap().success());
    let theirs = Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv/mcp/lib");
    let site = |lib: &Path| std::fs::read_dir(lib).unwrap().flatten().map(|e| e.path().join("site-packages")).find(|p| p.is_dir()).unwrap();
    std::fs::write(site(&venv_dir.join("lib")).join("sdk.pth"), format!("{}\n", site(&theirs).display())).unwrap();
    let venv = venv_dir.join("bin/python");
    let reads = [venv_dir.display().to_string(), Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv/mcp").display().to_string()];
    std::fs::write(home.join("config.toml"), format!("[run]\nread_paths = {}\n", serde_json::to_string(&reads).unwrap())).unwrap();
    if is_root() {
        assert!(Command::new("chown").arg("-R").arg("65534:65534").arg(&root).arg(&home).arg(&venv_dir).status().unwrap().success());
    }
    let exe = exe();
    let base = |args: &[&str]| {
        let mut all: Vec<&std::ffi::OsStr> = vec![exe.as_os_str(), "--project-root".as_ref(), root.as_os_str(), "--cairn-home".as_ref(), home.as_os_str()];
        all.extend(args.iter().map(|a| std::ffi::OsStr::new(*a)));
        let mut c = as_ordinary_user(&all);
        c.env("HOME", &home).env_remove("CAIRN_HOME");
        c
    };
    assert!(base(&["init"]).output().unwrap().status.success());
    let mut m = RawMcp::start(base(&["mcp"]));
    let task = m.call("task_create", serde_json::json!({"title": "work"}));
    let s = m.call("session_begin", serde_json::json!({"task": task["id"], "idempotency_key": "k"}));
    m.call("write_file", serde_json::json!({"session": s["id"], "path": "pkg/calc.py", "content": "def add(a, b):\n    return b + a\n"}));
    for (check, shows) in ordinary_checks(&venv, false) {
        let cmd = check.split_once('=').unwrap().1;
        let ran = m.call("run_command", serde_json::json!({"session": s["id"], "command": cmd}));
        assert_eq!(ran["exit_code"], 0, "{cmd}: {ran}");
        assert!(ran["output"].as_str().unwrap().contains(shows), "{cmd}: {shows} missing: {ran}");
    }
}
