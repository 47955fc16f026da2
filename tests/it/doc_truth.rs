//! The docs tell the truth (issue 36): the pre-flight check catches the calls to externals
//! it says it catches, and each claim below, once false, holds as `doc/cairn.txt` and the
//! README now state it: `Input(name, default=...)`, protected paths read as PermissionError,
//! `list-agents --json` with `changes`, MCP's wrong-shape arguments as `isError` results, a
//! task's checks without a proposal, `list_dir`'s sizes, `cairn wrap`'s private `/var/tmp`,
//! the README's signal-file snippet on a fresh `CAIRN_HOME`.

use crate::support::*;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;

#[test]
fn preflight_catches_wrong_calls_to_externals_with_file_line_col() {
    let f = Fixture::with_files(&[("a.txt", "a\n")]);
    f.write(
        "agents/bad.pym",
        "content = read_file(1)\nwrite_file(\"a\")\nread_file()\nsubmit_result(\"s\", \"not a list\")\nread_file(\"a\", encoding=\"utf-8\")\n",
    );
    let bad = f.root.join("agents/bad.pym");
    let r = f.cairn(&["check", bad.to_str().unwrap()]);
    assert_eq!(r.code, 1, "{r:?}");
    let want = [
        "bad.pym:1:21: read_file(): argument 'path' must be str, not int",
        "bad.pym:2:1: write_file() missing required argument 'content'",
        "bad.pym:3:1: read_file() missing required argument 'path'",
        "bad.pym:4:20: submit_result(): argument 'changed_files' must be list[str], not str",
        "bad.pym:5:16: read_file() got an unexpected keyword argument 'encoding'",
    ];
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(lines.len(), want.len(), "{}", r.stdout);
    for (line, w) in lines.iter().zip(want) {
        assert!(line.contains(w), "got {line:?}, want {w:?}");
    }
    // The check before every run: the agent errors with kind `check`, nothing written.
    let run = f.cairn(&["run", "agents/bad.pym"]);
    assert_eq!(run.code, 1, "{run:?}");
    let st = f.cairn(&["status", run.stdout.trim(), "--json"]).json();
    assert_eq!(st["error_kind"], "check", "{st}");
    assert_eq!(st["changes"], json!([]));
    // Variables, defaults, keywords and a tuple for a list pass.
    f.write("agents/good.pym", "p = 'a.txt'\ntext = read_file(p, tagged=False)\nlist_dir(depth=2)\nsubmit_result('s', (p,))\n");
    let good = f.cairn(&["check", f.root.join("agents/good.pym").to_str().unwrap(), "--json"]).ok().json();
    assert_eq!(good["ok"], true, "{good}");
}

#[test]
fn input_takes_its_default_by_keyword_as_documented() {
    let f = Fixture::with_files(&[("a.txt", "a\n")]);
    let s = f.run_ok("from grail import Input\nd = Input('no_such_input', default='dflt')\nn = Input(name='agent_id')\nz = Input('no_such_input')\n[d, n, z]");
    assert_eq!(s.result, Some(json!(["dflt", s.id, null])));
}

#[test]
fn scripts_reading_protected_paths_get_permission_errors() {
    let f = Fixture::new();
    for (p, c) in [(".cairn.toml", "[gc]\n# needle\n"), ("sub/.cairn.toml", "# needle\n"), (".git/config", "[core]\n# needle\n"), ("notes.txt", "needle\n")] {
        f.write(p, c);
    }
    f.init();
    let s = f.run_ok(
        "import os\nfrom pathlib import Path\n\
         def err(fn, *a):\n    try:\n        fn(*a)\n        return 'read'\n    except Exception as e:\n        return type(e).__name__\n\
         out = {}\n\
         for p in ['.git/config', '.cairn.toml', 'sub/.cairn.toml']:\n\
         \x20   out[p] = [err(read_file, p), err(lambda q: open(q).read(), p), err(lambda q: Path(q).read_text(), p)]\n\
         out['dirs'] = [err(os.listdir, '.git'), err(list_dir, '.git'), err(list_dir, '.grail')]\n\
         out['hits'] = sorted({h['file'] for h in search_content('needle')})\n\
         out['exists'] = os.path.isfile('.cairn.toml')\n\
         out",
    );
    let denied = json!(["PermissionError", "PermissionError", "PermissionError"]);
    let want = json!({ ".git/config": denied, ".cairn.toml": denied, "sub/.cairn.toml": denied, "dirs": denied, "hits": ["notes.txt"], "exists": true });
    assert_eq!(s.result, Some(want));
}

