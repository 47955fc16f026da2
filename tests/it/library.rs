//! The sandbox's standard library as a script meets it, through real runs: `print` in the
//! run log, the host's seed and clock, `sys`, the import gate's errors, the memory cap
//! once every module is loaded.

use crate::support::*;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

fn run_log(f: &Fixture, id: &str) -> String {
    f.read_str(&format!(".grail/agents/{id}/run.log")).unwrap_or_default()
}

#[test]
fn print_honours_end_sep_and_file_in_the_run_log() {
    let f = Fixture::new();
    f.init();
    let s = f.run_ok(
        "import io, sys\nprint('a', end='')\nprint('b', 'c', sep='-')\nbuf = io.StringIO()\nprint('hidden', file=buf)\nsys.stdout.write('partial ')\nprint('line', end='!\\n')\nprint('tail', end='')\nbuf.getvalue()\n",
    );
    let log = run_log(&f, &s.id);
    let lines: Vec<&str> = log.lines().filter(|l| !l.starts_with("run ended")).collect();
    assert_eq!(lines, ["ab-c", "partial line!", "tail"], "{log}");
    assert_eq!(s.result, Some(serde_json::json!("hidden\n")));
}

#[test]
fn random_is_seeded_by_the_host() {
    let f = Fixture::new();
    f.init();
    let draw = "import random\n[random.random() for _ in range(3)]\n";
    // A fresh seed for every run by default...
    let a = f.run_ok(draw).result;
    let b = f.run_ok(draw).result;
    assert_ne!(a, b, "two runs drew the same numbers");
    // ...and the configured one when set: runs repeat exactly.
    f.home_config("[sandbox]\nrandom_seed = 42\n");
    let c = f.run_ok(draw).result;
    let d = f.run_ok("import random\nimport statistics\n[random.random() for _ in range(3)]\n").result;
    assert_eq!(c, d);
    assert_ne!(c, a);
}

#[test]
fn time_reads_the_host_clock_and_sleep_counts_against_the_timeout() {
    let f = Fixture::new();
    f.init();
    let before = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs_f64();
    let s = f.run_ok("import time, datetime\n[time.time(), datetime.datetime.now(datetime.timezone.utc).timestamp()]\n");
    let after = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs_f64();
    for t in s.result.unwrap().as_array().unwrap() {
        let t = t.as_f64().unwrap();
        assert!(t >= before - 0.001 && t <= after + 0.001, "{before} <= {t} <= {after}");
    }
    f.home_config("[sandbox]\ntimeout_seconds = 1\n");
    let started = std::time::Instant::now();
    let s = f.run_inline("import time\ntime.sleep(30)\n");
    assert_eq!(s.error_kind.as_ref().map(|k| k.as_str()), Some("timeout"), "{:?}", s.error);
    assert!(started.elapsed() < Duration::from_secs(25), "the 30 s sleep was cut by the 1 s timeout");
}

#[test]
fn sys_is_restricted_and_the_recursion_limit_capped() {
    let f = Fixture::new();
    f.init();
    f.home_config("[sandbox]\nmax_recursion = 300\n");
    let s = f.run_ok("import sys\nsys.setrecursionlimit(100000)\n[sys.getrecursionlimit(), hasattr(sys, 'modules'), hasattr(sys, 'path'), hasattr(sys, '_getframe'), sys.version_info[0]]\n");
    assert_eq!(s.result, Some(serde_json::json!([300, false, false, false, 3])));
    // sys.exit() ends a script as in Python: code 0 or none is success, any other an error.
    let s = f.run_ok("import sys
write_file('a.txt', 'x')
sys.exit(0)
write_file('b.txt', 'y')
");
    assert_eq!(s.changes.iter().map(|c| c.path.as_str()).collect::<Vec<_>>(), ["a.txt"]);
    let s = f.run_inline("import sys
sys.exit('bad input')
");
    assert_eq!(s.state.as_str(), "errored");
    assert!(s.error.as_deref().unwrap_or("").contains("SystemExit: bad input"), "{:?}", s.error);
}

#[test]
fn an_unavailable_module_is_named_with_the_available_ones() {
    let f = Fixture::new();
    f.init();
    f.write("agent.pym", "import socket\nimport subprocess\n");
    let script = f.root.join("agent.pym");
    let r = f.cairn(&["check", script.to_str().unwrap()]);
    assert_ne!(r.code, 0, "{r:?}");
    for needle in ["'socket'", "'subprocess'", "dataclasses", "itertools", "textwrap"] {
        assert!(r.stdout.contains(needle) || r.stderr.contains(needle), "{needle} missing: {r:?}");
    }
    // At run time too (the syntax layer off), the error names the module and the list.
    let mut cmd = f.cmd();
    cmd.env("CAIRN_TEST_NO_SYNTAX_LAYER", "1");
    f.write("agent.pym", "import subprocess\n");
    let r = Run::from(cmd.args(["run", script.to_str().unwrap()]).output().unwrap());
    let st = f.cairn(&["status", r.stdout.trim(), "--json"]).ok().json();
    let err = st["error"].as_str().unwrap_or("");
    assert!(err.contains("No module named 'subprocess' in the sandbox (available: ") && err.contains("dataclasses"), "{err}");
}

#[test]
fn the_memory_cap_holds_with_every_module_loaded() {
    let f = Fixture::new();
    f.init();
    f.home_config("[sandbox]\nmax_memory_mb = 150\n");
    let every = cairn::sandbox::stdlib::PUBLIC.iter().filter(|m| **m != "grail").copied().collect::<Vec<_>>().join(", ");
    let s = f.run_inline(&format!("import {every}\nhoard = []\nwhile True:\n    hoard.append(bytearray(8 * 1024 * 1024))\n"));
    assert_eq!(s.error_kind.as_ref().map(|k| k.as_str()), Some("memory"), "{:?}", s.error);
}
