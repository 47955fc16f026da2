//! Decisions asked from inside a preview (`:CairnAccept`, `:CairnReject` typed in the
//! preview's Neovim). The editor there is confined: no socket to Cairn or to the user's
//! Neovim, no `.agentfs`. It asks with Cairn's OSC sequence on its own terminal
//! (`cairn_core::runbox::osc`), which the relay takes out of the output. This process, the
//! session's owner outside the view, treats the request as a question only, since agent code
//! in the view can print the same bytes:
//! - it acts on the previewed agent only (an id in the request is never read);
//! - it acts only once the user confirms on the tmux client, a prompt tmux draws on the user's
//!   terminal and answers from the user's keys, never from the pane's output, which asks for
//!   a code shown only in that prompt (random, per request: nothing in the view sees it, and
//!   bytes that reach the user's terminal cannot guess it);
//! - one question at a time (the prompt blocks this loop), the rest of a burst dropped;
//! - outside tmux there is no such channel: the request is refused, saying so.

use cairn_core::command::{self, Command};
use cairn_core::project::Project;
use std::process::Command as Proc;

/// What a preview may ask.
#[derive(serde::Deserialize)]
struct Asked {
    action: String,
    /// A hunk command's file (its path in the view: the project's own) and line (1-based, in
    /// the agent's version the preview shows).
    #[serde(default)]
    file: Option<String>,
    #[serde(default)]
    line: Option<usize>,
}

/// The hunk of agent `id` at `file:line` of its version, as a hunk command and the words the
/// confirmation shows. `None` (said in the log) when the line is in no hunk.
fn hunk_command(project: &Project, id: &str, asked: &Asked) -> Option<(Command, String)> {
    let (file, line) = (asked.file.as_deref()?, asked.line?);
    let rel = std::path::Path::new(file).strip_prefix(&project.root).ok()?.to_str()?;
    let rel = cairn_core::paths::normalize(rel, &project.root).ok()?;
    let files = cairn_core::review::file_hunks(project, id).ok()?;
    let fh = files.into_iter().find(|f| f.path == rel)?;
    let hunk = hunk_at_new_line(&fh.hunks, line)?.clone();
    let what = format!("{} the hunk at {}:{line} of", asked.action.trim_end_matches("_hunk"), shown_path(&rel));
    let cmd = match asked.action.as_str() {
        "accept_hunk" => Command::AcceptHunk { id: id.to_string(), path: rel, hunk, force: false },
        _ => Command::RejectHunk { id: id.to_string(), path: rel, hunk, reason: None },
    };
    Some((cmd, what))
}

/// A path as a prompt shows it: escaped, its head and tail when long (where two paths differ
/// most often), no comma (tmux would cut the prompt in two there).
fn shown_path(rel: &str) -> String {
    let escaped: Vec<char> = cairn_core::display::escape_line(rel).replace(',', "\\x2c").chars().collect();
    if escaped.len() <= 48 {
        return escaped.into_iter().collect();
    }
    let head: String = escaped[..16].iter().collect();
    let tail: String = escaped[escaped.len() - 31..].iter().collect();
    format!("{head}…{tail}")
}

/// The hunk whose new lines hold `line` (1-based, the agent's version); a hunk that only
/// removes lines sits at the line after them.
fn hunk_at_new_line(hunks: &[cairn_core::review::Hunk], line: usize) -> Option<&cairn_core::review::Hunk> {
    let at = line.saturating_sub(1) as isize;
    let mut shift: isize = 0;
    for h in hunks {
        let start = h.old_start as isize + shift;
        let end = start + h.added.len().max(1) as isize;
        if at >= start && at < end {
            return Some(h);
        }
        shift += h.added.len() as isize - h.removed.len() as isize;
    }
    None
}

