//! The scale family (issue 37): the monorepo rows at 1,000,000 generated files beside the same
//! at 10,000. Every command runs as a user runs it (a `cairn` process; times and peak RSS
//! from `wait4`), on the cached fixture in place (`fixture.rs`), and leaves it as it found it.
//!
//! Selected by `CAIRN_BENCH_ONLY=scale` or by setting `CAIRN_BENCH_SCALE_FILES`
//! (comma-separated sizes, default `1000000,10000`); never part of a default run, so the test
//! command's smoke run stays small. `CAIRN_BENCH_IDLE_SECS` (28) and
//! `CAIRN_BENCH_SETTLE_SECS` (5) set the idle `cairn up` window.

mod fixture;
mod preview;
mod proc;
mod rows;
mod up;

use crate::stats::{time, Row};
use crate::Ctx;
use cairn::config::Config;
use cairn::project::{Home, Project};
use std::path::PathBuf;

/// Is the scale family selected?
pub fn wanted() -> bool {
    let only = std::env::var("CAIRN_BENCH_ONLY").unwrap_or_default();
    only.split(',').any(|s| s.trim() == "scale") || std::env::var("CAIRN_BENCH_SCALE_FILES").is_ok_and(|v| !v.trim().is_empty())
}

/// Measures every size (the smallest first: a broken row shows in seconds) and prints one
/// table with a column per size, in the order asked.
pub fn table(runs: usize) {
    let sizes = crate::env_list("CAIRN_BENCH_SCALE_FILES", "1000000,10000");
    let mut order = sizes.clone();
    order.sort_unstable();
    order.dedup();
    let measured: Vec<(usize, Vec<Row>)> = order.into_iter().map(|files| (files, measure(files, runs))).collect();
    println!("\n### Scale: a monorepo of generated files × {} bytes, 100 to a directory (issue 37)\n", fixture::FILE_BYTES);
    let cols: Vec<&(usize, Vec<Row>)> = sizes.iter().filter_map(|n| measured.iter().find(|(f, _)| f == n)).collect();
    println!("| operation | {} | target |", cols.iter().map(|(n, _)| format!("{n} files: median [min–max]")).collect::<Vec<_>>().join(" | "));
    println!("|---|{}---|", "---|".repeat(cols.len()));
    let Some((_, first)) = cols.first() else { return };
    for row in first {
        let cells: Vec<String> = cols.iter().map(|(_, rows)| rows.iter().find(|r| r.key == row.key).map_or("—".into(), |r| r.ours.show())).collect();
        println!("| {} | {} | {} |", row.op, cells.join(" | "), row.target);
    }
}

fn measure(files: usize, runs: usize) -> Vec<Row> {
    let base = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench");
    std::fs::create_dir_all(&base).expect("target/bench");
    let (t, root) = time(|| fixture::cached(&base, files));
    eprintln!("== scale: {files} files of {} bytes in {} (ready in {:.1} s)", fixture::FILE_BYTES, root.display(), t.as_secs_f64());
    fixture::clean(&root);
    let work = base.join("scale-work");
    let _ = std::fs::remove_dir_all(&work);
    let home = work.join("home");
    std::fs::create_dir_all(&home).expect("home");
    let p = Project::new(&root, Home::new(&home), Config::default(), PathBuf::from(env!("CARGO_BIN_EXE_cairn"))).expect("project");
    let c = Ctx { files, runs, fixture: root.clone(), work: work.clone(), root, home, p };
    let mut out = Vec::new();
    rows::all(&c, &mut out);
    up::all(&c, &mut out);
    fixture::clean(&c.root);
    drop(c);
    let _ = std::fs::remove_dir_all(&work);
    out
}
