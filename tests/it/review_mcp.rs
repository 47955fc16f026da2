//! The MCP review loop through the official Python SDK (`mcp.Client`): an agent finishes its
//! session and blocks in `review_wait`; the human decides hunks, gives reasons and runs
//! `cairn revise`; the client gets the feedback, revises in the same session (revision 2)
//! and waits again. Each piece of feedback reaches the client once, also when the server was
//! killed (-9) between the review and the next `review_wait`.

use crate::support::*;
use serde_json::Value;
use std::io::BufRead;
use std::process::{Child, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// The client. Usage: `review_client.py CAIRN ROOT HOME MODE [SESSION]`; prints `TAG JSON`
/// lines the Rust side waits for. Modes: `loop` (implicit session, two revisions), `begin`
/// (explicit session, then blocks in review_wait), `resume SESSION` (review_wait twice).
const CLIENT: &str = r#"
import asyncio, json, sys
import mcp
from mcp import StdioServerParameters, types

def attr(o, *names):
    for n in names:
        if hasattr(o, n):
            return getattr(o, n)
    return None

async def ok(c, name, **args):
    r = await c.call_tool(name, args)
    assert not attr(r, "is_error", "isError"), f"{name}({args}) failed: {r}"
    s = attr(r, "structured_content", "structuredContent")
    assert isinstance(s, dict), f"{name}: no structured result: {r}"
    return s

def say(tag, value):
    print(tag + " " + json.dumps(value), flush=True)

FIRST_EDITS = [{"old_text": "alpha = 1\n", "new_text": "alpha = 100\n"}, {"old_text": "old_name = 11\n", "new_text": "new_name = 11\n"}, {"old_text": "beta = 20\n", "new_text": "beta = 200\n"}]

async def loop(c):
    await ok(c, "edit_file", path="names.py", edits=FIRST_EDITS)
    await ok(c, "session_finish", summary="alpha, a rename, beta")
    say("FINISHED", await ok(c, "session_get"))
    say("REVISE", await ok(c, "review_wait"))
    await ok(c, "edit_file", path="names.py", edits=[{"old_text": "line 7\n", "new_text": "line 7 revised\n"}])
    now = await ok(c, "read_file", path="names.py")
    await ok(c, "session_finish", summary="revision 2: line 7")
    say("AGAIN", {"wait": await ok(c, "review_wait", timeout_s=2), "content": now["content"], "session": await ok(c, "session_get")})

async def begin(c):
    task = await ok(c, "task_create", title="rename")
    sess = await ok(c, "session_begin", task=task["id"], idempotency_key="review-kill")
    sid = sess["id"]
    await ok(c, "edit_file", session=sid, path="names.py", edits=FIRST_EDITS)
    await ok(c, "session_finish", session=sid, summary="alpha, a rename, beta")
    say("BEGUN", {"session": sid, "agent": sess["agent"]})
    await ok(c, "review_wait", session=sid, timeout_s=3600)
    say("UNEXPECTED", {})

async def resume(c, sid):
    say("FIRST", await ok(c, "review_wait", session=sid, timeout_s=120))
    say("SECOND", await ok(c, "review_wait", session=sid, timeout_s=2))
    say("GOT", await ok(c, "session_get", session=sid))

async def main(cairn, root, home, mode, *rest):
    # A restarted server keeps the identity that owns the session only when it is given one.
    actor = [] if mode == "loop" else ["--actor", "agent:review-agent"]
    params = StdioServerParameters(command=cairn, args=["--project-root", root, "--cairn-home", home, "mcp", *actor], cwd=root)
    async with mcp.Client(params, client_info=types.Implementation(name="review-agent", version="1.0")) as c:
        if mode == "loop":
            await loop(c)
        elif mode == "begin":
            await begin(c)
        else:
            await resume(c, rest[0])
    say("DONE", {})

asyncio.run(main(*sys.argv[1:]))
"#;

/// 22 lines: the changes at lines 2, 11 and 20 are three hunks.
fn names_py() -> String {
    (1..=22)
        .map(|i| match i {
            2 => "alpha = 1\n".to_string(),
            11 => "old_name = 11\n".to_string(),
            20 => "beta = 20\n".to_string(),
            _ => format!("line {i}\n"),
        })
        .collect()
}

/// A running Python SDK client; killed when dropped.
struct Client {
    child: Child,
    lines: Receiver<String>,
    stderr: std::path::PathBuf,
}

impl Client {
    fn start(f: &Fixture, mode: &[&str]) -> Client {
        let script = f.dir.path().join("review_client.py");
        std::fs::write(&script, CLIENT).unwrap();
        let stderr = f.dir.path().join(format!("client-{}.err", mode[0]));
        let mut child = std::process::Command::new(crate::mcp::sdk_python())
            .arg(&script)
            .arg(exe())
            .arg(&f.root)
            .arg(&f.home)
            .args(mode)
            .current_dir(&f.root)
            .env_remove("CAIRN_HOME")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .expect("spawn the Python SDK client");
        let out = std::io::BufReader::new(child.stdout.take().unwrap());
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in out.lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        Client { child, lines, stderr }
    }

    /// The JSON of the next `TAG ...` line (other lines are skipped), within 120 s.
    fn expect(&self, tag: &str) -> Value {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => match line.split_once(' ') {
                    Some((t, json)) if t == tag => return serde_json::from_str(json).unwrap(),
                    _ => assert!(!line.starts_with("UNEXPECTED"), "{line}"),
                },
                Err(RecvTimeoutError::Timeout) => panic!("timed out waiting for {tag} from the client; stderr:\n{}", self.err()),
                Err(RecvTimeoutError::Disconnected) => panic!("the client ended before {tag}; stderr:\n{}", self.err()),
            }
        }
    }

    fn err(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// Waits for the client to exit successfully (within 60 s).
    fn finish(mut self) {
        self.expect("DONE");
        let mut status = None;
        wait_until(60, "the client to exit", || {
            status = self.child.try_wait().unwrap();
            status.is_some()
        });
        assert!(status.unwrap().success(), "client failed: {}", self.err());
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn state_of(f: &Fixture, id: &str) -> String {
    let agents = f.cairn(&["list-agents", "--all", "--json"]).ok().json();
    let a = agents.as_array().unwrap().iter().find(|a| a["id"] == id);
    a.map(|a| a["state"].as_str().unwrap().to_string()).unwrap_or_default()
}

/// The hunks of `path` in the proposal, from `cairn hunks ID --json`.
fn hunks_of(f: &Fixture, id: &str, path: &str) -> Vec<Value> {
    let v = f.cairn(&["hunks", id, "--json"]).ok().json();
    let files = v.get("files").unwrap_or(&v).as_array().unwrap_or_else(|| panic!("{v}")).clone();
    let file = files.iter().find(|x| x["path"] == path).unwrap_or_else(|| panic!("no {path}: {v}"));
    file["hunks"].as_array().unwrap().clone()
}

/// The `cairn mcp` servers of this fixture (their command line names its CAIRN_HOME).
fn servers(f: &Fixture) -> Vec<u32> {
    let home = f.home.to_string_lossy().into_owned();
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else { continue };
        let argv: Vec<String> = std::fs::read(e.path().join("cmdline")).unwrap_or_default().split(|&b| b == 0).map(|a| String::from_utf8_lossy(a).into_owned()).collect();
        if argv.windows(2).any(|w| w[0] == "--cairn-home" && w[1] == home) && argv.iter().any(|a| a == "mcp") && alive(pid) {
            out.push(pid);
        }
    }
    out
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.rsplit_once(')').is_some_and(|(_, r)| r.trim_start().starts_with('Z')))
}

