//! Many agents on one project: the overlap map of pending proposals (list-agents, status,
//! hunks, the tmux status line), the landing order, the rebase after an accept naming whose
//! change a conflict is with, resolving a conflict by hand, and the files an undo names for
//! open buffers to follow.

use crate::support::*;
use serde_json::Value;

fn lines(n: usize) -> String {
    (1..=n).map(|i| format!("l{i}\n")).collect()
}

/// An inline agent replacing line `n` (`ln`) of a.txt with `text`.
fn edit(f: &Fixture, edits: &[(usize, &str)]) -> String {
    let mut code = "t = read_file('a.txt')\n".to_string();
    for (n, text) in edits {
        code.push_str(&format!("t = t.replace('l{n}\\n', '{text}\\n')\n"));
    }
    code.push_str("write_file('a.txt', t)\n");
    f.run_ok(&code).id
}

fn json(f: &Fixture, args: &[&str]) -> Value {
    f.cairn(args).ok().json()
}

#[test]
fn overlapping_proposals_are_listed_everywhere_before_anything_lands() {
    let f = Fixture::with_files(&[("a.txt", &lines(20))]);
    let a = edit(&f, &[(5, "A5")]);
    let b = edit(&f, &[(5, "B5")]);
    let c = edit(&f, &[(15, "C15")]);
    let board = json(&f, &["status", "--json"])["board"].clone();
    let overlaps = board["overlaps"].as_array().unwrap();
    assert_eq!(overlaps.len(), 1, "{board}");
    assert_eq!((overlaps[0]["path"].as_str(), &overlaps[0]["lines"]), (Some("a.txt"), &serde_json::json!([5, 5])), "{board}");
    let of = |id: &str| board["agents"].as_array().unwrap().iter().find(|x| x["id"] == id).unwrap()["overlaps"].clone();
    assert_eq!(of(&a), serde_json::json!([b.clone()]));
    assert_eq!(of(&c), serde_json::json!([]), "C touches other lines");
    let listed = f.cairn(&["list-agents"]).ok().stdout;
    let line_of = |id: &str| listed.lines().find(|l| l.starts_with(id)).unwrap().to_string();
    assert!(line_of(&a).contains(&format!("[overlaps {b}]")), "{listed}");
    assert!(!line_of(&c).contains("overlaps"), "{listed}");
    assert!(listed.contains("land in this order (fewest conflicts): "), "{listed}");
    let overview = f.cairn(&["status"]).ok().stdout;
    assert!(overview.contains(&format!("overlap   a.txt:5-5  {a} and {b}")), "{overview}");
    assert!(overview.contains("land in this order"), "{overview}");
    let hunks = f.cairn(&["hunks", &b]).ok().stdout;
    assert!(hunks.contains(&format!("OVERLAPS agent {a}")), "{hunks}");
    let tmux = f.cairn(&["status", "--format", "tmux"]).ok().stdout;
    assert_eq!(tmux.lines().count(), 1, "{tmux}");
    assert!(tmux.contains(&format!("A {} waits ⚠B", &a[..4])) && tmux.contains(&format!("C {} waits", &c[..4])), "{tmux}");
    assert!(!tmux.contains("⚠A ⚠") && !tmux.contains(&format!("C {} waits ⚠", &c[..4])), "{tmux}");
    assert_eq!(f.read_str("a.txt").unwrap(), lines(20), "nothing landed");
}

#[test]
fn the_landing_order_leaves_the_fewest_conflicts() {
    let f = Fixture::with_files(&[("a.txt", &lines(20))]);
    // A rewrites lines 3-8 in one hunk; B changes 3, 5 and 7: landing A first would conflict
    // three hunks of B, landing B first one hunk of A.
    let a = edit(&f, &[(3, "A3"), (4, "A4"), (5, "A5"), (6, "A6"), (7, "A7"), (8, "A8")]);
    let b = edit(&f, &[(3, "B3"), (5, "B5"), (7, "B7")]);
    let order = json(&f, &["status", "--json"])["board"]["order"].clone();
    assert_eq!(order, serde_json::json!([b, a]), "B first");
}

#[test]
fn an_accept_rebases_the_others_and_names_whose_change_they_conflict_with() {
    let f = Fixture::with_files(&[("a.txt", &lines(20))]);
    let a = edit(&f, &[(5, "A5")]);
    let b = edit(&f, &[(5, "B5"), (12, "B12")]);
    let c = edit(&f, &[(15, "C15")]);
    let out = f.cairn(&["accept", &a]).ok().stdout;
    assert!(out.contains(&format!("rebased {b} onto {a}: 1 hunk(s) conflict with agent {a}")), "{out}");
    assert!(out.contains(&format!("rebased {c} onto {a}: 1 file(s) moved cleanly")), "{out}");
    let hunks = f.cairn(&["hunks", &b]).ok().stdout;
    assert!(hunks.contains(&format!("CONFLICT with {a}")) && !hunks.contains("your edit"), "the conflict names A, not the user: {hunks}");
    // C lands on top of A without --force.
    f.cairn(&["accept", &c]).ok();
    assert_eq!(f.read_str("a.txt").unwrap(), lines(20).replace("l5\n", "A5\n").replace("l15\n", "C15\n"));
    // An edit of the user's own is "your edit".
    let d = edit(&f, &[(18, "D18")]);
    f.write("a.txt", f.read_str("a.txt").unwrap().replace("l18\n", "MINE\n"));
    let hunks = f.cairn(&["hunks", &d]).ok().stdout;
    assert!(hunks.contains("CONFLICT with your edit"), "{hunks}");
}

