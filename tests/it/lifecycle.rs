//! SPEC §3: legal moves only, priority then FIFO, the concurrency limit across workers, and
//! restart recovery after `cairn up` is killed mid-run.

use crate::support::*;
use cairn::lifecycle::{Priority, State};
use cairn::orchestrator;

#[test]
fn illegal_transitions_are_refused_with_a_clear_message() {
    let f = Fixture::with_files(&[("a.txt", "a")]);
    let q = f.cairn(&["queue", "--provider", "inline", "x = 1"]).ok().stdout.trim().to_string();
    let r = f.cairn(&["accept", &q]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains(&format!("agent {q} is queued; cannot accept")), "{}", r.stderr);
    assert!(r.stderr.contains("hint:"));
    let r = f.cairn(&["undo", &q]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("cannot undo"), "{}", r.stderr);
    // queued -> rejected (cancel) is legal; rejected -> anything is not.
    f.cairn(&["reject", &q]).ok();
    let r = f.cairn(&["reject", &q]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("is rejected; cannot reject"), "{}", r.stderr);
    // errored -> rejected (discard) is legal; errored -> accepted is not.
    let e = f.run_inline("raise ValueError('boom')");
    assert_eq!(e.state, State::Errored);
    assert!(e.error.as_deref().unwrap().contains("ValueError: boom"));
    assert_eq!(f.cairn(&["accept", &e.id]).code, 1);
    f.cairn(&["reject", &e.id]).ok();
    // reviewing -> accepted once; a second accept is refused.
    let ok = f.run_ok("write_file('a.txt', 'b')");
    f.cairn(&["accept", &ok.id]).ok();
    let r = f.cairn(&["accept", &ok.id]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("is accepted; cannot accept"), "{}", r.stderr);
}

#[test]
fn priority_order_then_fifo() {
    let f = Fixture::with_files(&[("a.txt", "a")]);
    let p = f.project();
    let mk = |tag: &str, pr: Priority| orchestrator::queue(&p, &format!("x = '{tag}'"), Some(cairn::lifecycle::Provider::Inline), pr).unwrap().id;
    let order = [
        (mk("n1", Priority::Normal), "n1"),
        (mk("l1", Priority::Low), "l1"),
        (mk("h1", Priority::High), "h1"),
        (mk("n2", Priority::Normal), "n2"),
        (mk("u1", Priority::Urgent), "u1"),
        (mk("h2", Priority::High), "h2"),
    ];
    let mut ran = Vec::new();
    while let Some(rec) = orchestrator::run_next(&p, None).unwrap() {
        ran.push(order.iter().find(|(id, _)| *id == rec.id).unwrap().1);
    }
    assert_eq!(ran, ["u1", "h1", "h2", "n1", "n2", "l1"]);
}

/// Agents that block until `go` exists in the project (the watcher of `cairn up` indexes it).
const BLOCKER: &str = "while not file_exists('go'):\n    pass\n'released'";

fn concurrency(limit: u32) {
    let f = Fixture::with_files(&[("a.txt", "a")]);
    f.home_config(&format!("[orchestrator]\nmax_concurrent_agents = {limit}\npoll_interval_ms = 20\n"));
    let p = f.project();
    let ids: Vec<String> = (0..limit + 2).map(|_| orchestrator::queue(&p, BLOCKER, Some(cairn::lifecycle::Provider::Inline), Priority::Normal).unwrap().id).collect();
    let _up = Up::start(&f);
    let running = || p.bin().unwrap().list(true).unwrap().iter().filter(|r| r.state.is_running()).count();
    let mut max_seen = 0;
    wait_until(30, "agents to start", || {
        let n = running();
        max_seen = max_seen.max(n);
        n == limit as usize
    });
    // While they block, the rest stay queued and the limit holds.
    for _ in 0..50 {
        let n = running();
        max_seen = max_seen.max(n);
        std::thread::yield_now();
    }
    let recs = p.bin().unwrap().list(true).unwrap();
    let queued = recs.iter().filter(|r| r.state == State::Queued).count();
    let states: Vec<String> = recs.iter().map(|r| format!("{} {:?} {:?}", r.state, r.error_kind, r.error)).collect();
    assert_eq!(queued, 2, "with {limit} slots, 2 of {} must wait: {states:?}", limit + 2);
    f.write("go", "");
    wait_until(60, "all agents to finish", || {
        let recs = p.bin().unwrap().list(true).unwrap();
        max_seen = max_seen.max(recs.iter().filter(|r| r.state.is_running()).count());
        recs.iter().all(|r| r.state == State::Reviewing)
    });
    assert_eq!(max_seen, limit as usize, "concurrency limit exceeded or never reached");
    for id in ids {
        assert_eq!(f.status(&id).result.unwrap(), "released");
    }
}

