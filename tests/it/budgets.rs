//! Host-side budgets: hostile arguments to externals end in a Python exception or a limit,
//! quickly, without a panic, and without growing `.agentfs/` without bound.

use crate::support::*;
use std::time::{Duration, Instant};

const ERR: &str = "def err(f, *a):\n    try:\n        f(*a)\n        return 'ok'\n    except Exception as e:\n        return type(e).__name__ + ': ' + str(e)[:80]\n";

/// Bytes under `.agentfs`, each database's WAL checkpointed into it first (cairn leaves WALs
/// in place, bounded by SQLite's checkpoints): what the databases hold, not where it sits.
fn agentfs_bytes(f: &Fixture) -> u64 {
    for e in std::fs::read_dir(f.root.join(".agentfs")).unwrap().flatten() {
        if e.file_name().to_string_lossy().ends_with(".db") {
            let conn = rusqlite::Connection::open(e.path()).unwrap();
            conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(())).unwrap();
        }
    }
    std::fs::read_dir(f.root.join(".agentfs")).unwrap().flatten().filter_map(|e| e.metadata().ok()).filter(|m| m.is_file()).map(|m| m.len()).sum()
}

/// Runs `code` (with the `err` helper), asserting it ends within `within` and returns its result.
fn run_within(f: &Fixture, code: &str, within: Duration) -> serde_json::Value {
    let start = Instant::now();
    let s = f.run_inline(&format!("{ERR}{code}"));
    assert!(start.elapsed() < within, "took {:?}: {code:.80}", start.elapsed());
    assert_eq!(s.state.as_str(), "reviewing", "{code:.80}: {:?} {:?}", s.error_kind, s.error);
    s.result.unwrap_or_default()
}

#[test]
fn hostile_globs_raise_instead_of_panicking() {
    let f = Fixture::with_files(&[("a.py", "x\n")]);
    let nested = format!("{}a{}", "{a,".repeat(12), "}".repeat(12));
    for pattern in [nested, "?".repeat(5000), "[".repeat(300), "*".repeat(2000)] {
        let r = run_within(&f, &format!("err(search_files, {pattern:?})"), Duration::from_secs(5));
        assert!(r.as_str().unwrap_or("").starts_with("ValueError: bad pattern"), "{pattern:.40}: {r}");
    }
    // An ordinary glob still works afterwards.
    assert_eq!(run_within(&f, "search_files('*.py')", Duration::from_secs(5)), serde_json::json!(["a.py"]));
}

#[test]
fn huge_paths_are_refused_fast_and_not_stored() {
    let f = Fixture::with_files(&[("a.py", "x\n")]);
    let before = agentfs_bytes(&f);
    let code = "[err(write_file, 'a/' * 600000 + 'x', 'y'), err(write_file, 'p' * (4 * 1024 * 1024), 'y'), err(read_file, 'q' * 300)]";
    let r = run_within(&f, code, Duration::from_secs(10));
    for v in r.as_array().unwrap() {
        assert!(v.as_str().unwrap().starts_with("ValueError: Invalid path"), "{r}");
        assert!(v.as_str().unwrap().len() < 300, "the error quotes a bounded path: {r}");
    }
    assert!(agentfs_bytes(&f) < before + 4 * 1024 * 1024, ".agentfs grew by {} bytes", agentfs_bytes(&f) - before);
}

#[test]
fn an_error_loop_does_not_grow_the_audit_log_without_bound() {
    let f = Fixture::with_files(&[("a.py", "x\n")]);
    let before = agentfs_bytes(&f);
    let code = "n = 0\nfor i in range(40000):\n    n += len(err(read_file, 'missing-' + 'z' * 200 + str(i)))\nn > 0";
    assert_eq!(run_within(&f, code, Duration::from_secs(60)), serde_json::json!(true));
    let grown = agentfs_bytes(&f).saturating_sub(before);
    let files: Vec<(String, u64)> = std::fs::read_dir(f.root.join(".agentfs")).unwrap().flatten().map(|e| (e.file_name().to_string_lossy().into_owned(), e.metadata().map(|m| m.len()).unwrap_or(0))).collect();
    assert!(grown < 8 * 1024 * 1024, "40,000 failing calls grew .agentfs by {grown} bytes: {files:?}");
}

#[test]
fn an_oversized_submission_is_refused() {
    let f = Fixture::with_files(&[("a.py", "x\n")]);
    let r = run_within(&f, "err(submit_result, 's' * (24 * 1024 * 1024), [])", Duration::from_secs(20));
    assert!(r.as_str().unwrap().starts_with("ValueError: the submission is"), "{r}");
}

/// Everything an agent can make the host store in `.agentfs/` in one run is bounded by
/// max_write_bytes (50 MiB) + max_log_bytes for the log, the result and the submission
/// (1 MiB each) + the audit rows (10,000 of at most ~1 KiB). The documented cap.
const AGENTFS_GROWTH_CAP: u64 = 64 * 1024 * 1024;
/// Peak resident memory of the `cairn up` process serving a hostile agent.
const HOST_RSS_CAP_KB: u64 = 256 * 1024;

fn tree_bytes(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|rd| rd.flatten().map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => tree_bytes(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        }).sum())
        .unwrap_or(0)
}

