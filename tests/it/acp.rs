//! `cairn acp -- AGENT`, driven by the official ACP Python SDK (`agent-client-protocol`, in
//! `.venv/acp`) as the editor: claude-agent-acp (npm, in `.venv/agents/acp`) against a scripted
//! Messages API edits two files in one turn → the tree untouched, the agent `reviewing` the
//! moment the prompt returns, the edits in the proposal; a hostile ACP agent cannot make the
//! editor write a file or run a command; a kill of `cairn acp` mid-turn keeps the turn so far.

use crate::support::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

fn venv(rel: &str) -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv").join(rel);
    assert!(p.exists(), "{} is missing: run `bash scripts/test.sh` (it installs .venv/acp and .venv/agents)", p.display());
    p
}

/// Runs the SDK client (`tests/acp/client.py`) against `cairn acp -- agent...`; each prompt's
/// check is `cairn list-agents --json`, run as soon as the prompt returns.
fn client(f: &Fixture, agent: &[String], prompts: &[&str], env: &[(&str, String)], home: &Path) -> Value {
    client_with(f, agent, prompts, env, home, json!({}))
}

/// [`client`] with more of the client's configuration (`after_first`, `wait_text`).
fn client_with(f: &Fixture, agent: &[String], prompts: &[&str], env: &[(&str, String)], home: &Path, more: Value) -> Value {
    let cairn = |args: &[&str]| -> Vec<String> {
        let mut v = vec![exe().display().to_string(), "--project-root".into(), f.root.display().to_string(), "--cairn-home".into(), f.home.display().to_string()];
        v.extend(args.iter().map(|s| s.to_string()));
        v
    };
    let mut argv = cairn(&["acp", "--"]);
    argv.extend(agent.iter().cloned());
    let dir = tempfile::tempdir().unwrap();
    let mut config = json!({"agent": argv, "cwd": f.root, "prompts": prompts, "check": cairn(&["list-agents", "--json"])});
    for (k, v) in more.as_object().unwrap() {
        config[k] = v.clone();
    }
    let cairn_cmd = |args: &[&str]| json!(cairn(args));
    if let Some(after) = config.get_mut("after_first").and_then(Value::as_array_mut) {
        for a in after.iter_mut() {
            let args: Vec<String> = serde_json::from_value(a.clone()).unwrap();
            *a = cairn_cmd(&args.iter().map(String::as_str).collect::<Vec<_>>());
        }
    }
    std::fs::write(dir.path().join("config.json"), config.to_string()).unwrap();
    let mut cmd = std::process::Command::new(venv("acp/bin/python"));
    cmd.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/acp/client.py")).arg(dir.path().join("config.json")).env("HOME", home).env_remove("CAIRN_HOME");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let r = Run::from(out);
    assert_eq!(r.code, 0, "{r:?}");
    serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {r:?}"))
}

