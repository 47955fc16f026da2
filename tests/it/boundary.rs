//! The run boundary (`:help cairn-runs`) attacked from outside, the way an agent's code would:
//! `tests/hostile/boundary_probe.py` tries host-wide kernel settings, the terminal, host
//! sockets (unix, abstract, loopback, vsock), host files outside the project, kernel surfaces
//! (io_uring, userfaultfd, bpf, perf, keyrings, ptrace, mounts, x32 numbers) and prints a
//! `LEAK-` line for each that worked. It runs through `run_command` (an MCP client), `cairn
//! session exec` and a human's `cairn task check` of a check that runs what the agent
//! planted, with `cairn` as root (when the tests are) and as an ordinary user. Budgets
//! (memory, processes, disk) and unapproved checks have their own tests.
//!
//! Each row was seen failing without its layer (see the closing note of the issue: the probe
//! run against the binary before the boundary's commit printed LEAK-uid0, LEAK-sysctl,
//! LEAK-dev-tty, LEAK-tiocsti, LEAK-io_uring, LEAK-keyctl, LEAK-vsock, LEAK-visible:/srv, ...).

use crate::runs::{as_ordinary_user, is_root, RawMcp};
use crate::support::*;
use serde_json::{json, Value};
use std::io::Read;
use std::net::TcpListener;
use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::process::Command;

const PROBE: &str = include_str!("../hostile/boundary_probe.py");

/// What the probe aims at, planted on the host for it.
struct Targets {
    dir: tempfile::TempDir,
    /// Made under `/srv` and `/var/lib` when the tests run as root; removed on drop.
    root_dirs: Vec<PathBuf>,
    sockets: Vec<UnixListener>,
    abstract_socket: UnixListener,
    tcp: TcpListener,
    args: Value,
    /// Host directories the probe tries to write into (checked on the host afterwards).
    dirs_written: Vec<PathBuf>,
}

