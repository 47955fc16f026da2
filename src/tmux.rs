//! tmux preview (SPEC §11): opens the agent's preview in a pane running a command line (a
//! preview session, `cairn preview ID ...`, or for a jj workspace `nvim +<line> <file>`): a split of the user's tmux window, or, outside tmux with
//! `[tmux] auto_create_session`, a detached session of the project's own. One pane is reused
//! by the next preview; with `[tmux] layout` each agent's preview has its own pane, arranged
//! with that layout. Panes are tracked by id in `$CAIRN_HOME/state/`.

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

/// Can a preview open in tmux from here (inside tmux, or a session of its own)?
pub fn available(project: &Project) -> bool {
    inside_tmux() || project.config.tmux.auto_create_session
}

/// The detached session previews open in outside tmux: `cairn-<project dir>-<hash>`.
pub fn session_name(project: &Project) -> String {
    let base: String = project.root.file_name().map(|n| n.to_string_lossy().chars().filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_').take(24).collect()).unwrap_or_default();
    let hash = cairn_core::store::hash_bytes(project.root.to_string_lossy().as_bytes());
    format!("cairn-{base}-{:02x}{:02x}", hash[0], hash[1])
}

/// Where a preview opened: the pane, and the session to attach to when it is one of Cairn's.
pub struct Opened {
    pub pane: String,
    pub session: Option<String>,
}

/// The command line of `argv`, each word quoted for the shell.
pub fn command_line(argv: &[String]) -> String {
    argv.iter().map(|a| shell_quote(a)).collect::<Vec<_>>().join(" ")
}

/// Opens (or reuses) the preview pane of agent `id`, running `argv` in `dir`.
pub fn open_preview(project: &Project, id: &str, argv: &[String], dir: &Path) -> Result<Opened> {
    if !available(project) {
        return Err(Error::Tmux("not inside tmux: run `cairn preview ID` in a terminal, run cairn inside tmux, or set [tmux] auto_create_session = true".into()));
    }
    let cmd = format!("exec {}", command_line(argv));
    // tmux expands `-c` as a format: a directory named `p#(cmd)` would run `cmd`.
    let dir = dir.to_string_lossy().replace('#', "##");
    let state = project.home.state();
    std::fs::create_dir_all(&state).map_err(|e| Error::io(&state, e))?;
    let layout = project.config.tmux.layout.as_str();
    let session = (!inside_tmux()).then(|| session_name(project));
    // One pane for every preview, or one per agent with a layout (per session outside tmux).
    let key = match (&session, layout) {
        (Some(s), "") => format!("tmux-pane-{s}"),
        (Some(s), _) => format!("tmux-pane-{s}-{id}"),
        (None, "") => "tmux-pane".to_string(),
        (None, _) => format!("tmux-pane-{id}"),
    };
    let pane_file = state.join(key);
    if let Ok(pane) = std::fs::read_to_string(&pane_file) {
        let pane = pane.trim().to_string();
        if !pane.is_empty() && tmux(&["display-message", "-p", "-t", &pane, "#{pane_id}"]).is_ok_and(|p| p == pane) {
            tmux(&["respawn-pane", "-k", "-t", &pane, "-c", &dir, &cmd])?;
            return Ok(Opened { pane, session });
        }
    }
    let dir_flag = if project.config.tmux.split == "vertical" { "-v" } else { "-h" };
    let pane = match &session {
        // Its panes stay when the editor ends (an error stays readable until the user closes it).
        Some(s) if tmux(&["has-session", "-t", &format!("={s}")]).is_err() => tmux(&["new-session", "-d", "-s", s, "-x", "200", "-y", "50", "-P", "-F", "#{pane_id}", "-c", &dir, &cmd, ";", "set-option", "-w", "-t", &format!("={s}:"), "remain-on-exit", "on"])?,
        Some(s) => tmux(&["split-window", "-t", &format!("={s}:"), dir_flag, "-d", "-P", "-F", "#{pane_id}", "-c", &dir, &cmd])?,
        None => tmux(&["split-window", dir_flag, "-d", "-l", &project.config.tmux.size, "-P", "-F", "#{pane_id}", "-c", &dir, &cmd])?,
    };
    if !layout.is_empty() {
        tmux(&["select-layout", "-t", &pane, layout])?;
    }
    std::fs::write(&pane_file, &pane).map_err(|e| Error::io(&pane_file, e))?;
    Ok(Opened { pane, session })
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}
