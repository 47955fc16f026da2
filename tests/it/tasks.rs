//! Tasks (`cairn task`): the deps gate, checks run in the agent's workspace (never the working
//! tree), the checks gate on close and on accept (`--force` recorded), accept closing the task,
//! manual checks, provenance.

use crate::support::*;
use serde_json::Value;

fn task_json(f: &Fixture, args: &[&str]) -> Value {
    let mut all = vec!["task"];
    all.extend_from_slice(args);
    all.push("--json");
    f.cairn(&all).ok().json()
}

fn link(f: &Fixture, task: &str, agent: &str) {
    cairn::tasks::link_agent(&f.project(), "agent:test", task, agent).unwrap();
}

#[test]
fn deps_gate_refuses_to_start_a_task_with_open_deps() {
    let f = Fixture::new();
    f.init();
    let a = task_json(&f, &["create", "schema migration"])["id"].as_str().unwrap().to_string();
    let b = task_json(&f, &["create", "use the new schema", "--dep", &a]);
    let b = b["id"].as_str().unwrap().to_string();
    assert_eq!(task_json(&f, &["show", &b])["ready"], false);
    let r = f.cairn(&["task", "transition", &b, "in_progress"]);
    assert_ne!(r.code, 0);
    assert!(r.stderr.contains("deps not closed") && r.stderr.contains(&a), "{r:?}");
    // Unknown deps are refused at create: no dangling graph.
    let r = f.cairn(&["task", "create", "orphan", "--dep", "tzzzzzz"]);
    assert_ne!(r.code, 0);
    assert!(r.stderr.contains("deps must exist"), "{r:?}");
    f.cairn(&["task", "transition", &a, "done"]).ok();
    assert_eq!(task_json(&f, &["show", &b])["ready"], true);
    f.cairn(&["task", "transition", &b, "in_progress"]).ok();
    let list = task_json(&f, &["list", "--ready", "true"]);
    assert_eq!(list["tasks"].as_array().unwrap().len(), 2);
    let shown = task_json(&f, &["show", &b]);
    let did: Vec<&str> = shown["provenance"].as_array().unwrap().iter().map(|p| p["did"].as_str().unwrap()).collect();
    assert_eq!(did, ["created", "backlog -> in_progress"]);
}

#[test]
fn checks_run_in_the_workspace_and_gate_accept_and_close() {
    let f = Fixture::with_files(&[("src/app.py", "x = 1\n")]);
    f.init();
    let t = task_json(&f, &["create", "add marker", "--check", "marker exists=test -f marker.txt", "--check", "app untouched=grep -q 'x = 1' src/app.py"]);
    let id = t["id"].as_str().unwrap().to_string();
    // No proposal yet: the checks run on the project as it is, where there is no marker.
    let r = f.cairn(&["task", "transition", &id, "done"]);
    assert_ne!(r.code, 0);
    assert!(r.stderr.contains("checks not passing: marker exists (fail)"), "{r:?}");
    let s = f.run_ok("write_file('marker.txt', 'here\\n')\n");
    link(&f, &id, &s.id);
    // The checks run where the proposal is: marker.txt exists only in the agent's workspace.
    assert!(!f.root.join("marker.txt").exists());
    let r = f.cairn(&["task", "check", &id]);
    assert_eq!(r.code, 0, "{r:?}");
    let shown = task_json(&f, &["show", &id]);
    let results: Vec<&str> = shown["checks"].as_array().unwrap().iter().map(|c| c["result"].as_str().unwrap()).collect();
    assert_eq!(results, ["pass", "pass"]);
    let log = shown["checks"][0]["log"].as_str().unwrap();
    assert!(log.starts_with(".grail/runs/") && f.root.join(log).exists(), "{log}");
    // Accept lands the change and closes the task.
    f.cairn(&["accept", &s.id]).ok();
    assert!(f.root.join("marker.txt").exists());
    let shown = task_json(&f, &["show", &id]);
    assert_eq!(shown["status"], "done");
    let whos: Vec<&str> = shown["provenance"].as_array().unwrap().iter().map(|p| p["who"].as_str().unwrap()).collect();
    assert!(whos.contains(&"agent:test") && whos.iter().any(|w| w.starts_with("human")), "{whos:?}");
}

