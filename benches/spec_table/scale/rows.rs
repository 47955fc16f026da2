//! The scale rows without a daemon: `cairn init`, a cold `cairn run`, `cairn wrap -- true`,
//! preview open and `cairn gc` of 100 decided agents, each as a user runs the command.

use super::proc::{disk_bytes, measured, Ran};
use crate::stats::{sample, Row, Stat};
use crate::{done, Ctx};
use cairn::command::{self, Command};
use std::process::Command as Proc;
use std::time::Duration;

/// The one-file agent: an inline provider writing one new file.
pub fn one_file(n: usize) -> String {
    format!("write_file('scale_bench/agent{n}.txt', 'one file {n}\\n')")
}

/// `cairn <args[0]> --project-root <root> <args[1..]>` (the fixture sits inside this
/// repository's tree: the root is never left to discovery).
pub fn cli(c: &Ctx, args: &[&str]) -> Proc {
    let mut cmd = c.cairn();
    cmd.arg(args[0]).arg("--project-root").arg(&c.root).args(&args[1..]);
    cmd
}

/// `cairn run` of the one-file agent; its id (asserted `reviewing`) and what it cost.
pub fn cli_run(c: &Ctx, n: usize) -> (Ran, String) {
    let r = measured(cli(c, &["run", "--provider", "inline", &one_file(n)]));
    let id = r.stdout.trim().to_string();
    reviewing(c, &id);
    (r, id)
}

pub fn reviewing(c: &Ctx, id: &str) {
    let rec = c.p.bin().expect("bin").get(id).unwrap_or_else(|e| panic!("agent {id}: {e}"));
    assert_eq!(rec.state.as_str(), "reviewing", "agent {id}: {:?}", rec.error);
}

pub fn reject_all(c: &Ctx, ids: &mut Vec<String>) {
    for id in ids.drain(..) {
        command::execute(&c.p, Command::Reject { id, reason: None }).expect("reject");
    }
}

/// A row of a time and a row of the peak RSS of the same samples.
fn time_and_rss(rows: &mut Vec<Row>, keys: [&'static str; 2], what: &str, samples: Vec<(Duration, f64)>, targets: [&'static str; 2]) {
    let (t, rss): (Vec<Duration>, Vec<f64>) = samples.into_iter().unzip();
    done(rows, Row::new(keys[0], what.to_string(), Stat::ms(&t), targets[0]));
    done(rows, Row::new(keys[1], format!("{what}: peak RSS (wait4)"), Stat { values: rss, unit: "MB" }, targets[1]));
}

pub fn all(c: &Ctx, rows: &mut Vec<Row>) {
    init(c, rows);
    let mut ids = Vec::new();
    let mut n = 0;
    let v = (0..c.runs)
        .map(|_| {
            n += 1;
            let (r, id) = cli_run(c, n);
            ids.push(id);
            (r.t, r.rss_mb)
        })
        .collect();
    time_and_rss(rows, ["scale_run_cold", "scale_run_cold_rss"], "`cairn run` of a one-file agent, cold (no daemon: the command brings the index up to date itself)", v, ["< 1 s at 1M", "< 200 MB at 1M"]);
    reject_all(c, &mut ids);
    let v = sample(c.runs, || {
        let r = measured(cli(c, &["wrap", "--", "true"]));
        assert!(r.stderr.contains("wrap session "), "{}", r.stderr);
        r.t
    });
    done(rows, Row::new("scale_wrap", "`cairn wrap -- true`", v, "< 50 ms at 1M"));
    preview(c, rows);
    gc(c, rows);
}

/// `cairn init` from nothing (`.agentfs/` removed before each sample; the last one stays).
fn init(c: &Ctx, rows: &mut Vec<Row>) {
    let v = (0..c.runs)
        .map(|_| {
            super::fixture::clean(&c.root);
            let r = measured(cli(c, &["init"]));
            (r.t, r.rss_mb)
        })
        .collect();
    time_and_rss(rows, ["scale_init", "scale_init_rss"], "`cairn init` (fresh .agentfs)", v, ["< 10 s at 1M", "< 300 MB at 1M"]);
}

/// Preview open (`preview.rs`), each sample on a fresh agent; the disk it took under
/// `$CAIRN_HOME` (`workspaces/`, `runs/`, `previews/`: before opening, and once ready).
fn preview(c: &Ctx, rows: &mut Vec<Row>) {
    let used = || ["workspaces", "runs", "previews"].iter().map(|d| disk_bytes(&c.home.join(d))).sum::<u64>();
    let mut bytes = Vec::new();
    let mut n = 0;
    let v = sample(c.runs, || {
        n += 1;
        let (code, file) = super::preview::agent(n);
        let id = c.run_inline(&code);
        let before = used();
        let (t, open) = super::preview::open(c, &id, &file);
        bytes.push(used().saturating_sub(before) as f64 / 1e3);
        super::preview::close(open);
        reject_all(c, &mut vec![id]);
        t
    });
    done(rows, Row::new("scale_preview", "preview open (`cairn preview ID`: its view ready, the command in it started)", v, "< 100 ms at 1M"));
    done(rows, Row::new("scale_preview_bytes", "preview open: disk written under $CAIRN_HOME (workspaces/, runs/, previews/)", Stat { values: bytes, unit: "KB" }, "0 copied at 1M"));
}

/// `cairn gc` after 100 agents were decided (rejected), with `[gc] max_age_hours = 0` and
/// `keep_latest = 0` so that every one of them is collected (asserted).
fn gc(c: &Ctx, rows: &mut Vec<Row>) {
    let pool = cairn::sandbox::pool::Pool::new(&c.p.exe, true);
    let v = sample(c.runs, || {
        let mut ids: Vec<String> = (0..100).map(|i| crate::runs::pooled(c, &pool, &one_file(2000 + i))).collect();
        let decided = ids.clone();
        reject_all(c, &mut ids);
        let mut cmd = cli(c, &["gc"]);
        cmd.env("CAIRN_GC_MAX_AGE_HOURS", "0").env("CAIRN_GC_KEEP_LATEST", "0");
        let r = measured(cmd);
        let bin = c.p.bin().expect("bin");
        let left: Vec<&String> = decided.iter().filter(|id| bin.get(id).is_ok()).collect();
        assert!(left.is_empty(), "gc left {} of 100 decided agents: {}", left.len(), r.stdout);
        r.t
    });
    done(rows, Row::new("scale_gc", "`cairn gc` of 100 decided agents (max_age_hours = 0, keep_latest = 0)", v, "< 1 s at 1M"));
}
