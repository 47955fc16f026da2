//! Cairn on real machines: an idle `cairn up` is idle (as root too, where SQLite `fchown`s its
//! WAL on every open), and Cairn's state survives git (`status` clean, `stash -u`, `clean -fd`).

use crate::support::*;
use std::process::Command;
use std::time::{Duration, Instant};

/// CPU ticks (user + system) used so far by `pid` and its direct children.
fn ticks(pid: u32) -> u64 {
    let of = |p: &str| -> u64 {
        let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default();
        let after = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
        let f: Vec<&str> = after.split_whitespace().collect();
        f.get(11).and_then(|u| u.parse::<u64>().ok()).unwrap_or(0) + f.get(12).and_then(|s| s.parse::<u64>().ok()).unwrap_or(0)
    };
    let mut total = of(&pid.to_string());
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let ppid = stat.rsplit_once(')').and_then(|(_, r)| r.split_whitespace().nth(1)).unwrap_or("");
        if ppid == pid.to_string() {
            total += of(&name);
        }
    }
    total
}

/// A project of `n` small files, initialized.
fn many_files(n: usize) -> Fixture {
    let f = Fixture::new();
    for i in 0..n {
        f.write(&format!("d{:02}/f{i}.txt", i % 64), format!("{i}\n"));
    }
    f.init();
    f
}

#[test]
fn an_idle_cairn_up_and_host_use_no_cpu() {
    // Enough files that a stat walk of the tree every second would show.
    let (fu, fh) = (many_files(20_000), many_files(20_000));
    let mut up = Up::start(&fu);
    let mut host = fh.cmd().arg("nvim").stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::null()).spawn().unwrap();
    wait_until(60, "cairn up to serve", || fu.root.join(".agentfs/watcher").exists() || !up.alive());
    assert!(up.alive(), "cairn up exited");
    wait_until(60, "the host to serve", || fh.root.join(".agentfs/watcher").exists() || !matches!(host.try_wait(), Ok(None)));
    assert!(matches!(host.try_wait(), Ok(None)), "cairn nvim exited");
    // The first agent through proves each serves; then nothing happens for the window.
    for f in [&fu, &fh] {
        f.cairn(&["queue", "--provider", "inline", "x = 1"]).ok();
        let p = f.project();
        wait_until(60, "the queued agent", || p.bin().unwrap().list(true).unwrap().iter().any(|r| r.state.as_str() == "reviewing"));
    }
    let pids = [("cairn up", up.child.id()), ("cairn nvim", host.id())];
    let window = Duration::from_secs(10);
    let t0 = Instant::now();
    let before: Vec<u64> = pids.iter().map(|(_, p)| ticks(*p)).collect();
    // A measurement window, not synchronisation: the processes are left alone for it.
    std::thread::sleep(window);
    let hz = 100.0; // USER_HZ on Linux
    for ((name, pid), c0) in pids.iter().zip(before) {
        let used = ticks(*pid) - c0;
        let share = used as f64 / hz / t0.elapsed().as_secs_f64();
        assert!(share < 0.01, "idle {name} used {:.1}% of a core ({used} ticks in {:?})", share * 100.0, t0.elapsed());
    }
    let _ = host.kill();
    let _ = host.wait();
}

