//! The model gateway of `cairn wrap` (issue 50): real agent CLIs whose user has a real-looking
//! key and a base URL on the host's 127.0.0.1 (a scripted API), with no `[wrap] host_ports`:
//! the CLI reaches its model only through the gateway on its own loopback, holding a
//! placeholder; every request the upstream gets carries the real key; a hostile program in
//! the same session (the CLI's own shell tool) finds the key nowhere; the agent's status holds
//! the token totals the upstream reported; a budget stops the agent with the provider's quota
//! error and its proposal stays reviewable.

use crate::agents_mcp::agent_bin;
use crate::support::*;
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// A random key of Anthropic's shape.
pub fn real_key(prefix: &str, len: usize) -> String {
    const CHARS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64 ^ (std::process::id() as u64) << 20;
    let tail: String = (prefix.len()..len)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            CHARS[(seed % CHARS.len() as u64) as usize] as char
        })
        .collect();
    format!("{prefix}{tail}")
}

/// A scripted API on the host's 127.0.0.1, and where it logs each request.
pub struct Model {
    child: Child,
    pub port: String,
    pub log: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl Drop for Model {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn model(file: &str, script: &Value, extra: &[&str]) -> Model {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("script.json"), script.to_string()).unwrap();
    let (port_file, log) = (dir.path().join("port"), dir.path().join("requests.log"));
    let child = Command::new("python3")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/agents").join(file))
        .arg(dir.path().join("script.json"))
        .arg(&port_file)
        .args(extra)
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    wait_until(20, "the scripted model to listen", || port_file.exists());
    Model { child, port: std::fs::read_to_string(&port_file).unwrap(), log, _dir: dir }
}

pub fn requests(m: &Model) -> Vec<Value> {
    std::fs::read_to_string(&m.log).unwrap_or_default().lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
}

pub fn agent_of(stderr: &str) -> String {
    let rest = stderr.split("wrap session ").nth(1).unwrap_or_else(|| panic!("no session line: {stderr}"));
    rest.split(':').next().unwrap().to_string()
}

/// Puts the hunter into the project (where the agent's shell finds it); returns its command
/// line looking for `pattern` in its environment, /proc, the home, /etc, /tmp and the project.
pub fn hunter(f: &Fixture, pattern: &str) -> String {
    f.write("hunt_key.py", std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/agents/hunt_key.py")).unwrap());
    format!("python3 {}/hunt_key.py '{pattern}' \"$HOME\" /etc /tmp /var/tmp {}", f.root.display(), f.root.display())
}

/// Claude Code with `key` in ANTHROPIC_API_KEY and the scripted model as ANTHROPIC_BASE_URL.
fn claude(f: &Fixture, home: &Path, m: &Model, key: &str) -> Run {
    let out = f
        .cmd()
        .current_dir(&f.root)
        .args(["wrap", "--"])
        .arg(agent_bin("claude"))
        .args(["-p", "fix add", "--allowedTools", "Read", "Edit", "Write", "Bash"])
        .env("HOME", home)
        .env("ANTHROPIC_BASE_URL", format!("http://127.0.0.1:{}", m.port))
        .env("ANTHROPIC_API_KEY", key)
        .env("DISABLE_TELEMETRY", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    Run::from(out)
}

/// The token totals the upstream reported over its log.
pub fn reported(reqs: &[Value]) -> (u64, u64) {
    reqs.iter().filter_map(|r| r.get("usage")).fold((0, 0), |(i, o), u| (i + u["input_tokens"].as_u64().unwrap(), o + u["output_tokens"].as_u64().unwrap()))
}

/// Acceptance 1 and 3 with Claude Code.
#[test]
fn claude_code_never_holds_the_key_and_its_tokens_are_counted() {
    let f = Fixture::with_files(&[("src/app.py", "def add(a, b):\n    return a - b\n"), ("old.txt", "old\n")]);
    let home = tempfile::tempdir().unwrap();
    let key = real_key("sk-ant-api03-", 108);
    let root = f.root.display().to_string();
    let hunt = hunter(&f, "sk-ant-[A-Za-z0-9_-]{20,}");
    let script = json!([
        {"tool": "Read", "input": {"file_path": format!("{root}/src/app.py")}},
        {"tool": "Edit", "input": {"file_path": format!("{root}/src/app.py"), "old_string": "return a - b", "new_string": "return a + b"}},
        {"tool": "Write", "input": {"file_path": format!("{root}/NOTES.md"), "content": "fixed add\n"}},
        {"tool": "Bash", "input": {"command": hunt, "description": "look around"}},
        {"text": "All done."}
    ]);
    let m = model("anthropic_stub.py", &script, &[]);
    let before = f.tree();
    let r = claude(&f, home.path(), &m, &key);
    let reqs = requests(&m);
    assert_eq!(r.code, 0, "{r:?}\n{reqs:?}");
    assert!(r.stdout.contains("All done."), "{r:?}");
    assert_eq!(f.tree(), before, "the working tree changed");
    let id = agent_of(&r.stderr);
    let diff = f.cairn(&["diff", &id]).ok().stdout;
    let headers: Vec<&str> = diff.lines().filter(|l| l.starts_with("diff --git")).collect();
    assert_eq!(headers, ["diff --git a/NOTES.md b/NOTES.md", "diff --git a/src/app.py b/src/app.py"], "{diff}");
    // Every request the upstream got carried the real key, and only it.
    let messages: Vec<&Value> = reqs.iter().filter(|r| r["path"].as_str().unwrap_or("").starts_with("/v1/messages")).collect();
    assert!(messages.len() >= 4, "{reqs:?}");
    for r in &reqs {
        assert_eq!(r["key"].as_str(), Some(key.as_str()), "a request without the real key: {r}");
    }
    // The hunter ran, found the placeholder the CLI holds, and never the key.
    let shown: String = reqs.iter().map(|r| r["messages"].to_string()).collect();
    let results: Vec<String> = shown.match_indices("toolu_4").map(|(i, _)| shown[i..].chars().take(1500).collect()).collect();
    assert!(shown.contains("HUNT DONE"), "the hunter's output never came back: {results:?}");
    assert!(shown.contains("FOUND sk-ant-api03-"), "the hunter found not even the placeholder: {}", &shown[shown.find("HUNT").unwrap_or(0).saturating_sub(2000)..]);
    assert!(!shown.contains(&key[20..]), "the agent found the real key");
    // Its status holds exactly the totals the upstream reported.
    let (input, output) = reported(&reqs);
    assert!(input > 0 && output > 0);
    let status = f.cairn(&["status", &id, "--json"]).ok().json();
    assert_eq!(status["usage"]["input_tokens"].as_u64(), Some(input), "{status}");
    assert_eq!(status["usage"]["output_tokens"].as_u64(), Some(output), "{status}");
    let listed = f.cairn(&["list-agents", "--json"]).ok().json();
    assert_eq!(listed[0]["usage"]["output_tokens"].as_u64(), Some(output), "{listed}");
    assert!(f.cairn(&["status", &id]).ok().stdout.contains(&format!("{input} in, {output} out")));
    let log = f.cairn(&["log", &id]).ok().stdout;
    assert!(log.contains(&format!("tokens: {input} in, {output} out")), "{log}");
}

/// Acceptance 4: a token budget stops the agent; its next model request gets Anthropic's own
/// quota error, and the proposal is reviewable.
#[test]
fn a_token_budget_stops_claude_code_with_the_providers_quota_error() {
    let f = Fixture::with_files(&[("src/app.py", "def add(a, b):\n    return a - b\n")]);
    f.home_config("[wrap]\nmax_tokens = 1\n");
    let home = tempfile::tempdir().unwrap();
    let key = real_key("sk-ant-api03-", 108);
    let root = f.root.display().to_string();
    let script = json!([
        {"tool": "Write", "input": {"file_path": format!("{root}/NOTES.md"), "content": "first step\n"}},
        {"tool": "Write", "input": {"file_path": format!("{root}/MORE.md"), "content": "never\n"}},
        {"text": "All done."}
    ]);
    let m = model("anthropic_stub.py", &script, &[]);
    let r = claude(&f, home.path(), &m, &key);
    let reqs = requests(&m);
    assert_ne!(r.code, 0, "the CLI went on past its budget: {r:?}");
    assert!(!r.stdout.contains("All done."), "{r:?}");
    // The upstream saw the one request the budget allowed.
    let tools: Vec<&Value> = reqs.iter().filter(|r| r["tools"] == json!(true)).collect();
    assert_eq!(tools.len(), 1, "{reqs:?}");
    // The CLI was told in its provider's words.
    assert!(format!("{}{}", r.stdout, r.stderr).contains("budget"), "{r:?}");
    assert_eq!(r.stderr.matches("budget reached").count(), 1, "the user is told once: {}", r.stderr);
    let id = agent_of(&r.stderr);
    assert_eq!(f.status(&id).state.as_str(), "reviewing");
    let diff = f.cairn(&["diff", &id]).ok().stdout;
    assert!(diff.contains("+first step") && !diff.contains("never"), "{diff}");
}
