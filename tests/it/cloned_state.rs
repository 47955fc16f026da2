//! A repository can carry Cairn's state: `git add -f .agentfs .grail` ships it with every
//! clone, and git overwrites the files of an ignored directory on a pull. None of it is used:
//! a command refuses it, `cairn init` sets it aside (nothing deleted), and nothing in it runs,
//! deletes or writes outside the project (`:help cairn-state-origin`).

use crate::support::*;
use std::path::Path;
use std::process::Command as Proc;

fn git(dir: &Path, args: &[&str]) {
    let out = Proc::new("git").args(["-c", "user.email=a@b", "-c", "user.name=a", "-c", "init.defaultBranch=main"]).args(args).current_dir(dir).output().unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

fn sql(db: &Path, batch: &str) {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.execute_batch(batch).unwrap();
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);").unwrap();
}

#[test]
fn a_state_that_came_with_a_clone_is_set_aside_and_nothing_in_it_runs_deletes_or_writes_outside() {
    // The attacker's repository: a real project with an agent, its state then doctored.
    let a = Fixture::with_files(&[("a.txt", "a\n")]);
    let s = a.run_ok("write_file('b.txt', 'b')");
    let victim = a.dir.path().join("victim");
    std::fs::create_dir_all(&victim).unwrap();
    std::fs::write(victim.join("keep.txt"), "the user's\n").unwrap();
    let walk_out = format!("{}{}", "../".repeat(12), victim.display());
    let copy = |id: &str, state: &str| {
        format!(
            "CREATE TEMP TABLE t AS SELECT * FROM agents WHERE id = '{}'; UPDATE t SET seq = NULL, id = '{id}', state = '{state}', created_ms = 1, state_changed_ms = 1; INSERT INTO agents SELECT * FROM t; DROP TABLE t;",
            s.id
        )
    };
    sql(&a.root.join(".agentfs/bin.db"), &format!("{} {}", copy(&walk_out, "rejected"), copy(&format!("x/{walk_out}"), "queued")));
    std::os::unix::fs::symlink(&victim, a.root.join(".grail/links-out")).unwrap();
    for db in ["stable.db", &format!("agent-{}.db", s.id)] {
        let _ = rusqlite::Connection::open(a.root.join(".agentfs").join(db)).map(|c| c.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);"));
    }
    git(&a.root, &["init", "-q"]);
    git(&a.root, &["add", "-f", "."]);
    git(&a.root, &["commit", "-q", "-m", "with Cairn's state"]);

    // The user clones it and uses Cairn there.
    let f = Fixture::new();
    std::fs::remove_dir(&f.root).unwrap();
    git(f.dir.path(), &["clone", "-q", &a.root.display().to_string(), &f.root.display().to_string()]);
    assert!(f.root.join(".agentfs/bin.db").is_file(), "the clone carries the state");
    for args in [vec!["list-agents"], vec!["gc"], vec!["up"]] {
        let r = f.cairn(&args);
        assert_eq!(r.code, 1, "{args:?} used a state it did not make: {r:?}");
        assert!(r.stderr.contains("is not this Cairn's state") && r.stderr.contains("cairn init"), "{args:?}: {}", r.stderr);
    }
    let r = f.cairn(&["init"]).ok();
    assert!(r.stderr.contains("set aside"), "init says so: {}", r.stderr);
    assert_eq!(f.cairn(&["list-agents", "--all", "--json"]).ok().json(), serde_json::json!([]), "none of the attacker's agents is listed");
    f.cairn(&["gc"]).ok();
    let mine = f.run_ok("write_file('c.txt', 'c')");
    f.cairn(&["accept", &mine.id]).ok();
    assert_eq!(f.read_str("c.txt").as_deref(), Some("c"));
    assert_eq!(std::fs::read_to_string(victim.join("keep.txt")).unwrap(), "the user's\n", "nothing outside was deleted");
    assert_eq!(std::fs::read_dir(&victim).unwrap().count(), 1, "nothing was written outside");
    let aside: Vec<_> = std::fs::read_dir(f.root.join(".agentfs")).unwrap().flatten().filter(|e| e.file_name().to_string_lossy().starts_with("set-aside-")).collect();
    assert_eq!(aside.len(), 1);
    assert!(aside[0].path().join("agentfs/bin.db").is_file() && aside[0].path().join("grail").is_dir(), "set aside whole, nothing deleted");
    assert!(f.cairn(&["doctor"]).stdout.contains("set aside by init"), "doctor names it");

    // A pull overwrites the (ignored) bin.db with the attacker's: refused again.
    let shipped = std::fs::read(aside[0].path().join("agentfs/bin.db")).unwrap();
    let bin = f.root.join(".agentfs/bin.db");
    std::fs::remove_file(&bin).unwrap();
    std::fs::write(&bin, shipped).unwrap();
    let r = f.cairn(&["list-agents"]);
    assert!(r.code == 1 && r.stderr.contains("bin.db was replaced"), "{r:?}");
    let doc = f.cairn(&["doctor"]);
    assert!(doc.code == 1 && doc.stdout.contains("state: not this Cairn's"), "{doc:?}");
}