#[test]
fn list_agents_json_carries_each_agents_changes() {
    let f = Fixture::with_files(&[("a.txt", "a\n")]);
    let s = f.run_ok("write_file('a.txt', 'b\\n')\nwrite_file('new.txt', 'n\\n')\n");
    let listed = f.cairn(&["list-agents", "--json"]).ok().json();
    let me = listed.as_array().unwrap().iter().find(|a| a["id"] == s.id.as_str()).cloned().expect("listed");
    let want = json!([{ "path": "a.txt", "kind": "modified" }, { "path": "new.txt", "kind": "added" }]);
    assert_eq!(me["changes"], want, "{me}");
    assert_eq!(f.cairn(&["status", &s.id, "--json"]).ok().json()["changes"], want);
}

/// One request to `cairn mcp` and its answer (notifications in between are skipped).
fn rpc(stdin: &mut impl Write, stdout: &mut impl BufRead, id: u64, method: &str, params: Value) -> Value {
    writeln!(stdin, "{}", json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })).unwrap();
    stdin.flush().unwrap();
    loop {
        let mut line = String::new();
        assert!(stdout.read_line(&mut line).unwrap() > 0, "cairn mcp ended before answering {method}");
        if let Ok(v) = serde_json::from_str::<Value>(&line) {
            if v["id"] == id {
                return v;
            }
        }
    }
}

#[test]
fn mcp_wrong_shape_arguments_are_tool_results_with_is_error() {
    let f = Fixture::with_files(&[("a.txt", "a\n")]);
    let mut child = f.cmd().arg("mcp").stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    // An older protocol version than the one that made this the rule: the answer is the same.
    let init = rpc(&mut stdin, &mut stdout, 1, "initialize", json!({ "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": { "name": "doc", "version": "1" } }));
    assert_eq!(init["result"]["serverInfo"]["name"], "cairn", "{init}");
    writeln!(stdin, "{}", json!({ "jsonrpc": "2.0", "method": "notifications/initialized" })).unwrap();
    let wrong = rpc(&mut stdin, &mut stdout, 2, "tools/call", json!({ "name": "write_file", "arguments": { "path": 7, "content": "x" } }));
    assert!(wrong.get("error").is_none(), "a JSON-RPC error, not a tool result: {wrong}");
    assert_eq!(wrong["result"]["isError"], true, "{wrong}");
    assert!(wrong["result"]["content"][0]["text"].as_str().unwrap_or("").contains("`path` must be a string"), "{wrong}");
    // A protocol fault stays a JSON-RPC error.
    let unknown = rpc(&mut stdin, &mut stdout, 3, "tools/call", json!({ "name": "no_such_tool", "arguments": {} }));
    assert!(unknown["error"]["code"].is_i64() && unknown.get("result").is_none(), "{unknown}");
    drop(stdin);
    child.wait().unwrap();
    assert!(!f.root.join("x").exists() && f.cairn(&["list-agents", "--json"]).ok().json() == json!([]), "a refused call left state behind");
}