fn git(f: &Fixture, args: &[&str]) -> String {
    let out = Command::new("git").arg("-C").arg(&f.root).args(args).env("GIT_AUTHOR_NAME", "t").env("GIT_AUTHOR_EMAIL", "t@t").env("GIT_COMMITTER_NAME", "t").env("GIT_COMMITTER_EMAIL", "t@t").output().unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_vanished_agentfs_is_reported_not_recreated() {
    let f = Fixture::with_files(&[("a.txt", "a\n")]);
    f.run_ok("write_file('a.txt', 'b\\n')\n");
    std::fs::remove_dir_all(f.root.join(".agentfs")).unwrap();
    for args in [vec!["up"], vec!["list-agents"], vec!["init"]] {
        let r = f.cairn(&args);
        assert_ne!(r.code, 0, "`cairn {}` went on: {r:?}", args.join(" "));
        assert!(r.stderr.contains(".agentfs") && r.stderr.contains("agents existed"), "{r:?}");
    }
    assert!(!f.root.join(".agentfs").exists(), "re-created as if new");
}

#[test]
fn git_never_sees_stashes_or_cleans_cairns_state() {
    let f = Fixture::new();
    f.write("a.txt", "a\n");
    git(&f, &["init", "-q"]);
    git(&f, &["add", "-A"]);
    git(&f, &["commit", "-qm", "base"]);
    f.init();
    let s = f.run_ok("write_file('a.txt', 'agent\\n')\n");
    let task = f.cairn(&["task", "create", "t", "--check", "ok=true", "--json"]).ok().json();
    cairn::tasks::link_agent(&f.project(), "agent:test", task["id"].as_str().unwrap(), &s.id).unwrap();
    f.cairn(&["task", "check", task["id"].as_str().unwrap()]).ok();
    assert!(f.root.join(".grail/runs").is_dir() && f.root.join(".grail/agents").is_dir());
    // An accepted agent too (its undo journal), and `cairn up` serving throughout.
    f.write("b.txt", "b\n");
    git(&f, &["add", "b.txt"]);
    git(&f, &["commit", "-qm", "b"]);
    let accepted = f.run_ok("write_file('b.txt', 'accepted\\n')\n");
    f.cairn(&["accept", &accepted.id]).ok();
    git(&f, &["commit", "-qam", "accepted"]);
    let mut up = Up::start(&f);
    wait_until(30, "cairn up to serve", || cairn::index::index_is_live(&f.project()) || !up.alive());
    assert_eq!(git(&f, &["status", "--porcelain", "--untracked-files=all"]), "", "git sees Cairn's state");
    git(&f, &["add", "-A"]);
    assert_eq!(git(&f, &["diff", "--cached", "--name-only"]), "", "`git add -A` takes Cairn's state");
    // A user's own change, stashed with untracked files and back: Cairn's state stays.
    f.write("mine.txt", "mine\n");
    git(&f, &["stash", "-u"]);
    assert!(f.root.join(".agentfs/bin.db").exists(), "`git stash -u` took .agentfs");
    git(&f, &["stash", "pop"]);
    git(&f, &["clean", "-fdq"]);
    assert!(f.root.join(".agentfs/bin.db").exists() && f.root.join(".grail/agents").is_dir(), "`git clean -fd` removed Cairn's state");
    assert_eq!(f.status(&s.id).state.as_str(), "reviewing");
    assert!(f.cairn(&["diff", &s.id]).ok().stdout.contains("+agent"));
    assert!(up.alive(), "cairn up survived the git churn");
    f.cairn(&["undo", &accepted.id]).ok();
    assert_eq!(f.read_str("b.txt").unwrap(), "b\n", "the undo journal survived");
}

#[test]
fn invisible_names_are_escaped_and_files_other_tools_run_are_flagged() {
    let f = Fixture::with_files(&[("a.txt", "a\n")]);
    let s = f.run_ok("write_file('x\\u200b.txt', 'x\\n')\nwrite_file('.envrc', 'export X=1\\n')\nwrite_file('.github/workflows/ci.yml', 'on: push\\n')\nwrite_file('plain.txt', 'p\\n')\n");
    let status = f.cairn(&["status", &s.id]).ok().stdout;
    assert!(status.contains("x\\u{200b}.txt") && !status.contains("x\u{200b}.txt"), "{status}");
    let line = |needle: &str| status.lines().find(|l| l.contains(needle)).unwrap_or_else(|| panic!("{needle} missing: {status}")).to_string();
    assert!(line(".envrc").contains("! direnv runs it"), "{status}");
    assert!(line(".github/workflows/ci.yml").contains("! GitHub Actions runs it"), "{status}");
    assert!(!line("plain.txt").contains('!'), "{status}");
    let diff = f.cairn(&["diff", &s.id]).ok().stdout;
    assert!(diff.contains("WARNING .envrc: direnv runs it") && diff.contains("b/x\\u{200b}.txt") && !diff.contains('\u{200b}'), "{diff}");
    // JSON stays exact.
    let json = f.cairn(&["status", &s.id, "--json"]).ok().json();
    let paths: Vec<&str> = json["changes"].as_array().unwrap().iter().map(|c| c["path"].as_str().unwrap()).collect();
    assert!(paths.contains(&"x\u{200b}.txt"), "{paths:?}");
}

/// Runs `cairn <args>`, failing the test if it does not end within `secs`.
fn ends_within(f: &Fixture, args: &[&str], secs: u64) -> Run {
    let mut child = f.cmd().args(args).stdin(std::process::Stdio::null()).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(secs);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("`cairn {}` hung", args.join(" "));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Run::from(child.wait_with_output().unwrap())
}

#[test]
fn a_fifo_at_an_agent_written_path_hangs_nothing() {
    let f = Fixture::with_files(&[("p.txt", "p\n"), ("q.txt", "q\n")]);
    let s = f.run_ok("write_file('p.txt', 'agent\\n')\n");
    let other = f.run_ok("write_file('q.txt', 'other\\n')\n");
    std::fs::remove_file(f.root.join("p.txt")).unwrap();
    assert!(Command::new("mkfifo").arg(f.root.join("p.txt")).status().unwrap().success());
    for args in [vec!["status", &s.id], vec!["diff", &s.id], vec!["list-agents"], vec!["hunks", &s.id]] {
        ends_within(&f, &args, 5);
    }
    let r = ends_within(&f, &["run", "--provider", "inline", "read_file('p.txt')"], 10);
    assert!(!r.stderr.is_empty() || r.code != 0 || !r.stdout.is_empty(), "{r:?}");
    let r = ends_within(&f, &["accept", &s.id], 5);
    assert_ne!(r.code, 0, "a FIFO is not silently replaced: {r:?}");
    assert!(r.stderr.contains("p.txt"), "the refusal names the path: {r:?}");
    // Other review actions are not blocked.
    ends_within(&f, &["accept", &other.id], 5);
    assert_eq!(f.read_str("q.txt").unwrap(), "other\n");
}

#[test]
fn a_stopped_cairn_up_is_not_trusted() {
    let f = Fixture::with_files(&[("a.txt", "a\n")]);
    let mut up = Up::start(&f);
    wait_until(30, "cairn up to serve", || cairn::index::index_is_live(&f.project()) || !up.alive());
    assert!(up.alive());
    let pid = rustix::process::Pid::from_raw(up.child.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::STOP).unwrap();
    // Created while the daemon cannot see it: the run must re-index for itself.
    f.write("new.txt", "created meanwhile\n");
    let r = f.cairn(&["run", "--provider", "inline", "assert read_file('new.txt') == 'created meanwhile\\n'\nwrite_file('seen.txt', 'yes')"]);
    rustix::process::kill_process(pid, rustix::process::Signal::CONT).unwrap();
    assert_eq!(r.code, 0, "{r:?}");
    let id = r.stdout.trim();
    assert_eq!(f.status(id).state.as_str(), "reviewing", "{r:?}");
}

#[test]
fn undo_refuses_damaged_old_contents_and_names_the_file() {
    let f = Fixture::with_files(&[("a.txt", "one\ntwo\nthree\nfour\nfive\n")]);
    let s = f.run_ok("write_file('a.txt', 'one\\ntwo\\nthree\\nfour\\nFIVE\\n')\n");
    // The user's own edit: the accept journals the file as it was (not the agent's base).
    f.write("a.txt", "ONE\ntwo\nthree\nfour\nfive\n");
    f.cairn(&["accept", &s.id]).ok();
    assert_eq!(f.read_str("a.txt").unwrap(), "ONE\ntwo\nthree\nfour\nFIVE\n");
    let old = f.root.join(format!(".agentfs/journal/{}.old", s.id));
    let mut bytes = std::fs::read(&old).expect("the journal's old contents");
    bytes[0] ^= 0x20;
    std::fs::write(&old, bytes).unwrap();
    let r = f.cairn(&["undo", &s.id]);
    assert_ne!(r.code, 0, "{r:?}");
    assert!(r.stderr.contains("a.txt") && r.stderr.contains("damaged"), "{r:?}");
    assert_eq!(f.read_str("a.txt").unwrap(), "ONE\ntwo\nthree\nfour\nFIVE\n", "the user's file is unchanged");
}

#[test]
fn readers_during_accepts_archive_step_never_break_undo() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let f = Fixture::with_files(&[("a.txt", "0\n")]);
    let p = f.project();
    for round in 0..50 {
        let s = f.run_ok(&format!("write_file('a.txt', '{}\\n')\n", round + 1));
        let stop = AtomicBool::new(false);
        std::thread::scope(|scope| {
            // A reader (as `cairn diff`, a status poll or the Neovim host would be) hammering
            // the agent's overlay while the accept archives it.
            scope.spawn(|| {
                while !stop.load(Ordering::Relaxed) {
                    if let Ok(Some(o)) = p.existing_overlay(&s.id) {
                        let _ = o.changes();
                    }
                }
            });
            cairn::command::execute(&p, cairn::command::Command::Accept { id: s.id.clone(), force: false }).unwrap();
            stop.store(true, Ordering::Relaxed);
        });
        assert!(!p.overlay_path(&s.id).exists(), "round {round}: a reader re-created the live overlay");
        cairn::command::execute(&p, cairn::command::Command::Undo { id: s.id.clone() }).unwrap_or_else(|e| panic!("round {round}: undo failed: {e}"));
        assert_eq!(f.read_str("a.txt").unwrap(), "0\n", "round {round}");
    }
}

