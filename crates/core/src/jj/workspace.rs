//! Preview workspaces of a jj project: `jj workspace add` at the agent's preview directory,
//! its working copy the agent's change itself, so `jj st`, `jj diff` and the user's jj
//! tooling show the proposal there. Forgotten (and removed) when the agent ends or GC trims it.

use super::{detect, live, Cli};
use crate::error::{Error, Result};
use crate::lifecycle::State;
use crate::project::Project;

fn name(id: &str) -> String {
    format!("cairn-preview-{id}")
}

/// Makes (or brings up to date) agent `id`'s preview as a jj workspace on its change.
/// `Ok(None)`: not a jj preview (the integration is off, or the agent has no live change),
/// the caller materializes a plain copy.
pub fn preview(project: &Project, id: &str) -> Result<Option<std::path::PathBuf>> {
    let (_, Some(cli)) = detect(project) else { return Ok(None) };
    let _lock = crate::review::lock::acquire(project)?;
    let Some(row) = project.bin()?.jj_get(id)?.filter(|r| r.status == "proposed") else { return Ok(None) };
    let Some(commit) = live(&cli, project, &row.change)? else { return Ok(None) };
    let dir = project.home.workspace(id);
    if dir.join(".jj").is_dir() {
        cli.run(&dir, &["workspace", "update-stale"], &[])?;
        return Ok(Some(dir));
    }
    if dir.exists() {
        // A plain copy made before: replaced by the workspace.
        std::fs::remove_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    }
    if let Some(parent) = dir.parent() {
        std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
    }
    let d = dir.to_string_lossy().into_owned();
    let _ = cli.run_quiet(&project.root, &["workspace", "forget", &name(id)]);
    cli.run(&project.root, &["workspace", "add", "--name", &name(id), "--sparse-patterns", "full", "-r", &commit, &d], &[])?;
    // Its working copy is the change itself (jj abandons the empty one `add` made).
    cli.run(&dir, &["edit", &commit], &[])?;
    Ok(Some(dir))
}

/// After Cairn rewrote the change: the preview checks the new version out.
pub(super) fn refresh_preview(cli: &Cli, project: &Project, id: &str) {
    let dir = project.home.workspace(id);
    if dir.join(".jj").is_dir() {
        if let Err(e) = cli.run(&dir, &["workspace", "update-stale"], &[]) {
            tracing::warn!(target: "cairn::jj", "preview of {id}: {e}");
        }
    }
}

/// Forgets agent `id`'s preview workspace in jj and removes its directory, when it is one.
pub fn forget_preview(project: &Project, id: &str) {
    let dir = project.home.workspace(id);
    if !dir.join(".jj").is_dir() {
        return;
    }
    if let (_, Some(cli)) = detect(project) {
        if let Err(e) = cli.run_quiet(&project.root, &["workspace", "forget", &name(id)]) {
            tracing::warn!(target: "cairn::jj", "forgetting the preview of {id}: {e}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Forgets Cairn's jj workspaces nothing needs any more: previews whose directory is gone or
/// whose agent no longer proposes anything, and scratch workspaces a killed process left.
/// Returns the names forgotten.
pub fn collect(project: &Project) -> Result<Vec<String>> {
    let (_, Some(cli)) = detect(project) else { return Ok(Vec::new()) };
    let _lock = crate::review::lock::acquire(project)?;
    let names = cli.run_quiet(&project.root, &["workspace", "list", "-T", "name ++ \"\\n\""])?;
    let bin = project.bin()?;
    let mut out = Vec::new();
    for name in names.lines() {
        let stale = if let Some(id) = name.strip_prefix("cairn-preview-") {
            let live = bin.jj_get(id)?.is_some_and(|r| r.status == "proposed");
            !live || !project.home.workspace(id).join(".jj").is_dir()
        } else if let Some(id) = name.strip_prefix("cairn-") {
            // An agent's workspace lives while the agent works (`[jj] create_change_on_spawn`),
            // else only while Cairn holds the lock, which this call does.
            !id.is_empty() && !bin.get(id).is_ok_and(|r| matches!(r.state, State::Generating | State::Executing | State::Submitting))
        } else {
            false
        };
        if stale {
            cli.run_quiet(&project.root, &["workspace", "forget", name])?;
            if let Some(id) = name.strip_prefix("cairn-preview-") {
                let _ = std::fs::remove_dir_all(project.home.workspace(id));
            } else if let Some(id) = name.strip_prefix("cairn-") {
                let _ = std::fs::remove_dir_all(project.agentfs().join("jj").join(&*crate::paths::id_part(id)));
            }
            out.push(name.to_string());
        }
    }
    Ok(out)
}
