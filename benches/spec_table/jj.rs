//! Rows about Jujutsu (`:help cairn-jj`): the bench project as a colocated jj repository, a
//! one-file agent run to `reviewing` in-process with the integration on and off, in the same
//! run. The change is recorded after the agent is `reviewing` (off the user's path): one row
//! times until the `reviewing` transition (what the user waits for), one until the change is
//! in jj (the worker's whole call). Needs the test command's `.venv/jj`.

use crate::stats::{time, Row, Stat};
use crate::{done, Ctx};
use cairn::lifecycle::{Priority, Provider};
use cairn::project::{Home, Project};
use cairn::sandbox::pool::Pool;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

/// Runs a one-file agent to `reviewing`: (until the transition, until the call returned).
fn one(p: &Project, pool: &Pool, n: usize) -> (Duration, Duration) {
    let start = cairn::time::now_ms();
    let (whole, _) = time(|| {
        cairn::orchestrator::queue(p, &format!("write_file('bench_jj/f{n}.txt', 'agent {n}\\n')"), Some(Provider::Inline), Priority::Normal).expect("queue");
        let rec = cairn::orchestrator::run_next(p, Some(pool)).expect("run").expect("claimed");
        assert_eq!(rec.state.as_str(), "reviewing", "{:?}", rec.error);
        rec
    });
    let rec = p.bin().expect("bin").list(true).expect("list").into_iter().last().expect("the agent");
    let reviewing = Duration::from_millis((rec.state_changed_ms - start).max(0) as u64);
    (reviewing, whole)
}

pub fn rows(c: &Ctx, rows: &mut Vec<Row>) {
    let jj = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".venv/jj/bin/jj");
    if !jj.exists() {
        eprintln!("   (jj rows skipped: no .venv/jj; `bash scripts/test.sh` installs it)");
        return;
    }
    let user = |args: &[&str]| {
        let out = Command::new(&jj).current_dir(&c.root).env("JJ_CONFIG", "/dev/null").args(["--config", "user.name=b", "--config", "user.email=b@example.com"]).args(args).output().expect("jj");
        assert!(out.status.success(), "jj {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    };
    user(&["git", "init", "--colocate"]);
    user(&["commit", "-m", "bench base"]);
    let mut config = c.p.config.clone();
    config.jj.program = jj.display().to_string();
    let on = Project::new(&c.root, Home::new(&c.home), config.clone(), c.p.exe.clone()).expect("project");
    config.jj.enabled = "false".into();
    let off = Project::new(&c.root, Home::new(&c.home), config, c.p.exe.clone()).expect("project");
    let pool = Pool::new(&c.p.exe, true);
    one(&off, &pool, 0);
    let (mut on_reviewing, mut on_whole, mut off_whole) = (Vec::new(), Vec::new(), Vec::new());
    for n in 0..c.runs {
        let (r, w) = one(&on, &pool, 2 * n + 1);
        on_reviewing.push(r);
        on_whole.push(w);
        off_whole.push(one(&off, &pool, 2 * n + 2).1);
    }
    let recorded = on.bin().expect("bin").jj_all().expect("rows").iter().filter(|r| r.status == "proposed").count();
    assert_eq!(recorded, c.runs, "every agent of the jj project is a change");
    let off = Stat::ms(&off_whole);
    done(rows, Row::new("jj_reviewing", "queue → reviewing, in-process, jj integration on (until the transition)", Stat::ms(&on_reviewing), "≤ off + 50 ms").vs("jj off", Stat::ms(&off_whole)));
    done(rows, Row::new("jj_record", "queue → reviewing and the proposal recorded as a jj change (the worker's whole call)", Stat::ms(&on_whole), "").vs("jj off", off));
}