/// The feedback pieces of `cairn log ID --json`.
fn feedback_of(f: &Fixture, id: &str) -> Vec<Value> {
    let log = f.cairn(&["log", id, "--json"]).ok().json();
    log["feedback"].as_array().unwrap_or_else(|| panic!("no feedback in the log: {log}")).clone()
}

/// Rejects hunk 2 of names.py with a reason, then (when `decide_all`) accepts hunks 1 and
/// 3, which ends the agent `accepted` before the revise: review_wait must not report that end
/// while the reason waits to be sent. Then `cairn revise`: its delivery is the MCP client's
/// review_wait.
fn review_and_revise(f: &Fixture, agent: &str, decide_all: bool) {
    let accept_first = decide_all;
    let hunks = hunks_of(f, agent, "names.py");
    assert_eq!(hunks.len(), 3, "three separate changes are three hunks: {hunks:?}");
    assert!(hunks[1].to_string().contains("new_name"), "{hunks:?}");
    // Hunk 2 first: a decided hunk leaves the list and the rest are numbered again.
    f.cairn(&["reject-hunk", agent, "names.py", "2", "--reason", "keep the old name"]).ok();
    if accept_first {
        f.cairn(&["accept-hunk", agent, "names.py", "1"]).ok();
    }
    if decide_all {
        f.cairn(&["accept-hunk", agent, "names.py", "1"]).ok();
        assert_eq!(state_of(f, agent), "accepted", "every hunk decided ends the agent");
    } else {
        assert_eq!(hunks_of(f, agent, "names.py").len(), 2);
        assert_eq!(state_of(f, agent), "reviewing");
    }
    let revised = f.cairn(&["revise", agent, "--json"]).ok().json();
    assert_eq!(revised["delivery"], "review_wait", "{revised}");
    assert_eq!(revised["revision"], 2, "{revised}");
}

