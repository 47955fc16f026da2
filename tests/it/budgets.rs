//! Host-side budgets: hostile arguments to externals end in a Python exception or a limit,
//! quickly, without a panic, and without growing `.agentfs/` without bound.

use crate::support::*;
use std::time::{Duration, Instant};

const ERR: &str = "def err(f, *a):\n    try:\n        f(*a)\n        return 'ok'\n    except Exception as e:\n        return type(e).__name__ + ': ' + str(e)[:80]\n";

fn agentfs_bytes(f: &Fixture) -> u64 {
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
        assert_eq!(v.as_str().unwrap(), "ValueError: Invalid path", "{r}");
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
    assert!(grown < 8 * 1024 * 1024, "40,000 failing calls grew .agentfs by {grown} bytes");
}

#[test]
fn an_oversized_submission_is_refused() {
    let f = Fixture::with_files(&[("a.py", "x\n")]);
    let r = run_within(&f, "err(submit_result, 's' * (24 * 1024 * 1024), [])", Duration::from_secs(20));
    assert!(r.as_str().unwrap().starts_with("ValueError: the submission is"), "{r}");
}
