//! Real agent CLIs from npm (`.venv/agents`: Claude Code, Gemini CLI, Codex CLI), each with
//! its model endpoint pointed at a scripted model on 127.0.0.1 (`tests/agents/*_stub.py`),
//! register `cairn mcp` the way `:help cairn-mcp-clients` says and run one session through
//! their own MCP clients: list, search, read a JSON file, write, edit, finish. Every tool
//! result the model got back is a success, the proposal holds exactly the two changes, and
//! the working tree is untouched.

use crate::support::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub fn agent_bin(name: &str) -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv/agents/node_modules/.bin").join(name);
    assert!(p.exists(), "{name} is missing: run `bash scripts/test.sh` (it installs .venv/agents)");
    p
}

/// The session the scripted model drives, by tool (the stub finds each CLI's name for it).
fn steps(prefix: &str) -> Value {
    let t = |name: &str| format!("{prefix}{name}");
    json!([
        {"tool": t("list_dir"), "input": {}},
        {"tool": t("search_content"), "input": {"pattern": "def add"}},
        {"tool": t("read_file"), "input": {"path": "config.json"}},
        {"tool": t("write_file"), "input": {"path": "NOTES.md", "content": "fixed add\n"}},
        {"tool": t("edit_file"), "input": {"path": "src/app.py", "edits": [{"old_text": "return a - b", "new_text": "return a + b"}]}},
        {"tool": t("session_finish"), "input": {"summary": "fix add"}},
        {"text": "All done."}
    ])
}

/// A scripted model (`tests/agents/*_stub.py`) serving on 127.0.0.1 until dropped.
pub struct Stub {
    child: std::process::Child,
    pub port: String,
    pub log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Drop for Stub {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn stub(file: &str, script: &Value) -> Stub {
    stub_for(file, script, "cairn")
}

/// A scripted model whose steps prefer the tools of MCP server `server` (`none`: the CLI's own).
pub fn stub_for(file: &str, script: &Value, server: &str) -> Stub {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("script.json"), script.to_string()).unwrap();
    let (port_file, log) = (dir.path().join("port"), dir.path().join("requests.log"));
    let child = Command::new("python3")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/agents").join(file))
        .arg(dir.path().join("script.json"))
        .arg(&port_file)
        .arg(server)
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    wait_until(20, "the scripted model to listen", || port_file.exists());
    Stub { child, port: std::fs::read_to_string(&port_file).unwrap(), log, _dir: dir }
}

fn project() -> Fixture {
    let f = Fixture::with_files(&[("src/app.py", "def add(a, b):\n    return a - b\n"), ("config.json", "[1, 2, 3]\n")]);
    f.init();
    f
}

fn cairn_args(f: &Fixture) -> Vec<String> {
    vec!["--project-root".into(), f.root.display().to_string(), "--cairn-home".into(), f.home.display().to_string(), "mcp".into()]
}

/// The last request's tool results (as `results` finds them in one log line) hold six
/// successes; the proposal is exactly the two changes; the tree is untouched.
fn check(f: &Fixture, before: &[(String, Vec<u8>)], out: &std::process::Output, stub: &Stub, results: impl Fn(&Value) -> Vec<(bool, String)>) {
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && stdout.contains("All done."), "the CLI failed:\n{stdout}\n{stderr}");
    let log = std::fs::read_to_string(&stub.log).unwrap();
    let last = log.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()).map(|v| results(&v)).max_by_key(Vec::len).unwrap_or_default();
    assert_eq!(last.len(), 6, "tool results seen by the model: {last:?}");
    for (failed, text) in &last {
        assert!(!failed && !text.contains("\"error\":"), "a tool failed: {text}");
    }
    assert!(last[2].1.contains("[1, 2, 3]"), "the JSON file's text: {}", last[2].1);
    assert_eq!(f.tree(), before, "the working tree changed");
    let agents = f.cairn(&["list-agents", "--json"]).ok().json();
    let agents = agents.as_array().unwrap();
    assert_eq!(agents.len(), 1, "{agents:?}");
    assert_eq!(agents[0]["state"], "reviewing");
    let diff = f.cairn(&["diff", agents[0]["id"].as_str().unwrap()]).ok().stdout;
    let changed: Vec<&str> = diff.lines().filter(|l| (l.starts_with('+') || l.starts_with('-')) && !l.starts_with("+++") && !l.starts_with("---")).collect();
    assert_eq!(changed, ["+fixed add", "-    return a - b", "+    return a + b"], "{diff}");
}

