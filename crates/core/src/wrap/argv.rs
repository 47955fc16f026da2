//! A wrap session's command line: as the user wrote it (summaries, banners), and as a
//! resumed session runs it (the recorded one; feedback after a prompt it ends with).

use super::ARGV;
use crate::error::{Error, Result};
use crate::project::Project;
use std::path::Path;

/// The command line of a resumed session: the one given, else the one it was started with;
/// feedback sent to it (`cairn revise`) and not delivered yet is appended to its last
/// argument, where agent CLIs take their prompt (`claude -p PROMPT`, `codex exec PROMPT`,
/// `gemini -p PROMPT`). Delivered here, once.
pub fn command_line(project: &Project, agent: &str, given: &[String]) -> Result<Vec<String>> {
    let mut argv = given.to_vec();
    if argv.is_empty() {
        argv = recorded(project, agent)?;
    }
    if argv.is_empty() {
        return Err(Error::Usage(format!("agent {agent} has no recorded command: cairn wrap --agent {agent} -- CMD ARGS...")));
    }
    // Only a command line that carries a prompt (`claude -p P`, `codex exec P`, `gemini -p P`)
    // takes the feedback after it; any other (an interactive CLI with flags, a shell's or an
    // interpreter's script, as :CairnWrap's `sh -c '...'`) gets it typed into its terminal.
    if takes_prompt(&argv) {
        if let Some(feedback) = crate::review::feedback::take(project, agent, "command line")? {
            if let Some(last) = argv.last_mut() {
                last.push_str("\n\n");
                last.push_str(&feedback);
            }
        }
    }
    Ok(argv)
}

/// Where a new session keeps its command line until a proposal goes to review ([`record`]):
/// a session that proposes nothing never makes an overlay.
const ARGV_FILE: &str = "argv.json";

/// Keeps a new session's command line in its directory `dir` (made here).
pub(super) fn save(dir: &Path, argv: &[String]) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    std::fs::write(dir.join(ARGV_FILE), serde_json::to_string(argv)?).map_err(|e| Error::io(dir.join(ARGV_FILE), e))
}

/// Records the command line kept in `dir` (if any) in the proposal's overlay, once.
pub(super) fn record(overlay: &crate::store::overlay::Overlay, dir: &Path) -> Result<()> {
    if let Ok(argv) = std::fs::read_to_string(dir.join(ARGV_FILE)) {
        if overlay.kv_get(ARGV)?.is_none() {
            overlay.kv_set(ARGV, &argv)?;
        }
    }
    Ok(())
}

/// The command line session `agent` was started with (empty if none was recorded).
pub fn recorded(project: &Project, agent: &str) -> Result<Vec<String>> {
    let saved = project.existing_overlay(agent)?.and_then(|o| o.kv_get(ARGV).ok().flatten());
    Ok(saved.and_then(|s| serde_json::from_str(&s).ok()).unwrap_or_default())
}

/// Does `argv` end with a prompt its CLI takes (`-p`/`--print`/`--prompt PROMPT`, or the
/// `exec` subcommand's)? Never a shell's or an interpreter's script.
fn takes_prompt(argv: &[String]) -> bool {
    let program = Path::new(argv.first().map_or("", String::as_str)).file_name().and_then(|n| n.to_str()).unwrap_or("");
    let script = argv.iter().skip(1).any(|a| matches!(a.as_str(), "-c" | "-e" | "--eval" | "-lc" | "-ec"));
    let interpreter = crate::runbox::wrap::SHELLS.contains(&program) || matches!(program, "env" | "python" | "python3" | "node" | "perl" | "ruby");
    let prompt = argv.len() >= 3 && matches!(argv[argv.len() - 2].as_str(), "-p" | "--print" | "--prompt" | "exec");
    prompt && !script && !interpreter
}

/// The command line as the user wrote it, for summaries and banners: a `sh -c SCRIPT`
/// wrapper (how :CairnWrap starts a command line) shows as its script; other words are
/// quoted for a shell where they need it.
pub fn command_text(argv: &[String]) -> String {
    if let Some(script) = crate::runbox::wrap::shell_script(argv).filter(|_| argv.len() == 3) {
        return script.to_string();
    }
    let quote = |a: &String| {
        if !a.is_empty() && a.chars().all(|c| c.is_ascii_alphanumeric() || "_./:=,+@%-".contains(c)) {
            a.clone()
        } else {
            format!("'{}'", a.replace('\'', "'\\''"))
        }
    };
    argv.iter().map(quote).collect::<Vec<_>>().join(" ")
}
