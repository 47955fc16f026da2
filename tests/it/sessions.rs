//! Agent sessions (the core of `cairn mcp`): begin claims and starts the task, tools edit the
//! session's own overlay through the externals, finish submits for review; retries with the
//! same key return the same session; concurrent sessions stay isolated; gates and closed
//! sessions refuse.

use crate::support::*;
use cairn::tasks::{self, sessions};
use serde_json::{json, Map, Value};

fn call(f: &Fixture, actor: &str, session: &str, name: &str, args: Value) -> Result<Value, (String, String)> {
    let args = args.as_array().cloned().unwrap_or_default();
    sessions::tool(&f.project(), actor, session, name, &args, &Map::new()).unwrap()
}

#[test]
fn a_session_edits_its_overlay_and_finishes_for_review() {
    let f = Fixture::with_files(&[("src/lib.py", "def a():\n    return 1\n")]);
    f.init();
    let p = f.project();
    let t = tasks::create(&p, "human:alice", "bump a", "", &[], vec![]).unwrap();
    let s = sessions::begin(&p, "agent:claude", &t.row.id, "key-1").unwrap();
    assert_eq!(sessions::begin(&p, "agent:claude", &t.row.id, "key-1").unwrap().row.id, s.row.id, "same key, same session");
    let task = tasks::get(&p, &t.row.id).unwrap();
    assert_eq!((task.row.status.as_str(), task.row.assignee.as_deref(), task.row.agent.as_deref()), ("in_progress", Some("agent:claude"), Some(s.row.agent.as_str())));

    let tagged = call(&f, "agent:claude", &s.row.id, "read_file", json!(["src/lib.py", true])).unwrap();
    let tag = tagged.as_str().unwrap().lines().nth(1).unwrap().split('|').next().unwrap().to_string();
    call(&f, "agent:claude", &s.row.id, "edit_lines", json!(["src/lib.py", [{"op": "replace", "tag": tag, "lines": ["    return 2"]}]])).unwrap();
    call(&f, "agent:claude", &s.row.id, "write_file", json!(["NOTES.md", "bumped\n"])).unwrap();
    let (exc, msg) = call(&f, "agent:claude", &s.row.id, "edit_lines", json!(["src/lib.py", [{"op": "delete", "tag": tag}]])).unwrap_err();
    assert_eq!(exc, "ValueError");
    assert!(msg.starts_with("stale tag 2:"), "{msg}");
    assert_eq!(f.read_str("src/lib.py").unwrap(), "def a():\n    return 1\n", "nothing reaches the project");

    sessions::finish(&p, "agent:claude", &s.row.id, "return 2 from a()").unwrap();
    let st = f.status(&s.row.agent);
    assert_eq!(st.state.as_str(), "reviewing");
    assert_eq!(st.submission.as_ref().unwrap()["summary"], "return 2 from a()");
    let diff = f.cairn(&["diff", &s.row.agent]).ok().stdout;
    assert!(diff.contains("-    return 1\n+    return 2") && diff.contains("+bumped"), "{diff}");
    assert_eq!(tasks::get(&p, &t.row.id).unwrap().row.status, "review");
    // The session is over: its tools refuse, clearly.
    let err = sessions::tool(&p, "agent:claude", &s.row.id, "write_file", &[json!("x"), json!("y")], &Map::new()).unwrap_err();
    assert!(err.to_string().contains("is finished"), "{err}");
    // Accept lands it and closes the task (no checks), with provenance from both actors.
    f.cairn(&["accept", &s.row.agent]).ok();
    let task = tasks::get(&p, &t.row.id).unwrap();
    assert_eq!(task.row.status, "done");
    let whos: Vec<&str> = task.row.provenance.iter().map(|p| p.who.as_str()).collect();
    assert!(whos.contains(&"agent:claude") && whos.iter().any(|w| w.starts_with("human")), "{whos:?}");
}

