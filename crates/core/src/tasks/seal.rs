//! A session's overlay, sealed outside its WAL. An overlay keeps its writes in its write-ahead
//! log (`agent-<id>.db-wal`) until a checkpoint folds them into the database file (cairn's
//! databases keep the WAL on close, see `store::open`); a cleanup tool that deletes that file
//! while the session is open takes the writes with it, and the overlay then reads as an older
//! (or empty) proposal without any error. So every session call ends by counting one more
//! *generation* inside the overlay and writing the same number, with what the overlay then
//! held (paths and sizes), to `overlay.seal` in the agent's directory: a plain file, in no WAL.
//! A call or a finish that finds the overlay's generation behind its seal's fails, naming what
//! was lost: nothing is submitted as if all was well, and nothing still readable is dropped
//! (the overlay stays as it is; `session_diff` shows it).

use crate::error::{Error, Result};
use crate::project::Project;
use crate::store::overlay::Overlay;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The seal's file name in the agent's directory.
pub const SEAL_FILE: &str = "overlay.seal";
/// The overlay's KV key holding its generation.
const KEY: &str = "generation";
/// Paths recorded at most (they only name what was lost; the generation detects the loss).
const MAX_PATHS: usize = 10_000;
/// Paths named in a loss report at most.
const NAMED: usize = 20;

/// What the overlay held after the last session call.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Seal {
    generation: u64,
    /// Path → size in bytes (`None`: deleted).
    paths: BTreeMap<String, Option<u64>>,
}

fn generation(overlay: &Overlay) -> Result<u64> {
    Ok(overlay.kv_get(KEY)?.and_then(|g| g.parse().ok()).unwrap_or(0))
}

fn path(project: &Project, agent: &str) -> std::path::PathBuf {
    project.agent_dir(agent).join(SEAL_FILE)
}

/// The seal, if a session call wrote one (an overlay from before seals has none: no check).
fn read(project: &Project, agent: &str) -> Option<Seal> {
    let text = std::fs::read(path(project, agent)).ok()?;
    serde_json::from_slice(&text).ok()
}

/// Fails with [`Error::Overlay`] naming what was lost when `agent`'s overlay is behind its
/// seal: writes a session call reported as done are no longer in it.
pub(crate) fn check(project: &Project, agent: &str, overlay: &Overlay) -> Result<()> {
    let Some(seal) = read(project, agent) else { return Ok(()) };
    let now = generation(overlay)?;
    if now >= seal.generation {
        return Ok(());
    }
    let held: BTreeMap<String, Option<u64>> = overlay.sizes()?.into_iter().collect();
    let mut gone: Vec<&str> = seal.paths.iter().filter(|(p, size)| held.get(*p) != Some(size)).map(|(p, _)| p.as_str()).collect();
    gone.extend(held.keys().filter(|p| !seal.paths.contains_key(*p)).map(String::as_str));
    gone.sort_unstable();
    let what = match gone.len() {
        0 => "the last writes to files it still holds (same paths and sizes)".to_string(),
        n => {
            let mut names = gone.iter().take(NAMED).map(|p| crate::display::escape(p)).collect::<Vec<_>>().join(", ");
            if n > NAMED {
                names.push_str(&format!(" and {} more", n - NAMED));
            }
            format!("{n} path(s) are no longer as you left them: {names}")
        }
    };
    let wal = crate::store::wal_of(&overlay.file());
    let message = format!(
        "this session's proposal lost changes: {what} (it is as it was after {now} of your {} calls). Its write-ahead log {} (or the overlay itself) was deleted or replaced while the session was open (a cleanup tool?). Nothing was submitted; session_diff (`cairn diff {agent}`) shows what the proposal still holds. Redo the lost changes in a new session and cancel this one (session_cancel)",
        seal.generation,
        wal.display()
    );
    tracing::error!("session of agent {agent}: {message}");
    Err(Error::Overlay { id: agent.to_string(), message })
}

/// After a session call: one generation more, in the overlay and then in its seal (so a crash
/// between the two leaves the seal behind, never ahead).
pub(crate) fn record(project: &Project, agent: &str, overlay: &Overlay) -> Result<()> {
    let next = generation(overlay)? + 1;
    overlay.kv_set(KEY, &next.to_string())?;
    let seal = Seal { generation: next, paths: overlay.sizes()?.into_iter().take(MAX_PATHS).collect() };
    let file = path(project, agent);
    let part = file.with_extension("seal.part");
    std::fs::write(&part, serde_json::to_vec(&seal)?).and_then(|()| std::fs::rename(&part, &file)).map_err(|e| Error::io(&file, e))
}

/// Ends an implicit session whose overlay lost changes at its disconnect: its agent
/// errored with `why`, its overlay left in place (`cairn diff` shows what it still holds), the
/// session cancelled and its task released.
pub(super) fn lost_at_end(project: &Project, actor: &str, s: &crate::store::bin::SessionRow, why: &str) {
    let extra = crate::store::bin::TransitionExtra { error: Some((crate::lifecycle::ErrorKind::Host, why)), ..Default::default() };
    let ended = project.bin().and_then(|mut bin| bin.transition(&s.agent, crate::lifecycle::State::Errored, "lost", extra));
    let released = ended.and_then(|_| {
        let bin = project.bin()?;
        bin.session_update(&crate::store::bin::SessionRow { status: "cancelled".into(), ..s.clone() })?;
        let mut t = bin.task_get(&s.task)?;
        t.assignee = None;
        bin.task_update(&t, actor, &format!("session {} ended at disconnect: its proposal could not be submitted", s.id))
    });
    if let Err(e) = released {
        tracing::error!("ending session {} after its overlay lost changes: {e}", s.id);
    }
}
