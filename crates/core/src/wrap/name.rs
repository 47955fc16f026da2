//! A wrap session's name (its agent's task, shown in ghost headers, lists and status lines):
//! `--task` when given; else the prompt of a one-shot command line (`claude -p PROMPT`,
//! `gemini --prompt PROMPT`, `codex exec PROMPT`, also inside :CairnWrap's `sh -c '...'`);
//! else, for an interactive CLI, the first line the user submits in its terminal (the relay
//! reads the keys back, [`crate::runbox::typed`]); until then, the command line.
//!
//! A name is text the user typed, but it is shown next to what agents wrote and a terminal's
//! keys can carry anything: it is kept on one line, bounded, and escaped wherever it is shown
//! (as every task is).

use crate::error::Result;
use crate::project::Project;

/// The longest name kept, in characters (displays cut it further).
const MAX_NAME: usize = 200;

/// One line of at most [`MAX_NAME`] characters, white space runs as one space.
pub(crate) fn bounded(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ").chars().take(MAX_NAME).collect()
}

/// The prompt a one-shot command line carries: the value of `-p`/`--print`/`--prompt` (the next
/// word not an option; Claude Code's `-p` is a flag, its prompt the last word then), or the
/// first word after `exec` that is not an option. A `SHELL -c SCRIPT` line of one command is
/// read as that command's words. None for anything else.
pub fn prompt(argv: &[String]) -> Option<String> {
    let words: Vec<String> = match crate::runbox::wrap::shell_script(argv) {
        Some(script) if !script.contains([';', '|', '&', '\n', '`', '$', '<', '>']) => crate::runbox::chain::split_words(script),
        Some(_) => return None,
        None => argv.to_vec(),
    };
    let program = std::path::Path::new(words.first()?).file_name()?.to_str()?;
    if crate::runbox::wrap::SHELLS.contains(&program) || matches!(program, "env" | "python" | "python3" | "node" | "perl" | "ruby") {
        return None;
    }
    let at = words.iter().position(|w| matches!(w.as_str(), "-p" | "--print" | "--prompt" | "exec"))?;
    let rest = &words[at + 1..];
    let option = |w: &&String| w.starts_with('-');
    let found = if words[at] == "exec" {
        rest.iter().find(|w| !option(w))
    } else {
        // `claude -p --model x "task"`: the prompt is the last word.
        rest.first().filter(|w| !option(w)).or_else(|| rest.last().filter(|w| !option(w)))
    };
    found.map(|w| bounded(w)).filter(|n| !n.is_empty())
}

/// The `--task` given, unless it is only the command line (:CairnWrap passes its command as
/// `--task`): that names nothing, so a prompt names the session still.
pub fn given<'a>(task: Option<&'a str>, argv: &[String]) -> Option<&'a str> {
    task.filter(|t| *t != super::command_text(argv))
}

/// Is this submitted line a task, worth naming the session after? Not an empty Enter, a
/// one- or two-character answer (`y`, `1` in a menu), a line without a letter, or a slash
/// command (`/login`, `/model`).
pub(crate) fn is_task(line: &str) -> bool {
    let line = line.trim();
    line.chars().count() >= 3 && line.chars().any(char::is_alphabetic) && !line.starts_with('/')
}

/// Names agent `agent` `name` (the session's first typed task), with a line in its log.
pub(crate) fn rename(project: &Project, agent: &str, name: &str) -> Result<()> {
    let name = bounded(name);
    let bin = project.bin()?;
    bin.rename(agent, &name)?;
    let state = bin.get(agent)?.state;
    bin.append(agent, state, &crate::events::EventKind::Log { message: format!("named by the first prompt typed to it: {name}") })
}

#[cfg(test)]
mod tests {
    use super::{is_task, prompt};

    fn p(words: &[&str]) -> Option<String> {
        prompt(&words.iter().map(|w| w.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn one_shot_prompts_are_found() {
        assert_eq!(p(&["claude", "-p", "fix the  tests"]).as_deref(), Some("fix the tests"));
        assert_eq!(p(&["/usr/bin/claude", "--print", "--model", "x", "add a flag"]).as_deref(), Some("add a flag"));
        assert_eq!(p(&["gemini", "--prompt", "fix add", "--yolo"]).as_deref(), Some("fix add"));
        assert_eq!(p(&["codex", "exec", "--full-auto", "rename foo"]).as_deref(), Some("rename foo"));
        assert_eq!(p(&["sh", "-c", "claude -p 'fix the parser'"]).as_deref(), Some("fix the parser"));
        assert_eq!(p(&["claude"]), None);
        assert_eq!(p(&["sh", "-c", "claude -p x; rm -rf y"]), None);
        assert_eq!(p(&["python3", "-p", "x"]), None);
    }

    #[test]
    fn only_a_task_names_a_session() {
        for yes in ["fix the failing test", "add logging", "éàü"] {
            assert!(is_task(yes), "{yes}");
        }
        for no in ["", "  ", "y", "1", "12345", "/login", "/model opus"] {
            assert!(!is_task(no), "{no}");
        }
    }
}
