//! The review loop (`:help cairn-review-loop`), the way a user meets it: an interactive agent
//! under `cairn wrap` in a real tmux pane shows its proposal while it works, goes to review
//! when its turn ends and it waits at its prompt, gets the reviewer's reasons typed in as its
//! next message (once), and its next revision shows as an interdiff; an LLM script agent gets
//! them in its re-run's prompt.

use crate::support::*;
use crate::wrap_tty::{cairn_line, Tmux};
use serde_json::Value;

const LINES: &str = "l1\nl2\nl3\nl4\nl5\nl6\nl7\nl8\nl9\nl10\n";

/// An interactive agent: answers each prompt with a turn of writes, shows a spinner while it
/// "thinks" (until Enter), prints what it was told.
const AGENT: &str = r#"stty -echo
echo ready
read -r first
printf 'l1\nNEW2\nl3\nl4\nl5\nl6\nl7\nl8\nNEW9\nl10\n' > a.txt
until read -r -t 0.1 x; do printf .; done
echo; echo "turn 1 done"
read -r feedback
echo "GOT: $feedback"
printf 'l1\nNEW2\nl3\nl4\nl5\nl6\nl7\nl8\nREVISED9\nl10\n' > a.txt
echo "turn 2 done"
read -r last
"#;

fn status(f: &Fixture, id: &str) -> Value {
    f.cairn(&["status", id, "--json"]).ok().json()
}

#[test]
fn an_interactive_agent_is_reviewed_turn_by_turn_and_gets_the_reason_once() {
    let f = Fixture::with_files(&[("a.txt", LINES)]);
    f.write("agent.sh", AGENT);
    f.home_config("[wrap]\nturn_quiet_ms = 400\n");
    let t = Tmux::new();
    let line = cairn_line(&f, "wrap -- bash agent.sh; echo EXIT=$?; sleep 600");
    t.cmd(&["new-session", "-d", "-s", "t", "-x", "200", "-y", "40", &line]);
    t.wait_for("ready");
    let id = f.cairn(&["list-agents", "--json"]).ok().json()[0]["id"].as_str().unwrap().to_string();
    t.cmd(&["send-keys", "-t", "t", "go", "Enter"]);
    // Live: the write is in the proposal while the agent still works (its spinner runs).
    wait_until(30, "the first write in the proposal", || f.cairn(&["diff", &id]).stdout.contains("+NEW9"));
    let st = status(&f, &id);
    assert_eq!((st["state"].as_str(), st["in_progress"].as_bool()), (Some("executing"), Some(true)), "{st}");
    t.cmd(&["send-keys", "-t", "t", "Enter"]);
    t.wait_for("turn 1 done");
    // Its turn ended: reviewing while it waits at its prompt.
    wait_until(30, "the turn to reach review", || status(&f, &id)["state"] == "reviewing");
    assert!(!t.pane().contains("EXIT="), "the agent must still be running:\n{}", t.pane());
    f.cairn(&["accept-hunk", &id, "a.txt", "1"]).ok();
    f.cairn(&["reject-hunk", &id, "a.txt", "1", "--reason", "call it REVISED9 instead"]).ok();
    assert_eq!(f.read_str("a.txt").unwrap(), LINES.replace("l2\n", "NEW2\n"), "exactly the accepted hunk landed");
    let revised = f.cairn(&["revise", &id, "--json"]).ok().json();
    assert_eq!((revised["revision"].as_u64(), revised["delivery"].as_str()), (Some(2), Some("terminal")), "{revised}");
    t.wait_for("GOT: Review of your proposed changes");
    t.wait_for("turn 2 done");
    // (The pane wraps long lines: joined, the message reads as typed.)
    assert_eq!(t.pane().replace('\n', "").matches("call it REVISED9 instead").count(), 1, "the reason is typed once:\n{}", t.pane());
    wait_until(30, "revision 2 to reach review", || status(&f, &id)["state"] == "reviewing");
    assert_eq!(status(&f, &id)["revision"], 2);
    let inter = f.cairn(&["diff", &id, "--since-review"]).ok().stdout;
    // Against the proposal as the user left it: the rejected NEW9 is no removal to review
    // again, the accepted NEW2 is the project's.
    assert!(inter.contains("-l9") && inter.contains("+REVISED9") && !inter.contains("NEW9") && !inter.contains("NEW2"), "interdiff:\n{inter}");
    let log = f.cairn(&["log", &id, "--json"]).ok().json();
    let delivered: Vec<&Value> = log["feedback"].as_array().unwrap().iter().filter(|fb| fb["delivered_via"] == "terminal").collect();
    assert_eq!(delivered.len(), 2, "the accepted and the rejected hunk, delivered once: {log}");
    f.cairn(&["accept", &id]).ok();
    assert_eq!(f.read_str("a.txt").unwrap(), LINES.replace("l2\n", "NEW2\n").replace("l9\n", "REVISED9\n"));
    t.cmd(&["send-keys", "-t", "t", "bye", "Enter"]);
    t.wait_for("EXIT=0");
}