#[test]
fn a_failing_check_blocks_accept_unless_forced_and_recorded() {
    let f = Fixture::new();
    f.init();
    let t = task_json(&f, &["create", "needs tests", "--check", "tests pass=exit 3"]);
    let id = t["id"].as_str().unwrap().to_string();
    let s = f.run_ok("write_file('a.txt', 'a\\n')\n");
    link(&f, &id, &s.id);
    let r = f.cairn(&["task", "check", &id]);
    assert_eq!(r.code, 1, "a failing check exits 1: {r:?}");
    let r = f.cairn(&["accept", &s.id]);
    assert_ne!(r.code, 0);
    assert!(r.stderr.contains("tests pass (fail)"), "{r:?}");
    assert!(!f.root.join("a.txt").exists(), "nothing landed");
    let r = f.cairn(&["task", "transition", &id, "done"]);
    assert!(r.stderr.contains("checks not passing: tests pass (fail)"), "{r:?}");
    f.cairn(&["accept", &s.id, "--force"]).ok();
    assert!(f.root.join("a.txt").exists());
    let shown = task_json(&f, &["show", &id]);
    assert_ne!(shown["status"], "done", "a forced accept does not close a task with failing checks");
    let forced = shown["provenance"].as_array().unwrap().iter().any(|p| p["did"].as_str().unwrap().contains("--force"));
    assert!(forced, "{shown}");
}

#[test]
fn manual_checks_are_attested() {
    let f = Fixture::new();
    f.init();
    let t = task_json(&f, &["create", "docs", "--manual", "reviewed by a human"]);
    let id = t["id"].as_str().unwrap().to_string();
    let r = f.cairn(&["task", "transition", &id, "done"]);
    assert!(r.stderr.contains("reviewed by a human (pending)"), "{r:?}");
    f.cairn(&["task", "attest", &id, "0"]).ok();
    f.cairn(&["task", "note", &id, "looked fine"]).ok();
    f.cairn(&["task", "transition", &id, "done"]).ok();
    let shown = task_json(&f, &["show", &id]);
    assert_eq!(shown["status"], "done");
    assert!(shown["provenance"].as_array().unwrap().iter().any(|p| p["did"] == "note: looked fine"));
}

#[test]
fn agent_written_checks_report_but_count_only_once_a_human_approves() {
    let f = Fixture::with_files(&[("a.txt", "a\n")]);
    let p = f.project();
    let check = |desc: &str, cmd: &str| cairn::tasks::Check { desc: desc.into(), cmd: Some(cmd.into()), kind: None, cwd: None, timeout: None, result: Default::default(), log: None, author: Some("human:forged".into()), approved_by: Some("human:forged".into()) };
    // An agent's task, with a check that fails: the author is the creator, whatever it sent.
    let t = cairn::tasks::create(&p, "agent:bot", "agent task", "", &[], vec![check("agent's own", "exit 1")]).unwrap();
    let id = t.row.id.clone();
    assert_eq!(t.row.checks[0].author.as_deref(), Some("agent:bot"));
    assert_eq!(t.row.checks[0].approved_by, None, "approval cannot come with the input");
    let s = f.run_ok("write_file('b.txt', 'b\\n')\n");
    link(&f, &id, &s.id);
    f.cairn(&["task", "check", &id]);
    let shown = f.cairn(&["task", "show", &id]).ok().stdout;
    assert!(shown.contains("[agent:bot, not approved: does not count]"), "{shown}");
    // The agent cannot close it, nor approve its own check.
    let e = cairn::tasks::transition(&p, "agent:bot", &id, "done").unwrap_err().to_string();
    assert!(e.contains("an agent does not close tasks"), "{e}");
    assert!(cairn::tasks::approve_check(&p, "agent:bot", &id, 0).unwrap_err().to_string().contains("only a human"));
    // Not counted: the failing agent check does not block accept...
    f.cairn(&["accept", &s.id]).ok();
    assert_eq!(task_json(&f, &["show", &id])["status"], "done", "a human's accept closes it");
    // ...but once approved, it does, and a forced accept is recorded.
    let t = cairn::tasks::create(&p, "agent:bot", "second", "", &[], vec![check("agent's own", "exit 1")]).unwrap();
    let id = t.row.id.clone();
    f.cairn(&["task", "approve-check", &id, "0"]).ok();
    let s = f.run_ok("write_file('c.txt', 'c\\n')\n");
    link(&f, &id, &s.id);
    f.cairn(&["task", "check", &id]);
    let j = task_json(&f, &["show", &id]);
    assert!(j["checks"][0]["approved_by"].as_str().unwrap().starts_with("human"), "{j}");
    let r = f.cairn(&["accept", &s.id]);
    assert!(r.code != 0 && r.stderr.contains("agent's own (fail)"), "{r:?}");
    f.cairn(&["accept", &s.id, "--force"]).ok();
    let j = task_json(&f, &["show", &id]);
    assert!(j["provenance"].as_array().unwrap().iter().any(|p| p["did"].as_str().unwrap().contains("--force")), "{j}");
}
