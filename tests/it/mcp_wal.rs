//! A live MCP session whose overlay loses its `-wal` file (a cleanup tool deleting it while the
//! server runs) is never submitted as if all was well: `session_finish` and the file tools
//! fail naming what was lost, what the overlay still holds stays readable, and the
//! connection's own session, ended at the disconnect, errors with the reason instead of
//! passing for a session without changes (`tests/mcp/wal_loss.py`, the official Python SDK).

use crate::support::*;
use serde_json::Value;
use std::io::{BufRead, Write};
use std::process::Stdio;
use std::time::Duration;

/// The next `TAG JSON` line from the client, which must carry `tag`.
fn expect(lines: &std::sync::mpsc::Receiver<String>, tag: &str, stderr: &std::path::Path) -> Value {
    let line = lines.recv_timeout(Duration::from_secs(120)).unwrap_or_else(|_| panic!("no {tag} from the client: {}", std::fs::read_to_string(stderr).unwrap_or_default()));
    let (got, json) = line.split_once(' ').unwrap_or((&line, "null"));
    assert_eq!(got, tag, "{line}\n{}", std::fs::read_to_string(stderr).unwrap_or_default());
    serde_json::from_str(json).unwrap()
}

#[test]
fn an_mcp_session_whose_wal_was_deleted_fails_to_finish_naming_what_was_lost() {
    let f = Fixture::with_files(&[("keep.txt", "keep\n"), ("a.txt", "a\n")]);
    let before = f.tree();
    let stderr = f.dir.path().join("wal_loss.err");
    let mut child = std::process::Command::new(crate::mcp::sdk_python())
        .arg(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/wal_loss.py"))
        .arg(exe())
        .arg(&f.root)
        .env("CAIRN_HOME", &f.home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&stderr).unwrap())
        .spawn()
        .unwrap();
    let (tx, lines) = std::sync::mpsc::channel();
    let out = std::io::BufReader::new(child.stdout.take().unwrap());
    std::thread::spawn(move || out.lines().map_while(Result::ok).for_each(|l| drop(tx.send(l))));
    let mut gate = child.stdin.take().unwrap();
    let overlay = |agent: &str| f.root.join(format!(".agentfs/agent-{agent}.db"));

    let first = expect(&lines, "FIRST", &stderr);
    let (session, agent, implicit) = (first["session"].as_str().unwrap(), first["agent"].as_str().unwrap(), first["implicit"].as_str().unwrap());
    // The first write reaches the database file, as SQLite's own checkpoint would fold it.
    let db = rusqlite::Connection::open(overlay(agent)).unwrap();
    db.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(())).unwrap();
    drop(db);
    gate.write_all(b"go\n").unwrap();

    expect(&lines, "SECOND", &stderr);
    for a in [agent, implicit] {
        let wal = std::path::PathBuf::from(format!("{}-wal", overlay(a).display()));
        assert!(std::fs::metadata(&wal).is_ok_and(|m| m.len() > 0), "the session's writes are in {}", wal.display());
        std::fs::remove_file(&wal).unwrap();
    }
    gate.write_all(b"go\n").unwrap();

    let lost = expect(&lines, "LOST", &stderr);
    let finish = lost["finish"]["message"].as_str().unwrap();
    for what in ["lost changes", "3 path(s)", "a.txt", "b.txt", "keep.txt", "-wal", "Nothing was submitted"] {
        assert!(finish.contains(what), "no {what:?} in: {finish}");
    }
    assert!(!finish.contains("implicit"), "{finish}");
    assert_eq!(lost["finish"]["error"], "overlay", "{lost}");
    assert_eq!(lost["again"], lost["finish"], "a retry fails the same way");
    assert!(lost["write"]["message"].as_str().unwrap().contains("lost changes"), "{lost}");
    // What is still readable is there: the first version of a.txt, nothing else.
    let diff = lost["diff"]["diff"].as_str().unwrap();
    assert!(diff.contains("+the first version, kept") && !diff.contains("b.txt") && !diff.contains("keep.txt"), "{diff}");
    expect(&lines, "DONE", &stderr);
    assert!(child.wait().unwrap().success(), "{}", std::fs::read_to_string(&stderr).unwrap_or_default());

    let st = f.status(agent);
    assert_eq!((st.state.as_str(), st.submission.is_none()), ("executing", true), "nothing submitted: {st:?}");
    assert_eq!(cairn::tasks::sessions::get_session(&f.project(), session).unwrap().row.status, "active");
    assert!(overlay(agent).is_file(), "the overlay is kept");
    // The connection's own session lost all it wrote: errored with the reason, not taken
    // for a session without changes and cancelled.
    wait_until(30, "the implicit session to end", || f.status(implicit).state.as_str() != "executing");
    let st = f.status(implicit);
    assert_eq!(st.state.as_str(), "errored", "{st:?}");
    let error = st.error.unwrap_or_default();
    assert!(error.contains("lost changes") && error.contains("implicit.txt") && error.contains("implicit2.txt"), "{error}");
    assert_eq!(f.tree(), before, "the working tree changed");
}
