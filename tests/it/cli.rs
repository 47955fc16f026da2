//! SPEC §7 through the real binary: every command, `--json`, unique prefixes, exit codes
//! 0/1/2 and error messages with a hint.

use crate::support::*;

fn project() -> Fixture {
    let f = Fixture::new();
    f.write("src/app.py", "name = 'old'\n");
    f.write("agents/rename.pym", "c = await read_file('src/app.py')\nawait write_file('src/app.py', c.replace('old', 'new'))\nawait submit_result(summary='rename', changed_files=['src/app.py'])\n");
    f
}

#[test]
fn init_queue_run_list_status_diff_accept() {
    let f = project();
    let init = f.cairn(&["init"]).ok();
    assert!(init.stdout.contains("indexed 2 files"), "{}", init.stdout);

    // run: file provider with and without the .pym suffix; prints the id only.
    let run = f.cairn(&["run", "agents/rename"]).ok();
    let id = run.stdout.trim().to_string();
    assert_eq!(id.len(), 6, "{run:?}");
    let queued = f.cairn(&["queue", "agents/rename.pym", "--priority", "low"]).ok().stdout.trim().to_string();
    let spawned = f.cairn(&["spawn", "agents/rename.pym", "--json"]).ok().json();
    assert_eq!(spawned["priority"], "high");
    assert_eq!(spawned["state"], "queued");

    // list-agents: active by default, oldest first; --json is a list of status objects.
    let list = f.cairn(&["list-agents", "--json"]).ok().json();
    let ids: Vec<&str> = list.as_array().unwrap().iter().map(|s| s["id"].as_str().unwrap()).collect();
    assert_eq!(ids, [id.as_str(), queued.as_str(), spawned["id"].as_str().unwrap()]);
    let text = f.cairn(&["list-agents"]).ok().stdout;
    assert!(text.contains(&id) && text.contains("reviewing") && text.contains("rename"), "{text}");

    // status --json has the documented fields.
    let st = f.cairn(&["status", &id, "--json"]).ok().json();
    for key in ["id", "state", "task", "priority", "provider", "created_at", "state_changed_at", "submission", "error", "changes"] {
        assert!(st.get(key).is_some(), "status --json lacks {key}: {st}");
    }
    assert_eq!(st["changes"], serde_json::json!([{"path": "src/app.py", "kind": "modified"}]));
    assert_eq!(st["submission"]["summary"], "rename");
    assert!(st["created_at"].as_str().unwrap().ends_with('Z'));

    // diff and diff --stat, git style.
    let diff = f.cairn(&["diff", &id[..3]]).ok().stdout;
    assert_eq!(diff, "diff --git a/src/app.py b/src/app.py\n--- a/src/app.py\n+++ b/src/app.py\n@@ -1 +1 @@\n-name = 'old'\n+name = 'new'\n");
    let stat = f.cairn(&["diff", &id, "--stat"]).ok().stdout;
    assert!(stat.contains("src/app.py | 2 +-") && stat.contains("1 file changed"), "{stat}");

    // accept by unique prefix.
    let acc = f.cairn(&["accept", &id[..4]]).ok();
    assert!(acc.stdout.contains(&format!("accepted {id}: 1 written")), "{}", acc.stdout);
    assert_eq!(f.read_str("src/app.py").unwrap(), "name = 'new'\n");
    assert_eq!(f.cairn(&["list-agents", "--all", "--json"]).ok().json().as_array().unwrap().len(), 3);
    // The accepted agent's diff is still shown, from the journal.
    assert!(f.cairn(&["diff", &id]).ok().stdout.contains("+name = 'new'"));
    let undone = f.cairn(&["undo", &id]).ok();
    assert!(undone.stdout.contains("undone"), "{undone:?}");
    assert_eq!(f.read_str("src/app.py").unwrap(), "name = 'old'\n");
}

