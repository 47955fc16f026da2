//! The host rows, measured in a real Neovim (`tests/nvim/bench_ghost.lua`) on this size's
//! project when `CAIRN_BENCH_NVIM` names a Neovim binary.

use crate::stats::{Row, Stat};
use crate::{done, Ctx};
use std::process::Command;
use std::time::Duration;

pub fn host(c: &Ctx, rows: &mut Vec<Row>) {
    let Some(nvim) = std::env::var_os("CAIRN_BENCH_NVIM") else { return };
    let repo = env!("CARGO_MANIFEST_DIR");
    let out = Command::new(&nvim)
        .args(["--headless", "-u", "NONE", "-i", "NONE", "-n", "-l"])
        .arg(format!("{repo}/tests/nvim/bench_ghost.lua"))
        .env("CAIRN_REPO", repo)
        .env("CAIRN_BENCH_PROJECT", &c.root)
        .env("CAIRN_HOME", &c.home)
        .env("CAIRN_BENCH_RUNS", c.runs.to_string())
        .output()
        .expect("neovim");
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    let mut found = std::collections::HashMap::new();
    for line in text.lines().filter_map(|l| l.strip_prefix("ROW ")) {
        if let Some((key, values)) = line.split_once(' ') {
            found.insert(key.to_string(), values.to_string());
        }
    }
    assert!(out.status.success() && found.contains_key("run_host"), "bench_ghost.lua failed:\n{text}");
    let version = found.get("version").cloned().unwrap_or_default();
    let ms = |key: &str| Stat::ms(&found.get(key).map(|v| v.split(',').filter_map(|x| x.parse::<f64>().ok()).map(|x| Duration::from_secs_f64(x / 1000.0)).collect::<Vec<_>>()).unwrap_or_default());
    done(rows, Row::new("run_host", format!(":CairnQueue → ghost text drawn (Neovim {version} and the host)"), ms("run_host"), "< 50 ms"));
    done(rows, Row::new("live_ghost", "a wrapped agent's write → its ghost text drawn while it runs", ms("live_ghost"), "< 1 s"));
    done(rows, Row::new("ghost_trip", "ghost text round trip, 1,000 lines / 50 hunks (request → payload in Lua)", ms("ghost_trip"), ""));
    done(rows, Row::new("ghost_render", "ghost text render, 50 hunks (extmarks)", ms("ghost_render"), ""));
    if let Some(mb) = found.get("rss_host").and_then(|v| v.parse::<f64>().ok()) {
        done(rows, Row::new("rss_host", "peak RSS of the Neovim host (`cairn nvim`)", Stat::mb(mb), ""));
    }
}
