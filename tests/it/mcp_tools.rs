//! The tool shapes coding agents expect (`tests/mcp/tools.py`, the official Python SDK's
//! `mcp.Client`), then checked from the CLI side: the proposal holds exactly what the calls
//! reported, the rename shows as one, the implicit session's work became a proposal on
//! disconnect, and the working tree was never touched.

use crate::support::*;
use serde_json::Value;
use serde_json::json;
use std::path::Path;

#[test]
fn tool_shapes_agents_expect_work_through_the_python_sdk() {
    let lines: String = (1..=10).map(|i| format!("line {i}\n")).collect();
    let app = "def a():\n    return 1\n\ndef b():\n    return 1\n\ndef c():\n    return 2\n\ndef d():\n    return 2\n";
    let f = Fixture::with_files(&[("lines.txt", lines.as_str()), ("data.json", "[1, 2, 3]\n"), ("app.py", app), ("old_name.py", "print('x')\n")]);
    f.init();
    let before = f.tree();
    let out = std::process::Command::new(crate::mcp::sdk_python())
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/tools.py"))
        .arg(exe())
        .arg(&f.root)
        .env("CAIRN_HOME", &f.home)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "client failed:\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let r: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert!(r["actor"].as_str().unwrap().strip_prefix("agent:shape-agent-").is_some_and(|s| s.len() == 6), "the client's name under protocol {}: {r}", r["protocol"]);
    assert_eq!(r["client"], serde_json::json!({ "name": "shape-agent", "version": "1.0" }), "{r}");
    assert_eq!(f.tree(), before, "the working tree changed");

    let agent = r["agent"].as_str().unwrap();
    assert_eq!(f.status(agent).state.as_str(), "reviewing");
    let diff = f.cairn(&["diff", agent]).ok().stdout;
    assert!(diff.contains("rename from old_name.py\nrename to pkg/new_name.py"), "{diff}");
    assert!(diff.contains("+    return 10") && diff.contains("+    return 20") && !diff.contains("def cc") && !diff.contains("def bb"), "{diff}");

    // The implicit session's proposal: its own task, reviewing, exactly its two edits.
    let agents = f.cairn(&["list-agents", "--json"]).ok().json();
    let implicit: Vec<&Value> = agents.as_array().unwrap().iter().filter(|a| a["task"].as_str().is_some_and(|t| t.contains("quick-agent"))).collect();
    assert_eq!(implicit.len(), 1, "{agents}");
    assert_eq!(implicit[0]["state"], "reviewing", "{agents}");
    let diff = f.cairn(&["diff", implicit[0]["id"].as_str().unwrap()]).ok().stdout;
    let headers: Vec<&str> = diff.lines().filter(|l| l.starts_with("diff --git")).collect();
    assert_eq!(headers, ["diff --git a/app.py b/app.py", "diff --git a/implicit.txt b/implicit.txt"], "{diff}");
    let tasks = f.cairn(&["task", "list", "--json"]).ok().json();
    assert!(tasks.to_string().contains("quick-agent: changes from implicit.txt"), "{tasks}");
}

/// Every process below `pid` (children, grandchildren, ...), from /proc.
fn descendants(pid: u32) -> Vec<u32> {
    let mut parent = std::collections::HashMap::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(p) = e.file_name().to_string_lossy().parse::<u32>() else { continue };
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        if let Some(pp) = stat.rsplit_once(')').and_then(|(_, r)| r.split_whitespace().nth(1)).and_then(|x| x.parse::<u32>().ok()) {
            parent.insert(p, pp);
        }
    }
    let mut out = vec![];
    let mut frontier = vec![pid];
    while let Some(p) = frontier.pop() {
        for (&c, &pp) in &parent {
            if pp == p && !out.contains(&c) {
                out.push(c);
                frontier.push(c);
            }
        }
    }
    out
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.rsplit_once(')').is_some_and(|(_, r)| r.trim_start().starts_with('Z')))
}

/// A cancelled call (`notifications/cancelled`) stops its work, and the server goes on
/// serving.
#[test]
fn a_cancelled_call_stops_its_work() {
    let f = Fixture::with_files(&[("a.txt", "a\n")]);
    f.init();
    let mut c = std::process::Command::new(exe());
    c.arg("--project-root").arg(&f.root).arg("--cairn-home").arg(&f.home).args(["mcp", "--actor", "agent:cancel"]).env_remove("CAIRN_HOME").stderr(std::process::Stdio::null());
    let mut m = crate::runs::RawMcp::start(c);
    for (tool, args, marker) in [("run_command", json!({"command": "sleep 300"}), "sleep"), ("run_script", json!({"code": "while True:\n    pass\n"}), "__sandbox")] {
        let id = m.send_call(tool, args);
        let mut work = Vec::new();
        wait_until(20, "the call's process to start", || {
            work = descendants(m.pid());
            work.iter().any(|&p| std::fs::read(format!("/proc/{p}/cmdline")).is_ok_and(|c| String::from_utf8_lossy(&c).contains(marker)))
        });
        m.notify("notifications/cancelled", json!({"requestId": id, "reason": "test"}));
        // (The `sleep 300` and the endless loop could not have ended by themselves.)
        wait_until(60, "the cancelled work to die", || work.iter().all(|&p| !alive(p)));
        assert_eq!(m.call("identity", json!({}))["actor"], "agent:cancel", "the server serves on");
    }
}

