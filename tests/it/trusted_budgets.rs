//! Budgets and timeouts from a project's `.cairn.toml` (issue 48, item 4): a cloned
//! repository's file may lower them, and raises them only once the user trusts it (`cairn
//! config trust`), like every key that reaches the machine. Attacked as a clone would: a file
//! that raises every budget, then a run that tries to use the raise.

use crate::support::*;
use cairn::config;
use serde_json::json;

const RAISED: &str = "[orchestrator]\nmax_concurrent_agents = 500\n\
    [sandbox]\ntimeout_seconds = 86400\nmax_memory_mb = 100000\nmax_write_bytes = 99999999999\n\
    [llm]\nmax_tokens = 1000000\ntimeout_seconds = 86400\n\
    [tasks]\ncheck_timeout_seconds = 86400\n\
    [run]\ntimeout_seconds = 86400\nmax_memory_mb = 1000000\nmax_processes = 100000\nmax_output_bytes = 999999999\n\
    [wrap]\nmax_processes = 100000\nmax_tmp_mb = 1000000\nmax_connections = 100000\n";

#[test]
fn an_untrusted_project_file_lowers_budgets_and_raises_none() {
    let f = Fixture::with_files(&[("a.txt", "a\n")]);
    f.write(".cairn.toml", RAISED);
    let load = || config::load(&f.home, Some(&f.root), &|_| None).unwrap();
    let (l, d) = (load(), config::Config::default());
    let c = &l.config;
    assert_eq!((c.orchestrator.max_concurrent_agents, c.sandbox.timeout_seconds, c.sandbox.max_memory_mb, c.sandbox.max_write_bytes), (d.orchestrator.max_concurrent_agents, d.sandbox.timeout_seconds, d.sandbox.max_memory_mb, d.sandbox.max_write_bytes));
    assert_eq!((c.llm.max_tokens, c.llm.timeout_seconds, c.tasks.check_timeout_seconds), (d.llm.max_tokens, d.llm.timeout_seconds, d.tasks.check_timeout_seconds));
    assert_eq!((c.run.timeout_seconds, c.run.max_memory_mb, c.run.max_processes, c.run.max_output_bytes), (d.run.timeout_seconds, d.run.max_memory_mb, d.run.max_processes, d.run.max_output_bytes));
    assert_eq!((c.wrap.max_processes, c.wrap.max_tmp_mb, c.wrap.max_connections), (d.wrap.max_processes, d.wrap.max_tmp_mb, d.wrap.max_connections));
    assert_eq!(l.warnings.len(), 1, "{:?}", l.warnings);
    for k in ["run.max_memory_mb", "run.max_processes", "run.timeout_seconds", "sandbox.timeout_seconds", "wrap.max_processes", "cairn config trust"] {
        assert!(l.warnings[0].contains(k), "{k}: {:?}", l.warnings);
    }
    // Lowering needs no trust.
    f.write(".cairn.toml", "[run]\nmax_memory_mb = 256\nmax_processes = 8\ntimeout_seconds = 5\n[sandbox]\ntimeout_seconds = 3\n[wrap]\nmax_connections = 4\n");
    let l = load();
    assert_eq!((l.config.run.max_memory_mb, l.config.run.max_processes, l.config.run.timeout_seconds, l.config.sandbox.timeout_seconds, l.config.wrap.max_connections), (256, 8, 5, 3, 4));
    assert!(l.warnings.is_empty(), "{:?}", l.warnings);
    // A raise over the user's own value, lower than the default, is a raise too.
    f.home_config("[run]\nmax_processes = 4\n");
    assert_eq!(load().config.run.max_processes, 4);
    // Trusted, the file applies as written, and `cairn config trust` showed the budgets.
    f.write(".cairn.toml", RAISED);
    let shown = f.cairn(&["config", "trust"]).ok().stdout;
    assert!(shown.contains("run.max_processes = 100000") && shown.contains("sandbox.timeout_seconds = 86400"), "{shown}");
    let c = load().config;
    assert_eq!((c.run.max_processes, c.run.max_memory_mb, c.sandbox.timeout_seconds, c.wrap.max_tmp_mb), (100000, 1000000, 86400, 1000000));
}

/// The way a clone would use it: the user's home allows 8 processes, the clone's file asks
/// for 100,000, and its command forks 40.
#[test]
fn a_clones_raised_process_budget_does_not_reach_its_run() {
    let f = Fixture::with_files(&[("hog.py", include_str!("../hostile/budget_hog.py"))]);
    f.home_config("[run]\nmax_processes = 8\n");
    f.write(".cairn.toml", RAISED);
    let mut m = crate::runs::RawMcp::start({
        let mut c = std::process::Command::new(exe());
        c.arg("--project-root").arg(&f.root).arg("--cairn-home").arg(&f.home).arg("mcp").env_remove("CAIRN_HOME");
        c
    });
    let task = m.call("task_create", json!({"title": "clone"}));
    let s = m.call("session_begin", json!({"task": task["id"], "idempotency_key": "k"}));
    let ran = m.call("run_command", json!({"session": s["id"], "command": "python3 hog.py procs 40"}));
    let out = ran["output"].as_str().unwrap_or_default();
    let n: u64 = out.lines().find_map(|l| l.strip_prefix("got procs ")?.trim().parse().ok()).unwrap_or_else(|| panic!("{ran}"));
    assert!(n < 8, "the clone's file raised the run's processes: {n} started:\n{out}");
}