#[test]
fn concurrency_limit_one() {
    concurrency(1);
}

#[test]
fn concurrency_limit_three() {
    concurrency(3);
}

#[test]
fn killed_up_requeues_once_then_errors_interrupted() {
    let f = Fixture::with_files(&[("a.txt", "a")]);
    f.home_config("[orchestrator]\npoll_interval_ms = 20\n");
    let p = f.project();
    let id = orchestrator::queue(&p, BLOCKER, Some(cairn::lifecycle::Provider::Inline), Priority::Normal).unwrap().id;
    let state = || p.bin().unwrap().get(&id).unwrap();

    let mut up = Up::start(&f);
    wait_until(30, "agent executing", || state().state == State::Executing);
    up.kill9();
    assert_eq!(state().state, State::Executing, "a dead worker's agent stays as it was until recovery");

    let mut up = Up::start(&f);
    wait_until(30, "agent re-queued and running again", || {
        let r = state();
        r.attempts == 1 && r.state == State::Executing
    });
    up.kill9();

    let _up = Up::start(&f);
    wait_until(30, "agent errored", || state().state == State::Errored);
    let r = state();
    assert_eq!(r.error_kind.map(|k| k.as_str()), Some("interrupted"));
    assert!(r.error.unwrap().contains("interrupted"));
}

#[test]
fn reviewing_survives_restart_and_queued_stays_queued() {
    let f = Fixture::with_files(&[("a.txt", "a")]);
    let s = f.run_ok("write_file('a.txt', 'b')");
    let p = f.project();
    let q = orchestrator::queue(&p, "x = 1", Some(cairn::lifecycle::Provider::Inline), Priority::Normal).unwrap().id;
    assert!(orchestrator::recover(&p).unwrap().is_empty());
    assert_eq!(p.bin().unwrap().get(&q).unwrap().state, State::Queued);
    assert_eq!(f.status(&s.id).state, State::Reviewing);
    f.cairn(&["accept", &s.id]).ok();
}

#[test]
fn a_bin_db_from_the_previous_schema_gains_the_hunk_decisions_table() {
    let f = Fixture::with_files(&[("a.txt", "a\n")]);
    {
        let conn = rusqlite::Connection::open(f.root.join(".agentfs/bin.db")).unwrap();
        conn.execute_batch("DROP TABLE hunk_decisions; PRAGMA user_version = 1;").unwrap();
    }
    let bin = f.project().bin().unwrap();
    assert_eq!(bin.hunks_accepted("nope").unwrap(), 0);
}

