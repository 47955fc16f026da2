//! `cairn events`: the event stream of `bin.db` ([`cairn_core::events`]) on stdout, one
//! event a line (JSON Lines with `--json`), from `--since` on; `--follow` keeps printing new
//! events until SIGINT, SIGTERM or a closed stdout.

use cairn_core::error::{Error, Result};
use cairn_core::project::Project;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How often `--follow` looks for new events when there are none.
const FOLLOW_POLL: Duration = Duration::from_millis(20);
/// Events read per query.
const BATCH: usize = 1000;

/// Prints events after `since` (and new ones with `follow`); `agent` keeps one agent's.
pub fn run(project: &Project, since: i64, follow: bool, json: bool, agent: Option<&str>) -> Result<()> {
    let stop = Arc::new(AtomicBool::new(false));
    if follow {
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            signal_hook::flag::register(sig, Arc::clone(&stop)).map_err(|e| Error::io("signal handler", e))?;
        }
    }
    let bin = project.bin()?;
    let mut last = since;
    while !stop.load(Ordering::Relaxed) {
        let batch = bin.events_after(last, BATCH)?;
        let mut out = std::io::stdout().lock();
        for ev in &batch {
            last = ev.seq;
            if agent.is_some_and(|a| !ev.agent_id.starts_with(a)) {
                continue;
            }
            let line = if json {
                serde_json::to_string(ev).map_err(|e| Error::Internal(e.to_string()))?
            } else {
                let at = cairn_core::time::rfc3339(ev.ts_ms);
                cairn_core::display::escape_line(&format!("{:>6} {at} {} {:<10} {:<15} {}", ev.seq, ev.agent_id, ev.state.as_str(), ev.kind.type_name(), ev.message))
            };
            if writeln!(out, "{line}").and_then(|_| out.flush()).is_err() {
                // The reader went away (`| head`): that is the end, not an error.
                return Ok(());
            }
        }
        if batch.len() < BATCH {
            if !follow {
                break;
            }
            std::thread::sleep(FOLLOW_POLL);
        }
    }
    Ok(())
}
