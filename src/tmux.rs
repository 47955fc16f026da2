//! tmux preview (SPEC §11): opens the agent's workspace in a split running
//! `nvim +<line> <file>`, and reuses that pane (tracked by pane id in `$CAIRN_HOME/state/`) on
//! the next preview.

use cairn_core::error::{Error, Result};
use cairn_core::project::Project;
use std::path::Path;
use std::process::Command;

fn tmux(args: &[&str]) -> Result<String> {
    let out = Command::new("tmux").args(args).output().map_err(|e| Error::Tmux(format!("cannot run tmux: {e}")))?;
    if !out.status.success() {
        return Err(Error::Tmux(format!("{}: {}", args.first().unwrap_or(&""), String::from_utf8_lossy(&out.stderr).trim())));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Is this process inside a tmux session?
pub fn inside_tmux() -> bool {
    std::env::var_os("TMUX").is_some_and(|v| !v.is_empty())
}

/// Opens (or reuses) the preview pane on `workspace`, running `editor` (Neovim) at
/// `file:line` when given. Returns the pane id.
pub fn open_preview(project: &Project, editor: &str, workspace: &Path, file: Option<&str>, line: Option<usize>) -> Result<String> {
    if !inside_tmux() {
        return Err(Error::Tmux("not inside tmux: open the workspace path yourself, or run cairn inside tmux".into()));
    }
    let mut cmd = shell_quote(editor);
    if let Some(f) = file {
        if let Some(l) = line {
            cmd.push_str(&format!(" +{l}"));
        }
        cmd.push_str(&format!(" {}", shell_quote(f)));
    }
    let dir = workspace.to_string_lossy().to_string();
    let state = project.home.state();
    std::fs::create_dir_all(&state).map_err(|e| Error::io(&state, e))?;
    let pane_file = state.join("tmux-pane");
    if let Ok(pane) = std::fs::read_to_string(&pane_file) {
        let pane = pane.trim().to_string();
        if !pane.is_empty() && tmux(&["display-message", "-p", "-t", &pane, "#{pane_id}"]).is_ok_and(|p| p == pane) {
            tmux(&["respawn-pane", "-k", "-t", &pane, "-c", &dir, &cmd])?;
            return Ok(pane);
        }
    }
    let dir_flag = if project.config.tmux.split == "vertical" { "-v" } else { "-h" };
    let pane = tmux(&["split-window", dir_flag, "-d", "-l", &project.config.tmux.size, "-P", "-F", "#{pane_id}", "-c", &dir, &cmd])?;
    std::fs::write(&pane_file, &pane).map_err(|e| Error::io(&pane_file, e))?;
    Ok(pane)
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}
