//! SPEC §1.4: SIGKILL of `cairn accept` at many instants loses nothing. After each kill every
//! file is wholly old or wholly new, bin.db is consistent, and accept run again finishes.

use crate::support::*;
use cairn::lifecycle::State;
use std::os::unix::process::ExitStatusExt;

const FILES: usize = 200;

fn content(version: usize, file: usize) -> String {
    format!("version {version} of file {file}\n").repeat(40)
}

#[test]
fn sigkill_during_accept_at_many_instants() {
    let f = Fixture::new();
    for j in 0..FILES {
        f.write(&format!("src/f{j:03}.txt"), content(0, j));
    }
    f.init();
    let p = f.project();
    let mut interrupted = 0;
    // Kill points: right after start, then once k files show new content, k = 0, 8, 16, ...
    // A fast machine can finish an accept between two looks at its progress, so the rounds go
    // on (cycling through the points) until 20 kills have landed inside an accept.
    let points: Vec<Option<usize>> = std::iter::once(None).chain((0..24).map(|i| Some(i * 8))).collect();
    let mut round = 0;
    while round < points.len() || (interrupted < 20 && round < 4 * points.len()) {
        let point = &points[round % points.len()];
        let (old_v, new_v) = (round, round + 1);
        let script = format!(
            "for j in range({FILES}):\n    write_file('src/f%03d.txt' % j, ('version {new_v} of file %d\\n' % j) * 40)\nwrite_file('added/r{round}.txt', 'new')\n"
        );
        let s = f.run_ok(&script);
        let is_new = |j: usize| f.read_str(&format!("src/f{j:03}.txt")).as_deref() == Some(content(new_v, j).as_str());
        let mut child = f.cmd().args(["accept", &s.id]).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null()).spawn().unwrap();
        if let Some(k) = point {
            // Wait for progress (or for the accept to end by itself).
            wait_until(60, "accept progress", || (0..FILES).filter(|&j| is_new(j)).count() >= *k || matches!(child.try_wait(), Ok(Some(_))));
        }
        let _ = child.kill();
        let status = child.wait().unwrap();
        if status.signal() == Some(9) {
            interrupted += 1;
        }

        // Every file wholly old or wholly new; nothing else appeared.
        for j in 0..FILES {
            let got = f.read_str(&format!("src/f{j:03}.txt")).expect("file lost");
            assert!(got == content(old_v, j) || got == content(new_v, j), "round {round}: src/f{j:03}.txt is torn");
        }
        let bin = p.bin().unwrap();
        assert!(bin.integrity_ok().unwrap(), "bin.db corrupt after kill");
        let rec = bin.get(&s.id).unwrap();
        assert!(
            (rec.state == State::Reviewing) || (rec.state == State::Accepted && !rec.accept_pending),
            "round {round}: inconsistent state {:?} pending={}",
            rec.state,
            rec.accept_pending
        );

        // Running accept again completes it (or says it is already done).
        let again = f.cairn(&["accept", &s.id]);
        if rec.state == State::Accepted {
            assert_eq!(again.code, 1, "a finished accept cannot run twice");
        } else {
            assert_eq!(again.code, 0, "round {round}: re-run failed: {again:?}");
        }
        for j in 0..FILES {
            assert!(is_new(j), "round {round}: src/f{j:03}.txt not new after re-run");
        }
        assert_eq!(f.read_str(&format!("added/r{round}.txt")).as_deref(), Some("new"));
        assert_eq!(p.bin().unwrap().get(&s.id).unwrap().state, State::Accepted);
        let leftovers: Vec<_> = f.tree().into_iter().filter(|(p, _)| p.contains(".cairn-tmp")).map(|(p, _)| p).collect();
        assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
        round += 1;
    }
    eprintln!("{interrupted} of {round} kills landed mid-accept");
    assert!(interrupted >= 20, "only {interrupted} of {round} kills landed mid-accept");
}

