//! Who an MCP server acts as (seed 004) and what that identity may do, through the official
//! Python SDK: the servers one client process starts are one actor, also when it starts one
//! again after a `kill -9` (it goes on with its sessions), and two client processes are two;
//! `identity` names the client, `--actor` overrides; re-claiming your own task is a no-op and
//! another actor's claim or session is refused, saying how to continue it; a session without
//! heartbeats shows `stalled` (its last heartbeat written into `bin.db` as an old one, not
//! waited for) until it beats again.

use crate::support::*;
use cairn::tasks::{self, sessions};
use serde_json::{json, Value};
use std::path::Path;

/// Runs `tests/mcp/<script>` with the binary, the project root and `args`; its last line.
pub fn python(f: &Fixture, script: &str, args: &[&str]) -> Value {
    let out = std::process::Command::new(crate::mcp::sdk_python())
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp").join(script))
        .arg(exe())
        .arg(&f.root)
        .args(args)
        .env("CAIRN_HOME", &f.home)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{script} failed:\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_str(stdout.lines().last().unwrap_or_default()).unwrap_or_else(|e| panic!("{script}: {e}: {stdout}"))
}

/// `agent:<client>-` and six hex digits.
fn is_actor_of(actor: &str, client: &str) -> bool {
    actor.strip_prefix(&format!("agent:{client}-")).is_some_and(|s| s.len() == 6 && s.chars().all(|c| c.is_ascii_hexdigit()))
}

#[test]
fn servers_of_one_client_process_are_one_actor_and_claims_hold_between_processes() {
    let f = Fixture::with_files(&[("a.txt", "a\n")]);
    let r = python(&f, "identity.py", &["first"]);
    let ids = r["identities"].as_array().unwrap();
    let me = ids[0]["actor"].as_str().unwrap();
    assert!(is_actor_of(me, "twin-agent"), "{r}");
    assert_eq!(ids[1]["actor"], me, "two servers of one client process: {r}");
    assert_eq!(ids[2]["actor"], "agent:fixed", "--actor overrides: {r}");
    for id in ids {
        assert_eq!(id["client"], json!({ "name": "twin-agent", "version": "1.0" }), "{r}");
    }
    assert_eq!(r["session_actor"], me);
    let (task, session) = (r["task"].as_str().unwrap(), r["session"].as_str().unwrap());

    // Another client process with the same name is another actor, refused everywhere.
    let o = python(&f, "identity.py", &["other", task, session, me]);
    let other = o["actor"].as_str().unwrap();
    assert!(is_actor_of(other, "twin-agent") && other != me, "{o}");
    let claimed = format!("already claimed by {me}");
    for refusal in ["claims_by_other", "begin_by_other"] {
        assert!(o[refusal].as_str().unwrap().contains(&claimed), "{refusal}: {o}");
    }
    assert!(o["expected_other"].as_str().unwrap().contains(&format!("this server acts as {other}")), "{o}");
    let foreign = o["others_session_call"].as_str().unwrap();
    assert!(foreign.contains(&format!("belongs to {me}")) && foreign.contains(&format!("--actor {me}")), "says how to continue it: {o}");

    // Claimed once (the re-claims, the twin server's included, and the session's own claim
    // changed nothing), never by the other process; the cancel gives the claim back.
    sessions::cancel(&f.project(), me, session, "done with the test").unwrap();
    let t = f.cairn(&["task", "show", task, "--json"]).ok().json();
    let prov = t["provenance"].as_array().unwrap();
    let claims: Vec<&Value> = prov.iter().filter(|p| p["did"] == "claimed").collect();
    assert_eq!(claims.len(), 1, "{prov:?}");
    assert_eq!(claims[0]["who"], me);
    assert!(prov.iter().all(|p| p["who"] != other), "{prov:?}");
    assert!(t["assignee"].is_null(), "{t}");
}

/// The paths a proposal changes, from `cairn diff`.
fn changed(f: &Fixture, agent: &str) -> Vec<String> {
    let diff = f.cairn(&["diff", agent]).ok().stdout;
    diff.lines().filter_map(|l| l.strip_prefix("diff --git a/")).map(|l| l.split(' ').next().unwrap_or("").to_string()).collect()
}

