//! The tool shapes coding agents expect (`tests/mcp/tools.py`, the official Python SDK's
//! `mcp.Client`), then checked from the CLI side: the proposal holds exactly what the calls
//! reported, the rename shows as one, the implicit session's work became a proposal on
//! disconnect, and the working tree was never touched.

use crate::support::*;
use serde_json::Value;
use std::path::Path;

#[test]
fn tool_shapes_agents_expect_work_through_the_python_sdk() {
    let lines: String = (1..=10).map(|i| format!("line {i}\n")).collect();
    let app = "def a():\n    return 1\n\ndef b():\n    return 1\n\ndef c():\n    return 2\n\ndef d():\n    return 2\n";
    let f = Fixture::with_files(&[("lines.txt", lines.as_str()), ("data.json", "[1, 2, 3]\n"), ("app.py", app), ("old_name.py", "print('x')\n")]);
    f.init();
    let before = f.tree();
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv/mcp/bin/python");
    assert!(python.exists(), "the MCP Python SDK is missing: run `bash scripts/test.sh`");
    let out = std::process::Command::new(python)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/tools.py"))
        .arg(exe())
        .arg(&f.root)
        .env("CAIRN_HOME", &f.home)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "client failed:\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let r: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(r["actor"], "agent:shape-agent", "the client's name under protocol {}", r["protocol"]);
    assert_eq!(f.tree(), before, "the working tree changed");

    let agent = r["agent"].as_str().unwrap();
    assert_eq!(f.status(agent).state.as_str(), "reviewing");
    let diff = f.cairn(&["diff", agent]).ok().stdout;
    assert!(diff.contains("rename from old_name.py\nrename to pkg/new_name.py"), "{diff}");
    assert!(diff.contains("+    return 10") && diff.contains("+    return 20") && !diff.contains("def cc") && !diff.contains("def bb"), "{diff}");

    // The implicit session's proposal: its own task, reviewing, exactly its two edits.
    let agents = f.cairn(&["list-agents", "--json"]).ok().json();
    let implicit: Vec<&Value> = agents.as_array().unwrap().iter().filter(|a| a["id"] != agent).collect();
    assert_eq!(implicit.len(), 1, "{agents}");
    assert_eq!(implicit[0]["state"], "reviewing", "{agents}");
    let diff = f.cairn(&["diff", implicit[0]["id"].as_str().unwrap()]).ok().stdout;
    let headers: Vec<&str> = diff.lines().filter(|l| l.starts_with("diff --git")).collect();
    assert_eq!(headers, ["diff --git a/app.py b/app.py", "diff --git a/implicit.txt b/implicit.txt"], "{diff}");
    let tasks = f.cairn(&["task", "list", "--json"]).ok().json();
    assert!(tasks.to_string().contains("quick-agent: changes from implicit.txt"), "{tasks}");
}