#[test]
fn text_status_shows_an_interrupted_accept_and_how_to_finish_it() {
    let f = Fixture::new();
    for j in 0..300 {
        f.write(&format!("src/f{j:03}.txt"), format!("old {j}\n").repeat(200));
    }
    f.init();
    for round in 0..20 {
        let s = f.run_ok(&format!("for j in range(300):\n    write_file('src/f%03d.txt' % j, ('new {round} %d\\n' % j) * 200)\n"));
        let mut child = f.cmd().args(["accept", &s.id]).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null()).spawn().unwrap();
        let changed = |f: &Fixture| (0..300).any(|j| f.read_str(&format!("src/f{j:03}.txt")).is_some_and(|t| t.starts_with(&format!("new {round} "))));
        wait_until(30, "accept progress", || changed(&f) || matches!(child.try_wait(), Ok(Some(_))));
        let _ = child.kill();
        let _ = child.wait();
        let json = f.cairn(&["status", &s.id, "--json"]).ok().json();
        if json["accept_pending"] == true {
            let text = f.cairn(&["status", &s.id]).ok().stdout;
            assert!(text.contains("PENDING") && text.contains(&format!("cairn accept {}", s.id)), "{text}");
            let list = f.cairn(&["list-agents"]).ok().stdout;
            assert!(list.contains("accept pending"), "{list}");
            f.cairn(&["accept", &s.id]).ok();
            return;
        }
        if json["state"] == "reviewing" {
            f.cairn(&["reject", &s.id]).ok();
        }
    }
    panic!("no kill landed inside an accept in 20 rounds");
}