#[test]
fn a_conflict_resolved_by_hand_lands_without_force() {
    let f = Fixture::with_files(&[("a.txt", &lines(10))]);
    let a = edit(&f, &[(5, "A5")]);
    let b = edit(&f, &[(5, "B5"), (9, "B9")]);
    f.cairn(&["accept", &a]).ok();
    assert!(f.cairn(&["accept", &b]).code != 0, "a conflicted proposal needs a decision");
    let three = json(&f, &["resolve", &b, "a.txt"]);
    assert_eq!(three["base"], lines(10));
    assert_eq!(three["landed"], lines(10).replace("l5\n", "A5\n"));
    assert_eq!(three["proposed"], lines(10).replace("l5\n", "B5\n").replace("l9\n", "B9\n"), "the agent's side, on what landed");
    assert_eq!(three["conflict_with"], serde_json::json!([a]));
    let resolved = lines(10).replace("l5\n", "A5 and B5\n").replace("l9\n", "B9\n");
    let file = f.root.join("../resolved.txt");
    std::fs::write(&file, &resolved).unwrap();
    f.cairn(&["resolve", &b, "a.txt", "--from", file.to_str().unwrap()]).ok();
    let hunks = f.cairn(&["hunks", &b]).ok().stdout;
    assert!(!hunks.contains("CONFLICT"), "{hunks}");
    f.cairn(&["accept", &b]).ok();
    assert_eq!(f.read_str("a.txt").unwrap(), resolved);
    // Undo restores what A had landed, and says which files it changed.
    f.cairn(&["undo", &b]).ok();
    assert_eq!(f.read_str("a.txt").unwrap(), lines(10).replace("l5\n", "A5\n"));
    let events = f.cairn(&["events", "--agent", &b, "--json"]).ok().stdout;
    let last: Value = serde_json::from_str(events.lines().last().unwrap()).unwrap();
    assert_eq!((&last["type"], &last["paths"]), (&Value::from("undone"), &serde_json::json!(["a.txt"])), "{events}");
}

#[test]
fn resolving_is_refused_for_a_path_the_agent_does_not_change_or_outside_the_project() {
    let f = Fixture::with_files(&[("a.txt", &lines(5)), ("b.txt", "b\n")]);
    let a = edit(&f, &[(2, "A2")]);
    let file = f.root.join("../r.txt");
    std::fs::write(&file, "x\n").unwrap();
    let out = f.cairn(&["resolve", &a, "b.txt", "--from", file.to_str().unwrap()]);
    assert!(out.code != 0 && out.stderr.contains("nothing to resolve"), "{}", out.stderr);
    let out = f.cairn(&["resolve", &a, "../outside.txt", "--from", file.to_str().unwrap()]);
    assert!(out.code != 0, "a path outside the project is refused: {}", out.stderr);
    assert_eq!(f.read_str("b.txt").unwrap(), "b\n");
}

/// X and Y change line 38, Z line 37 (next to it). After X lands, Z's refusal names X (not
/// the user), and `--force` takes Z's side only inside Z's own hunk: X's line 38 stays.
#[test]
fn a_forced_accept_keeps_the_line_another_agent_landed_next_to_it() {
    let f = Fixture::with_files(&[("a.txt", &lines(60))]);
    let x = edit(&f, &[(38, "X38")]);
    let y = edit(&f, &[(38, "Y38")]);
    let z = edit(&f, &[(37, "Z37")]);
    f.cairn(&["accept", &x]).ok();
    let refused = f.cairn(&["accept", &z]);
    assert_ne!(refused.code, 0, "Z touches the line next to X's: a conflict to decide");
    assert!(refused.stderr.contains(&format!("agent {x}")) && !refused.stderr.contains("your edit"), "the refusal names X: {}", refused.stderr);
    let diff = f.cairn(&["diff", &z]).ok().stdout;
    assert!(diff.contains(&format!("with agent {x}")) && !diff.contains("your edit"), "{diff}");
    assert!(diff.contains("-l37\n+Z37\n") && !diff.contains("-X38"), "the diff shows what --force lands: Z's line only: {diff}");
    let hunks = f.cairn(&["hunks", &z]).ok().stdout;
    assert!(hunks.contains(&format!("CONFLICT with {x}")), "{hunks}");
    f.cairn(&["accept", &z, "--force"]).ok();
    assert_eq!(f.read_str("a.txt").unwrap(), lines(60).replace("l37\n", "Z37\n").replace("l38\n", "X38\n"), "X's line 38 and Z's line 37");
    // Y changed the very line X landed: forced, Y's side there, the rest as it is now.
    f.cairn(&["accept", &y, "--force"]).ok();
    assert_eq!(f.read_str("a.txt").unwrap(), lines(60).replace("l37\n", "Z37\n").replace("l38\n", "Y38\n"));
    // Undo gives back what each forced accept overwrote.
    f.cairn(&["undo", &y]).ok();
    assert_eq!(f.read_str("a.txt").unwrap(), lines(60).replace("l37\n", "Z37\n").replace("l38\n", "X38\n"));
}