#[test]
fn a_client_whose_server_is_killed_goes_on_with_its_sessions_as_the_same_actor() {
    let f = Fixture::with_files(&[("a.txt", "a\n")]);
    let r = python(&f, "restart.py", &["restart"]);
    let me = r["actor"].as_str().unwrap();
    assert!(is_actor_of(me, "restart-agent"), "{r}");
    let state = |agent: &Value| f.status(agent.as_str().unwrap()).state.as_str().to_string();

    // The session it began, written before and after the kill, finished without --actor.
    assert_eq!(state(&r["agent"]), "reviewing", "{r}");
    assert_eq!(changed(&f, r["agent"].as_str().unwrap()), ["after.txt", "before.txt"]);
    // The connection's own session of the killed server, gone on with and finished.
    assert_eq!(state(&r["own_agent"]), "reviewing", "{r}");
    assert_eq!(changed(&f, r["own_agent"].as_str().unwrap()), ["own-after.txt", "own-before.txt"]);
    // The wrapped server beside it: its own session, a proposal at its disconnect.
    assert_eq!(state(&r["side_agent"]), "reviewing", "{r}");
    assert_eq!(changed(&f, r["side_agent"].as_str().unwrap()), ["side.txt"]);
    let open: Vec<String> = sessions::list(&f.project(), &Default::default()).unwrap().into_iter().filter(|s| s.row.status == "active").map(|s| s.row.id).collect();
    assert_eq!(open, [r["open"].as_str().unwrap()], "nothing stranded but the session left open on purpose");

    // Another client process is another actor: refused, told how to continue.
    let session = r["open"].as_str().unwrap();
    let o = python(&f, "restart.py", &["other", session, me]);
    for refusal in ["write", "finish"] {
        let m = o[refusal].as_str().unwrap();
        assert!(m.contains(&format!("session {session} belongs to {me}")) && m.contains(&format!("--actor {me}")), "{refusal}: {o}");
    }
    // Following the hint continues it.
    let w = python(&f, "restart.py", &["owner", session, me]);
    assert_eq!(w["status"], "finished", "{w}");
    assert_eq!(state(&r["open_agent"]), "reviewing");
    assert_eq!(changed(&f, r["open_agent"].as_str().unwrap()), ["open.txt", "owner.txt"]);
}

#[test]
fn an_mcp_session_without_heartbeats_is_stalled_until_it_beats() {
    let f = Fixture::with_files(&[("a.txt", "a\n")]);
    let p = f.project();
    let t = tasks::create(&p, "human:alice", "quiet", "", &[], vec![]).unwrap();
    let s = sessions::begin(&p, "agent:quiet", &t.row.id, "k").unwrap();
    assert_eq!(s.health, "active");
    let old = cairn::time::now_ms() - sessions::STALLED_AFTER_MS - 1_000;
    let db = rusqlite::Connection::open(f.root.join(".agentfs/bin.db")).unwrap();
    assert_eq!(db.execute("UPDATE sessions SET heartbeat_ms = ?1 WHERE id = ?2", rusqlite::params![old, s.row.id]).unwrap(), 1);
    drop(db);

    let sid = s.row.id.as_str();
    let calls = json!([
        ["session_list", { "health": "stalled" }],
        ["session_get", { "session": sid }],
        ["task_list", { "execution": "stalled" }],
        ["session_list", { "health": "active" }],
        ["session_heartbeat", { "session": sid, "progress": "back at it" }],
        ["session_list", { "health": "stalled" }],
        ["session_get", { "session": sid }],
        ["task_list", { "execution": "active" }],
    ]);
    let r = python(&f, "calls.py", &[&calls.to_string(), "--actor", "agent:quiet"]);
    let v: Vec<&Value> = r.as_array().unwrap().iter().map(|c| {
        assert_eq!(c["ok"], true, "{r}");
        &c["value"]
    }).collect();
    let ids = |list: &Value, key: &str| -> Vec<String> { list[key].as_array().unwrap().iter().map(|x| x["id"].as_str().unwrap().to_string()).collect() };
    assert_eq!(ids(v[0], "sessions"), [sid], "session_list(health=stalled): {r}");
    assert_eq!((v[1]["health"].as_str(), v[1]["status"].as_str()), (Some("stalled"), Some("active")), "{r}");
    assert_eq!(ids(v[2], "tasks"), [t.row.id.clone()], "task_list(execution=stalled): {r}");
    assert!(ids(v[3], "sessions").is_empty(), "{r}");
    assert_eq!(v[4]["health"], "active", "{r}");
    assert!(ids(v[5], "sessions").is_empty(), "a heartbeat ends the stall: {r}");
    assert_eq!((v[6]["health"].as_str(), v[6]["progress"].as_str()), (Some("active"), Some("back at it")), "{r}");
    assert_eq!(ids(v[7], "tasks"), [t.row.id.clone()], "{r}");
}