/// VmHWM (peak resident set) of a process, in KiB.
fn peak_rss_kb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Runs a hostile agent under a real `cairn up` with one worker slot, then an ordinary agent
/// behind it. The hostile run must end within 1 s of its timeout, the follower must reach
/// reviewing (no slot lost), `.agentfs/` must grow by less than [`AGENTFS_GROWTH_CAP`] and
/// the host's peak RSS must stay under [`HOST_RSS_CAP_KB`]. Returns the hostile agent's
/// state and error kind.
fn hostile_under_up(f: &Fixture, code: &str, timeout: u64) -> (String, String) {
    use cairn::lifecycle::{Priority, Provider, State};
    f.home_config(&format!("[orchestrator]\nmax_concurrent_agents = 1\npoll_interval_ms = 20\n[sandbox]\ntimeout_seconds = {timeout}\n"));
    let p = f.project();
    cairn::command::execute(&p, cairn::command::Command::Init).unwrap();
    let before = tree_bytes(&f.root.join(".agentfs"));
    let up = Up::start(f);
    let hostile = cairn::orchestrator::queue(&p, &format!("{ERR}{code}"), Some(Provider::Inline), Priority::High).unwrap().id;
    let state = |id: &str| p.bin().unwrap().get(id).unwrap().state;
    wait_until(timeout + 60, "hostile agent ended", || matches!(state(&hostile), State::Errored | State::Reviewing));
    let took = run_time(&p, &hostile);
    assert!(took < Duration::from_secs(timeout) + Duration::from_secs(1), "the run took {took:?} with timeout_seconds = {timeout}");
    let follower = cairn::orchestrator::queue(&p, "write_file('ok.txt', 'ok')", Some(Provider::Inline), Priority::Normal).unwrap().id;
    wait_until(60, "the following agent reviewing", || state(&follower) == State::Reviewing);
    let rss = peak_rss_kb(up.child.id());
    assert!(rss < HOST_RSS_CAP_KB, "cairn up peaked at {rss} KiB");
    let grown = tree_bytes(&f.root.join(".agentfs")).saturating_sub(before);
    assert!(grown < AGENTFS_GROWTH_CAP, ".agentfs grew by {grown} bytes");
    let rec = p.bin().unwrap().get(&hostile).unwrap();
    eprintln!("{code:.60}: {} {:?} in {took:?}; host peak {rss} KiB; .agentfs +{grown} B", rec.state.as_str(), rec.error_kind);
    (rec.state.as_str().to_string(), rec.error_kind.map(|k| k.as_str().to_string()).unwrap_or_default())
}

#[test]
fn up_budget_nested_brace_glob() {
    let f = Fixture::with_files(&[("a.py", "x\n")]);
    let code = "r = [err(search_files, '{' * n + 'a' + '}' * n) for n in (3, 50, 300, 5000)] + [err(search_files, '?' * 200000)]\nassert all(x.startswith('ValueError') for x in r), r\n";
    assert_eq!(hostile_under_up(&f, code, 5), ("reviewing".into(), String::new()));
}

#[test]
fn up_budget_catastrophic_regex_over_a_1_mib_file() {
    let f = Fixture::with_files(&[("big.txt", &("a b ".repeat(1000) + "\n").repeat(262))]);
    // Refused at compile time; a slower one that compiles is stopped by the run's deadline.
    let code = "r = err(search_content, r'(?:[^Z]+\\s*){2000}Z', '.')\nassert r.startswith('ValueError'), r\nwhile True:\n    search_content(r'(?:[^Z]+\\s*){120}Z', '.')\n";
    // The deadline or the run's read budget (512 MiB) ends the loop, whichever comes first.
    let (state, kind) = hostile_under_up(&f, code, 4);
    assert!(state == "errored" && (kind == "timeout" || kind == "limit"), "{state} {kind}");
}

#[test]
fn up_budget_path_of_600000_components() {
    let f = Fixture::with_files(&[("a.py", "x\n")]);
    let code = "while True:\n    r = err(write_file, 'a/' * 600000 + 'x', 'y')\n    assert r.startswith('ValueError'), r\n";
    assert_eq!(hostile_under_up(&f, code, 4), ("errored".into(), "timeout".into()));
}

#[test]
fn up_budget_error_loop() {
    let f = Fixture::with_files(&[("a.py", "x\n")]);
    let code = "i = 0\nwhile True:\n    i += 1\n    err(read_file, 'missing/' + 'z' * 3000 + str(i))\n";
    assert_eq!(hostile_under_up(&f, code, 4), ("errored".into(), "timeout".into()));
}

#[test]
fn up_budget_4_mib_paths() {
    let f = Fixture::with_files(&[("a.py", "x\n")]);
    let code = "while True:\n    err(write_file, 'p' * (4 * 1024 * 1024), 'y')\n    err(delete_file, 'd' * (4 * 1024 * 1024))\n";
    assert_eq!(hostile_under_up(&f, code, 4), ("errored".into(), "timeout".into()));
}

#[test]
fn up_budget_24_mib_submission() {
    let f = Fixture::with_files(&[("a.py", "x\n")]);
    let code = "r = err(submit_result, 's' * (24 * 1024 * 1024), [])\nassert r.startswith('ValueError'), r\n";
    assert_eq!(hostile_under_up(&f, code, 10), ("reviewing".into(), String::new()));
}

#[test]
fn up_budget_read_of_a_2_gib_sparse_file() {
    let f = Fixture::with_files(&[("a.py", "x\n")]);
    std::fs::File::create(f.root.join("huge.bin")).unwrap().set_len(2 << 30).unwrap();
    let code = "r = [err(read_file, 'huge.bin'), err(search_content, 'x', '.')]\nassert r[0].startswith('ValueError: file too large'), r\n";
    assert_eq!(hostile_under_up(&f, code, 10), ("reviewing".into(), String::new()));
}
