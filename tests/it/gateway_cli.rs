//! The model gateway with Codex CLI (`codex exec`, the Responses API streamed, `CODEX_API_KEY`
//! and `OPENAI_BASE_URL`) and Gemini CLI (`gemini -p`, `GEMINI_API_KEY` and
//! `GOOGLE_GEMINI_BASE_URL`), each against its scripted API on the host's 127.0.0.1 with no
//! `[wrap] host_ports`: each proposes exactly its edits, the upstream got the real key on
//! every request, the CLI's own shell tool finds only the placeholder, and the agent's status
//! holds the tokens the upstream reported. (Claude Code's: `gateway.rs`.)

use crate::agents_mcp::agent_bin;
use crate::gateway::{agent_of, hunter, model, real_key, reported, requests, Model};
use crate::support::*;
use serde_json::{json, Value};
use std::process::Stdio;

fn project() -> Fixture {
    Fixture::with_files(&[("src/app.py", "def add(a, b):\n    return a - b\n")])
}

/// The session's proposal is exactly `paths`; the tree is untouched; the upstream's every
/// request carried `key` (as `credential` reads it); the hunter's output (somewhere in the
/// log) found `placeholder_prefix` and never the key; the status holds the reported totals.
fn check(f: &Fixture, before: &[(String, Vec<u8>)], r: &Run, m: &Model, key: &str, credential: impl Fn(&Value) -> Option<String>, placeholder_prefix: &str) {
    let reqs = requests(m);
    let log = std::fs::read_to_string(&m.log).unwrap();
    assert_eq!(r.code, 0, "{r:?}\nmodel log:\n{}", &log[..log.len().min(4000)]);
    assert!(r.stdout.contains("All done."), "{r:?}");
    assert_eq!(f.tree(), before, "the working tree changed");
    let id = agent_of(&r.stderr);
    let diff = f.cairn(&["diff", &id]).ok().stdout;
    let headers: Vec<&str> = diff.lines().filter(|l| l.starts_with("diff --git")).collect();
    assert_eq!(headers, ["diff --git a/NOTES.md b/NOTES.md", "diff --git a/src/app.py b/src/app.py"], "{diff}");
    assert!(diff.contains("+    return a + b") && diff.contains("+fixed add"), "{diff}");
    assert!(!reqs.is_empty());
    for q in &reqs {
        assert_eq!(credential(q).as_deref(), Some(key), "a request without the real key: {q}");
    }
    let without_keys: String = reqs.iter().map(|q| { let mut q = q.clone(); q.as_object_mut().unwrap().retain(|k, _| k != "key" && k != "auth"); q.to_string() }).collect();
    assert!(without_keys.contains("HUNT DONE"), "the hunter's output never came back: {}", &log[..log.len().min(3000)]);
    assert!(without_keys.contains(&format!("FOUND {placeholder_prefix}")), "the hunter found not even the placeholder");
    assert!(!without_keys.contains(&key[12..]), "the agent found the real key");
    let (input, output) = reported(&reqs);
    let status = f.cairn(&["status", &id, "--json"]).ok().json();
    assert_eq!((status["usage"]["input_tokens"].as_u64(), status["usage"]["output_tokens"].as_u64()), (Some(input), Some(output)), "{status}");
}

#[test]
fn codex_cli_never_holds_the_key_and_its_tokens_are_counted() {
    let f = project();
    let key = real_key("sk-proj-", 164);
    let hunt = hunter(&f, "sk-proj-[A-Za-z0-9_-]{20,}");
    let script = json!([
        {"tool": "exec_command", "input": {"cmd": format!("sed -i 's/return a - b/return a + b/' src/app.py && printf 'fixed add\\n' > NOTES.md && {hunt}"), "workdir": f.root.display().to_string(), "yield_time_ms": 30000}},
        {"text": "All done."}
    ]);
    let m = model("responses_stub.py", &script, &["none"]);
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join(".codex")).unwrap();
    std::fs::write(home.path().join(".codex/config.toml"), "model = \"gpt-5\"\napproval_policy = \"never\"\nsandbox_mode = \"workspace-write\"\n").unwrap();
    let before = f.tree();
    let out = f
        .cmd()
        .current_dir(&f.root)
        .args(["wrap", "--"])
        .arg(agent_bin("codex"))
        .args(["exec", "--skip-git-repo-check", "fix add"])
        .env("HOME", home.path())
        .env("CODEX_API_KEY", &key)
        .env("OPENAI_BASE_URL", format!("http://127.0.0.1:{}/v1", m.port))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let bearer = |q: &Value| q["auth"].as_str().and_then(|a| a.strip_prefix("Bearer ")).map(str::to_string);
    check(&f, &before, &Run::from(out), &m, &key, bearer, "sk-proj-");
}

#[test]
fn gemini_cli_never_holds_the_key_and_its_tokens_are_counted() {
    let f = project();
    let key = real_key("AIza", 39);
    let root_of = |p: &str| f.root.join(p).display().to_string();
    let hunt = hunter(&f, "AIza[A-Za-z0-9_-]{30,}");
    let script = json!([
        {"tool": "replace", "input": {"file_path": root_of("src/app.py"), "old_string": "return a - b", "new_string": "return a + b", "instruction": "fix add"}},
        {"tool": "write_file", "input": {"file_path": root_of("NOTES.md"), "content": "fixed add\n"}},
        {"tool": "run_shell_command", "input": {"command": hunt, "description": "look around"}},
        {"text": "All done."}
    ]);
    let m = model("gemini_stub.py", &script, &["none"]);
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join(".gemini")).unwrap();
    let settings = json!({
        "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": false}},
        "privacy": {"usageStatisticsEnabled": false}, "telemetry": {"enabled": false}
    });
    std::fs::write(home.path().join(".gemini/settings.json"), settings.to_string()).unwrap();
    let before = f.tree();
    let out = f
        .cmd()
        .current_dir(&f.root)
        .args(["wrap", "--"])
        .arg(agent_bin("gemini"))
        .args(["-p", "fix add", "--yolo"])
        .env("HOME", home.path())
        .env("GEMINI_API_KEY", &key)
        .env("GOOGLE_GEMINI_BASE_URL", format!("http://127.0.0.1:{}", m.port))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    check(&f, &before, &Run::from(out), &m, &key, |q| q["key"].as_str().map(str::to_string), "AIza");
}