#[test]
fn claude_code_completes_a_session_through_cairn_mcp() {
    let f = project();
    let before = f.tree();
    let model = stub("anthropic_stub.py", &steps("mcp__cairn__"));
    let home = tempfile::tempdir().unwrap();
    let config = json!({"mcpServers": {"cairn": {"command": exe(), "args": cairn_args(&f)}}});
    let out = Command::new(agent_bin("claude"))
        .current_dir(&f.root)
        .args(["-p", "fix add", "--strict-mcp-config", "--mcp-config", &config.to_string(), "--allowedTools", "mcp__cairn", "--disallowedTools", "Edit", "Write", "Bash", "NotebookEdit"])
        .env("HOME", home.path())
        .env("ANTHROPIC_BASE_URL", format!("http://127.0.0.1:{}", model.port))
        .env("ANTHROPIC_API_KEY", "sk-scripted")
        .env("DISABLE_TELEMETRY", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env_remove("CAIRN_HOME")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    check(&f, &before, &out, &model, |v| {
        let blocks = v["messages"].as_array().into_iter().flatten().filter_map(|m| m["content"].as_array()).flatten();
        blocks.filter(|b| b["type"] == "tool_result").map(|b| (b["is_error"] == true, b["content"].to_string())).collect()
    });
}

#[test]
fn gemini_cli_completes_a_session_through_cairn_mcp() {
    let f = project();
    let before = f.tree();
    let model = stub("gemini_stub.py", &steps(""));
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join(".gemini")).unwrap();
    let settings = json!({
        "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": false}},
        "mcpServers": {"cairn": {"command": exe(), "args": cairn_args(&f), "trust": true}},
        "excludeTools": ["write_file", "replace", "run_shell_command"],
        "privacy": {"usageStatisticsEnabled": false}, "telemetry": {"enabled": false}
    });
    std::fs::write(home.path().join(".gemini/settings.json"), settings.to_string()).unwrap();
    let out = Command::new(agent_bin("gemini"))
        .current_dir(&f.root)
        .args(["-p", "fix add", "--yolo"])
        .env("HOME", home.path())
        .env("GEMINI_API_KEY", "scripted")
        .env("GOOGLE_GEMINI_BASE_URL", format!("http://127.0.0.1:{}", model.port))
        .env_remove("CAIRN_HOME")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    check(&f, &before, &out, &model, |v| {
        v["responses"].as_array().into_iter().flatten().map(|r| (r["response"].get("error").is_some(), r["response"].to_string())).collect()
    });
}

#[test]
fn codex_cli_completes_a_session_through_cairn_mcp() {
    let f = project();
    let before = f.tree();
    let model = stub("responses_stub.py", &steps(""));
    let home = tempfile::tempdir().unwrap();
    let args: Vec<String> = cairn_args(&f).iter().map(|a| format!("{a:?}")).collect();
    let config = format!(
        "model = \"scripted\"\nmodel_provider = \"stub\"\napproval_policy = \"never\"\nsandbox_mode = \"read-only\"\n\n\
         [model_providers.stub]\nname = \"stub\"\nbase_url = \"http://127.0.0.1:{}/v1\"\nwire_api = \"responses\"\nenv_key = \"STUB_API_KEY\"\n\n\
         [mcp_servers.cairn]\ncommand = {:?}\nargs = [{}]\ndefault_tools_approval_mode = \"approve\"\n",
        model.port,
        exe().display().to_string(),
        args.join(", ")
    );
    std::fs::write(home.path().join("config.toml"), config).unwrap();
    let out = Command::new(agent_bin("codex"))
        .current_dir(&f.root)
        .args(["exec", "--skip-git-repo-check", "fix add"])
        .env("HOME", home.path())
        .env("CODEX_HOME", home.path())
        .env("STUB_API_KEY", "scripted")
        .env_remove("CAIRN_HOME")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    check(&f, &before, &out, &model, |v| {
        v["outputs"].as_array().into_iter().flatten().map(|o| (o["output"].to_string().contains("isError"), o["output"].to_string())).collect()
    });
}
