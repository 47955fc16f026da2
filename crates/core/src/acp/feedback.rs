//! Reasons reach the agent: the feedback `cairn revise` / `:CairnRevise` sent (path, lines,
//! the code, the reason) becomes the agent's next prompt when no turn is running (its answer
//! is the turn's end, its updates go to the editor's chat like any turn's), or is joined to
//! the user's own next prompt when that comes first. Each piece is taken from the store once
//! (`take_feedback`), so it reaches the agent exactly once.

use super::relay::Shared;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// How often an idle session looks for feedback to deliver.
const EVERY: Duration = Duration::from_millis(250);
/// The method a delivered prompt is kept under among the pending requests (its answer is
/// Cairn's, never the editor's).
pub const OWN: &str = "cairn/revise";

/// The feedback waiting for the agent, taken (it will not be taken again) and rendered.
pub fn take(shared: &Shared) -> Option<String> {
    let taken = match shared.project.bin().and_then(|b| b.take_feedback(&shared.agent, "acp")) {
        Ok(t) => t,
        Err(e) => {
            tracing::warn!(agent = %shared.agent, "acp feedback: {e}");
            return None;
        }
    };
    (!taken.is_empty()).then(|| crate::review::feedback::render(&taken))
}

/// The user's prompt (`session/prompt` params) with the waiting feedback before it.
pub fn join(shared: &Shared, msg: &mut Value) {
    let Some(prompt) = msg.pointer_mut("/params/prompt").and_then(Value::as_array_mut) else { return };
    if let Some(text) = take(shared) {
        prompt.insert(0, json!({ "type": "text", "text": text }));
    }
}

/// Until `over`: when the agent is idle in a known session, the waiting feedback is sent as
/// its next prompt.
pub fn deliver(shared: &Shared, over: &AtomicBool) {
    let mut n = 0u64;
    while !over.load(Ordering::SeqCst) {
        std::thread::sleep(EVERY);
        if shared.busy() {
            continue;
        }
        let Some(session) = shared.session() else { continue };
        let Some(text) = take(shared) else { continue };
        n += 1;
        let id = json!(format!("cairn-acp-revise-{n}"));
        shared.expect(&id, OWN);
        let prompt = json!({ "jsonrpc": "2.0", "id": id, "method": "session/prompt", "params": { "sessionId": session, "prompt": [{ "type": "text", "text": text }] } });
        if !shared.send_agent(&prompt) {
            return;
        }
    }
}