/// What a pull can add to the user's own state runs nothing: an overlay template there is not
/// used (new overlays come from one in `CAIRN_HOME`), and no trigger fires in a database.
#[test]
fn a_template_or_trigger_planted_in_the_state_changes_no_proposal() {
    let f = Fixture::with_files(&[("a.txt", "a\n")]);
    let planted = f.root.join(".agentfs/overlay-v4.template");
    let evil = "CREATE TABLE IF NOT EXISTS entries(path TEXT PRIMARY KEY, kind INTEGER NOT NULL, mode INTEGER NOT NULL, content BLOB, hash BLOB) WITHOUT ROWID;
         INSERT OR REPLACE INTO entries VALUES('.envrc', 0, 420, X'6375726c', NULL);
         CREATE TRIGGER IF NOT EXISTS evil AFTER INSERT ON entries BEGIN INSERT OR REPLACE INTO entries VALUES('Makefile', 0, 420, X'6576696c', NULL); END;";
    sql(&planted, evil);
    let s = f.run_ok("write_file('b.txt', 'b')\nwrite_file('c.txt', 'c')");
    let changed: Vec<String> = f.cairn(&["diff", &s.id, "--stat"]).ok().stdout.lines().map(String::from).collect();
    assert!(changed.iter().any(|l| l.contains("b.txt")) && !changed.iter().any(|l| l.contains(".envrc") || l.contains("Makefile")), "{changed:?}");
    // Triggers in the overlay's schema (a pull replacing it would leave them), on the writes a
    // hunk decision makes: none fires.
    let overlay = f.root.join(format!(".agentfs/agent-{}.db", s.id));
    let fire = |when: &str| format!("CREATE TRIGGER evil_{when} AFTER {when} ON entries BEGIN INSERT OR REPLACE INTO entries VALUES('Makefile', 0, 420, X'6576696c', NULL); END;");
    sql(&overlay, &format!("{} {} {}", fire("UPDATE"), fire("DELETE"), fire("INSERT")));
    f.cairn(&["reject-hunk", &s.id, "c.txt", "1"]).ok();
    let r = f.cairn(&["accept", &s.id]).ok();
    assert!(r.stdout.contains("1 written"), "{r:?}");
    assert_eq!(f.read("Makefile"), None, "no trigger ran");
    assert_eq!(f.read_str("b.txt").as_deref(), Some("b"));
}

/// A pull can overwrite a database's WAL (SQLite replays it into the database on open): the
/// replaced file is refused like a replaced database.
#[test]
fn a_wal_file_replaced_under_the_state_is_refused() {
    let f = Fixture::with_files(&[("a.txt", "a\n")]);
    f.run_ok("write_file('b.txt', 'b')");
    let wal = f.root.join(".agentfs/bin.db-wal");
    let bytes = std::fs::read(&wal).unwrap();
    // Cairn's own: removed by another program (checkpointed, with its index) and made again on
    // the next open, it is fine.
    sql(&f.root.join(".agentfs/bin.db"), "");
    std::fs::remove_file(&wal).unwrap();
    let _ = std::fs::remove_file(f.root.join(".agentfs/bin.db-shm"));
    f.cairn(&["list-agents"]).ok();
    f.cairn(&["list-agents"]).ok();
    // Written anew by someone else (as git writes a file): refused, naming it.
    std::fs::remove_file(&wal).unwrap();
    std::fs::write(&wal, &bytes).unwrap();
    let r = f.cairn(&["list-agents"]);
    assert!(r.code == 1 && r.stderr.contains("bin.db-wal was replaced"), "{r:?}");
}

/// Undo, the rollback of an interrupted accept and its resumption write the paths the accept
/// journal names: a journal that names a path accept never writes (`.git/hooks/...`, outside
/// the project), damaged or not Cairn's, writes nothing.
#[test]
fn a_journal_naming_a_path_accept_never_writes_writes_nothing() {
    let f = Fixture::with_files(&[("a.txt", "a\n"), (".git/hooks/.keep", "")]);
    let hook = "#!/bin/sh\ntouch /tmp/never\n";
    let row = |id: &str, path: &str| {
        format!(
            "INSERT OR REPLACE INTO journal(agent_id, path, old_hash, old_mode, old_content, new_hash, new_mode) VALUES ('{id}', '{path}', X'{}', 493, X'{}', NULL, NULL);",
            blake3::hash(hook.as_bytes()).to_hex(),
            hook.bytes().map(|b| format!("{b:02x}")).collect::<String>()
        )
    };
    let bin = f.root.join(".agentfs/bin.db");
    // An accepted agent: undo.
    let accepted = f.run_ok("write_file('b.txt', 'b')");
    f.cairn(&["accept", &accepted.id]).ok();
    let pending = f.run_ok("write_file('c.txt', 'c')");
    // (Paths that leave the project were refused before; these are inside it, protected.)
    let paths = [".git/hooks/post-checkout", ".cairn.toml", "sub/.GIT/config"];
    sql(&bin, &paths.iter().map(|p| row(&accepted.id, p)).collect::<String>());
    let undo = f.cairn(&["undo", &accepted.id]);
    assert_eq!(undo.code, 1, "{undo:?}");
    assert!(undo.stderr.contains("names a path Cairn never writes"), "{}", undo.stderr);
    // An accept left pending: rollback (reject) and resumption (accept).
    let mut batch = format!("UPDATE agents SET accept_pending = 1 WHERE id = '{}';", pending.id);
    batch.extend(paths.iter().map(|p| row(&pending.id, p)));
    sql(&bin, &batch);
    for args in [vec!["reject", &pending.id], vec!["accept", &pending.id]] {
        let r = f.cairn(&args);
        assert_eq!(r.code, 1, "{args:?}: {r:?}");
        assert!(r.stderr.contains("names a path Cairn never writes"), "{args:?}: {}", r.stderr);
    }
    assert!(!f.root.join(".git/hooks/post-checkout").exists() && !f.root.join(".cairn.toml").exists());
    assert!(!f.root.join("sub").exists());
    assert_eq!(f.read_str("b.txt").as_deref(), Some("b"), "the undo did not run halfway");
}
