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
    #[serde(default)]
    reason: Option<String>,
}

fn tmux(args: &[&str]) -> Option<String> {
    let out = Proc::new("tmux").args(args).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
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

/// Takes what the preview asked since the last look and, confirmed, does it.
pub fn handle(project: &Project, id: &str, console: &cairn_core::runbox::pty::Console) {
    let asked = console.take_requests();
    let Some(first) = asked.first() else { return };
    let Ok(asked) = serde_json::from_str::<Asked>(first) else { return };
    let cmd = match asked.action.as_str() {
        "accept" => Command::Accept { id: id.to_string(), force: false },
        "reject" => Command::Reject { id: id.to_string(), reason: asked.reason.map(|r| r.chars().take(2000).collect()) },
        _ => return,
    };
    let pane = std::env::var("TMUX_PANE").unwrap_or_default();
    let client = if std::env::var_os("TMUX").is_some() && !pane.is_empty() { tmux(&["display-message", "-p", "-t", &pane, "#{client_name}"]).unwrap_or_default() } else { String::new() };
    if client.is_empty() {
        tracing::warn!(agent = id, "preview asked to {}: refused (no tmux client to confirm on)", asked.action);
        return;
    }
    let code = code();
    let _ = tmux(&["set-option", "-p", "-t", &pane, "@cairn-answer", ""]);
    let prompt = format!("cairn: {} agent {id}'s proposal (asked in its preview)? type {code} and Enter: ", asked.action);
    let answer = format!("set-option -p -t {pane} @cairn-answer '%%'");
    // Blocks until the user answers or dismisses it.
    let _ = tmux(&["command-prompt", "-t", &client, "-p", &prompt, &answer]);
    let typed = tmux(&["show-options", "-p", "-v", "-t", &pane, "@cairn-answer"]).unwrap_or_default();
    let _ = tmux(&["set-option", "-p", "-u", "-t", &pane, "@cairn-answer"]);
    let message = if typed != code {
        format!("cairn: {} of {id} not confirmed", asked.action)
    } else {
        match command::execute(project, cmd) {
            Ok(_) => format!("cairn: {}ed {id}", asked.action.trim_end_matches('e')),
            Err(e) => format!("cairn: {} of {id} failed: {e}", asked.action),
        }
    };
    tracing::info!(agent = id, "{message}");
    let _ = tmux(&["display-message", "-c", &client, &message]);
}