#[test]
fn errors_exit_codes_and_hints() {
    let f = project();
    // Not initialized.
    let r = f.cairn(&["list-agents"]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("not a cairn project") && r.stderr.contains("hint: run `cairn init`"), "{}", r.stderr);
    f.cairn(&["init"]).ok();
    // Unknown id.
    let r = f.cairn(&["status", "zzzzzz"]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("no agent matches id 'zzzzzz'") && r.stderr.contains("hint:"), "{}", r.stderr);
    // Usage errors exit 2.
    assert_eq!(f.cairn(&["frobnicate"]).code, 2);
    assert_eq!(f.cairn(&["queue"]).code, 2);
    let r = f.cairn(&["queue", "x", "--priority", "extreme"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("unknown priority 'extreme'"), "{}", r.stderr);
    let r = f.cairn(&["queue", "x", "--provider", "magic"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("unknown provider 'magic'"));
    // A missing script errors the agent (exit 1) with a clear message.
    let r = f.cairn(&["run", "agents/missing.pym"]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("no script 'agents/missing.pym'"), "{}", r.stderr);
}

#[test]
fn ambiguous_prefix_is_refused() {
    let f = project();
    f.cairn(&["init"]).ok();
    let p = f.project();
    // Queue until two ids share a first character.
    let mut seen: std::collections::HashMap<char, String> = Default::default();
    let (a, b) = loop {
        let id = f.cairn(&["queue", "--provider", "inline", "x = 1"]).ok().stdout.trim().to_string();
        let c = id.chars().next().unwrap();
        if let Some(other) = seen.insert(c, id.clone()) {
            break (other, id);
        }
    };
    let r = f.cairn(&["status", &a[..1]]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("ambiguous") && r.stderr.contains(&a) && r.stderr.contains(&b), "{}", r.stderr);
    assert_eq!(p.bin().unwrap().resolve(&a).unwrap(), a);
}

#[test]
fn check_prints_file_line_col_diagnostics() {
    let f = project();
    f.write("bad.pym", "import socket\nx = 1\nundefined_call(x)\nbreakpoint()\n");
    let r = f.cairn(&["check", f.root.join("bad.pym").to_str().unwrap()]);
    assert_eq!(r.code, 1);
    let file = f.root.join("bad.pym").display().to_string();
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(
        lines,
        [
            format!("{file}:1:8: import of 'socket' is not allowed: the sandbox has no module 'socket' (it has {})", cairn::sandbox::policy::ALLOWED_IMPORTS.join(", ")),
            format!("{file}:3:1: call to unknown function 'undefined_call'"),
            format!("{file}:4:1: call to forbidden builtin 'breakpoint'"),
        ]
    );
    let ok = f.cairn(&["check", f.root.join("agents/rename.pym").to_str().unwrap(), "--json"]).ok().json();
    assert_eq!(ok["ok"], true);
    let syntax = {
        f.write("syn.pym", "def f(:\n");
        f.cairn(&["check", f.root.join("syn.pym").to_str().unwrap()])
    };
    assert_eq!(syntax.code, 1);
    assert!(syntax.stdout.contains("syn.pym:1:7: syntax error"), "{}", syntax.stdout);
}

#[test]
fn failed_check_errors_the_agent_before_it_runs() {
    let f = project();
    f.cairn(&["init"]).ok();
    f.write("agents/bad.pym", "import subprocess\nwrite_file('x.txt', 'never')\n");
    let r = f.cairn(&["run", "agents/bad.pym"]);
    assert_eq!(r.code, 1);
    let id = r.stdout.trim();
    let st = f.cairn(&["status", id, "--json"]).json();
    assert_eq!(st["error_kind"], "check");
    assert_eq!(st["changes"], serde_json::json!([]));
    let check: serde_json::Value = serde_json::from_slice(&f.read(&format!(".grail/agents/{id}/check.json")).unwrap()).unwrap();
    assert_eq!(check["ok"], false);
    assert_eq!(check["diagnostics"][0]["line"], 1);
}

#[test]
fn preview_needs_a_terminal_copies_nothing_and_gc_runs() {
    let f = project();
    f.cairn(&["init"]).ok();
    let id = f.cairn(&["run", "agents/rename.pym"]).ok().stdout.trim().to_string();
    // The session runs an editor: without a terminal (or --tmux) a clear refusal.
    let r = f.cairn(&["preview", &id]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("terminal"), "{}", r.stderr);
    assert!(!f.home.join("workspaces").join(&id).exists(), "nothing is copied");
    assert!(std::fs::read_to_string(f.home.join(format!("previews/{id}.diff"))).unwrap().contains("+name = 'new'"));
    let r = f.cairn(&["preview", &id, "--tmux"]);
    if std::env::var_os("TMUX").is_none() {
        assert_eq!(r.code, 1, "not being inside tmux is a run-time failure (exit 1), not a usage error");
        assert!(r.stderr.contains("not inside tmux"), "{}", r.stderr);
    }
    assert!(f.cairn(&["gc"]).ok().stdout.contains("removed 0 agents"));
}

#[test]
fn nvim_host_exits_cleanly_on_closed_channel_and_on_sigterm() {
    use std::io::Read;
    use std::process::Stdio;
    let f = project();
    f.cairn(&["init"]).ok();
    for how in ["close", "sigterm"] {
        let mut child = f.cmd().arg("nvim").stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
        let mut stdout = child.stdout.take().unwrap();
        // The host is up once it sends its first request (the initial ghost state).
        let (tx, rx) = std::sync::mpsc::channel();
        let reader = std::thread::spawn(move || {
            let mut all = Vec::new();
            let mut buf = [0u8; 4096];
            loop {
                match stdout.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        all.extend_from_slice(&buf[..n]);
                        let _ = tx.send(());
                    }
                }
            }
            all
        });
        rx.recv_timeout(std::time::Duration::from_secs(10)).expect("the host never spoke");
        match how {
            "close" => drop(child.stdin.take()),
            _ => {
                let _ = std::process::Command::new("kill").arg("-TERM").arg(child.id().to_string()).status();
            }
        }
        let t = std::time::Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            assert!(t.elapsed() < std::time::Duration::from_secs(10), "host still running 10 s after {how}");
            std::thread::sleep(std::time::Duration::from_millis(10));
        };
        assert!(status.success(), "{how}: {status}");
        // Everything on stdout is msgpack-RPC: requests [0, id, method, args] or notifications.
        let bytes = reader.join().unwrap();
        let mut cursor = std::io::Cursor::new(&bytes[..]);
        let mut messages = 0;
        while (cursor.position() as usize) < bytes.len() {
            let v = rmpv::decode::read_value(&mut cursor).unwrap_or_else(|e| panic!("{how}: not msgpack on stdout: {e}"));
            let kind = v.as_array().and_then(|a| a.first()).and_then(|k| k.as_u64());
            assert!(matches!(kind, Some(0) | Some(2)), "{how}: not an RPC message: {v}");
            messages += 1;
        }
        assert!(messages >= 1);
    }
}
