//! The SPEC §12 table, and how each row grows with the project: `cargo bench --bench
//! spec_table`, or `scripts/bench.sh` for 1,000 / 10,000 / 100,000 files and the Neovim rows.
//!
//! Every row times what a user waits for, as a median of at least 7 runs with min and max,
//! and every reference tool is timed in the same run on the same tree.
//!
//! - `CAIRN_BENCH_FILES`: comma-separated project sizes (default `10000`);
//! - `CAIRN_BENCH_RUNS`: samples per row (default and minimum 7);
//! - `CAIRN_BENCH_NVIM`: a Neovim binary; when set, the host rows (`:CairnQueue` to ghost
//!   text drawn, the host's peak memory) run in it;
//! - `CAIRN_BENCH_TRACE`: a `tracing` filter (`cairn::accept=debug` shows accept's phases)
//!   whose events go to stderr;
//! - `CAIRN_BENCH_ONLY`: comma-separated steps to run (`runs`, `review`, `watcher`,
//!   `materialize`, `search`, `nvim`, `jj`) after the index rows, which every step needs;
//!   `scale` alone runs only the scale family;
//! - `CAIRN_BENCH_SCALE_FILES`: the scale family's sizes (default `1000000,10000`); setting it
//!   selects the family too (`scale/mod.rs`: the monorepo rows of issue 37, off by default).
//!
//! The bench asserts that each operation did its job, never how fast it was.

mod fixture;
mod jj;
mod nvim;
mod review;
mod runs;
mod scale;
mod stats;
mod tree;

use cairn::config::Config;
use cairn::project::{Home, Project};
use stats::Row;
use std::path::PathBuf;
use std::process::Command;

/// One size's project, copied from the fixture, and how many samples a row takes.
pub struct Ctx {
    pub files: usize,
    pub runs: usize,
    pub fixture: PathBuf,
    pub work: PathBuf,
    pub root: PathBuf,
    pub home: PathBuf,
    pub p: Project,
}

impl Ctx {
    /// `cairn` on this project, as a user runs it.
    pub fn cairn(&self) -> Command {
        let mut cmd = Command::new(&self.p.exe);
        cmd.current_dir(&self.root).env("CAIRN_HOME", &self.home).env_remove("CAIRN_TEST_NO_SYNTAX_LAYER");
        cmd
    }

    /// Runs `code` to `reviewing` in this process (a fresh child); returns the agent id.
    pub fn run_inline(&self, code: &str) -> String {
        let rec = cairn::orchestrator::run_now(&self.p, code, Some(cairn::lifecycle::Provider::Inline), None).expect("run");
        assert_eq!(rec.state.as_str(), "reviewing", "{:?}", rec.error);
        rec.id
    }
}

fn env_list(name: &str, default: &str) -> Vec<usize> {
    std::env::var(name).unwrap_or_else(|_| default.into()).split(',').filter_map(|s| s.trim().replace('_', "").parse().ok()).collect()
}

fn main() {
    if let Ok(filter) = std::env::var("CAIRN_BENCH_TRACE") {
        tracing_subscriber::fmt().with_env_filter(tracing_subscriber::EnvFilter::new(filter)).with_writer(std::io::stderr).without_time().with_target(false).with_level(false).init();
    }
    let sizes = env_list("CAIRN_BENCH_FILES", "10000");
    let runs = env_list("CAIRN_BENCH_RUNS", "7").first().copied().unwrap_or(7).max(7);
    println!("{}", machine());
    let only = std::env::var("CAIRN_BENCH_ONLY").unwrap_or_default();
    let only_scale = !only.trim().is_empty() && only.split(',').all(|s| s.trim() == "scale");
    let mut all = Vec::new();
    for files in sizes.into_iter().filter(|_| !only_scale) {
        let rows = measure(files, runs);
        print_table(files, &rows);
        all.push((files, rows));
    }
    if all.len() > 1 {
        print_growth(&all);
    }
    if scale::wanted() {
        scale::table(runs);
    }
}

