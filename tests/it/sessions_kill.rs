//! MCP sessions under stress, from outside: parallel tool calls from the official Python SDK
//! lose no reported edit, and `cairn mcp` killed (SIGKILL injected by strace at each write,
//! sync, rename and unlink of `session_finish`) leaves a session that a retry from a new
//! server finishes, every time.

use crate::runs::RawMcp;
use crate::support::*;
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Command, Stdio};

#[test]
fn parallel_edits_from_the_python_sdk_lose_nothing() {
    let f = Fixture::with_files(&[("a.txt", "a\n")]);
    let py = Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv/mcp/bin/python");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/parallel.py");
    let out = Command::new(py).arg(script).arg(exe()).arg(&f.root).args(["50", "16"]).env("CAIRN_HOME", &f.home).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "client failed:\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let r: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(r["lost"], json!([]), "reported edits lost: {r}");
    assert_eq!(r["applied"], 50 * 32, "every call applied: {r}");
}

/// Syscalls at which a kill is injected: the writes, syncs, renames and unlinks by which
/// SQLite and Cairn make state durable.
const POINTS: &str = "pwrite64,pwritev,write,fdatasync,fsync,ftruncate,unlink,unlinkat,rename,renameat,renameat2";

fn mcp(f: &Fixture, strace: Option<(&Path, String)>) -> RawMcp {
    let mut c = match &strace {
        Some((log, inject)) => {
            let mut c = Command::new("strace");
            c.args(["-f", "-qq", "-o"]).arg(log).arg("-e").arg(format!("trace={POINTS}"));
            if !inject.is_empty() {
                c.arg("-e").arg(inject);
            }
            c.arg(exe());
            c
        }
        None => Command::new(exe()),
    };
    c.arg("--project-root").arg(&f.root).arg("--cairn-home").arg(&f.home).args(["mcp", "--actor", "agent:k"]).env_remove("CAIRN_HOME").stderr(Stdio::null());
    RawMcp::start(c)
}

/// A new task with an open session that changed one file; returns (session, agent, task).
fn begun(f: &Fixture, n: usize) -> (String, String, String) {
    let p = f.project();
    let t = cairn::tasks::create(&p, "agent:k", &format!("task {n}"), "", &[], Vec::new()).unwrap();
    let s = cairn::tasks::sessions::begin(&p, "agent:k", &t.row.id, &format!("k{n}")).unwrap();
    cairn::tasks::sessions::tool(&p, "agent:k", &s.row.id, "write_file", &[Value::from(format!("f{n}.txt")), Value::from("new\n")], &Default::default()).unwrap().unwrap();
    (s.row.id.clone(), s.row.agent.clone(), t.row.id.clone())
}

/// The thread of `log` (strace -f output) that made the most of the traced calls, and how many.
fn busiest(log: &str) -> usize {
    let mut counts = std::collections::HashMap::new();
    for l in log.lines().filter(|l| !l.contains("resumed>")) {
        let pid = l.split_whitespace().next().unwrap_or("").to_string();
        *counts.entry(pid).or_insert(0usize) += 1;
    }
    counts.into_values().max().unwrap_or(0)
}

#[test]
fn session_finish_killed_at_every_write_is_finished_by_a_retry() {
    if Command::new("strace").arg("-V").output().is_err() {
        panic!("strace is missing: run `bash scripts/test.sh` (it installs it)");
    }
    let f = Fixture::with_files(&[("a.txt", "a\n")]);
    let dir = tempfile::tempdir().unwrap();
    // A reference finish, traced: how many of the calls the finishing thread makes.
    let (sid, _, _) = begun(&f, 0);
    let log = dir.path().join("ref.log");
    let mut m = mcp(&f, Some((&log, String::new())));
    let idle = busiest(&std::fs::read_to_string(&log).unwrap());
    m.call("session_finish", json!({"session": sid, "summary": "s"}));
    drop(m);
    let total = busiest(&std::fs::read_to_string(&log).unwrap());
    assert!(total > idle, "the finish made no traced call");
    let mut landed = 0;
    let mut n = 1;
    while n <= total + 5 {
        let (sid, agent, task) = begun(&f, n);
        let log = dir.path().join(format!("{n}.log"));
        let mut m = mcp(&f, Some((&log, format!("inject={POINTS}:signal=KILL:when={n}"))));
        let first = m.try_call("session_finish", json!({"session": sid, "summary": format!("finish {n}")}));
        drop(m);
        if first.is_none() {
            landed += 1;
        }
        // A retry from a new server finishes it (or says it is finished), every time.
        let mut m = mcp(&f, None);
        let again = m.call("session_finish", json!({"session": sid, "summary": format!("finish {n}")}));
        assert_eq!(again["status"], "finished", "kill point {n}: {again}");
        let p = f.project();
        assert_eq!(p.bin().unwrap().get(&agent).unwrap().state.as_str(), "reviewing", "kill point {n}");
        assert_eq!(cairn::tasks::get(&p, &task).unwrap().row.status, "review", "kill point {n}");
        assert!(f.cairn(&["diff", &agent]).ok().stdout.contains(&format!("+++ b/f{n}.txt")), "kill point {n}: the proposal is whole");
        n += 1;
    }
    eprintln!("session_finish: {landed} kills landed of {total} traced calls");
    assert!(landed >= 50, "only {landed} kills landed inside session_finish (of {total} traced calls)");
}

