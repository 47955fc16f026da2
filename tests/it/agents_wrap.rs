//! Gemini CLI (`gemini -p`) and Codex CLI (`codex exec`) from npm under `cairn wrap`, with
//! their own file and shell tools, their models scripted on the host's 127.0.0.1 and reached
//! through `[wrap] host_ports`: each proposal is exactly the CLI's edits, nothing lands, and
//! the real home is unchanged. (Claude Code's: `tests/it/wrap.rs`.)

use crate::agents_mcp::{agent_bin, stub_for, Stub};
use crate::support::*;
use serde_json::{json, Value};
use std::process::Stdio;

fn stub(file: &str, script: &Value) -> Stub {
    stub_for(file, script, "none")
}

fn project(port: &str) -> Fixture {
    let f = Fixture::with_files(&[("src/app.py", "def add(a, b):\n    return a - b\n"), ("old.txt", "old\n")]);
    f.home_config(&format!("[wrap]\nhost_ports = [{port}]\n"));
    f
}

/// The proposal of the one wrap session holds exactly these paths with these lines.
fn assert_proposal(f: &Fixture, before: &[(String, Vec<u8>)], out: &std::process::Output, stub: &Stub) {
    let r = Run::from(out.clone());
    let log = std::fs::read_to_string(&stub.log).unwrap_or_default();
    assert_eq!(r.code, 0, "{r:?}\nmodel log:\n{}", &log[..log.len().min(4000)]);
    assert!(r.stdout.contains("All done."), "{r:?}");
    assert_eq!(f.tree(), before, "the working tree changed");
    let id = r.stderr.split("wrap session ").nth(1).and_then(|x| x.split(':').next()).unwrap().to_string();
    let diff = f.cairn(&["diff", &id]).ok().stdout;
    let headers: Vec<&str> = diff.lines().filter(|l| l.starts_with("diff --git")).collect();
    assert_eq!(headers, ["diff --git a/NOTES.md b/NOTES.md", "diff --git a/generated.txt b/generated.txt", "diff --git a/src/app.py b/src/app.py"], "{diff}\nmodel log:\n{log}");
    assert!(diff.contains("+    return a + b") && diff.contains("+fixed add") && diff.contains("+gen"), "{diff}");
}

#[test]
fn gemini_cli_under_cairn_wrap_proposes_exactly_its_edits() {
    let root_of = |f: &Fixture, p: &str| f.root.join(p).display().to_string();
    let home = tempfile::tempdir().unwrap();
    let script = |f: &Fixture| {
        json!([
            {"tool": "replace", "input": {"file_path": root_of(f, "src/app.py"), "old_string": "return a - b", "new_string": "return a + b", "instruction": "fix add"}},
            {"tool": "write_file", "input": {"file_path": root_of(f, "NOTES.md"), "content": "fixed add\n"}},
            {"tool": "run_shell_command", "input": {"command": "echo gen > generated.txt", "description": "generate"}},
            {"text": "All done."}
        ])
    };
    let f = Fixture::with_files(&[("src/app.py", "def add(a, b):\n    return a - b\n"), ("old.txt", "old\n")]);
    let model = stub("gemini_stub.py", &script(&f));
    f.home_config(&format!("[wrap]\nhost_ports = [{}]\n", model.port));
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
        .env("GEMINI_API_KEY", "scripted")
        .env("GOOGLE_GEMINI_BASE_URL", format!("http://127.0.0.1:{}", model.port))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_proposal(&f, &before, &out, &model);
    assert!(std::fs::read_to_string(home.path().join(".gemini/settings.json")).unwrap().contains("gemini-api-key"), "the real home is unchanged");
}

/// In Codex's own `workspace-write` sandbox (its bundled bubblewrap, nested in wrap's
/// namespaces), as root too: the agent CLI's sandbox keeps working inside.
#[test]
fn codex_cli_under_cairn_wrap_proposes_exactly_its_edits() {
    let f = project("0");
    let script = json!([
        {"tool": "exec_command", "input": {"cmd": "sed -i 's/return a - b/return a + b/' src/app.py && printf 'fixed add\\n' > NOTES.md && echo gen > generated.txt", "workdir": f.root.display().to_string(), "yield_time_ms": 10000}},
        {"text": "All done."}
    ]);
    let model = stub("responses_stub.py", &script);
    f.home_config(&format!("[wrap]\nhost_ports = [{}]\n", model.port));
    let home = tempfile::tempdir().unwrap();
    let codex_home = home.path().join(".codex");
    std::fs::create_dir_all(&codex_home).unwrap();
    let config = format!(
        "model = \"scripted\"\nmodel_provider = \"stub\"\napproval_policy = \"never\"\nsandbox_mode = \"workspace-write\"\n\n\
         [model_providers.stub]\nname = \"stub\"\nbase_url = \"http://127.0.0.1:{}/v1\"\nwire_api = \"responses\"\nenv_key = \"CODEX_STUB_API_KEY\"\n",
        model.port
    );
    std::fs::write(codex_home.join("config.toml"), config).unwrap();
    let before = f.tree();
    let out = f
        .cmd()
        .current_dir(&f.root)
        .args(["wrap", "--"])
        .arg(agent_bin("codex"))
        .args(["exec", "--skip-git-repo-check", "fix add"])
        .env("HOME", home.path())
        .env("CODEX_STUB_API_KEY", "scripted")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_proposal(&f, &before, &out, &model);
}