/// A `cairn up` that can call the scripted model.
fn up_with_key(f: &Fixture) -> Up {
    let child = f.cmd().env("CAIRN_TEST_KEY", "sk-test").arg("up").stdin(std::process::Stdio::null()).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null()).spawn().unwrap();
    Up { child }
}

#[test]
fn an_llm_agent_gets_the_reason_in_its_revised_prompt_once_across_kills() {
    use crate::llm::{completion, llm_config, FakeLlm};
    let f = Fixture::with_files(&[("a.txt", LINES)]);
    let v1 = "```python\nt = read_file('a.txt').replace('l2\\n', 'NEW2\\n').replace('l9\\n', 'NEW9\\n')\nwrite_file('a.txt', t)\n```\n";
    let v2 = "```python\nt = read_file('a.txt').replace('l9\\n', 'REVISED9\\n')\nwrite_file('a.txt', t)\n```\n";
    let server = FakeLlm::start(vec![completion(v1), completion(v2)]);
    llm_config(&f, &server.url, "");
    let r = Run::from(f.cmd().env("CAIRN_TEST_KEY", "sk-test").args(["run", "--provider", "llm", "rename two lines"]).output().unwrap());
    let id = r.stdout.trim().to_string();
    assert_eq!(status(&f, &id)["state"], "reviewing", "{r:?}");
    f.cairn(&["accept-hunk", &id, "a.txt", "1"]).ok();
    f.cairn(&["reject-hunk", &id, "a.txt", "1", "--reason", "R-TOKEN use REVISED9"]).ok();
    // Cairn is killed between the reason and its delivery: nothing was running it then.
    let mut up = up_with_key(&f);
    up.kill9();
    let revised = f.cairn(&["revise", &id, "--json"]).ok().json();
    assert_eq!((revised["delivery"].as_str(), revised["state"].as_str()), (Some("prompt"), Some("queued")), "{revised}");
    let mut up = up_with_key(&f);
    wait_until(60, "revision 2 to reach review", || status(&f, &id)["state"] == "reviewing");
    up.kill9();
    // Another start: nothing is delivered again (no third request, the log says once).
    let mut again = up_with_key(&f);
    let seen = server.seen();
    assert_eq!(seen.len(), 2, "one request per revision");
    let prompt = seen[1].body["messages"].to_string();
    assert_eq!(prompt.matches("R-TOKEN use REVISED9").count(), 1, "the reason, once: {prompt}");
    assert!(prompt.contains("+NEW9"), "the previous proposal is in the prompt: {prompt}");
    assert!(!seen[0].body["messages"].to_string().contains("R-TOKEN"));
    let log = f.cairn(&["log", &id, "--json"]).ok().json();
    let via: Vec<&str> = log["feedback"].as_array().unwrap().iter().map(|fb| fb["delivered_via"].as_str().unwrap_or("-")).collect();
    assert_eq!(via, ["prompt", "prompt"], "{log}");
    assert_eq!(status(&f, &id)["revision"], 2);
    let inter = f.cairn(&["diff", &id, "--since-review"]).ok().stdout;
    assert!(inter.contains("-l9") && inter.contains("+REVISED9") && !inter.contains("NEW9"), "the rejected hunk is no removal to review again: {inter}");
    again.kill9();
    assert_eq!(server.seen().len(), 2);
    f.cairn(&["accept", &id]).ok();
    assert_eq!(f.read_str("a.txt").unwrap(), LINES.replace("l2\n", "NEW2\n").replace("l9\n", "REVISED9\n"));
}
