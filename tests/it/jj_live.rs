//! An agent at work is a jj change (`[jj] create_change_on_spawn`): a wrapped CLI's and an MCP
//! session's writes show in `jj log` as they happen, `@` never moves; each Cairn action is as
//! few jj operations as the CLI allows, each named for Cairn; `[jj] enabled = true` without a
//! usable jj is an error where the user looks, not silently off.

use crate::jj_changes::{change_of, jj, normalized, repo, user_files, user_jj, AGENT_A, AGENT_B, BASE};
use crate::support::*;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::{Command, Stdio};

/// `jj file show -r CHANGE PATH` as the user runs it, `None` when it fails (no such path).
fn shown(f: &Fixture, change: &str, path: &str) -> Option<String> {
    let out = Command::new(jj()).current_dir(&f.root).env("JJ_CONFIG", "/dev/null").args(["--ignore-working-copy", "file", "show", "-r", change, path]).output().unwrap();
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The agent's jj change and its status, once it has one.
fn change_now(f: &Fixture, id: &str) -> Option<(String, String)> {
    let s = f.cairn(&["status", id, "--json"]).ok().json();
    Some((s["jj"]["change"].as_str().filter(|c| !c.is_empty())?.to_string(), s["jj"]["status"].as_str()?.to_string()))
}

/// The operations since `mark` (an operation id), oldest first, as `user | description` with
/// the user's `@host` dropped.
fn ops_since(f: &Fixture, mark: &str) -> Vec<String> {
    let log = user_jj(&f.root, &["--ignore-working-copy", "op", "log", "--no-graph", "--limit", "200", "-T", "id ++ \" \" ++ user ++ \" | \" ++ description.first_line() ++ \"\\n\""]);
    let mut out: Vec<String> = log
        .lines()
        .take_while(|l| !l.starts_with(mark))
        .map(|l| {
            let rest = l.split_once(' ').unwrap().1;
            let (user, what) = rest.split_once(" | ").unwrap();
            format!("{} | {what}", user.rsplit_once('@').map_or(user, |(u, _)| u))
        })
        .collect();
    out.reverse();
    out
}

fn op_mark(f: &Fixture) -> String {
    user_jj(&f.root, &["--ignore-working-copy", "op", "log", "--no-graph", "--limit", "1", "-T", "id"])
}

/// What `action` added to `jj op log`, without the ids descriptions end with (`edit commit
/// 3f2a...` is `edit`).
fn ops_of(f: &Fixture, action: impl FnOnce()) -> Vec<String> {
    let mark = op_mark(f);
    action();
    let cut = |l: String| match l.rsplit_once(' ') {
        Some((rest, id)) if id.len() >= 12 && id.chars().all(|c| c.is_ascii_hexdigit()) => rest.trim_end_matches(" commit").trim_end_matches(" operation").to_string(),
        _ => l,
    };
    ops_since(f, &mark).into_iter().map(cut).collect()
}

#[test]
fn a_wrapped_agent_is_a_jj_change_while_it_runs_and_follows_its_writes() {
    let f = repo(true, BASE);
    let at = user_jj(&f.root, &["log", "--no-graph", "-r", "@", "-T", "commit_id"]);
    let files = user_files(&f);
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    f.home_config(&format!("[jj]\nprogram = \"{}\"\n[wrap]\nhost_ports = [{port}]\n", jj().display()));
    // Writes, tells the test, waits for a byte; twice.
    let py = format!("import socket\ndef step(path, text):\n    open(path, 'w').write(text)\n    s = socket.create_connection(('127.0.0.1', {port}))\n    s.recv(1)\nstep('notes.txt', 'one\\n')\nstep('notes.txt', 'one\\ntwo\\n')\n");
    let mut child = f.cmd().args(["wrap", "--task", "take notes", "--", "python3", "-c", &py]).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    let (mut first, _) = l.accept().unwrap();
    let id = {
        let mut stderr = child.stderr.take().unwrap();
        let (mut err, mut buf) = (String::new(), [0u8; 1]);
        while !err.contains('\n') {
            assert_eq!(stderr.read(&mut buf).unwrap(), 1, "no session line: {err}");
            err.push(buf[0] as char);
        }
        err.split("wrap session ").nth(1).unwrap().split(':').next().unwrap().to_string()
    };
    // The agent still runs (it waits on the test): its change is in `jj log` with what it wrote.
    wait_until(20, "the first write in the agent's jj change", || change_now(&f, &id).is_some_and(|(c, _)| shown(&f, &c, "notes.txt").as_deref() == Some("one\n")));
    let (change, status) = change_now(&f, &id).unwrap();
    assert_eq!((f.status(&id).state.as_str(), status.as_str()), ("executing", "working"));
    let log = user_jj(&f.root, &["log"]);
    assert!(log.contains(&format!("cairn-{id}@")) && log.contains(&format!("cairn: {id} take notes")), "jj log shows the agent at work: {log}");
    assert_eq!(user_jj(&f.root, &["log", "--no-graph", "-r", "@", "-T", "commit_id"]), at, "@ moved");
    assert_eq!(user_files(&f), files, "the user's files changed");
    // A later write: the same change follows.
    first.write_all(b"g").unwrap();
    let (mut second, _) = l.accept().unwrap();
    wait_until(20, "the second write in the agent's jj change", || shown(&f, &change, "notes.txt").as_deref() == Some("one\ntwo\n"));
    assert_eq!(change_now(&f, &id).unwrap(), (change.clone(), "working".to_string()));
    second.write_all(b"g").unwrap();
    assert!(child.wait().unwrap().success());
    // Done: the same change holds exactly the proposal, its workspace is gone, @ never moved.
    assert_eq!(f.status(&id).state.as_str(), "reviewing");
    assert_eq!(change_of(&f, &id), (change.clone(), "proposed".to_string()));
    assert_eq!(normalized(&user_jj(&f.root, &["diff", "--git", "-r", &change])), normalized(&f.cairn(&["diff", &id]).ok().stdout));
    assert!(!user_jj(&f.root, &["workspace", "list"]).contains(&format!("cairn-{id}")));
    assert_eq!(user_jj(&f.root, &["log", "--no-graph", "-r", "@", "-T", "commit_id"]), at, "@ moved");
    assert_eq!(user_files(&f), files, "the user's files changed");
    // Each sync of its writes was one operation, named for the agent.
    let writes: Vec<String> = ops_since(&f, "-").into_iter().filter(|l| l.starts_with(&format!("cairn write {id} "))).collect();
    assert!(writes.len() >= 2 && writes.iter().all(|l| l.ends_with("| snapshot working copy")), "{writes:#?}");
    f.cairn(&["accept", &id]).ok();
    assert_eq!(f.read_str("notes.txt").unwrap(), "one\ntwo\n");
}

#[test]
fn an_mcp_session_is_a_jj_change_from_its_begin_to_its_finish() {
    let f = repo(false, BASE);
    let p = f.project();
    let t = cairn::tasks::create(&p, "agent:x", "keep notes", "", &[], Vec::new()).unwrap();
    let s = cairn::tasks::sessions::begin(&p, "agent:x", &t.row.id, "key").unwrap();
    let (sid, id) = (s.row.id.clone(), s.row.agent.clone());
    let (change, status) = change_of(&f, &id);
    assert_eq!(status, "working");
    assert!(user_jj(&f.root, &["diff", "-r", &change, "--name-only"]).is_empty(), "made empty");
    let tool = |name: &str, args: &[serde_json::Value]| cairn::tasks::sessions::tool(&p, "agent:x", &sid, name, args, &Default::default()).unwrap().unwrap();
    let wrote = ops_of(&f, || {
        tool("write_file", &["notes.txt".into(), "n\n".into()]);
    });
    // The agent's workspace is attached while it works: a write is one snapshot of it.
    assert_eq!(wrote, [format!("cairn write {id} | snapshot working copy")]);
    assert_eq!(shown(&f, &change, "notes.txt").as_deref(), Some("n\n"));
    assert!(ops_of(&f, || {
        tool("read_file", &["notes.txt".into()]);
    })
    .is_empty());
    let wrote = ops_of(&f, || {
        tool("write_file", &["keep.txt".into(), "kept\n".into()]);
    });
    assert_eq!(wrote, [format!("cairn write {id} | snapshot working copy")]);
    assert_eq!(shown(&f, &change, "keep.txt").as_deref(), Some("kept\n"));
    // Finished: the workspace is forgotten and the change described by the agent's summary.
    let proposed = ops_of(&f, || {
        cairn::tasks::sessions::finish(&p, "agent:x", &sid, "notes kept").unwrap();
    });
    assert_eq!(proposed, [format!("cairn propose {id} | forget workspace cairn-{id}"), format!("cairn propose {id} | describe")]);
    assert_eq!(change_of(&f, &id), (change.clone(), "proposed".to_string()));
    assert!(user_jj(&f.root, &["log", "--no-graph", "-r", &change, "-T", "description"]).starts_with(&format!("cairn: {id} notes kept\n")));
}

#[test]
fn each_cairn_action_is_as_few_jj_operations_as_the_cli_allows() {
    let f = repo(true, BASE);
    let (mut a, mut b, mut c) = (String::new(), String::new(), String::new());
    // The user's files are as jj last saw them: no snapshot of theirs in any action below.
    let ran = ops_of(&f, || a = f.run_ok(AGENT_A).id);
    let spawn_and_propose = |id: &str| {
        vec![
            format!("cairn spawn {id} | add workspace 'cairn-{id}'"),
            format!("cairn spawn {id} | create initial working-copy commit in workspace cairn-{id}"),
            format!("cairn propose {id} | snapshot working copy"),
            format!("cairn propose {id} | forget workspace cairn-{id}"),
        ]
    };
    assert_eq!(ran, spawn_and_propose(&a));
    assert_eq!(ops_of(&f, || b = f.run_ok(AGENT_B).id), spawn_and_propose(&b));
    // Review actions: one `jj diffedit` per hunk decision, one abandon per reject.
    assert_eq!(ops_of(&f, || drop(f.cairn(&["accept-hunk", &a, "f.txt", "1"]).ok())), [format!("cairn review {a} | edit")]);
    assert_eq!(ops_of(&f, || drop(f.cairn(&["reject-hunk", &a, "f.txt", "1"]).ok())), [format!("cairn review {a} | edit")]);
    assert_eq!(ops_of(&f, || drop(f.cairn(&["reject", &b]).ok())), [format!("cairn reject {b} | abandon")]);
    // Accept: jj snapshots the files that landed (so `@` holds them and a `jj undo` of the
    // abandon leaves them alone), then the abandon.
    let accepted = [format!("cairn accept {a} | snapshot working copy"), format!("cairn accept {a} | abandon")];
    assert_eq!(ops_of(&f, || drop(f.cairn(&["accept", &a]).ok())), accepted);
    // Undo reverts the abandon; the change is written again only when hunks were decided
    // before (the undo gives all of the proposal back).
    assert_eq!(ops_of(&f, || drop(f.cairn(&["undo", &a]).ok())), [format!("cairn undo {a} | revert"), format!("cairn undo {a} | edit")]);
    // The undo wrote the user's files: jj sees them at the user's next command (else the spawn's
    // `jj workspace add` snapshots them first, one operation more).
    user_jj(&f.root, &["st"]);
    let ran = ops_of(&f, || c = f.run_ok("write_file('sub/c.txt', 'c\\n')\n").id);
    assert_eq!(ran, spawn_and_propose(&c));
    f.cairn(&["accept", &c]).ok();
    assert_eq!(ops_of(&f, || drop(f.cairn(&["undo", &c]).ok())), [format!("cairn undo {c} | revert")]);
    // Without `create_change_on_spawn`, the change is made at review in one go.
    f.write(".cairn.toml", "[jj]\ncreate_change_on_spawn = false\n");
    user_jj(&f.root, &["commit", "-m", "config"]);
    let mut d = String::new();
    let ran = ops_of(&f, || d = f.run_ok(AGENT_B).id);
    let d = d.as_str();
    assert_eq!(
        ran,
        [
            format!("cairn propose {d} | add workspace 'cairn-{d}'"),
            format!("cairn propose {d} | create initial working-copy commit in workspace cairn-{d}"),
            format!("cairn propose {d} | snapshot working copy"),
            format!("cairn propose {d} | forget workspace cairn-{d}"),
        ]
    );
    assert_eq!(change_of(&f, d).1, "proposed");
}

#[test]
fn enabled_true_without_a_usable_jj_is_an_error_where_the_user_looks() {
    let f = repo(true, BASE);
    f.home_config("[jj]\nenabled = true\nprogram = \"/nonexistent/jj\"\n");
    // Cairn still works: the proposal is reviewed and accepted as without jj.
    let a = f.run_ok(AGENT_A);
    let st = f.cairn(&["status", &a.id]).ok().stdout;
    assert!(st.contains("jj        ERROR: jj: cannot run /nonexistent/jj") && st.contains("[jj] enabled = true insists on"), "{st}");
    assert!(st.contains("change    not recorded: jj: cannot run /nonexistent/jj"), "the agent says it is not a jj change: {st}");
    let overview = f.cairn(&["status"]).ok();
    assert!(overview.stdout.contains("jj        ERROR: "), "{overview:?}");
    assert_eq!(f.cairn(&["status", "--json"]).ok().json()["jj"]["error"], true);
    let doctor = f.cairn(&["doctor"]);
    assert!(doctor.stdout.contains("jj: ERROR (jj: cannot run /nonexistent/jj") && doctor.stdout.contains("problems found"), "{doctor:?}");
    assert_eq!(doctor.code, 1, "{doctor:?}");
    let report = f.cairn(&["doctor", "--json"]).json();
    assert_eq!((report["ok"].as_bool(), report["jj"]["error"].as_bool()), (Some(false), Some(true)), "{report}");
    // The same jj missing under "auto": off, said, not an error.
    f.home_config("[jj]\nprogram = \"/nonexistent/jj\"\n");
    let report = f.cairn(&["doctor", "--json"]).json();
    assert_eq!((report["ok"].as_bool(), report["jj"]["error"].as_bool()), (Some(true), Some(false)), "{report}");
    assert!(f.cairn(&["status"]).ok().stdout.contains("jj        off: "));
    f.cairn(&["accept", &a.id]).ok();
    // `true` in a project that is no jj repository at all.
    let g = Fixture::with_files(&[("a.txt", "a\n")]);
    g.home_config("[jj]\nenabled = true\n");
    g.init();
    let overview = g.cairn(&["status"]).ok().stdout;
    assert!(overview.contains("jj        ERROR: no .jj/ in the project root ([jj] enabled = true needs a jj repository)"), "{overview}");
    assert_eq!(g.cairn(&["doctor"]).code, 1);
}