/// A database error in the worker loop is survived: reported, backed off, and the loop goes
/// on, so an agent queued before it still runs once the database is back.
#[test]
fn the_worker_loop_survives_database_errors() {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    let f = Fixture::with_files(&[("a.txt", "a")]);
    f.home_config("[orchestrator]\npoll_interval_ms = 20\n");
    let p = f.project();
    let id = cairn::orchestrator::queue(&p, "write_file('b.txt', 'b')", Some(cairn::lifecycle::Provider::Inline), cairn::lifecycle::Priority::Normal).unwrap().id;
    let db = f.root.join(".agentfs/bin.db");
    let aside = f.root.join(".agentfs/bin.db.aside");
    std::fs::rename(&db, &aside).unwrap();
    std::fs::create_dir(&db).unwrap();
    let (errors, stop) = (AtomicUsize::new(0), AtomicBool::new(false));
    std::thread::scope(|s| {
        s.spawn(|| {
            let on_error = |_: &cairn::error::Error| {
                errors.fetch_add(1, Ordering::SeqCst);
            };
            cairn::orchestrator::serve(&p, None, &|| stop.load(Ordering::SeqCst), &mut || {}, &on_error).unwrap();
        });
        wait_until(30, "an error reported", || errors.load(Ordering::SeqCst) >= 2);
        std::fs::remove_dir(&db).unwrap();
        std::fs::rename(&aside, &db).unwrap();
        wait_until(60, "the queued agent reviewing", || p.bin().and_then(|b| b.get(&id)).map(|r| r.state == cairn::lifecycle::State::Reviewing).unwrap_or(false));
        stop.store(true, Ordering::SeqCst);
    });
}

/// One `cairn up` per project: a second one refuses, naming the first's pid.
#[test]
fn a_second_up_refuses_naming_the_first() {
    let f = Fixture::with_files(&[("a.txt", "a")]);
    let first = Up::start(&f);
    let lock = f.root.join(".agentfs/up.lock");
    wait_until(30, "the first up holds the lock", || std::fs::read_to_string(&lock).map(|t| t.trim() == first.child.id().to_string()).unwrap_or(false));
    let second = f.cairn(&["up"]);
    assert_eq!(second.code, 1, "{second:?}");
    assert!(second.stderr.contains(&format!("another `cairn up` (pid {})", first.child.id())), "{}", second.stderr);
}

/// `:CairnReject` on live ghost text: an agent rejected while it runs (executing, or between
/// its last write and review) is stopped, stays rejected, and its worker goes on.
#[test]
fn an_agent_rejected_while_it_runs_is_stopped_and_stays_rejected() {
    let f = Fixture::with_files(&[("a.txt", "a")]);
    f.home_config("[orchestrator]\npoll_interval_ms = 20\n[sandbox]\ntimeout_seconds = 900\n");
    let p = f.project();
    let code = format!("write_file('a.txt', 'b')\n{BLOCKER}");
    let id = orchestrator::queue(&p, &code, Some(cairn::lifecycle::Provider::Inline), Priority::Normal).unwrap().id;
    let state = || p.bin().unwrap().get(&id).unwrap();
    let mut up = Up::start(&f);
    wait_until(60, "its write proposed while it runs", || {
        state().state == State::Executing && p.existing_overlay(&id).unwrap().is_some_and(|o| o.changed_count().unwrap() > 0)
    });
    f.cairn(&["reject", &id]).ok();
    assert_eq!(state().state, State::Rejected);
    // Stopped (it would loop for 900 s), its overlay set aside once closed.
    wait_until(60, "the run stopped", || run_time_if_ran(&p, &id).is_some());
    wait_until(30, "its overlay set aside", || !p.overlay_path(&id).exists() && p.archived_overlay_path(&id).is_file());
    let r = state();
    assert_eq!(r.state, State::Rejected, "the decision stands: {r:?}");
    assert!(up.alive(), "the worker goes on");
    let next = f.run_ok("write_file('a.txt', 'c')");
    assert_eq!(next.state, State::Reviewing);
    assert_eq!(f.read_str("a.txt").unwrap(), "a", "nothing reached the project");

    // Between its last write and review (`submitting`): rejected too, the runner's next step
    // refused and taken as the decision.
    up.kill9();
    let q = orchestrator::queue(&p, "x = 1", Some(cairn::lifecycle::Provider::Inline), Priority::Normal).unwrap().id;
    let mut bin = p.bin().unwrap();
    bin.claim(orchestrator::this_worker(), 10, Some(&q)).unwrap().expect("claimed");
    for to in [State::Executing, State::Submitting] {
        bin.transition(&q, to, "test", Default::default()).unwrap();
    }
    f.cairn(&["reject", &q]).ok();
    assert_eq!(p.bin().unwrap().get(&q).unwrap().state, State::Rejected);
}
