//! `cairn mcp` driven by a real MCP client we did not write: the official Python SDK
//! (`.venv/mcp`, installed by the test command) runs `tests/mcp/client.py`. Then the proposal
//! is checked from the CLI side: exactly the edits, checks passing, accept closing the task
//! with provenance from both actors. Garbage on stdin ends the server without touching state.

use crate::support::*;
use serde_json::Value;
use std::io::Write;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

pub fn sdk_python() -> std::path::PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv/mcp/bin/python");
    assert!(p.exists(), "the MCP Python SDK is missing: run `bash scripts/test.sh` (it installs .venv/mcp)");
    p
}

#[test]
fn the_official_python_client_proposes_through_cairn() {
    let f = Fixture::with_files(&[("src/lib.py", "def a():\n    return 1\n"), ("README.md", "hello\n")]);
    f.init();
    let client = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/client.py");
    let out = std::process::Command::new(sdk_python())
        .arg(&client)
        .arg(exe())
        .arg(&f.root)
        .env("CAIRN_HOME", &f.home)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "client failed:\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let r: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    // One identity per server instance: the client's name and a suffix of this server's.
    let me = r["identity"].as_str().unwrap();
    assert!(me.strip_prefix("agent:pytest-agent-").is_some_and(|s| s.len() == 6), "{r}");
    for tool in ["identity", "task_create", "task_run_checks", "session_begin", "session_finish", "read_file", "edit_lines", "write_file", "run_script"] {
        assert!(r["tools"].as_array().unwrap().iter().any(|t| t == tool), "no tool {tool}: {r}");
    }
    assert!(r["deps_gate"].as_str().unwrap().contains("deps not closed"), "{r}");
    assert!(r["stale"].as_str().unwrap().contains("stale tag 2:"), "{r}");
    assert_eq!(r["script"], serde_json::json!({ "result": 1 }), "run_script sees the session's edits");
    assert!(r["unknown_tool"].as_str().unwrap().contains("not found"), "{r}");
    assert!(r["bad_args"].as_str().unwrap().contains("argument `path` must be a string"), "{r}");
    assert!(r["after_finish"].as_str().unwrap().contains("is finished"), "{r}");
    assert_eq!(r["checks"], serde_json::json!(["pass"]));
    assert_eq!(r["alive"], me, "the server survived the errors, with its identity");

    let agent = r["agent"].as_str().unwrap();
    let task = r["task"].as_str().unwrap();
    assert_eq!(f.status(agent).state.as_str(), "reviewing");
    let diff = f.cairn(&["diff", agent]).ok().stdout;
    let changed: Vec<&str> = diff.lines().filter(|l| (l.starts_with('+') || l.starts_with('-')) && !l.starts_with("+++") && !l.starts_with("---")).collect();
    assert_eq!(changed, ["+bumped", "-    return 1", "+    return 2"], "{diff}");
    assert_eq!(f.read_str("src/lib.py").unwrap(), "def a():\n    return 1\n", "nothing landed before accept");

    f.cairn(&["accept", agent]).ok();
    assert_eq!(f.read_str("src/lib.py").unwrap(), "def a():\n    return 2\n");
    let t = f.cairn(&["task", "show", task, "--json"]).ok().json();
    assert_eq!(t["status"], "done");
    let whos: Vec<&str> = t["provenance"].as_array().unwrap().iter().map(|p| p["who"].as_str().unwrap()).collect();
    assert!(whos.contains(&me) && whos.iter().any(|w| w.starts_with("human")), "{whos:?}");
}

#[test]
fn garbage_on_stdin_gets_parse_errors_and_touches_no_state() {
    let f = Fixture::with_files(&[("a.txt", "a\n")]);
    f.init();
    f.cairn(&["task", "create", "existing"]).ok();
    let before = (f.cairn(&["list-agents", "--all", "--json"]).ok().stdout, f.cairn(&["task", "list", "--json"]).ok().stdout, f.tree());
    let mut child = f.cmd().arg("mcp").stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
    {
        let mut stdin = child.stdin.take().unwrap();
        let _ = stdin.write_all(b"\x00\xff not json at all\n{\"jsonrpc\": \"2.0\", \"method\": 7}\n\n}}}\n");
        // Still serving: a valid request after the garbage gets its answer.
        let _ = stdin.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"g\",\"version\":\"1\"}}}\n");
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.is_some(), "cairn mcp did not end after garbage and EOF");
    let mut out = String::new();
    let _ = std::io::Read::read_to_string(child.stdout.as_mut().unwrap(), &mut out);
    let replies: Vec<Value> = out.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    assert_eq!(replies.iter().filter(|r| r["error"]["code"] == -32700 && r["id"].is_null()).count(), 2, "a parse error per line that is not JSON: {out}");
    assert!(replies.iter().any(|r| r["id"] == 1 && r["result"]["serverInfo"]["name"] == "cairn"), "the request after the garbage was answered: {out}");
    let after = (f.cairn(&["list-agents", "--all", "--json"]).ok().stdout, f.cairn(&["task", "list", "--json"]).ok().stdout, f.tree());
    assert_eq!(before, after);
}
