//! The scale rows with `cairn up` in the background: until it keeps the index live, a
//! `cairn run` then, its memory with 10 agents reviewing, and its CPU while idle.

use super::proc::{children, cpu_secs, measured, vm_mb};
use super::rows::{cli, cli_run, one_file, reject_all, reviewing};
use crate::stats::{Row, Stat};
use crate::{done, Ctx};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant, SystemTime};

/// Seconds from an environment variable, else `default`.
fn secs(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok()).unwrap_or(default)
}

/// Does `.agentfs/watcher` name `pid`, touched within the last 3 s (what `cairn run` believes)?
fn live(c: &Ctx, pid: u32) -> bool {
    let marker = c.root.join(".agentfs/watcher");
    let ours = std::fs::read_to_string(&marker).is_ok_and(|t| t.split_whitespace().next() == Some(&pid.to_string()));
    let fresh = std::fs::metadata(&marker).and_then(|m| m.modified()).is_ok_and(|t| SystemTime::now().duration_since(t).is_ok_and(|age| age <= Duration::from_secs(3)));
    ours && fresh
}

/// Waits until `up` has claimed the live index.
fn wait_live(c: &Ctx, up: &mut Child) -> Duration {
    let start = Instant::now();
    loop {
        if live(c, up.id()) {
            return start.elapsed();
        }
        if let Ok(Some(status)) = up.try_wait() {
            panic!("cairn up ended ({status}) before claiming the index; see {}", c.work.join("up.log").display());
        }
        assert!(start.elapsed() < Duration::from_secs(1800), "cairn up never claimed the index");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `cairn queue` of `n` one-file agents, until `cairn up` has run them all to `reviewing`.
fn queue_reviewing(c: &Ctx, n: usize) -> Vec<String> {
    let ids: Vec<String> = (0..n).map(|i| measured(cli(c, &["queue", "--provider", "inline", &one_file(3000 + i)])).stdout.trim().to_string()).collect();
    let bin = c.p.bin().expect("bin");
    let deadline = Instant::now() + Duration::from_secs(600);
    for id in &ids {
        while bin.get(id).map(|r| r.state.as_str() != "reviewing").unwrap_or(true) {
            assert!(Instant::now() < deadline, "agent {id} never reached reviewing under cairn up");
            std::thread::sleep(Duration::from_millis(10));
        }
        reviewing(c, id);
    }
    ids
}

pub fn all(c: &Ctx, rows: &mut Vec<Row>) {
    let log = std::fs::File::create(c.work.join("up.log")).expect("up.log");
    let t0 = Instant::now();
    let mut up = cli(c, &["up"]).stdin(Stdio::null()).stdout(log.try_clone().expect("log")).stderr(log).spawn().expect("cairn up");
    wait_live(c, &mut up);
    done(rows, Row::new("scale_up_ready", "`cairn up` start until it keeps the index live (`.agentfs/watcher` claimed)", Stat::ms(&[t0.elapsed()]), ""));
    let mut ids = Vec::new();
    let (mut t, mut rss) = (Vec::new(), Vec::new());
    for n in 0..c.runs {
        let (r, id) = cli_run(c, 100 + n);
        assert!(live(c, up.id()), "cairn up stopped keeping the index live");
        t.push(r.t);
        rss.push(r.rss_mb);
        ids.push(id);
    }
    let what = "`cairn run` of a one-file agent with `cairn up` running (index live)";
    done(rows, Row::new("scale_run_up", what, Stat::ms(&t), "< 30 ms at 1M"));
    done(rows, Row::new("scale_run_up_rss", format!("{what}: peak RSS (wait4)"), Stat { values: rss, unit: "MB" }, "< 200 MB at 1M"));
    reject_all(c, &mut ids);
    let mut ids = queue_reviewing(c, 10);
    idle(c, rows, up.id());
    if let Some(pid) = rustix::process::Pid::from_raw(up.id() as i32) {
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
    }
    let _ = up.wait();
    reject_all(c, &mut ids);
    let log = std::fs::read_to_string(c.work.join("up.log")).unwrap_or_default();
    for line in log.lines().filter(|l| l.contains("unavailable") || l.contains("inotify") || l.contains("ERROR")) {
        eprintln!("   (cairn up said: {line})");
    }
}

/// `cairn up` idle with 10 agents reviewing: after `CAIRN_BENCH_SETTLE_SECS` (5), one window
/// per sample over `CAIRN_BENCH_IDLE_SECS` (28) in all, its CPU time (with its children's)
/// over each window's wall time, and its `VmRSS` at the end of each; then `VmHWM`.
fn idle(c: &Ctx, rows: &mut Vec<Row>, pid: u32) {
    std::thread::sleep(Duration::from_secs(secs("CAIRN_BENCH_SETTLE_SECS", 5)));
    let total = secs("CAIRN_BENCH_IDLE_SECS", 28).max(c.runs as u64);
    let window = Duration::from_secs_f64(total as f64 / c.runs as f64);
    let (mut pct, mut rss) = (Vec::new(), Vec::new());
    let (cpu0, wall0) = (cpu_secs(pid), Instant::now());
    for _ in 0..c.runs {
        let (cpu, t) = (cpu_secs(pid), Instant::now());
        std::thread::sleep(window);
        pct.push((cpu_secs(pid) - cpu) / t.elapsed().as_secs_f64() * 100.0);
        rss.push(vm_mb(pid, "VmRSS").expect("VmRSS of cairn up"));
    }
    let overall = (cpu_secs(pid) - cpu0) / wall0.elapsed().as_secs_f64() * 100.0;
    let hwm = vm_mb(pid, "VmHWM").expect("VmHWM of cairn up");
    let kids: f64 = children(pid).into_iter().filter_map(|k| vm_mb(k, "VmRSS")).sum();
    done(rows, Row::new("scale_up_rss", "`cairn up` RSS (VmRSS, its own) with the tree watched and 10 agents reviewing", Stat { values: rss, unit: "MB" }, "< 500 MB at 1M"));
    done(rows, Row::new("scale_up_kids_rss", "… its children's RSS (the zygote) beside it", Stat::mb(kids), ""));
    done(rows, Row::new("scale_up_hwm", "`cairn up` peak RSS (VmHWM), after all of the above", Stat::mb(hwm), ""));
    let settle = secs("CAIRN_BENCH_SETTLE_SECS", 5);
    let op = format!("idle `cairn up` CPU (with its children), {:.0}-s windows after {settle} s settled", window.as_secs_f64());
    done(rows, Row::new("scale_up_idle_cpu", op, Stat { values: pct, unit: "%" }, "< 1%"));
    done(rows, Row::new("scale_up_idle_cpu_all", format!("… over the whole {total} s"), Stat { values: vec![overall], unit: "%" }, "< 1%"));
}