#[test]
fn claude_agent_acp_turn_is_a_proposal_in_review_when_the_prompt_returns() {
    let f = Fixture::with_files(&[("src/app.py", "def add(a, b):\n    return a - b\n"), ("README.md", "hi\n")]);
    let home = tempfile::tempdir().unwrap();
    let root = f.root.display().to_string();
    let script = json!([
        {"tool": "Read", "input": {"file_path": format!("{root}/src/app.py")}},
        {"tool": "Edit", "input": {"file_path": format!("{root}/src/app.py"), "old_string": "return a - b", "new_string": "return a + b"}},
        {"tool": "Write", "input": {"file_path": format!("{root}/NOTES.md"), "content": "fixed add\n"}},
        {"text": "All done."}
    ]);
    let model = crate::agents_mcp::stub_for("anthropic_stub.py", &script, "none");
    f.home_config(&format!("[wrap]\nhost_ports = [{}]\n", model.port));
    let before = f.tree();
    let env = [
        ("ANTHROPIC_BASE_URL", format!("http://127.0.0.1:{}", model.port)),
        ("ANTHROPIC_API_KEY", "sk-scripted".to_string()),
        ("DISABLE_TELEMETRY", "1".to_string()),
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".to_string()),
    ];
    let agent = [venv("agents/acp/node_modules/.bin/claude-agent-acp").display().to_string()];
    let got = client(&f, &agent, &["fix add"], &env, home.path());
    let log = std::fs::read_to_string(&model.log).unwrap_or_default();
    let turn = &got["turns"][0];
    assert_eq!(turn["stop_reason"], "end_turn", "{got}\nmodel log:\n{}", &log[..log.len().min(4000)]);
    assert!(turn["updates"].as_array().unwrap().iter().any(|u| u == "tool_call"), "the editor saw the tool calls: {got}");
    // At the moment the prompt returned: one agent, in review, its first revision with both files.
    let agents: Value = serde_json::from_str(turn["check"].as_str().unwrap()).unwrap_or_else(|e| panic!("{e}: {got}"));
    let agents = agents.as_array().unwrap();
    assert_eq!(agents.len(), 1, "{agents:?}");
    assert_eq!(agents[0]["state"], "reviewing", "{agents:?}");
    let changed: Vec<&str> = agents[0]["changes"].as_array().unwrap().iter().map(|c| c["path"].as_str().unwrap()).collect();
    assert_eq!(changed, ["NOTES.md", "src/app.py"], "{agents:?}");
    // The editor wrote nothing for the agent, and the tree is as it was.
    assert!(got["calls"].as_array().unwrap().iter().all(|c| !c["method"].as_str().unwrap().starts_with("fs/") && !c["method"].as_str().unwrap().starts_with("terminal/")), "{got}");
    assert_eq!(f.tree(), before, "the working tree changed");
    let id = agents[0]["id"].as_str().unwrap();
    let diff = f.cairn(&["diff", id]).ok().stdout;
    assert!(diff.contains("+    return a + b") && diff.contains("+fixed add"), "{diff}");
    assert_eq!(f.status(id).state.as_str(), "reviewing");
}

#[test]
fn a_hostile_acp_agent_cannot_make_the_editor_write_or_run() {
    let f = Fixture::with_files(&[("src/app.py", "x = 1\n")]);
    let home = tempfile::tempdir().unwrap();
    let before = f.tree();
    let agent = ["/usr/bin/python3".to_string(), Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/acp/hostile_agent.py").display().to_string()];
    let got = client(&f, &agent, &["go"], &[], home.path());
    assert_eq!(got["turns"][0]["stop_reason"], "end_turn", "{got}");
    // The client's own fs and terminal handlers were never called.
    assert_eq!(got["calls"], json!([]), "{got}");
    let report: Value = serde_json::from_str(got["text"].as_str().unwrap()).unwrap_or_else(|e| panic!("{e}: {got}"));
    assert_eq!(report["caps"]["fs"], json!({"readTextFile": false, "writeTextFile": false}), "the agent was offered the editor's file system: {report}");
    assert_eq!(report["caps"]["terminal"], json!(false), "{report}");
    for k in ["write", "write_in_project", "terminal", "extension"] {
        assert_eq!(report["got"][k], -32601, "{k}: {report}");
    }
    assert_eq!(f.tree(), before, "the working tree changed");
    assert!(!f.root.join("HOSTILE.txt").exists());
    // What it wrote in its own view is the proposal, in review when the prompt returned.
    let agents: Value = serde_json::from_str(got["turns"][0]["check"].as_str().unwrap()).unwrap();
    assert_eq!(agents[0]["state"], "reviewing", "{agents}");
    let id = agents[0]["id"].as_str().unwrap();
    let diff = f.cairn(&["diff", id]).ok().stdout;
    assert!(diff.contains("+written in its own view"), "{diff}");
}

#[test]
fn a_kill_of_cairn_acp_mid_turn_keeps_the_proposal_so_far() {
    use std::io::{Read, Write};
    use std::process::Stdio;
    let f = Fixture::with_files(&[("a.txt", "a\n")]);
    let agent = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/acp/hostile_agent.py");
    let mut child = f.cmd().current_dir(&f.root).args(["acp", "--", "/usr/bin/python3"]).arg(&agent).arg("--hang").stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut err = String::new();
    let mut stderr = child.stderr.take().unwrap();
    let mut buf = [0u8; 1];
    while !err.contains('\n') {
        assert_eq!(stderr.read(&mut buf).unwrap(), 1, "no session line: {err}");
        err.push(buf[0] as char);
    }
    let id = err.split("acp session ").nth(1).and_then(|r| r.split(':').next()).unwrap_or_else(|| panic!("{err}")).to_string();
    let mut stdin = child.stdin.take().unwrap();
    for msg in [
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}}),
        json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": f.root, "mcpServers": []}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {"sessionId": "s1", "prompt": [{"type": "text", "text": "go"}]}}),
    ] {
        stdin.write_all(format!("{msg}\n").as_bytes()).unwrap();
    }
    let has = |f: &Fixture| f.cairn(&["diff", &id]).stdout.contains("+++ b/partial.txt");
    wait_until(30, "the turn's write in the proposal", || has(&f));
    assert_eq!(f.status(&id).state.as_str(), "executing", "the turn has not ended");
    child.kill().unwrap();
    child.wait().unwrap();
    // The next command finds the session orphaned: what the turn wrote is kept, for review.
    assert!(has(&f), "{}", f.cairn(&["diff", &id]).stdout);
    assert_eq!(f.status(&id).state.as_str(), "reviewing");
    assert_eq!(f.read_str("partial.txt"), None, "nothing landed");
}