#[test]
fn mcp_client_gets_reasons_from_review_wait_and_revises() {
    let f = Fixture::with_files(&[("names.py", names_py().as_str())]);
    let client = Client::start(&f, &["loop"]);
    let finished = client.expect("FINISHED");
    let agent = finished["agent"].as_str().unwrap_or_else(|| panic!("{finished}")).to_string();
    assert_eq!(finished["revision"], 1, "{finished}");
    wait_until(60, "the agent to be reviewing", || state_of(&f, &agent) == "reviewing");
    review_and_revise(&f, &agent, true);

    let got = client.expect("REVISE");
    assert_eq!(got["decision"], "revise", "{got}");
    assert_eq!(got["agent"], agent.as_str(), "{got}");
    assert_eq!(got["revision"], 2, "{got}");
    let feedback = got["feedback"].as_str().unwrap_or_else(|| panic!("no feedback: {got}"));
    assert!(feedback.contains("keep the old name"), "{feedback}");
    assert!(feedback.contains("Accepted") && feedback.contains("alpha = 100"), "the accepted hunk is named: {feedback}");

    let again = client.expect("AGAIN");
    let content = again["content"].as_str().unwrap();
    assert!(content.contains("line 7 revised\n") && content.contains("old_name = 11\n") && !content.contains("new_name"), "revision 2 continues the revised proposal: {again}");
    assert_eq!(again["wait"]["decision"], "waiting", "the reason is not delivered again: {again}");
    assert!(again["wait"].get("feedback").is_none_or(Value::is_null), "{again}");
    assert_eq!(again["session"]["revision"], 2, "session_get: {again}");
    client.finish();

    assert_eq!(f.cairn(&["status", &agent, "--json"]).ok().json()["revision"], 2);
    let fb = feedback_of(&f, &agent);
    let reason: Vec<&Value> = fb.iter().filter(|p| p["text"].as_str().is_some_and(|t| t.contains("keep the old name"))).collect();
    assert_eq!(reason.len(), 1, "{fb:?}");
    assert!(fb.iter().all(|p| p["delivered_via"] == "review_wait"), "every piece sent went through review_wait: {fb:?}");

    let since = f.cairn(&["diff", &agent, "--since-review"]).ok().stdout;
    assert!(since.contains("+line 7 revised"), "{since}");
    assert!(!since.contains("alpha") && !since.contains("beta"), "hunks 1 and 3 did not change since the review: {since}");

    f.cairn(&["accept", &agent]).ok();
    let expected = names_py().replace("alpha = 1\n", "alpha = 100\n").replace("beta = 20\n", "beta = 200\n").replace("line 7\n", "line 7 revised\n");
    assert_eq!(f.read_str("names.py").unwrap(), expected, "hunks 1 and 3 and revision 2, not the rejected hunk");
}

#[test]
fn a_reason_survives_a_kill_of_the_server_and_is_delivered_once() {
    let f = Fixture::with_files(&[("names.py", names_py().as_str())]);
    let first = Client::start(&f, &["begin"]);
    let begun = first.expect("BEGUN");
    let (session, agent) = (begun["session"].as_str().unwrap().to_string(), begun["agent"].as_str().unwrap().to_string());
    wait_until(60, "the agent to be reviewing", || state_of(&f, &agent) == "reviewing");
    let mut pids = Vec::new();
    wait_until(60, "the cairn mcp server", || {
        pids = servers(&f);
        !pids.is_empty()
    });
    assert_eq!(pids.len(), 1, "one server: {pids:?}");
    let killed = std::process::Command::new("kill").args(["-9", &pids[0].to_string()]).status().unwrap();
    assert!(killed.success());
    wait_until(60, "the server to die", || !alive(pids[0]));
    drop(first);
    assert!(servers(&f).is_empty(), "no server runs while the human reviews");

    review_and_revise(&f, &agent, false);
    let pending = feedback_of(&f, &agent);
    assert!(pending.iter().any(|p| p["text"].as_str().is_some_and(|t| t.contains("keep the old name"))), "{pending:?}");
    assert!(pending.iter().all(|p| p["delivered_via"].is_null()), "nothing delivered yet: {pending:?}");

    let second = Client::start(&f, &["resume", &session]);
    let got = second.expect("FIRST");
    assert_eq!(got["decision"], "revise", "{got}");
    assert!(got["feedback"].as_str().is_some_and(|t| t.contains("keep the old name")), "{got}");
    let again = second.expect("SECOND");
    assert_ne!(again["decision"], "revise", "delivered twice: {again}");
    assert!(!again.to_string().contains("keep the old name"), "delivered twice: {again}");
    let shown = second.expect("GOT");
    assert_eq!(shown["revision"], 2, "{shown}");
    let pieces = shown["feedback"].as_array().unwrap_or_else(|| panic!("session_get has no feedback: {shown}"));
    assert!(pieces.iter().any(|p| p["delivered_via"] == "review_wait"), "{shown}");
    second.finish();

    let fb = feedback_of(&f, &agent);
    let delivered: Vec<&Value> = fb.iter().filter(|p| p["delivered_via"] == "review_wait").collect();
    assert_eq!(delivered.len(), 1, "exactly one delivery: {fb:?}");
    assert!(delivered[0]["text"].as_str().unwrap().contains("keep the old name"), "{fb:?}");
    assert_eq!(fb.len(), 1, "{fb:?}");
}