/// A user's own edit next to an agent's change is "your edit", and a forced accept keeps it.
#[test]
fn a_forced_accept_keeps_your_edit_next_to_the_agents_change() {
    let f = Fixture::with_files(&[("a.txt", &lines(10))]);
    let a = edit(&f, &[(5, "A5")]);
    f.write("a.txt", lines(10).replace("l6\n", "MINE\n"));
    let refused = f.cairn(&["accept", &a]);
    assert!(refused.code != 0 && refused.stderr.contains("your edit"), "{}", refused.stderr);
    f.cairn(&["accept", &a, "--force"]).ok();
    assert_eq!(f.read_str("a.txt").unwrap(), lines(10).replace("l5\n", "A5\n").replace("l6\n", "MINE\n"));
}

/// A forced hunk accept takes the agent's side only inside that hunk as well.
#[test]
fn a_forced_hunk_accept_keeps_the_line_next_to_it() {
    let f = Fixture::with_files(&[("a.txt", &lines(20))]);
    let x = edit(&f, &[(8, "X8")]);
    let z = edit(&f, &[(7, "Z7"), (15, "Z15")]);
    f.cairn(&["accept", &x]).ok();
    let hunks = f.cairn(&["hunks", &z, "--json"]).ok().json();
    let file = &hunks["files"][0];
    let n = file["hunks"].as_array().unwrap().iter().position(|h| h["old_start"] == 6).expect("Z's hunk at line 7") + 1;
    let refused = f.cairn(&["accept-hunk", &z, "a.txt", &n.to_string()]);
    assert!(refused.code != 0 && refused.stderr.contains(&format!("agent {x}")), "{}", refused.stderr);
    f.cairn(&["accept-hunk", &z, "a.txt", &n.to_string(), "--force"]).ok();
    assert_eq!(f.read_str("a.txt").unwrap(), lines(20).replace("l7\n", "Z7\n").replace("l8\n", "X8\n"));
}

/// A mark is an agent's for its life: another agent landing, being rejected or undone moves
/// no mark (`status --json`, the board, the tmux line); a new agent takes the next letter, not
/// one just freed; two pending agents never share one.
#[test]
fn marks_stay_with_their_agents_whatever_the_others_do() {
    let f = Fixture::with_files(&[("a.txt", &lines(20))]);
    let a = edit(&f, &[(2, "A2")]);
    let b = edit(&f, &[(8, "B8")]);
    let c = edit(&f, &[(14, "C14")]);
    let mark = |id: &str| json(&f, &["status", id, "--json"])["mark"].clone();
    let board = || -> Vec<(String, String)> {
        let agents = json(&f, &["status", "--json"])["board"]["agents"].clone();
        agents.as_array().unwrap().iter().map(|x| (x["id"].as_str().unwrap().to_string(), x["mark"].as_str().unwrap().to_string())).collect()
    };
    assert_eq!((mark(&a), mark(&b), mark(&c)), ("A".into(), "B".into(), "C".into()), "in the order they started");
    f.cairn(&["accept", &a]).ok();
    assert_eq!((mark(&b), mark(&c)), ("B".into(), "C".into()), "A landed: B and C keep their marks");
    assert_eq!(board(), vec![(b.clone(), "B".into()), (c.clone(), "C".into())]);
    let tmux = f.cairn(&["status", "--format", "tmux"]).ok().stdout;
    assert!(tmux.contains(&format!("B {} waits", &b[..4])) && tmux.contains(&format!("C {} waits", &c[..4])), "{tmux}");
    assert_eq!(mark(&a), Value::Null, "a decided agent shows no mark (its letter may be another's)");
    f.cairn(&["reject", &b]).ok();
    assert_eq!(mark(&c), "C", "B rejected: C keeps its mark");
    let d = edit(&f, &[(18, "D18")]);
    assert_eq!(mark(&d), "D", "a new agent takes the next letter, not the A or B just freed");
    // An undone accept takes its own letter back while no pending agent holds it.
    f.cairn(&["undo", &a]).ok();
    assert_eq!((mark(&a), mark(&c), mark(&d)), ("A".into(), "C".into(), "D".into()));
    let listed = json(&f, &["list-agents", "--json"]);
    let marks: Vec<&str> = listed.as_array().unwrap().iter().filter_map(|x| x["mark"].as_str()).collect();
    assert_eq!(marks, ["A", "C", "D"], "list-agents: the same marks");
}