/// SIGKILL `cairn run` at 25 instants, then `cairn up`: every re-run starts from an empty
/// overlay, so each proposal equals that of an uninterrupted run (an append is not doubled).
#[test]
fn a_rerun_after_a_kill_starts_from_a_clean_overlay() {
    let f = Fixture::with_files(&[("log.txt", "start\n")]);
    f.home_config("[orchestrator]\npoll_interval_ms = 20\nmax_concurrent_agents = 4\n");
    let code = "for i in range(3):\n    write_file('log.txt', read_file('log.txt') + 'line %d\\n' % i)\n    write_file('f%d.txt' % i, 'x')\nn = 0\nwhile n < 3000000:\n    n += 1\n";
    let mut ids = Vec::new();
    for round in 0..25u64 {
        let mut child = f.cmd().args(["run", "--provider", "inline", code]).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::null()).spawn().unwrap();
        // Fault injection, not synchronisation: a kill somewhere in the first ~300 ms.
        std::thread::sleep(std::time::Duration::from_millis(20 + (round * 37) % 300));
        let _ = child.kill();
        let _ = child.wait();
        let _ = child.stdout.take();
    }
    let p = f.project();
    for rec in p.bin().unwrap().list(true).unwrap() {
        ids.push(rec.id);
    }
    assert!(!ids.is_empty());
    let _up = Up::start(&f);
    wait_until(120, "every agent settled", || {
        ids.iter().all(|id| matches!(p.bin().unwrap().get(id).unwrap().state, State::Reviewing | State::Errored))
    });
    let want_log = "start\nline 0\nline 1\nline 2\n";
    for id in &ids {
        let rec = p.bin().unwrap().get(id).unwrap();
        assert_eq!(rec.state, State::Reviewing, "{id}: {:?} {:?}", rec.error_kind, rec.error);
        let overlay = p.existing_overlay(id).unwrap().unwrap();
        let (log, _) = overlay.get("log.txt").unwrap().unwrap().unwrap();
        assert_eq!(String::from_utf8(log).unwrap(), want_log, "{id}: the re-run doubled the first attempt's writes");
        assert_eq!(overlay.changes().unwrap().len(), 4, "{id}");
    }
    let reruns = ids.iter().filter(|id| std::fs::read_to_string(f.root.join(format!(".grail/agents/{id}/run.log"))).unwrap_or_default().contains("re-run:")).count();
    eprintln!("{reruns} of {} agents were re-run over a set-aside overlay", ids.len());
    assert!(reruns >= 5, "only {reruns} kills landed mid-run");
}

/// Five `cairn run` killed while `up` runs hold no slot: a new agent reaches reviewing within
/// seconds, the killed agents are re-queued or errored, and reject works on them.
#[test]
fn killed_workers_hold_no_slot() {
    let f = Fixture::with_files(&[("a.txt", "a")]);
    f.home_config("[orchestrator]\npoll_interval_ms = 20\nmax_concurrent_agents = 5\n[sandbox]\ntimeout_seconds = 30\n");
    let p = f.project();
    let mut up = Up::start(&f);
    let mut runs = Vec::new();
    for _ in 0..5 {
        runs.push(f.cmd().args(["run", "--provider", "inline", "while True:\n    pass\n"]).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null()).spawn().unwrap());
    }
    let running = || p.bin().unwrap().list(true).unwrap().into_iter().filter(|r| r.state == State::Executing).count();
    wait_until(60, "five agents executing", || running() == 5);
    let killed: Vec<String> = p.bin().unwrap().list(true).unwrap().into_iter().map(|r| r.id).collect();
    // Queued while the five hold every slot, it waits (the 200 ms is a window to observe
    // that it does not start, not a synchronisation). Queued after the kills, it could
    // lose the race for the freed slots to the re-queued agents, which loop forever again.
    let fresh = cairn::orchestrator::queue(&p, "write_file('b.txt', 'b')", Some(cairn::lifecycle::Provider::Inline), cairn::lifecycle::Priority::High).unwrap().id;
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert_eq!(p.bin().unwrap().get(&fresh).unwrap().state, State::Queued, "every slot is held before the kills");
    for mut r in runs {
        let _ = r.kill();
        let _ = r.wait();
    }
    let t = std::time::Instant::now();
    wait_until(30, "the new agent reviewing", || p.bin().unwrap().get(&fresh).unwrap().state == State::Reviewing);
    eprintln!("new agent reviewing {:?} after the kills", t.elapsed());
    up.kill9();
    // With every worker gone, any command notices: the killed agents end re-queued or errored.
    f.cairn(&["list-agents"]).ok();
    for id in &killed {
        let state = p.bin().unwrap().get(id).unwrap().state;
        assert!(matches!(state, State::Queued | State::Errored), "{id}: {state:?}");
        f.cairn(&["reject", id]).ok();
        assert_eq!(p.bin().unwrap().get(id).unwrap().state, State::Rejected);
    }
}

