//! Revisions of a proposal beyond the first: decisions carry over to a revision that proposes
//! a rejected hunk again unchanged, and an undone agent is `undone` everywhere and accepted
//! again.

use crate::support::*;
use serde_json::Value;

const LINES: &str = "l1\nl2\nl3\nl4\nl5\nl6\nl7\nl8\nl9\nl10\n";
const SCRIPT: &str = "t = read_file('a.txt').replace('l2\\n', 'NEW2\\n').replace('l9\\n', 'NEW9\\n')\nwrite_file('a.txt', t)\n";

fn json(f: &Fixture, args: &[&str]) -> Value {
    f.cairn(args).ok().json()
}

#[test]
fn a_rejected_hunk_proposed_again_unchanged_stays_rejected() {
    let f = Fixture::with_files(&[("a.txt", LINES)]);
    let s = f.run_ok(SCRIPT);
    f.cairn(&["reject-hunk", &s.id, "a.txt", "2", "--reason", "not line 9"]).ok();
    f.cairn(&["comment", &s.id, "a.txt:2", "keep this one"]).ok();
    assert_eq!(json(&f, &["revise", &s.id, "--json"])["delivery"], "rerun", "a script is re-run as it is");
    // The same script again: it proposes both hunks, the rejected one unchanged.
    let ran = cairn::orchestrator::run_next(&f.project(), None).unwrap().expect("the revision runs");
    assert_eq!(ran.id, s.id);
    let st = json(&f, &["status", &s.id, "--json"]);
    assert_eq!((st["state"].as_str(), st["revision"].as_u64()), (Some("reviewing"), Some(2)), "{st}");
    let hunks = json(&f, &["hunks", &s.id, "--json"]);
    let shown: Vec<String> = hunks["files"][0]["hunks"].as_array().unwrap().iter().map(|h| h["added"].to_string()).collect();
    assert_eq!(shown, [r#"["NEW2"]"#], "only the hunk never rejected is proposed: {hunks}");
    let log = json(&f, &["log", &s.id, "--json"]);
    let again: Vec<&Value> = log["feedback"].as_array().unwrap().iter().filter(|p| p["revision"] == 2 && p["kind"] == "hunk_rejected").collect();
    assert_eq!(again.len(), 1, "the carried-over rejection is feedback of revision 2: {log}");
    f.cairn(&["accept", &s.id]).ok();
    assert_eq!(f.read_str("a.txt").unwrap(), LINES.replace("l2\n", "NEW2\n"));
}

#[test]
fn an_undone_agent_reads_undone_everywhere_and_is_accepted_again() {
    let f = Fixture::with_files(&[("a.txt", LINES)]);
    let s = f.run_ok(SCRIPT);
    f.cairn(&["accept", &s.id]).ok();
    f.cairn(&["undo", &s.id]).ok();
    assert_eq!(f.read_str("a.txt").unwrap(), LINES);
    assert_eq!(json(&f, &["status", &s.id, "--json"])["state"], "undone");
    assert!(f.cairn(&["status", &s.id]).ok().stdout.contains("state     undone"));
    let listed = json(&f, &["list-agents", "--json"]);
    assert_eq!(listed[0]["state"], "undone", "an undone proposal is listed as active: {listed}");
    assert!(f.cairn(&["list-agents"]).ok().stdout.contains("undone"));
    assert!(f.cairn(&["diff", &s.id]).ok().stdout.contains("+NEW9"), "its proposal is back");
    let events = f.cairn(&["events", "--agent", &s.id, "--json"]).ok().stdout;
    assert!(events.lines().last().unwrap().contains("\"type\":\"undone\""), "{events}");
    f.cairn(&["accept", &s.id]).ok();
    assert_eq!(f.read_str("a.txt").unwrap(), LINES.replace("l2\n", "NEW2\n").replace("l9\n", "NEW9\n"));
    assert_eq!(json(&f, &["status", &s.id, "--json"])["state"], "accepted");
    f.cairn(&["undo", &s.id]).ok();
    assert_eq!(f.read_str("a.txt").unwrap(), LINES, "undone twice, restored twice");
}

#[test]
fn a_shell_script_is_never_given_the_feedback_to_run() {
    let f = Fixture::with_files(&[("a.txt", LINES), ("src.txt", "zero\n")]);
    let out = f.cairn(&["wrap", "--", "sh", "-c", "cat src.txt > b.txt"]);
    let id = out.stderr.split("wrap session ").nth(1).and_then(|s| s.get(..6)).unwrap().to_string();
    f.cairn(&["reject", &id, "--reason", "$(touch pwned) `touch pwned2`"]).ok();
    assert_eq!(json(&f, &["revise", &id, "--json"])["delivery"], "command line");
    // Re-run with its own command line (writing something new: the rejected b.txt would stay
    // rejected): `sh -c SCRIPT` gets nothing appended.
    f.write("src.txt", "one\n");
    let resumed = f.cairn(&["wrap", "--agent", &id]).ok();
    assert!(resumed.stderr.contains("what `cat src.txt > b.txt` writes"), "the banner shows the recorded command: {}", resumed.stderr);
    let log = json(&f, &["log", &id, "--json"]);
    assert!(log["feedback"][0]["delivered_via"].is_null(), "kept for its terminal: {log}");
    let diff = f.cairn(&["diff", &id]).ok().stdout;
    assert!(diff.contains("+one") && !diff.contains("pwned"), "{diff}");
}

#[test]
fn undo_after_hunk_accepts_brings_the_whole_proposal_back() {
    let f = Fixture::with_files(&[("a.txt", LINES)]);
    let s = f.run_ok(SCRIPT);
    f.cairn(&["accept-hunk", &s.id, "a.txt", "1"]).ok();
    f.cairn(&["accept-hunk", &s.id, "a.txt", "1"]).ok();
    assert_eq!(json(&f, &["status", &s.id, "--json"])["state"], "accepted");
    f.cairn(&["undo", &s.id]).ok();
    assert_eq!(f.read_str("a.txt").unwrap(), LINES);
    let hunks = json(&f, &["hunks", &s.id, "--json"]);
    assert_eq!(hunks["files"][0]["hunks"].as_array().map(Vec::len), Some(2), "both hunks proposed again: {hunks}");
    f.cairn(&["accept", &s.id]).ok();
    assert_eq!(f.read_str("a.txt").unwrap(), LINES.replace("l2\n", "NEW2\n").replace("l9\n", "NEW9\n"));
}
