//! Reasons reach the agent: the feedback `cairn revise` / `:CairnRevise` sent (path, lines,
//! the code, the reason) becomes the agent's next prompt when no turn is running (its answer
//! is the turn's end, its updates go to the editor's chat like any turn's), or is joined to
//! the user's own next prompt when that comes first. Each piece is taken from the store once
//! (`take_feedback`), so it reaches the agent exactly once.

use crate::project::Project;
use serde_json::{json, Value};
use std::time::Duration;

/// How often an idle session looks for feedback to deliver.
pub const EVERY: Duration = Duration::from_millis(250);
/// The method a delivered prompt is kept under among the pending requests (its answer is
/// Cairn's, never the editor's).
pub const OWN: &str = "cairn/revise";

/// The feedback waiting for `agent`, taken (it will not be taken again) and rendered.
pub fn take(project: &Project, agent: &str) -> Option<String> {
    let taken = match project.bin().and_then(|b| b.take_feedback(agent, "acp")) {
        Ok(t) => t,
        Err(e) => {
            tracing::warn!(agent, "acp feedback: {e}");
            return None;
        }
    };
    (!taken.is_empty()).then(|| crate::review::feedback::render(&taken))
}

/// The user's prompt (`session/prompt` params) with the waiting feedback before it.
pub fn join(project: &Project, agent: &str, msg: &mut Value) {
    let Some(prompt) = msg.pointer_mut("/params/prompt").and_then(Value::as_array_mut) else { return };
    if let Some(text) = take(project, agent) {
        prompt.insert(0, json!({ "type": "text", "text": text }));
    }
}

/// Cairn's own prompt number `n` in `session`, carrying `text`: its id and the request.
pub fn prompt(session: &str, n: u64, text: &str) -> (Value, Value) {
    let id = json!(format!("cairn-acp-revise-{n}"));
    let msg = json!({ "jsonrpc": "2.0", "id": id, "method": "session/prompt", "params": { "sessionId": session, "prompt": [{ "type": "text", "text": text }] } });
    (id, msg)
}
