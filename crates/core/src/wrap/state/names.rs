//! Which agent CLI a wrapped command is, and so which state layer and `[wrap] state` entries
//! it gets.

use crate::project::Project;
use std::path::{Path, PathBuf};

/// The `[wrap] state` entries command `program` sees: its own (`claude:.claude` for
/// `claude`), and those without a command. Another CLI's state (its credentials) is hidden.
/// `search`: the command's `PATH`.
pub(in crate::wrap) fn state_of(program: &str, project: &Path, search: &str, entries: &[String]) -> Vec<String> {
    let name = cli_of(program, project, search);
    entries
        .iter()
        .filter_map(|e| match e.split_once(':') {
            Some((cli, path)) if !cli.contains('/') => (!name.is_empty() && cli == name).then(|| path.to_string()),
            _ => Some(e.clone()),
        })
        .collect()
}

/// The agent CLI command `program` is, by name (`claude`), for its state and its keys: empty
/// for a program in the project (which agents write) or given by a relative path: `./claude`
/// is no agent CLI, nor is a `claude` that `PATH` (a relative entry in it, say) finds there.
/// `search`: the command's `PATH`.
pub(in crate::wrap) fn cli_of(program: &str, project: &Path, search: &str) -> String {
    let path = Path::new(program);
    let found = if program.contains('/') {
        path.is_absolute().then(|| path.to_path_buf())
    } else {
        // A relative entry of `PATH` (`.`, empty) is taken in the project.
        crate::runbox::which(program, search, Some(project))
    };
    let in_project = match found {
        Some(p) => p.starts_with(project) || std::fs::canonicalize(&p).is_ok_and(|c| c.starts_with(project)),
        None => true,
    };
    if in_project { String::new() } else { state_name(program) }
}

/// The copy-on-write layer of an agent CLI's state: one per command name (`claude`,
/// `codex`, ...), kept across sessions under `$CAIRN_HOME/wrap-state/`.
pub fn state_layer(project: &Project, program: &str) -> PathBuf {
    project.home.dir.join("wrap-state").join(state_name(program))
}

/// A command's name as its state layer is named (`/usr/bin/claude` → `claude`); an ACP
/// adapter of an agent CLI is that CLI (`claude-agent-acp` runs Claude Code: its state, its keys).
fn state_name(program: &str) -> String {
    let base = Path::new(program).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let base = match base.as_str() {
        "claude-agent-acp" | "claude-code-acp" => "claude".to_string(),
        "codex-acp" => "codex".to_string(),
        _ => base,
    };
    let name: String = base.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') { c } else { '_' }).collect();
    if name.is_empty() || name.starts_with('.') { format!("_{name}") } else { name }
}