impl Targets {
    fn new(f: &Fixture) -> Targets {
        use std::os::linux::net::SocketAddrExt;
        let dir = tempfile::tempdir().unwrap();
        let pid = std::process::id();
        let sibling = dir.path().join("other-project");
        std::fs::create_dir_all(&sibling).unwrap();
        std::fs::write(sibling.join(".env"), "SIBLING-SECRET=1\n").unwrap();
        let mut files = vec![sibling.join(".env"), f.home.join("config.toml")];
        let mut socket_paths = vec![dir.path().join("host.sock")];
        let mut root_dirs = Vec::new();
        if is_root() {
            for base in ["/srv", "/var/lib"] {
                let d = PathBuf::from(format!("{base}/cairn-probe-{pid}-{}", rand::random::<u32>()));
                std::fs::create_dir_all(&d).unwrap();
                let secret = d.join(".env");
                std::fs::write(&secret, "HOST-SECRET=1\n").unwrap();
                std::fs::set_permissions(&secret, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
                files.push(secret);
                socket_paths.push(d.join("listener.sock"));
                root_dirs.push(d);
            }
        }
        let sockets: Vec<UnixListener> = socket_paths.iter().map(|p| UnixListener::bind(p).unwrap()).collect();
        for s in &sockets {
            s.set_nonblocking(true).unwrap();
        }
        let name = format!("cairn-probe-{pid}-{}", rand::random::<u32>());
        let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
        let abstract_socket = UnixListener::bind_addr(&addr).unwrap();
        abstract_socket.set_nonblocking(true).unwrap();
        let tcp = TcpListener::bind("127.0.0.1:0").unwrap();
        tcp.set_nonblocking(true).unwrap();
        std::fs::write(f.home.join("config.toml"), "# CAIRN-HOME-CONFIG\n").unwrap();
        let args = json!({
            "files": files,
            "sockets": socket_paths,
            "abstract": name,
            "tcp_port": tcp.local_addr().unwrap().port(),
            "absent": [dir.path()],
        });
        let dirs_written = vec![f.root.parent().unwrap().to_path_buf(), dir.path().to_path_buf()];
        let mut args = args;
        args["absent_writes"] = json!(dirs_written);
        Targets { dir, root_dirs, sockets, abstract_socket, tcp, args, dirs_written }
    }

    /// The command that runs the probe (the project holds it as `probe.py`).
    fn command(&self) -> String {
        format!("python3 probe.py '{}'", self.args)
    }

    fn assert_held(&self, how: &str, output: &str) {
        assert!(output.contains("probe-done"), "{how}: the probe did not finish:\n{output}");
        let leaks: Vec<&str> = output.lines().filter(|l| l.starts_with("LEAK")).collect();
        assert!(leaks.is_empty(), "{how}: the boundary leaked:\n{}\n\nwhole output:\n{output}", leaks.join("\n"));
        for s in self.sockets.iter().chain([&self.abstract_socket]) {
            assert!(s.accept().is_err(), "{how}: a host unix socket was reached");
        }
        assert!(self.tcp.accept().is_err(), "{how}: the host's loopback was reached");
        assert!(self.dir.path().join("other-project/.env").exists());
        for d in ["/", "/usr", "/etc", "/bin"].iter().map(PathBuf::from).chain(self.dirs_written.iter().cloned()) {
            let planted = std::fs::read_dir(&d).map(|r| r.flatten().filter(|e| e.file_name().to_string_lossy().starts_with(".probe-")).count()).unwrap_or(0);
            assert_eq!(planted, 0, "{how}: the probe wrote into the host's {}", d.display());
        }
    }
}

impl Drop for Targets {
    fn drop(&mut self) {
        for d in &self.root_dirs {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

fn probe_fixture() -> Fixture {
    Fixture::with_files(&[("probe.py", PROBE), ("src/app.py", "x = 1\n")])
}

#[test]
fn probes_through_run_command_reach_nothing() {
    let f = probe_fixture();
    let t = Targets::new(&f);
    let mut c = Command::new(exe());
    c.args(["--project-root"]).arg(&f.root).args(["--cairn-home"]).arg(&f.home).arg("mcp");
    let mut m = RawMcp::start(c);
    let task = m.call("task_create", json!({"title": "probe"}));
    let s = m.call("session_begin", json!({"task": task["id"], "idempotency_key": "k"}));
    let ran = m.call("run_command", json!({"session": s["id"], "command": t.command()}));
    t.assert_held("run_command", ran["output"].as_str().unwrap());
}

#[test]
fn probes_through_session_exec_with_a_terminal_reach_nothing() {
    let f = probe_fixture();
    let t = Targets::new(&f);
    let (sid, _) = probe_session(&f);
    // `script` gives cairn a controlling terminal, as a user's shell would.
    let line = format!(
        "{} --project-root {} --cairn-home {} session exec {sid} --actor agent:probe -- {}",
        exe().display(),
        f.root.display(),
        f.home.display(),
        shell_quote(&t.command())
    );
    let out = Command::new("script").args(["-qec", &line, "/dev/null"]).stdin(std::process::Stdio::null()).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).replace('\r', "");
    t.assert_held("session exec", &text);
}

#[test]
fn a_planted_probe_run_by_a_human_check_reaches_nothing() {
    let f = Fixture::with_files(&[("src/app.py", "x = 1\n")]);
    let t = Targets::new(&f);
    // The agent plants the probe; the human's check runs the project's tests.
    let s = f.run_ok(&format!("write_file('probe.py', {})\n", serde_json::to_string(PROBE).unwrap()));
    let check = format!("suite={}", t.command());
    let task = f.cairn(&["task", "create", "tests", "--check", &check, "--json"]).ok().json();
    let id = task["id"].as_str().unwrap();
    cairn::tasks::link_agent(&f.project(), "agent:test", id, &s.id).unwrap();
    f.cairn(&["task", "check", id]);
    let shown = f.cairn(&["task", "show", id, "--json"]).ok().json();
    let log = f.read_str(shown["checks"][0]["log"].as_str().unwrap()).unwrap();
    t.assert_held("task check", &log);
}

#[test]
fn probes_as_an_ordinary_user_reach_nothing() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let (root, home) = (dir.path().join("proj"), dir.path().join("home"));
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(root.join("probe.py"), PROBE).unwrap();
    if is_root() {
        assert!(Command::new("chown").arg("-R").arg("65534:65534").arg(&root).arg(&home).status().unwrap().success());
    }
    let f = Fixture { dir: tempfile::tempdir().unwrap(), root: root.clone(), home: home.clone(), config: Default::default() };
    let t = Targets::new(&f);
    let base = |sub: &str| {
        let exe = exe();
        let mut c = as_ordinary_user(&[exe.as_os_str(), "--project-root".as_ref(), root.as_os_str(), "--cairn-home".as_ref(), home.as_os_str(), sub.as_ref()]);
        c.env("HOME", &home).env_remove("CAIRN_HOME");
        c
    };
    assert!(base("init").output().unwrap().status.success());
    let mut m = RawMcp::start(base("mcp"));
    let task = m.call("task_create", json!({"title": "probe"}));
    let s = m.call("session_begin", json!({"task": task["id"], "idempotency_key": "k"}));
    let ran = m.call("run_command", json!({"session": s["id"], "command": t.command()}));
    t.assert_held("run_command as an ordinary user", ran["output"].as_str().unwrap());
}

/// Memory, processes and disk: one budget, counted as root too; a sparse file costs cairn
/// nothing. Each row is a run of its own: a budget may end a run by killing it (a cgroup's
/// out-of-memory kill), which holds as well as a refused allocation does.
fn budgets_hold(mut m: RawMcp) {
    let rows = [
        // Forks until refused (sh gives up at the first), then counts with builtins only.
        "sh -c 'for i in $(seq 1 30); do sleep 60 & done' 2>/dev/null; n=0; for p in /proc/[0-9]*; do n=$((n+1)); done; [ \"$n\" -gt 9 ] && echo LEAK-processes-$n",
        "head -c 100M /dev/zero > /tmp/a 2>/dev/null && echo LEAK-tmp-size",
        "head -c 40M /dev/zero > /tmp/a 2>/dev/null; head -c 40M /dev/zero > $HOME/b 2>/dev/null && echo LEAK-one-budget",
        "head -c 40M /dev/zero > /dev/shm/a 2>/dev/null; head -c 40M /dev/zero > w.bin 2>/dev/null && echo LEAK-shm-budget",
        "python3 -c 'import mmap; m = mmap.mmap(-1, 200 << 20); m.write(b\"x\" * (200 << 20))' 2>/dev/null && echo LEAK-shared-memory",
        "python3 -c \"import os; fd = os.memfd_create('m'); [os.write(fd, b'x' * (1 << 20)) for _ in range(200)]\" 2>/dev/null && echo LEAK-memfd",
        "python3 -c \"import ctypes, sys; l = ctypes.CDLL(None); sys.exit(0 if l.shmget(0, 200 << 20, 0o1600) >= 0 else 1)\" && echo LEAK-sysv-shm",
    ];
    let task = m.call("task_create", json!({"title": "budgets"}));
    let s = m.call("session_begin", json!({"task": task["id"], "idempotency_key": "k"}));
    for row in rows {
        let ran = m.call("run_command", json!({"session": s["id"], "command": format!("echo row-start; {row}")}));
        let out = ran["output"].as_str().unwrap();
        assert!(out.starts_with("row-start"), "{row}: {ran}");
        assert!(!out.lines().any(|l| l.starts_with("LEAK")), "{row}: {ran}");
    }
    let sparse = "for i in 1 2 3 4 5 6 7 8 9 10 11 12; do truncate -s 60M sparse$i.bin || exit 9; done; echo made-sparse";
    let ran = m.call("run_command", json!({"session": s["id"], "command": sparse}));
    assert!(ran["output"].as_str().unwrap().contains("made-sparse"), "{ran}");
    let skipped = ran["skipped"].to_string();
    assert!(skipped.contains("sparse12.bin") && skipped.contains("62914560"), "sparse files are reported, not read: {ran}");
    assert!(!ran["changed"].to_string().contains("sparse"), "{ran}");
    let hwm = peak_rss_kb(m.pid());
    assert!(hwm < 300 * 1024, "cairn mcp held {hwm} kB reading back sparse files");
}

#[test]
fn budgets_hold_and_sparse_files_cost_nothing() {
    let f = Fixture::with_files(&[("a.txt", "a\n")]);
    f.home_config("[run]\nmax_memory_mb = 64\nmax_processes = 8\n");
    let mut c = Command::new(exe());
    c.args(["--project-root"]).arg(&f.root).args(["--cairn-home"]).arg(&f.home).arg("mcp");
    budgets_hold(RawMcp::start(c));
}

#[test]
fn budgets_hold_for_an_ordinary_user() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let (root, home) = (dir.path().join("proj"), dir.path().join("home"));
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(root.join("a.txt"), "a\n").unwrap();
    std::fs::write(home.join("config.toml"), "[run]\nmax_memory_mb = 64\nmax_processes = 8\n").unwrap();
    if is_root() {
        assert!(Command::new("chown").arg("-R").arg("65534:65534").arg(&root).arg(&home).status().unwrap().success());
    }
    let exe = exe();
    let base = |sub: &str| {
        let mut c = as_ordinary_user(&[exe.as_os_str(), "--project-root".as_ref(), root.as_os_str(), "--cairn-home".as_ref(), home.as_os_str(), sub.as_ref()]);
        c.env("HOME", &home).env_remove("CAIRN_HOME");
        c
    };
    assert!(base("init").output().unwrap().status.success());
    budgets_hold(RawMcp::start(base("mcp")));
}

/// Peak resident memory of a live process, in kB.
fn peak_rss_kb(pid: u32) -> u64 {
    let mut s = String::new();
    std::fs::File::open(format!("/proc/{pid}/status")).unwrap().read_to_string(&mut s).unwrap();
    s.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| l.split_whitespace().nth(1)).and_then(|v| v.parse().ok()).unwrap()
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// The files a confined command creates come back as the proposal, as root too (where it runs
/// as uid 65534 on idmapped views of root's files).
#[test]
fn as_root_the_command_is_nobody_and_its_writes_come_back() {
    let f = Fixture::with_files(&[("src/app.py", "x = 1\n"), ("secret.txt", "only-root\n")]);
    std::fs::set_permissions(f.root.join("secret.txt"), std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let (sid, agent) = probe_session(&f);
    let cmd = "id -u; id -G; cat secret.txt; mkdir -p build/out && echo o > build/out/x.o; echo y >> src/app.py; ls -ld /tmp | cut -c1-10";
    let r = f.cairn(&["session", "exec", &sid, "--actor", "agent:probe", "--json", "--", cmd]);
    assert_eq!(r.code, 0, "{r:?}");
    let ran = r.json();
    let out = ran["output"].as_str().unwrap();
    let uid = if is_root() { "65534".to_string() } else { unsafe_uid() };
    assert!(out.starts_with(&format!("{uid}\n")), "{out}");
    assert!(out.contains("only-root"), "the project's own files are the command's to read: {out}");
    assert!(out.contains("drwxrwxrwt"), "{out}");
    assert_eq!(ran["changed"], json!(["build/out/x.o", "src/app.py"]), "{ran}");
    let diff = f.cairn(&["diff", &agent]).ok().stdout;
    assert!(diff.contains("+y") && diff.contains("+o"), "{diff}");
    assert_eq!(f.read_str("src/app.py").unwrap(), "x = 1\n");
}

fn unsafe_uid() -> String {
    String::from_utf8(Command::new("id").arg("-u").output().unwrap().stdout).unwrap().trim().to_string()
}

/// An agent's own check does not run on a human's word: `cairn task check` lists it as
/// waiting for approval; `--unapproved` (or approving it) runs it, confined.
#[test]
fn an_unapproved_agent_check_does_not_run_on_a_humans_task_check() {
    let f = Fixture::with_files(&[("src/app.py", "x = 1\n")]);
    let s = f.run_ok("write_file('src/app.py', 'x = 2\\n')\n");
    let marker = f.dir.path().join("ran-marker");
    let check = cairn::tasks::Check {
        desc: "planted".into(),
        cmd: Some(format!("echo planted-ran; touch {}", marker.display())),
        kind: None,
        cwd: None,
        timeout: None,
        result: Default::default(),
        log: None,
        author: None,
        approved_by: None,
    };
    let t = cairn::tasks::create(&f.project(), "agent:planter", "t", "", &[], vec![check]).unwrap();
    let id = t.row.id.clone();
    cairn::tasks::link_agent(&f.project(), "agent:planter", &id, &s.id).unwrap();
    let r = f.cairn(&["task", "check", &id]);
    assert!(r.stdout.contains("check 0 waits for approval, not run") && r.stdout.contains("agent:planter"), "{r:?}");
    let shown = f.cairn(&["task", "show", &id, "--json"]).ok().json();
    assert_eq!(shown["checks"][0]["result"], "pending", "{shown}");
    assert!(shown["checks"][0]["log"].is_null(), "it never ran: {shown}");
    // Asked for, it runs (confined: its marker lands in the run's private /tmp at most).
    let r = f.cairn(&["task", "check", &id, "--unapproved"]);
    let shown = f.cairn(&["task", "show", &id, "--json"]).ok().json();
    let log = f.read_str(shown["checks"][0]["log"].as_str().unwrap_or_else(|| panic!("{r:?} {shown}"))).unwrap();
    assert!(log.contains("planted-ran"), "{log}");
    assert!(!marker.exists(), "the check reached the host");
    // Approved, a plain `task check` runs it.
    f.cairn(&["task", "approve-check", &id, "0"]).ok();
    let r = f.cairn(&["task", "check", &id]);
    assert!(!r.stdout.contains("waits for approval"), "{r:?}");
}