/// Acceptance 1's second half: a hunk rejected with a reason and `cairn revise` → the agent's
/// next prompt holds the reason exactly once, the editor's chat gets that turn's updates, and
/// its writes are the next revision.
#[test]
fn revise_sends_the_reason_to_claude_agent_acp_once_as_its_next_prompt() {
    let f = Fixture::with_files(&[("src/app.py", "def add(a, b):\n    return a - b\n"), ("README.md", "hi\n")]);
    let home = tempfile::tempdir().unwrap();
    let root = f.root.display().to_string();
    let reason = "keep-the-subtraction-R7";
    let script = json!({"turns": [
        [
            {"tool": "Read", "input": {"file_path": format!("{root}/src/app.py")}},
            {"tool": "Edit", "input": {"file_path": format!("{root}/src/app.py"), "old_string": "return a - b", "new_string": "return a + b"}},
            {"tool": "Write", "input": {"file_path": format!("{root}/NOTES.md"), "content": "fixed add\n"}},
            {"text": "All done."}
        ],
        [
            {"tool": "Write", "input": {"file_path": format!("{root}/NOTES.md"), "content": "kept add as it was\n"}},
            {"text": "Revised as asked."}
        ]
    ]});
    let model = crate::agents_mcp::stub_for("anthropic_stub.py", &script, "none");
    f.home_config(&format!("[wrap]\nhost_ports = [{}]\n", model.port));
    let env = [
        ("ANTHROPIC_BASE_URL", format!("http://127.0.0.1:{}", model.port)),
        ("ANTHROPIC_API_KEY", "sk-scripted".to_string()),
        ("DISABLE_TELEMETRY", "1".to_string()),
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".to_string()),
    ];
    let agent = [venv("agents/acp/node_modules/.bin/claude-agent-acp").display().to_string()];
    let more = json!({
        "after_first": [["reject-hunk", "{id}", "src/app.py", "1", "--reason", reason], ["revise", "{id}"]],
        "wait_text": "Revised as asked."
    });
    let got = client_with(&f, &agent, &["fix add"], &env, home.path(), more);
    let turn = &got["turns"][0];
    for a in turn["after"].as_array().unwrap() {
        assert_eq!(a["code"], 0, "{got}");
    }
    assert!(got["text"].as_str().unwrap().contains("Revised as asked."), "the editor's chat got the revise turn: {got}");
    assert!(turn["after_updates"].as_array().unwrap().iter().any(|u| u == "tool_call"), "{got}");
    // The model's conversation holds the reason once: in the prompt Cairn sent.
    let log = std::fs::read_to_string(&model.log).unwrap();
    let last = log.lines().filter(|l| l.contains("Revised") || l.contains(reason)).last().unwrap_or_else(|| panic!("no request held the reason: {log}"));
    assert_eq!(last.matches(reason).count(), 1, "{last}");
    // Its writes are the next revision of the proposal.
    let agents: Value = serde_json::from_str(turn["check"].as_str().unwrap()).unwrap();
    let id = agents[0]["id"].as_str().unwrap();
    wait_until(30, "the revise turn's write in the proposal", || f.cairn(&["diff", id]).stdout.contains("+kept add as it was"));
    assert!(f.status(id).revision >= 2, "{:?}", f.status(id));
}