#[test]
fn without_cairn_up_the_mcp_server_reads_a_fresh_index() {
    let f = Fixture::with_files(&[("old.txt", "old\n"), ("keep.txt", "keep\n")]);
    // Changed after init, with no `cairn up` running.
    std::fs::remove_file(f.root.join("old.txt")).unwrap();
    f.write("new.txt", "created after init\n");
    let mut m = mcp(&f, None);
    let t = m.call("task_create", json!({"title": "t"}));
    let s = m.call("session_begin", json!({"task": t["id"], "idempotency_key": "fresh"}));
    let listed = m.call("list_dir", json!({"session": s["id"], "path": ""}))["entries"].clone();
    assert_eq!(listed, json!(["keep.txt", "new.txt"]), "at start: {listed}");
    assert_eq!(m.call("read_file", json!({"session": s["id"], "path": "new.txt"}))["content"], "created after init\n");
    assert!(m.try_call("read_file", json!({"session": s["id"], "path": "old.txt"})).is_some_and(|r| r.to_string().contains("no such file")));
    // And while it serves.
    f.write("later.txt", "later\n");
    std::fs::remove_file(f.root.join("keep.txt")).unwrap();
    wait_until(10, "the server to see the tree change", || m.call("list_dir", json!({"session": s["id"], "path": ""}))["entries"] == json!(["later.txt", "new.txt"]));
    assert_eq!(m.call("read_file", json!({"session": s["id"], "path": "later.txt"}))["content"], "later\n");
}

/// No temporary file of Cairn's anywhere in the tree.
fn temps(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name == ".agentfs" || name == ".grail" {
                continue;
            }
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            } else if name.ends_with(".cairn-tmp") {
                out.push(e.path().display().to_string());
            }
        }
    }
    out
}

#[test]
fn accept_hunk_killed_anywhere_then_rerun_lands_exactly_the_chosen_hunk() {
    let original: String = (1..=30).map(|i| format!("line {i}\n")).collect();
    let chosen: String = (1..=30).map(|i| if i == 15 { "line 15 CHANGED\n".to_string() } else { format!("line {i}\n") }).collect();
    let f = Fixture::with_files(&[("src/f.txt", &original)]);
    let script = "t = read_file('src/f.txt').replace('line 3\\n', 'line 3 CHANGED\\n').replace('line 15\\n', 'line 15 CHANGED\\n').replace('line 27\\n', 'line 27 CHANGED\\n')\nwrite_file('src/f.txt', t)\n";
    let dir = tempfile::tempdir().unwrap();
    // Syscalls that make state durable, but not the final report on stdout (killed there, the
    // command had finished: a re-run is then a new request).
    let points = "pwrite64,pwritev,fdatasync,fsync,ftruncate,unlink,unlinkat,rename,renameat,renameat2";
    let accept = |id: &str, inject: Option<(usize, &Path)>| -> std::process::ExitStatus {
        let mut c = match inject {
            Some((n, log)) => {
                let mut c = Command::new("strace");
                c.args(["-f", "-qq", "-o"]).arg(log).arg("-e").arg(format!("trace={points}")).arg("-e").arg(format!("inject={points}:signal=KILL:when={n}")).arg(exe());
                c
            }
            None => Command::new(exe()),
        };
        c.arg("--project-root").arg(&f.root).arg("--cairn-home").arg(&f.home).args(["accept-hunk", id, "src/f.txt", "2"]).env_remove("CAIRN_HOME").stdout(Stdio::null()).stderr(Stdio::null());
        c.status().unwrap()
    };
    let mut landed = 0;
    let mut n = 1;
    loop {
        f.write("src/f.txt", &original);
        cairn::sync::init(&f.project()).unwrap();
        let s = f.run_ok(script);
        let status = accept(&s.id, Some((n, &dir.path().join(format!("{n}.log")))));
        let killed = std::os::unix::process::ExitStatusExt::signal(&status) == Some(9);
        if killed {
            landed += 1;
            // The re-run, as a user would type it again.
            let again = accept(&s.id, None);
            assert!(again.success(), "kill point {n}: the re-run failed");
        }
        assert_eq!(f.read_str("src/f.txt").unwrap(), chosen, "kill point {n}: not exactly the chosen hunk");
        assert_eq!(temps(&f.root), Vec::<String>::new(), "kill point {n}: temporary files left");
        let hunks = f.cairn(&["hunks", &s.id, "--json"]).ok().json();
        assert_eq!(hunks["files"][0]["hunks"].as_array().map(|h| h.len()), Some(2), "kill point {n}: hunks 1 and 3 stay proposed: {hunks}");
        f.cairn(&["reject", &s.id]).ok();
        if !killed {
            break;
        }
        n += 1;
    }
    eprintln!("accept-hunk: {landed} kills landed");
    assert!(landed >= 25, "only {landed} kill points inside accept-hunk");
}
