//! `cairn wrap`: a command runs in a confined copy-on-write view of the project and what it
//! writes becomes a proposal, live, surviving a kill of `cairn wrap`, resumable.

use crate::support::*;
use std::io::Read;
use std::net::TcpListener;
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
    assert_eq!(headers, ["diff --git a/a.txt b/a.txt", "diff --git a/keep.txt b/keep.txt", "diff --git a/kept.txt b/kept.txt", "diff --git a/new.txt b/new.txt", "diff --git a/old/x.txt b/old/x.txt", "diff --git a/old/y.txt b/old/y.txt", "diff --git a/run.sh b/run.sh"], "{diff}");
    assert!(diff.contains("new mode 100755") && diff.contains("+more") && diff.contains("deleted file mode"), "{diff}");
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
    wait_until(1, "the first write in the proposal within 1 s", || diff_has(&f, &id, "first.txt"));
    assert_eq!(f.status(&id).state.as_str(), "executing");
    use std::io::Write;
    conn.write_all(b"g").unwrap();
    let (_conn2, _) = l.accept().unwrap();
    // Killed right after the second write: whatever it wrote is kept, for review.
    child.kill().unwrap();
    child.wait().unwrap();
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
