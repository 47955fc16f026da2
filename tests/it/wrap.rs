//! `cairn wrap`: a command runs in a confined copy-on-write view of the project and what it
//! writes becomes a proposal, live, surviving a kill of `cairn wrap`, resumable.

use crate::support::*;
use std::io::Read;
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Stdio};

/// The agent id `cairn wrap` announced on stderr.
fn agent_of(stderr: &str) -> String {
    let rest = stderr.split("wrap session ").nth(1).unwrap_or_else(|| panic!("no session line: {stderr}"));
    rest.split(':').next().unwrap().to_string()
}

/// Processes of the wrapped commands still running anywhere.
fn leftovers(tag: &str) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cmd) = std::fs::read(e.path().join("cmdline")) {
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            if cmd.starts_with("sleep ") && cmd.contains(tag) {
                out.push(cmd);
            }
        }
    }
    out
}

fn is_root() -> bool {
    std::fs::metadata("/proc/self").map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0).unwrap_or(false)
}

/// The shell CMD of acceptance 2, run by `cairn wrap` as this user or (`nobody`) as uid 65534.
fn shell_script_becomes_exactly_the_proposal(nobody: bool) {
    let f = Fixture::with_files(&[("a.txt", "a\n"), ("keep.txt", "keep\n"), ("old/x.txt", "x\n"), ("old/y.txt", "y\n"), ("run.sh", "echo run\n")]);
    let outside = tempfile::tempdir().unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(outside.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    std::fs::set_permissions(f.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let tag = format!("98{}", std::process::id() % 10000);
    let script = format!(
        "echo new > new.txt; echo more >> a.txt; mv keep.txt kept.txt; chmod +x run.sh; rm -r old; \
         echo t > /tmp/wrap-tmp.txt; echo o > {out}/escaped.txt; echo h > $HOME/escaped.txt; \
         (sleep {tag}1 &); nohup sleep {tag}2 >/dev/null 2>&1 & echo done",
        out = outside.path().display()
    );
    if nobody {
        Command::new("chown").arg("-R").arg("65534:65534").arg(&f.root).arg(&f.home).status().unwrap();
    }
    let home = tempfile::tempdir().unwrap();
    std::fs::set_permissions(home.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let before_tree = f.tree();
    let mut c = if nobody {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"]).arg(exe());
        c
    } else {
        Command::new(exe())
    };
    c.arg("--project-root").arg(&f.root).arg("--cairn-home").arg(&f.home).args(["wrap", "--", "sh", "-c", &script]);
    c.env("HOME", home.path()).env_remove("CAIRN_HOME").stdin(Stdio::null());
    let r = Run::from(c.output().unwrap());
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains("done"), "{r:?}");
    let id = agent_of(&r.stderr);
    assert_eq!(f.tree(), before_tree, "the working tree changed");
    assert!(!std::path::Path::new("/tmp/wrap-tmp.txt").exists() && !outside.path().join("escaped.txt").exists() && !home.path().join("escaped.txt").exists(), "a write outside the project landed");
    assert_eq!(f.status(&id).state.as_str(), "reviewing");
    let diff = f.cairn(&["diff", &id]).ok().stdout;
    let headers: Vec<&str> = diff.lines().filter(|l| l.starts_with("diff --git")).collect();
    assert_eq!(headers, ["diff --git a/a.txt b/a.txt", "diff --git a/keep.txt b/kept.txt", "diff --git a/new.txt b/new.txt", "diff --git a/old/x.txt b/old/x.txt", "diff --git a/old/y.txt b/old/y.txt", "diff --git a/run.sh b/run.sh"], "{diff}");
    assert!(diff.contains("new mode 100755") && diff.contains("+more") && diff.contains("deleted file mode") && diff.contains("rename from keep.txt\nrename to kept.txt"), "{diff}");
    wait_until(10, "no process outlives cairn wrap", || leftovers(&tag).is_empty());
}

#[test]
fn a_shell_script_as_cmd_becomes_exactly_the_proposal() {
    shell_script_becomes_exactly_the_proposal(false);
}

#[test]
fn a_shell_script_as_cmd_becomes_exactly_the_proposal_as_an_ordinary_user() {
    if !is_root() {
        return shell_script_becomes_exactly_the_proposal(false);
    }
    shell_script_becomes_exactly_the_proposal(true);
}

/// Starts `cairn wrap` on a script that writes `first.txt`, tells the test over TCP, waits for
/// a byte, writes `second.txt`, tells again, waits again.
fn stepped(f: &Fixture) -> (std::process::Child, TcpListener) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let py = format!(
        "import socket\ndef step(name):\n    open(name, 'w').write(name + '\\n')\n    s = socket.create_connection(('127.0.0.1', {port}))\n    s.recv(1)\nstep('first.txt')\nstep('second.txt')\n"
    );
    f.write("steps.py", &py);
    f.home_config(&format!("[wrap]\nhost_ports = [{port}]\n"));
    f.cairn(&["init"]).ok();
    let child = f.cmd().args(["wrap", "--", "python3", "steps.py"]).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    (child, l)
}

fn diff_has(f: &Fixture, id: &str, path: &str) -> bool {
    f.cairn(&["diff", id]).stdout.contains(&format!("+++ b/{path}"))
}

#[test]
fn the_proposal_grows_while_cmd_runs_and_survives_a_kill_of_cairn_wrap() {
    let f = Fixture::with_files(&[("a.txt", "a\n")]);
    let (mut child, l) = stepped(&f);
    let (mut conn, _) = l.accept().unwrap();
    let mut err = String::new();
    let id = {
        // The id is announced before CMD starts.
        let mut stderr = child.stderr.take().unwrap();
        let mut buf = [0u8; 1];
        while !err.contains('\n') {
            assert_eq!(stderr.read(&mut buf).unwrap(), 1, "no session line: {err}");
            err.push(buf[0] as char);
        }
        agent_of(&err)
    };
    // Synced every 250 ms: well within the 1 s promised; the deadline leaves room for a loaded CI.
    wait_until(3, "the first write in the proposal", || diff_has(&f, &id, "first.txt"));
    assert_eq!(f.status(&id).state.as_str(), "executing");
    use std::io::Write;
    conn.write_all(b"g").unwrap();
    let (_conn2, _) = l.accept().unwrap();
    // Killed right after the second write, halfway through its end (`submitting`, as a
    // kill inside the submit leaves it): whatever it wrote is kept, for review.
    child.kill().unwrap();
    child.wait().unwrap();
    f.project().bin().unwrap().transition(&id, cairn::lifecycle::State::Submitting, "submit", Default::default()).unwrap();
    assert!(diff_has(&f, &id, "second.txt") && diff_has(&f, &id, "first.txt"), "{}", f.cairn(&["diff", &id]).stdout);
    assert_eq!(f.status(&id).state.as_str(), "reviewing");
    assert_eq!(f.read_str("first.txt"), None, "nothing landed");
    f.cairn(&["accept", &id]).ok();
    assert_eq!(f.read_str("second.txt").unwrap(), "second.txt\n");
}

#[test]
fn wrap_agent_continues_a_proposal() {
    let f = Fixture::with_files(&[("a.txt", "a\n")]);
    let r = f.cmd().args(["wrap", "--task", "notes", "--", "sh", "-c", "echo one > notes.txt"]).stdin(Stdio::null()).output().unwrap();
    let r = Run::from(r);
    assert_eq!(r.code, 0, "{r:?}");
    let id = agent_of(&r.stderr);
    // The second run sees the first one's work and adds to it.
    let r = Run::from(f.cmd().args(["wrap", "--agent", &id, "--", "sh", "-c", "cat notes.txt; echo two >> notes.txt"]).stdin(Stdio::null()).output().unwrap());
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(r.stdout, "one\n");
    assert_eq!(agent_of(&r.stderr), id);
    let diff = f.cairn(&["diff", &id]).ok().stdout;
    assert!(diff.contains("+one") && diff.contains("+two"), "{diff}");
    assert_eq!(f.status(&id).state.as_str(), "reviewing");
    // Its exit status is recorded; a failing CMD is reported and still reviewable.
    let r = Run::from(f.cmd().args(["wrap", "--agent", &id, "--", "sh", "-c", "echo three >> notes.txt; exit 3"]).stdin(Stdio::null()).output().unwrap());
    assert_eq!(r.code, 3, "{r:?}");
    assert!(f.cairn(&["diff", &id]).ok().stdout.contains("+three"));
    let shown = f.cairn(&["status", &id, "--json"]).ok().stdout;
    assert!(shown.contains("exited with 3"), "{shown}");
}

/// Claude Code (npm, installed by the test command into `.venv/agents`) with its own Read,
/// Edit, Write and Bash tools, its model a scripted server on 127.0.0.1.
#[test]
fn claude_code_under_cairn_wrap_proposes_exactly_its_edits() {
    let claude = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv/agents/node_modules/.bin/claude");
    assert!(claude.exists(), "Claude Code is missing: run `bash scripts/test.sh` (it installs .venv/agents)");
    let f = Fixture::with_files(&[("src/app.py", "def add(a, b):\n    return a - b\n"), ("old.txt", "old\n"), ("README.md", "hi\n")]);
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join(".ssh")).unwrap();
    std::fs::write(home.path().join(".ssh/id_test"), "PLANTED-PRIVATE-KEY\n").unwrap();
    let root = f.root.display().to_string();
    let tmp_mark = format!("/tmp/cairn-wrap-claude-{}", std::process::id());
    let script = serde_json::json!([
        {"tool": "Read", "input": {"file_path": format!("{root}/src/app.py")}},
        {"tool": "Edit", "input": {"file_path": format!("{root}/src/app.py"), "old_string": "return a - b", "new_string": "return a + b"}},
        {"tool": "Write", "input": {"file_path": format!("{root}/NOTES.md"), "content": "fixed add\n"}},
        {"tool": "Bash", "input": {"command": format!("echo gen > generated.txt && rm old.txt && echo t > {tmp_mark} && (cat ~/.ssh/id_test || echo no-key-here)"), "description": "shell step"}},
        {"text": "All done."}
    ]);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("script.json"), script.to_string()).unwrap();
    let port_file = dir.path().join("port");
    let log = std::fs::File::create(dir.path().join("requests.log")).unwrap();
    let stub = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/agents/anthropic_stub.py");
    let mut model = Command::new("python3").arg(stub).arg(dir.path().join("script.json")).arg(&port_file).stderr(log).spawn().unwrap();
    wait_until(20, "the scripted model to listen", || port_file.exists());
    let port = std::fs::read_to_string(&port_file).unwrap();
    // The scripted model is on the host's loopback: forwarded into the agent's network.
    f.home_config(&format!("[wrap]\nhost_ports = [{port}]\n"));
    let before = f.tree();
    let out = f
        .cmd()
        .current_dir(&f.root)
        .args(["wrap", "--"])
        .arg(&claude)
        .args(["-p", "fix add", "--allowedTools", "Read", "Edit", "Write", "Bash"])
        .env("HOME", home.path())
        .env("ANTHROPIC_BASE_URL", format!("http://127.0.0.1:{port}"))
        .env("ANTHROPIC_API_KEY", "sk-scripted")
        .env("DISABLE_TELEMETRY", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let _ = model.kill();
    let _ = model.wait();
    let r = Run::from(out);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains("All done."), "{r:?}");
    let id = agent_of(&r.stderr);
    assert_eq!(f.tree(), before, "the working tree changed");
    let diff = f.cairn(&["diff", &id]).ok().stdout;
    let headers: Vec<&str> = diff.lines().filter(|l| l.starts_with("diff --git")).collect();
    assert_eq!(headers, ["diff --git a/NOTES.md b/NOTES.md", "diff --git a/generated.txt b/generated.txt", "diff --git a/old.txt b/old.txt", "diff --git a/src/app.py b/src/app.py"], "{diff}");
    assert!(diff.contains("+    return a + b") && diff.contains("+fixed add") && diff.contains("+gen"), "{diff}");
    assert!(!Path::new(&tmp_mark).exists(), "its /tmp write reached the host");
    let requests = std::fs::read_to_string(dir.path().join("requests.log")).unwrap();
    assert!(requests.contains("no-key-here"), "the Bash step's result never came back: {}", &requests[..requests.len().min(2000)]);
    assert!(!requests.contains("PLANTED-PRIVATE-KEY"), "the agent read the planted key");
    assert_eq!(f.status(&id).state.as_str(), "reviewing");
    // Named by its prompt (`-p`): its task, and the summary lists and headers show leads with it.
    let st = f.cairn(&["status", &id, "--json"]).ok().json();
    assert_eq!(st["task"], "fix add", "{st}");
    assert!(st["submission"]["summary"].as_str().unwrap_or("").starts_with("fix add — wrap: "), "{st}");
}
