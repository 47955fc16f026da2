//! Garbage collection (`[gc]`): removes terminal agents older than `max_age_hours` (keeping
//! the `keep_latest` newest) with their overlay, journal, workspace and files, trims preview
//! workspaces to `max_workspaces`, then removes decided agents oldest first while the disk use
//! of overlays and workspaces is over `max_total_size_mb`. [`auto`] runs it by itself in a
//! long-running process: when no agent runs and no accept holds the review lock.

use crate::error::Result;
use crate::project::Project;
use serde::Serialize;

/// What a GC run removed.
#[derive(Debug, Clone, Default, Serialize)]
pub struct GcReport {
    pub agents_removed: Vec<String>,
    pub workspaces_removed: Vec<String>,
    /// Bytes of overlays (live and archived) and preview workspaces left.
    pub total_bytes: u64,
}

/// Bytes under `dir` (files, recursively; symlinks not followed).
fn dir_bytes(dir: &std::path::Path) -> u64 {
    let Ok(rd) = std::fs::read_dir(dir) else { return 0 };
    rd.flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => dir_bytes(&e.path()),
            Ok(t) if t.is_file() => e.metadata().map(|m| m.len()).unwrap_or(0),
            _ => 0,
        })
        .sum()
}

/// The disk use the cap counts: overlays (`.agentfs/agent-*`, `.agentfs/bin/`) and the
/// project's preview workspaces.
pub fn total_bytes(project: &Project) -> u64 {
    let overlays: u64 = std::fs::read_dir(project.agentfs())
        .map(|rd| rd.flatten().filter(|e| e.file_name().to_string_lossy().starts_with("agent-")).filter_map(|e| e.metadata().ok()).filter(|m| m.is_file()).map(|m| m.len()).sum())
        .unwrap_or(0);
    overlays + dir_bytes(&project.agentfs().join("bin")) + dir_bytes(&project.home.workspaces())
}

/// One collection by itself, unless an agent runs or an accept, undo or hunk action holds the
/// review lock (it waits for the next time); `None` when it did not run.
pub fn auto(project: &Project) -> Result<Option<GcReport>> {
    let running = project.bin()?.list(false)?.iter().any(|r| r.state.is_running() || r.accept_pending);
    if running {
        return Ok(None);
    }
    // Not while an accept, undo or hunk action is under way. The lock is let go before the
    // collection: parts of it (jj's workspaces) take it themselves.
    if crate::review::lock::try_acquire(project)?.is_none() {
        return Ok(None);
    }
    collect(project).map(Some)
}

/// Removes agent `id` (terminal) with everything it left.
fn remove_agent(project: &Project, bin: &mut crate::store::bin::Bin, id: &str) -> Result<()> {
    project.remove_overlay(id)?;
    crate::workspace::remove(project, id)?;
    let dir = project.agent_dir(id);
    if dir.exists() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    bin.delete(id)
}

/// Runs one collection.
pub fn collect(project: &Project) -> Result<GcReport> {
    let mut bin = project.bin()?;
    let cfg = &project.config.gc;
    let mut terminal: Vec<_> = bin.list(true)?.into_iter().filter(|r| r.state.is_terminal() && !r.accept_pending).collect();
    terminal.sort_by_key(|r| std::cmp::Reverse((r.state_changed_ms, r.seq)));
    let cutoff = crate::time::now_ms() - (cfg.max_age_hours as i64) * 3_600_000;
    let mut report = GcReport::default();
    for rec in terminal.iter().skip(cfg.keep_latest as usize) {
        if rec.state_changed_ms > cutoff {
            continue;
        }
        remove_agent(project, &mut bin, &rec.id)?;
        report.agents_removed.push(rec.id.clone());
    }
    // Previews (jj workspaces, what sessions left; never an open session's): keep the most
    // recently used `max_workspaces`.
    for id in crate::workspace::collectable(project).into_iter().skip(cfg.max_workspaces as usize) {
        crate::workspace::remove(project, &id)?;
        report.workspaces_removed.push(id);
    }
    // The cap: decided agents oldest first (the newest keep_latest stay), until under it.
    let cap = cfg.max_total_size_mb.saturating_mul(1024 * 1024);
    report.total_bytes = total_bytes(project);
    for rec in terminal.iter().skip(cfg.keep_latest as usize).rev() {
        if cap == 0 || report.total_bytes <= cap {
            break;
        }
        if report.agents_removed.contains(&rec.id) {
            continue;
        }
        remove_agent(project, &mut bin, &rec.id)?;
        report.agents_removed.push(rec.id.clone());
        report.total_bytes = total_bytes(project);
    }
    // jj workspaces of Cairn's that nothing needs (previews of ended agents, leftovers).
    match crate::jj::collect(project) {
        Ok(names) => report.workspaces_removed.extend(names),
        Err(e) => tracing::warn!(target: "cairn::jj", "gc: {e}"),
    }
    Ok(report)
}