/// A client that goes away mid-call (a confined command, a sandboxed script): the server ends
/// within 2 s and nothing it ran for the client is left.
#[test]
fn closing_the_client_mid_call_ends_the_server_and_its_work() {
    for (tool, args) in [("run_command", json!({"command": "sleep 300"})), ("run_script", json!({"code": "while True:\n    pass\n"}))] {
        let f = Fixture::with_files(&[("a.txt", "a\n")]);
        f.init();
        let mut c = std::process::Command::new(exe());
        c.arg("--project-root").arg(&f.root).arg("--cairn-home").arg(&f.home).args(["mcp", "--actor", "agent:gone"]).env_remove("CAIRN_HOME").stderr(std::process::Stdio::null());
        let mut m = crate::runs::RawMcp::start(c);
        m.call("write_file", json!({"path": "b.txt", "content": "b\n"}));
        m.send_call(tool, args);
        let mut work = Vec::new();
        wait_until(20, "the call's process to start", || {
            work = descendants(m.pid());
            work.iter().any(|&p| std::fs::read(format!("/proc/{p}/cmdline")).is_ok_and(|c| String::from_utf8_lossy(&c).contains(if tool == "run_command" { "sleep" } else { "__sandbox" })))
        });
        m.close();
        // (How fast is the bench's business; here: it ends, and takes its work with it.)
        wait_until(60, "the server to exit", || m.exited());
        wait_until(60, "its work to die", || work.iter().all(|&p| !alive(p)));
        // What the client wrote before going away is a proposal.
        let agents = f.cairn(&["list-agents", "--json"]).ok().json();
        assert!(agents.as_array().unwrap().iter().any(|a| a["state"] == "reviewing"), "{tool}: {agents}");
    }
}

/// The same lifecycle through the official SDKs: Python (`tests/mcp/lifecycle.py`, a cancelled
/// asyncio task) and TypeScript (`tests/mcp/lifecycle.mjs`, an aborted call), each cancelling a
/// run_command and a run_script, then closing mid-call: every stop happens, and nothing is left running.
#[test]
fn the_python_and_typescript_sdks_cancel_and_close_with_nothing_left_running() {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let ts = here.join(".venv/mcp-ts/node_modules");
    assert!(ts.join("@modelcontextprotocol/sdk").exists(), "the MCP TypeScript SDK is missing: run `bash scripts/test.sh`");
    let f = Fixture::with_files(&[("a.txt", "a\n")]);
    f.init();
    let py = std::process::Command::new(crate::mcp::sdk_python())
        .arg(here.join("tests/mcp/lifecycle.py"))
        .arg(exe())
        .arg(&f.root)
        .arg(std::process::id().to_string())
        .current_dir(&f.root)
        .env("CAIRN_HOME", &f.home)
        .output()
        .unwrap();
    assert!(py.status.success(), "Python SDK:\n{}\n{}", String::from_utf8_lossy(&py.stdout), String::from_utf8_lossy(&py.stderr));
    // ESM resolves packages next to the script: run a copy beside the SDK's node_modules.
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(here.join("tests/mcp/lifecycle.mjs"), dir.path().join("lifecycle.mjs")).unwrap();
    std::os::unix::fs::symlink(&ts, dir.path().join("node_modules")).unwrap();
    let node = std::process::Command::new("node").arg(dir.path().join("lifecycle.mjs")).arg(exe()).arg(&f.root).current_dir(&f.root).env("CAIRN_HOME", &f.home).output().unwrap();
    assert!(node.status.success(), "TypeScript SDK:\n{}\n{}", String::from_utf8_lossy(&node.stdout), String::from_utf8_lossy(&node.stderr));
    for out in [&py.stdout, &node.stdout] {
        let r: Value = serde_json::from_str(String::from_utf8_lossy(out).lines().last().unwrap()).unwrap();
        assert!(r["alive"].as_str().is_some_and(|a| a.starts_with("agent:")) && r["close_ms"].as_u64().is_some(), "{r}");
    }
}
