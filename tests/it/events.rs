//! The typed event stream (`cairn events`): a full run's events in order, each with a `type`;
//! `--follow` prints new ones as they happen; after a kill the sequence has no gaps or
//! duplicates.

use crate::support::*;
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::{Duration, Instant};

fn events(f: &Fixture, args: &[&str]) -> Vec<Value> {
    let mut all = vec!["events", "--json"];
    all.extend_from_slice(args);
    let r = f.cairn(&all).ok();
    r.stdout.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}"))).collect()
}

/// Without `--json`, one event is one line, whatever the agent put in it (a newline, an
/// escape sequence).
#[test]
fn each_event_is_one_line_of_text() {
    let f = Fixture::with_files(&[("a.txt", "one\n")]);
    f.init();
    let s = f.run_ok("log('first line\\nforged  999 line\\x1b[2K')\nwrite_file('a.txt', 'two\\n')\n");
    let json = events(&f, &["--agent", &s.id]);
    let text = f.cairn(&["events", "--agent", &s.id]).ok().stdout;
    assert_eq!(text.lines().count(), json.len(), "{text}");
    let logged = text.lines().find(|l| l.contains("first line")).expect("the log event");
    assert!(logged.contains("first line\\nforged  999 line\\x1b[2K"), "{logged}");
    assert!(!text.contains('\u{1b}'), "{text:?}");
}

#[test]
fn a_full_run_is_a_typed_ordered_stream() {
    let f = Fixture::with_files(&[("a.txt", "one\n")]);
    f.init();
    let s = f.run_ok("log('hello')\nwrite_file('a.txt', read_file('a.txt') + 'two\\n')\ntry:\n    read_file('missing.txt')\nexcept FileNotFoundError:\n    pass\n");
    let evs = events(&f, &["--agent", &s.id]);
    let types: Vec<&str> = evs.iter().map(|e| e["type"].as_str().unwrap()).collect();
    let states: Vec<&str> = evs.iter().filter(|e| e["type"] == "state_changed").map(|e| e["state"].as_str().unwrap()).collect();
    assert_eq!(states, ["queued", "generating", "executing", "submitting", "reviewing"], "{types:?}");
    let tools: Vec<(&str, &str)> = evs.iter().filter(|e| e["type"].as_str().unwrap().starts_with("tool_")).map(|e| (e["type"].as_str().unwrap(), e["tool"].as_str().unwrap())).collect();
    assert_eq!(
        tools,
        [
            ("tool_requested", "log"),
            ("tool_completed", "log"),
            ("tool_requested", "read_file"),
            ("tool_completed", "read_file"),
            ("tool_requested", "write_file"),
            ("tool_completed", "write_file"),
            ("tool_requested", "read_file"),
            ("tool_failed", "read_file")
        ]
    );
    assert!(evs.iter().any(|e| e["type"] == "log" && e["message"] == "hello"));
    let failed = evs.iter().find(|e| e["type"] == "tool_failed").unwrap();
    assert!(failed["error"].as_str().unwrap().starts_with("FileNotFoundError"), "{failed}");
    let seqs: Vec<i64> = evs.iter().map(|e| e["seq"].as_i64().unwrap()).collect();
    assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "{seqs:?}");
    // Decisions are events too.
    f.cairn(&["accept", &s.id]).ok();
    f.cairn(&["undo", &s.id]).ok();
    let after = events(&f, &["--since", &seqs.last().unwrap().to_string()]);
    let types: Vec<&str> = after.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["state_changed", "undone"], "{after:?}");
    assert_eq!(after[0]["state"], "accepted");
}

#[test]
fn follow_prints_new_events_as_they_happen() {
    let f = Fixture::new();
    f.init();
    let mut child = f.cmd().args(["events", "--follow", "--json"]).stdout(Stdio::piped()).spawn().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let s = f.run_ok("log('followed')\n");
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut seen = Vec::new();
    while Instant::now() < deadline {
        let Some(Ok(line)) = lines.next() else { break };
        let ev: Value = serde_json::from_str(&line).unwrap();
        let done = ev["state"] == "reviewing" && ev["type"] == "state_changed";
        seen.push(ev);
        if done {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(seen.iter().any(|e| e["type"] == "log" && e["message"] == "followed"), "{seen:?}");
    assert!(seen.iter().all(|e| e["agent"] == s.id.as_str()));
    assert_eq!(seen.last().unwrap()["state"], "reviewing");
}

#[test]
fn a_killed_run_leaves_no_gap_or_duplicate() {
    let f = Fixture::new();
    f.init();
    f.write("busy.pym", "i = 0\nwhile True:\n    log('line %d' % i)\n    i += 1\n");
    let script = f.root.join("busy.pym");
    let mut child = f.cmd().args(["run", script.to_str().unwrap()]).stdout(Stdio::null()).spawn().unwrap();
    wait_until(20, "the run to log", || events(&f, &[]).iter().filter(|e| e["type"] == "log").count() > 50);
    // SIGKILL mid-run, between or inside event commits.
    kill9(child.id());
    let _ = child.wait();
    f.run_ok("log('after')\n");
    let seqs: Vec<i64> = events(&f, &[]).iter().map(|e| e["seq"].as_i64().unwrap()).collect();
    assert!(seqs.len() > 50);
    assert_eq!(seqs, (1..=seqs.len() as i64).collect::<Vec<_>>(), "gaps or duplicates");
}

fn kill9(pid: u32) {
    let _ = std::process::Command::new("kill").args(["-9", &pid.to_string()]).status();
}
