//! Garbage collection (`[gc]`): removes terminal agents older than `max_age_hours` (keeping
//! the `keep_latest` newest) with their overlay, journal, workspace and files, and trims
//! preview workspaces to `max_workspaces`.

use crate::error::Result;
use crate::project::Project;
use serde::Serialize;

/// What a GC run removed.
#[derive(Debug, Clone, Default, Serialize)]
pub struct GcReport {
    pub agents_removed: Vec<String>,
    pub workspaces_removed: Vec<String>,
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
        project.remove_overlay(&rec.id)?;
        crate::workspace::remove(project, &rec.id)?;
        let dir = project.agent_dir(&rec.id);
        if dir.exists() {
            let _ = std::fs::remove_dir_all(&dir);
        }
        bin.delete(&rec.id)?;
        report.agents_removed.push(rec.id.clone());
    }
    // Workspaces: keep the most recently materialized `max_workspaces`.
    let ws_root = project.home.workspaces();
    if let Ok(rd) = std::fs::read_dir(&ws_root) {
        let mut spaces: Vec<(std::time::SystemTime, String)> = rd
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().to_str()?.to_string();
                let manifest = project.home.state().join(format!("workspace-{name}.manifest"));
                let t = std::fs::metadata(&manifest).or_else(|_| e.metadata()).ok()?.modified().ok()?;
                Some((t, name))
            })
            .collect();
        spaces.sort_by(|a, b| b.cmp(a));
        for (_, id) in spaces.into_iter().skip(cfg.max_workspaces as usize) {
            crate::workspace::remove(project, &id)?;
            report.workspaces_removed.push(id);
        }
    }
    // jj workspaces of Cairn's that nothing needs (previews of ended agents, leftovers).
    match crate::jj::collect(project) {
        Ok(names) => report.workspaces_removed.extend(names),
        Err(e) => tracing::warn!(target: "cairn::jj", "gc: {e}"),
    }
    Ok(report)
}