/// The machine the figures come from.
fn machine() -> String {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let cpu = std::fs::read_to_string("/proc/cpuinfo").ok().and_then(|c| c.lines().find(|l| l.starts_with("model name")).and_then(|l| l.split(':').nth(1)).map(|s| s.trim().to_string())).unwrap_or_default();
    let mem = std::fs::read_to_string("/proc/meminfo").ok().and_then(|m| m.lines().next().and_then(|l| l.split_whitespace().nth(1)).and_then(|k| k.parse::<f64>().ok())).map_or(String::new(), |kb| format!("{:.0} GB RAM", kb / 1048576.0));
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let fs = Command::new("stat").args(["-f", "-c", "%T"]).arg(env!("CARGO_MANIFEST_DIR")).output().map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string()).unwrap_or_default();
    format!("machine: {cores} cores ({cpu}), {mem}, Linux {}, {fs} file system", kernel.trim())
}

/// One group of rows.
type Step = fn(&Ctx, &mut Vec<Row>);

fn measure(files: usize, runs: usize) -> Vec<Row> {
    let base = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench");
    let (t, fixture) = stats::time(|| fixture::cached(&base, files));
    eprintln!("== {files} files of {} bytes ({} MB) in {} (ready in {:.1} s)", fixture::FILE_BYTES, files * fixture::FILE_BYTES / 1_000_000, fixture.display(), t.as_secs_f64());
    let work = base.join("work");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).expect("work directory");
    let root = work.join("proj");
    fixture::copy(&fixture, &root);
    let home = work.join("home");
    std::fs::create_dir_all(&home).expect("home");
    let p = Project::new(&root, Home::new(&home), Config::default(), PathBuf::from(env!("CARGO_BIN_EXE_cairn"))).expect("project");
    let c = Ctx { files, runs, fixture, work: work.clone(), root, home, p };
    let mut rows = Vec::new();
    let only = std::env::var("CAIRN_BENCH_ONLY").ok();
    let wanted = |name: &str| name == "index" || only.as_deref().is_none_or(|o| o.split(',').any(|s| s.trim() == name));
    // `jj` last: it makes the project a jj repository.
    let steps: [(&str, Step); 8] = [
        ("index", tree::index),
        ("runs", runs::all),
        ("review", review::all),
        ("watcher", tree::watcher),
        ("materialize", tree::materialize),
        ("search", tree::search),
        ("nvim", nvim::host),
        ("jj", jj::rows),
    ];
    for (_, step) in steps.iter().filter(|(name, _)| wanted(name)) {
        step(&c, &mut rows);
        if std::env::var_os("CAIRN_BENCH_WAL").is_some() {
            let wal = |db: &str| std::fs::metadata(c.root.join(format!(".agentfs/{db}-wal"))).map_or(0, |m| m.len());
            eprintln!("   (WAL: stable.db {} bytes, bin.db {} bytes)", wal("stable.db"), wal("bin.db"));
        }
    }
    drop(c);
    let _ = std::fs::remove_dir_all(&work);
    rows
}

/// Logs a row as soon as it is measured (a 100,000-file run takes minutes).
pub fn done(rows: &mut Vec<Row>, row: Row) {
    eprintln!("   {}: {}{}", row.op, row.ours.show(), row.refs.iter().map(|(n, s)| format!("; {n}: {}", s.show())).collect::<String>());
    rows.push(row);
}

fn print_table(files: usize, rows: &[Row]) {
    println!("\n### {files} files × {} bytes ({} MB)\n", fixture::FILE_BYTES, files * fixture::FILE_BYTES / 1_000_000);
    println!("| operation | cairn: median [min–max] | reference, same run | ratio | target |");
    println!("|---|---|---|---|---|");
    for r in rows {
        let refs = r.refs.iter().map(|(n, s)| format!("{n}: {}", s.show())).collect::<Vec<_>>().join("<br>");
        let ratio = r.ratio().map_or(String::new(), |x| format!("{x:.2}×"));
        println!("| {} | {} | {} | {} | {} |", r.op, r.ours.show(), refs, ratio, r.target);
    }
}

fn print_growth(all: &[(usize, Vec<Row>)]) {
    println!("\n### Growth (medians)\n");
    println!("| operation | {} |", all.iter().map(|(n, _)| format!("{n} files")).collect::<Vec<_>>().join(" | "));
    println!("|---|{}", "---|".repeat(all.len()));
    let keys: Vec<(&'static str, &str)> = all[0].1.iter().map(|r| (r.key, r.op.as_str())).collect();
    for (key, op) in keys {
        let cells: Vec<String> = all.iter().map(|(_, rows)| rows.iter().find(|r| r.key == key).map_or("—".into(), |r| r.ours.brief())).collect();
        println!("| {op} | {} |", cells.join(" | "));
    }
}