/// Corruption is never silent: a truncated overlay, a truncated or missing bin.db and a
/// corrupt stable.db each give an error naming the file, lose no proposal silently, and are
/// reported by `cairn doctor`.
#[test]
fn corruption_is_named_and_never_silent() {
    let f = Fixture::with_files(&[("a.txt", "a\n")]);
    let s = f.run_ok("write_file('a.txt', 'b\\n')");
    assert_eq!(f.cairn(&["doctor"]).code, 0, "a healthy project: {:?}", f.cairn(&["doctor"]));
    let agentfs = f.root.join(".agentfs");
    let overlay = agentfs.join(format!("agent-{}.db", s.id));
    let _ = std::fs::remove_file(agentfs.join(format!("agent-{}.db-wal", s.id)));
    let _ = std::fs::remove_file(agentfs.join(format!("agent-{}.db-shm", s.id)));
    std::fs::File::create(&overlay).unwrap().set_len(0).unwrap();
    let r = f.cairn(&["accept", &s.id]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("damaged") && r.stderr.contains(&overlay.display().to_string()), "{}", r.stderr);
    assert_eq!(f.read_str("a.txt").unwrap(), "a\n");
    assert_eq!(f.cairn(&["status", &s.id, "--json"]).ok().json()["state"], "reviewing", "the proposal is not marked accepted");
    let doc = f.cairn(&["doctor"]);
    assert_eq!(doc.code, 1);
    assert!(doc.stdout.contains(&format!("{}: empty (truncated)", overlay.display())), "{}", doc.stdout);

    // bin.db truncated, then missing, beside existing overlays: refused, never recreated empty.
    let bin = agentfs.join("bin.db");
    let saved = std::fs::read(&bin).unwrap();
    for damage in ["truncated", "missing"] {
        let _ = std::fs::remove_file(agentfs.join("bin.db-wal"));
        let _ = std::fs::remove_file(agentfs.join("bin.db-shm"));
        if damage == "truncated" {
            std::fs::File::create(&bin).unwrap().set_len(0).unwrap();
        } else {
            std::fs::remove_file(&bin).unwrap();
        }
        for args in [vec!["list-agents"], vec!["init"]] {
            let r = f.cairn(&args);
            assert_eq!(r.code, 1, "{damage} {args:?}: {r:?}");
            assert!(r.stderr.contains(&bin.display().to_string()) && r.stderr.contains("restore it"), "{damage}: {}", r.stderr);
        }
        assert!(!bin.exists() || std::fs::metadata(&bin).unwrap().len() == 0, "{damage}: bin.db was recreated");
    }
    std::fs::write(&bin, &saved).unwrap();
    // Restored from a backup (a new file, as a clone's or a pull's would be): the user says
    // it is theirs, then it is used.
    let r = f.cairn(&["list-agents"]);
    assert!(r.code == 1 && r.stderr.contains("cairn init --adopt"), "{r:?}");
    f.cairn(&["init", "--adopt"]).ok();

    // stable.db overwritten in its middle: named, and doctor reports it.
    let stable = agentfs.join("stable.db");
    let _ = std::fs::remove_file(agentfs.join("stable.db-wal"));
    let _ = std::fs::remove_file(agentfs.join("stable.db-shm"));
    let mut bytes = std::fs::read(&stable).unwrap();
    for b in bytes.iter_mut().skip(16).take(4096) {
        *b = 0xA5;
    }
    std::fs::write(&stable, &bytes).unwrap();
    let r = f.cairn(&["run", "--provider", "inline", "read_file('a.txt')"]);
    assert_ne!(r.code, 0, "{r:?}");
    assert!(r.stderr.contains(&stable.display().to_string()), "{}", r.stderr);
    let doc = f.cairn(&["doctor"]);
    assert_eq!(doc.code, 1);
    assert!(doc.stdout.lines().any(|l| l.starts_with(&stable.display().to_string()) && !l.ends_with(": ok")), "{}", doc.stdout);
}
