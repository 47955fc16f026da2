//! Who an MCP server acts as (seed 004) and what that identity may do, through the official
//! Python SDK: two servers for the same client are two actors, `identity` names the client,
//! `--actor` overrides; re-claiming your own task is a no-op and another actor's claim is
//! refused; a session without heartbeats shows `stalled` (its last heartbeat written into
//! `bin.db` as an old one, not waited for) until it beats again.

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
fn is_instance_of(actor: &str, client: &str) -> bool {
    actor.strip_prefix(&format!("agent:{client}-")).is_some_and(|s| s.len() == 6 && s.chars().all(|c| c.is_ascii_hexdigit()))
}

#[test]
fn two_instances_of_one_mcp_client_are_two_actors_and_claims_hold() {
    let f = Fixture::with_files(&[("a.txt", "a\n")]);
    let r = python(&f, "identity.py", &[]);
    let ids = r["identities"].as_array().unwrap();
    let (one, two) = (ids[0]["actor"].as_str().unwrap(), ids[1]["actor"].as_str().unwrap());
    assert!(is_instance_of(one, "twin-agent") && is_instance_of(two, "twin-agent") && one != two, "{r}");
    assert_eq!(ids[2]["actor"], "agent:fixed", "--actor overrides: {r}");
    for id in ids {
        assert_eq!(id["client"], json!({ "name": "twin-agent", "version": "1.0" }), "{r}");
    }
    assert_eq!(r["other"], two);

    let claimed = format!("already claimed by {one}");
    for refusal in ["claims_by_other", "begin_by_other"] {
        assert!(r[refusal].as_str().unwrap().contains(&claimed), "{refusal}: {r}");
    }
    assert!(r["expected_other"].as_str().unwrap().contains(&format!("this server acts as {two}")), "{r}");
    assert!(r["others_session_call"].as_str().unwrap().contains(&format!("belongs to {one}")), "{r}");
    assert_eq!(r["session_actor"], one);

    // Claimed once (the re-claim and the session's own claim changed nothing), never by the
    // other instance; the cancel gave the claim back.
    let t = f.cairn(&["task", "show", r["task"].as_str().unwrap(), "--json"]).ok().json();
    let prov = t["provenance"].as_array().unwrap();
    let claims: Vec<&Value> = prov.iter().filter(|p| p["did"] == "claimed").collect();
    assert_eq!(claims.len(), 1, "{prov:?}");
    assert_eq!(claims[0]["who"], one);
    assert!(prov.iter().all(|p| p["who"] != two), "{prov:?}");
    assert!(t["assignee"].is_null(), "{t}");
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