fn tmux(args: &[&str]) -> Option<String> {
    let out = Proc::new("tmux").args(args).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// How long a confirmation prompt may stay unanswered (its client may have gone).
const PROMPT_DEADLINE: std::time::Duration = std::time::Duration::from_secs(120);

/// `tmux ARGS` that may block (a prompt), given up on after [`PROMPT_DEADLINE`].
fn tmux_within_deadline(args: &[&str]) {
    let Ok(mut child) = Proc::new("tmux").args(args).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null()).spawn() else { return };
    let until = std::time::Instant::now() + PROMPT_DEADLINE;
    while std::time::Instant::now() < until {
        if !matches!(child.try_wait(), Ok(None)) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// A code of three lowercase letters, from the process's random hash keys.
fn code() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut n = std::collections::hash_map::RandomState::new().build_hasher().finish();
    (0..3)
        .map(|_| {
            let c = (b'a' + (n % 26) as u8) as char;
            n /= 26;
            c
        })
        .collect()
}

/// Refusals (a prompt dismissed or answered wrong) after which a session asks no more.
const MAX_REFUSALS: u32 = 3;
/// After a refusal, requests are dropped this long (no prompt after prompt).
const QUIET_AFTER_REFUSAL: std::time::Duration = std::time::Duration::from_secs(5);

/// One preview session's relay: it remembers refusals, so that code in the view cannot keep
/// the user's tmux client behind prompt after prompt.
#[derive(Default)]
pub struct Relay {
    refusals: u32,
    quiet_until: Option<std::time::Instant>,
}

impl Relay {
    /// Takes what the preview asked since the last look and, confirmed, does it.
    pub fn handle(&mut self, project: &Project, id: &str, console: &cairn_core::runbox::pty::Console) {
        let asked = console.take_requests();
        if asked.is_empty() || self.refusals >= MAX_REFUSALS || self.quiet_until.is_some_and(|t| std::time::Instant::now() < t) {
            return;
        }
        if !ask(project, id, &asked[0]) {
            self.refusals += 1;
            self.quiet_until = Some(std::time::Instant::now() + QUIET_AFTER_REFUSAL);
            if self.refusals == MAX_REFUSALS {
                tracing::warn!(agent = id, "the preview's requests were refused {MAX_REFUSALS} times: it asks no more");
            }
        }
    }
}

/// Asks the user to confirm one request, and does it if confirmed. False when the user did
/// not confirm (dismissed, or another code typed).
fn ask(project: &Project, id: &str, first: &str) -> bool {
    let Ok(asked) = serde_json::from_str::<Asked>(first) else { return true };
    let (cmd, what) = match asked.action.as_str() {
        "accept" => (Command::Accept { id: id.to_string(), force: false }, "accept".to_string()),
        // No reason from the view: the prompt could not show it, and code in the view would
        // choose what reaches the agent (`:CairnComment` in your own Neovim says why).
        "reject" => (Command::Reject { id: id.to_string(), reason: None }, "reject".to_string()),
        "accept_hunk" | "reject_hunk" => match hunk_command(project, id, &asked) {
            Some(found) => found,
            None => {
                tracing::warn!(agent = id, "preview asked to {}: no hunk of the proposal at that line", asked.action);
                return true;
            }
        },
        _ => return true,
    };
    let pane = std::env::var("TMUX_PANE").unwrap_or_default();
    let client = if std::env::var_os("TMUX").is_some() && !pane.is_empty() { tmux(&["display-message", "-p", "-t", &pane, "#{client_name}"]).unwrap_or_default() } else { String::new() };
    if client.is_empty() {
        tracing::warn!(agent = id, "preview asked to {}: refused (no tmux client to confirm on)", asked.action);
        return false;
    }
    let code = code();
    // The answer goes to a server option named after the pane (its id without the `%`, which
    // the prompt's template would read as an answer's place).
    let option = format!("@cairn-answer-{}", pane.trim_start_matches('%'));
    let _ = tmux(&["set-option", "-g", &option, ""]);
    // The code first: a narrow client cuts the prompt's end. tmux expands formats (and the
    // time) in it: what came from the view is made literal.
    let prompt = cairn_core::display::tmux_literal(&format!("cairn: type {code} and Enter to {what} {id}: "));
    let answer = format!("set-option -g {option} '%%'");
    // Blocks until the user answers or dismisses it.
    tmux_within_deadline(&["command-prompt", "-t", &client, "-p", &prompt, &answer]);
    let typed = tmux(&["show-options", "-g", "-v", &option]).unwrap_or_default();
    let _ = tmux(&["set-option", "-g", "-u", &option]);
    let confirmed = typed == code;
    let message = if !confirmed {
        format!("cairn: {} of {id} not confirmed", asked.action)
    } else {
        match command::execute(project, cmd) {
            Ok(_) => format!("cairn: {what} {id}: done"),
            Err(e) => format!("cairn: {} of {id} failed: {e}", asked.action),
        }
    };
    tracing::info!(agent = id, "{message}");
    let _ = tmux(&["display-message", "-c", &client, &cairn_core::display::tmux_literal(&message)]);
    confirmed
}