#[test]
fn a_task_with_a_command_check_closes_without_a_proposal_on_the_project_as_it_is() {
    let f = Fixture::with_files(&[("a.txt", "a\n")]);
    let create = |title: &str, check: &str| f.cairn(&["task", "create", title, "--check", check, "--json"]).ok().json()["id"].as_str().unwrap().to_string();
    // Work done by hand: the check passes on the project, so the task closes.
    let done = create("by hand", "a exists=test -f a.txt");
    f.cairn(&["task", "transition", &done, "done"]).ok();
    assert_eq!(f.cairn(&["task", "show", &done, "--json"]).ok().json()["status"], "done");
    // The gate still holds: a check failing on the project keeps the task open.
    let open = create("not yet", "b exists=test -f b.txt");
    let r = f.cairn(&["task", "transition", &open, "done"]);
    assert_ne!(r.code, 0);
    assert!(r.stderr.contains("checks not passing: b exists (fail)"), "{r:?}");
    assert_ne!(f.cairn(&["task", "show", &open, "--json"]).ok().json()["status"], "done");
}

#[test]
fn list_dir_down_the_tree_has_sizes_with_sizes_true() {
    let f = Fixture::with_files(&[("d/b.txt", "hello"), ("d/e/c.txt", "hi\n")]);
    let s = f.run_ok("[list_dir('d', depth=2), list_dir('d', depth=2, sizes=True), list_dir('d', sizes=True)]");
    let r = s.result.unwrap();
    assert_eq!(r[0], json!([{ "path": "b.txt", "type": "file" }, { "path": "e", "type": "dir" }, { "path": "e/c.txt", "type": "file" }]));
    assert_eq!(r[1], json!([{ "path": "b.txt", "type": "file", "size": 5 }, { "path": "e", "type": "dir" }, { "path": "e/c.txt", "type": "file", "size": 3 }]));
    assert_eq!(r[2], json!([{ "path": "b.txt", "type": "file", "size": 5 }, { "path": "e", "type": "dir" }]));
}

#[test]
fn wrap_hides_the_hosts_var_tmp_and_its_help_says_so() {
    let help = wrap_help();
    assert!(help.contains("/var/tmp") && help.contains("hidden"), "{help}");
    let f = Fixture::with_files(&[("a.txt", "a\n")]);
    let planted = std::path::PathBuf::from(format!("/var/tmp/cairn-doc-truth-{}", std::process::id()));
    std::fs::write(&planted, "host\n").unwrap();
    let inside = format!("/var/tmp/cairn-doc-truth-inside-{}", std::process::id());
    let home = tempfile::tempdir().unwrap();
    let script = format!("ls -A /var/tmp; echo written > {inside}; echo end");
    let out = f.cmd().args(["wrap", "--", "sh", "-c", &script]).env("HOME", home.path()).stdin(Stdio::null()).output().unwrap();
    let _ = std::fs::remove_file(&planted);
    let r = Run::from(out);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains("end") && !r.stdout.contains("cairn-doc-truth"), "the host's /var/tmp showed: {r:?}");
    assert!(!std::path::Path::new(&inside).exists(), "a write to /var/tmp reached the host's");
}

fn wrap_help() -> String {
    let out = std::process::Command::new(exe()).args(["wrap", "--help"]).output().unwrap();
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn the_readme_signal_snippet_works_on_a_fresh_cairn_home() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let after = readme.split("drop a signal file").nth(1).expect("the README's signal section");
    let snippet = after.split("```sh\n").nth(1).and_then(|s| s.split("```").next()).expect("its sh block");
    let f = Fixture::new();
    f.write("agents/fix.pym", "write_file('fixed.txt', 'x\\n')\n");
    f.cairn(&["init"]).ok();
    let sh = std::process::Command::new("sh").arg("-c").arg(snippet).current_dir(&f.root).env("CAIRN_HOME", &f.home).output().unwrap();
    assert!(sh.status.success(), "the README's snippet failed: {}", String::from_utf8_lossy(&sh.stderr));
    let taken = f.cairn(&["signals", "--once"]).ok().stdout;
    assert!(taken.contains("q1.json: done"), "{taken}");
    assert_eq!(f.cairn(&["list-agents", "--json"]).ok().json().as_array().unwrap().len(), 1);
}
