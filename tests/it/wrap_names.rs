//! A wrapped agent is named by its task (`:help cairn-wrap-names`): the prompt of a one-shot
//! command line, else the first line the user types and submits in its terminal, read through
//! the real relay in a tmux pane; shown escaped in lists, status and the status board; and
//! `cairn wrap`'s last line says the proposal's real state.

use crate::support::*;
use crate::wrap_tty::{cairn_line, Tmux};
use serde_json::Value;

fn status(f: &Fixture, id: &str) -> Value {
    f.cairn(&["status", id, "--json"]).ok().json()
}

/// An interactive agent: asks for a confirmation, then a task; writes; waits for more.
const AGENT: &str = r#"stty -echo
echo "trust this folder? [y]"
read -r yes
echo "ready for a task"
read -r task
printf 'b\n' > b.txt
echo "turn 1 done"
read -r last
echo "bye"
"#;

#[test]
fn the_first_task_typed_to_an_interactive_agent_names_it() {
    let f = Fixture::with_files(&[("a.txt", "a\n")]);
    f.write("agent.sh", AGENT);
    f.home_config("[wrap]\nturn_quiet_ms = 300\n");
    let t = Tmux::new();
    // As :CairnWrap starts it: its command as `--task`, run by `sh -c`.
    let line = cairn_line(&f, "wrap --task 'bash agent.sh' -- sh -c 'bash agent.sh'; echo EXIT=$?; sleep 600");
    t.cmd(&["new-session", "-d", "-s", "t", "-x", "200", "-y", "40", &line]);
    t.wait_for("trust this folder");
    let id = f.cairn(&["list-agents", "--json"]).ok().json()[0]["id"].as_str().unwrap().to_string();
    assert_eq!(status(&f, &id)["task"], "bash agent.sh", "named by its command until a task is typed");
    // A one-letter answer names nothing; the task (typed with a mistake taken back, a cursor
    // key, and a bidirectional override that must show escaped) does.
    t.cmd(&["send-keys", "-t", "t", "y", "Enter"]);
    t.wait_for("ready for a task");
    t.cmd(&["send-keys", "-t", "t", "-l", "fix the flakx"]);
    t.cmd(&["send-keys", "-t", "t", "BSpace", "Left"]);
    t.cmd(&["send-keys", "-t", "t", "-l", "y test \u{202e}now"]);
    t.cmd(&["send-keys", "-t", "t", "Enter"]);
    t.wait_for("turn 1 done");
    wait_until(30, "the turn to reach review", || status(&f, &id)["state"] == "reviewing");
    let st = status(&f, &id);
    assert_eq!(st["task"], "fix the flaky test \u{202e}now", "{st}");
    assert!(st["submission"]["summary"].as_str().unwrap_or("").starts_with("fix the flaky test \u{202e}now — wrap: "), "{st}");
    // Shown escaped: in the list, the agent's status and the project's board.
    let list = f.cairn(&["list-agents"]).ok().stdout;
    assert!(list.contains("fix the flaky test \\u{202e}now") && !list.contains('\u{202e}'), "{list}");
    let board = f.cairn(&["status"]).ok().stdout;
    assert!(board.contains("fix the flaky test \\u{202e}now") && !board.contains('\u{202e}'), "{board}");
    // Accepted while the session runs: its last line says so, not "reviewing".
    f.cairn(&["accept", &id]).ok();
    t.cmd(&["send-keys", "-t", "t", "thanks", "Enter"]);
    t.wait_for("EXIT=0");
    let pane = t.cmd(&["capture-pane", "-p", "-J", "-t", "t"]);
    assert!(pane.contains("its proposal was accepted") && !pane.contains("changed, reviewing"), "{pane}");
    // A later line typed to it renamed nothing.
    assert_eq!(status(&f, &id)["task"], "fix the flaky test \u{202e}now");
}

#[test]
fn a_one_shot_prompt_names_the_session_and_task_wins() {
    let f = Fixture::with_files(&[("a.txt", "a\n")]);
    f.write("agent.sh", "printf 'b\\n' > b.txt\n");
    let named = |args: &[&str]| {
        let args: Vec<&str> = if args.contains(&"--") { args.to_vec() } else { [&["--"], args].concat() };
        let r = f.cairn(&[&["wrap"], &args[..]].concat()).ok();
        let id = r.stderr.split("wrap session ").nth(1).and_then(|x| x.split(':').next()).unwrap().to_string();
        status(&f, &id)["task"].as_str().unwrap_or("").to_string()
    };
    assert_eq!(named(&["bash", "agent.sh", "-p", "rename  the\nthing"]), "bash agent.sh -p 'rename  the\nthing'", "an interpreter's -p is no prompt");
    f.write("agent", "#!/bin/sh\nprintf 'c\\n' > c.txt\n");
    std::process::Command::new("chmod").args(["+x", &f.root.join("agent").display().to_string()]).status().unwrap();
    assert_eq!(named(&["./agent", "--print", "--model", "m", "rename  the\nthing"]), "rename the thing");
    assert_eq!(named(&["sh", "-c", "./agent -p 'add a flag'"]), "add a flag");
    // :CairnWrap's `--task` is its command: the prompt names it still.
    assert_eq!(named(&["--task", "./agent -p 'add a flag'", "--", "sh", "-c", "./agent -p 'add a flag'"]), "add a flag");
    let r = f.cairn(&["wrap", "--task", "mine", "--", "./agent", "-p", "theirs"]).ok();
    let id = r.stderr.split("wrap session ").nth(1).and_then(|x| x.split(':').next()).unwrap().to_string();
    assert_eq!(status(&f, &id)["task"], "mine");
}