#[test]
fn sessions_are_isolated_and_gated() {
    let f = Fixture::with_files(&[("shared.txt", "one\ntwo\n")]);
    f.init();
    let p = f.project();
    let dep = tasks::create(&p, "human", "first", "", &[], vec![]).unwrap();
    let blocked = tasks::create(&p, "human", "second", "", &[dep.row.id.clone()], vec![]).unwrap();
    let err = sessions::begin(&p, "agent:a", &blocked.row.id, "k0").unwrap_err();
    assert!(err.to_string().contains("deps not closed"), "{err}");
    assert_eq!(tasks::get(&p, &blocked.row.id).unwrap().row.assignee, None, "a refused start gives the claim back");

    let ta = tasks::create(&p, "human", "a", "", &[], vec![]).unwrap();
    let tb = tasks::create(&p, "human", "b", "", &[], vec![]).unwrap();
    let sa = sessions::begin(&p, "agent:a", &ta.row.id, "ka").unwrap();
    let sb = sessions::begin(&p, "agent:b", &tb.row.id, "kb").unwrap();
    std::thread::scope(|scope| {
        scope.spawn(|| call(&f, "agent:a", &sa.row.id, "write_file", json!(["shared.txt", "one\ntwo\nfrom a\n"])).unwrap());
        scope.spawn(|| call(&f, "agent:b", &sb.row.id, "write_file", json!(["shared.txt", "from b\none\ntwo\n"])).unwrap());
    });
    sessions::finish(&p, "agent:a", &sa.row.id, "a").unwrap();
    sessions::finish(&p, "agent:b", &sb.row.id, "b").unwrap();
    let da = f.cairn(&["diff", &sa.row.agent]).ok().stdout;
    let db = f.cairn(&["diff", &sb.row.agent]).ok().stdout;
    assert!(da.contains("+from a") && !da.contains("from b"), "{da}");
    assert!(db.contains("+from b") && !db.contains("from a"), "{db}");
    // Another actor cannot use a session; protected paths hold as for scripts.
    let sc = sessions::begin(&p, "agent:c", &tasks::create(&p, "human", "c", "", &[], vec![]).unwrap().row.id, "kc").unwrap();
    assert!(sessions::tool(&p, "agent:x", &sc.row.id, "read_file", &[json!("shared.txt")], &Map::new()).is_err());
    let (exc, _) = call(&f, "agent:c", &sc.row.id, "write_file", json!([".git/hooks/pre-commit", "x"])).unwrap_err();
    assert_eq!(exc, "PermissionError");
    sessions::cancel(&p, "agent:c", &sc.row.id, "changed my mind").unwrap();
    assert_eq!(f.status(&sc.row.agent).state.as_str(), "rejected");
}

/// The protected paths and budgets of `.pym` runs hold for session tools (the other entry
/// point of the same externals): every spelling refused, budgets spanning the session's calls.
#[test]
fn protected_paths_and_budgets_hold_for_session_tools() {
    let f = Fixture::with_files(&[("src/a.py", "x = 1\n"), (".cairn.toml", "[llm]\n")]);
    f.init();
    f.home_config("[sandbox]\nmax_write_bytes = 1000\nmax_files_written = 3\n");
    let p = f.project();
    let t = tasks::create(&p, "human", "t", "", &[], vec![]).unwrap();
    let s = sessions::begin(&p, "agent:m", &t.row.id, "k").unwrap();
    for path in [".cairn.toml", "sub/.cairn.toml", ".git/hooks/pre-commit", ".GIT/x", ".git./x", "\u{ff0e}git/x", "a/.git/x", ".jj/x", ".agentfs/x", ".grail/x", "a\nb", "a\u{1b}[31mb"] {
        for (tool, args) in [("write_file", json!([path, "x"])), ("delete_file", json!([path])), ("edit_lines", json!([path, [{"op": "insert_after", "tag": "0:", "lines": ["x"]}]]))] {
            let (exc, msg) = call(&f, "agent:m", &s.row.id, tool, args).unwrap_err();
            assert_eq!(exc, "PermissionError", "{tool} {path:?}: {msg}");
            assert!(msg.contains("is protected: ") && !msg.contains('\n') && !msg.contains('\u{1b}'), "{tool} {path:?}: {msg:?}");
        }
    }
    // max_write_bytes counts across the session's calls, as across a run's.
    call(&f, "agent:m", &s.row.id, "write_file", json!(["one.txt", "a".repeat(600)])).unwrap();
    let (kind, msg) = call(&f, "agent:m", &s.row.id, "write_file", json!(["two.txt", "b".repeat(600)])).unwrap_err();
    assert_eq!(kind, "limit", "{msg}");
    assert!(msg.contains("max_write_bytes = 1000"), "{msg}");
    sessions::finish(&p, "agent:m", &s.row.id, "one file").unwrap();
    let st = f.status(&s.row.agent);
    assert_eq!(st.changes.iter().map(|c| c.path.as_str()).collect::<Vec<_>>(), ["one.txt"]);
}