#[test]
fn doctor_is_clean_after_an_accept_and_undo_of_a_new_nested_file() {
    let f = Fixture::with_files(&[("a.txt", "a\n")]);
    let s = f.run_ok("write_file('pkg/sub/new.py', 'x = 1\\n')\n");
    f.cairn(&["accept", &s.id]).ok();
    f.cairn(&["undo", &s.id]).ok();
    assert!(!f.root.join("pkg").exists());
    let r = f.cairn(&["doctor"]);
    assert_eq!(r.code, 0, "{r:?}");
    // A FIFO in the tree is reported as such, not as a problem.
    assert!(Command::new("mkfifo").arg(f.root.join("pipe")).status().unwrap().success());
    let r = f.cairn(&["doctor"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains("1 special file(s)") && r.stdout.contains("pipe"), "{r:?}");
}

#[test]
fn a_lost_wal_loses_nothing_or_doctor_names_the_loss() {
    let f = Fixture::with_files(&[("a.txt", "a\n")]);
    let s = f.run_ok("write_file('a.txt', 'agent\\n')\nwrite_file('b.txt', 'new\\n')\n");
    // A finished proposal lives in one file: its WAL is folded in.
    let wal = f.root.join(format!(".agentfs/agent-{}.db-wal", s.id));
    let _ = std::fs::remove_file(&wal);
    let r = f.cairn(&["accept", &s.id]).ok();
    assert!(r.stdout.contains("2 written"), "{r:?}");
    assert_eq!(f.read_str("b.txt").unwrap(), "new\n");
    // bin.db's WAL holds recent commits; lost, doctor names what is missing.
    let t = f.run_ok("write_file('c.txt', 'c\\n')\n");
    let bin_wal = f.root.join(".agentfs/bin.db-wal");
    assert!(bin_wal.exists(), "bin.db keeps its recent commits in its WAL");
    std::fs::remove_file(&bin_wal).unwrap();
    let _ = std::fs::remove_file(f.root.join(".agentfs/bin.db-shm"));
    let known = f.cairn(&["list-agents", "--all", "--json"]).stdout.contains(&t.id);
    let r = f.cairn(&["doctor"]);
    if known {
        assert_eq!(r.code, 0, "nothing was lost: {r:?}");
    } else {
        assert_eq!(r.code, 1, "{r:?}");
        assert!(r.stdout.contains("no agent record") && r.stdout.contains(&t.id), "the loss is named: {r:?}");
    }
}

#[test]
fn init_rebuilds_a_damaged_index_after_saying_so() {
    let f = Fixture::with_files(&[("a.txt", "a\n"), ("src/b.py", "b\n")]);
    let db = f.root.join(".agentfs/stable.db");
    let _ = std::fs::remove_file(f.root.join(".agentfs/stable.db-wal"));
    let _ = std::fs::remove_file(f.root.join(".agentfs/stable.db-shm"));
    std::fs::write(&db, b"this is not a database, it was overwritten\n".repeat(100)).unwrap();
    let r = f.cairn(&["init"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stderr.contains("the index was damaged") && r.stderr.contains("rebuilt"), "{r:?}");
    assert!(f.root.join(".agentfs/stable.db.damaged").exists());
    assert!(f.cairn(&["doctor"]).ok().stdout.contains("stable.db: ok"));
    let s = f.run_ok("read_file('src/b.py')\n");
    assert_eq!(s.state.as_str(), "reviewing");
}

#[test]
fn reject_after_an_interrupted_accept_leaves_no_new_directories() {
    let f = Fixture::with_files(&[("a.txt", "a\n")]);
    // The accept is killed at its Nth rename (files land by rename, only once the journal is
    // down): no race with a clock, whatever the machine's load.
    for n in [1, 20, 60] {
        let s = f.run_ok("for j in range(300):\n    write_file('new/d%d/sub/f%03d.txt' % (j % 10, j), 'x' * 20000)\n");
        let mut c = Command::new("strace");
        c.args(["-f", "-qq", "-o", "/dev/null", "-e", "trace=rename,renameat,renameat2", "-e"]).arg(format!("inject=rename,renameat,renameat2:signal=KILL:when={n}")).arg(exe());
        let status = c.arg("--project-root").arg(&f.root).arg("--cairn-home").arg(&f.home).args(["accept", &s.id]).env_remove("CAIRN_HOME").stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null()).status().unwrap();
        assert_eq!(std::os::unix::process::ExitStatusExt::signal(&status), Some(9), "killed at rename {n}");
        let json = f.cairn(&["status", &s.id, "--json"]).ok().json();
        assert_eq!(json["accept_pending"], true, "rename {n}: the accept was under way: {json}");
        assert!(f.root.join("new").exists(), "rename {n}: the accept had begun to land");
        f.cairn(&["reject", &s.id]).ok();
        assert!(!f.root.join("new").exists(), "rename {n}: the accept's new directories are left");
        assert_eq!(f.tree(), vec![("a.txt".to_string(), b"a\n".to_vec())], "rename {n}");
    }
}

#[test]
fn an_agent_path_that_is_a_symlink_is_refused_honestly() {
    let f = Fixture::with_files(&[("target.txt", "t\n")]);
    std::os::unix::fs::symlink("target.txt", f.root.join("link.txt")).unwrap();
    let s = f.run_ok("write_file('link.txt', 'agent\\n')\n");
    for args in [vec!["accept", &s.id], vec!["accept", &s.id, "--force"]] {
        let r = f.cairn(&args);
        assert_ne!(r.code, 0, "{r:?}");
        assert!(r.stderr.contains("\"link.txt\" is a symbolic link") && !r.stderr.contains("--force overwrites"), "{r:?}");
    }
    assert_eq!(std::fs::read_link(f.root.join("link.txt")).unwrap(), std::path::PathBuf::from("target.txt"));
    assert_eq!(f.read_str("target.txt").unwrap(), "t\n", "nothing was written through the link");
    // Replaced by a regular file, the proposal lands.
    std::fs::remove_file(f.root.join("link.txt")).unwrap();
    f.cairn(&["accept", &s.id, "--force"]).ok();
    assert_eq!(f.read_str("link.txt").unwrap(), "agent\n");
}

/// A `bin.db` from before a migration (here: `events.data` missing) is migrated when a
/// command opens it, and says so, so that later opens skip the checks; its agents stay.
#[test]
fn an_old_bin_db_is_migrated_on_open_and_keeps_its_agents() {
    let f = Fixture::with_files(&[("a.txt", "a\n")]);
    let s = f.run_ok("write_file('a.txt', 'b\\n')");
    let db = f.root.join(".agentfs/bin.db");
    let level = |c: &rusqlite::Connection| c.query_row("PRAGMA application_id", [], |r| r.get::<_, i32>(0)).unwrap();
    {
        let c = rusqlite::Connection::open(&db).unwrap();
        assert_ne!(level(&c), 0, "a migrated database records it");
        c.execute_batch("ALTER TABLE events DROP COLUMN data; PRAGMA application_id = 0;").unwrap();
        assert!(c.prepare("SELECT data FROM events LIMIT 0").is_err());
    }
    assert_eq!(f.status(&s.id).state.as_str(), "reviewing");
    let c = rusqlite::Connection::open(&db).unwrap();
    assert!(c.prepare("SELECT data FROM events LIMIT 0").is_ok(), "the column is back");
    assert_ne!(level(&c), 0);
    drop(c);
    let log = f.cairn(&["log", &s.id]).ok();
    assert!(!log.stdout.is_empty(), "its history reads");
}
