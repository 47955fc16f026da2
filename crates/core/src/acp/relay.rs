//! The two relay loops between the editor and the confined agent. Editor → agent: every
//! message, the `initialize` request confined ([`super::message::confine_initialize`]), each
//! request's id kept so that only answers to the editor's own requests go back. Agent →
//! editor: the answer to a `session/prompt` (the turn's end, also after `session/cancel`)
//! waits until the session has put the turn's writes in review ([`TurnEnds`]), then goes on;
//! requests outside [`super::message::agent_may_send`] are answered with a refusal and never
//! reach the editor. What the agent sends is hostile: bounded, parsed, re-serialized.

use super::message::{self, Kind};
use crate::display::escape;
use crate::wrap::TurnEnds;
use serde_json::Value;
use std::collections::HashMap;
use std::io::Write;
use std::sync::{Arc, Mutex};

/// Requests the editor sent the agent and the agent has not answered, by id (the JSON text).
const MAX_PENDING: usize = 4096;

/// What both loops share.
pub struct Shared {
    /// The agent's stdin (`None` once the editor's stream ended: the agent sees its end).
    pub to_agent: Mutex<Option<std::fs::File>>,
    pub to_editor: Mutex<Box<dyn Write + Send>>,
    /// The editor's requests waiting for the agent's answer: id → method.
    pub pending: Mutex<HashMap<String, String>>,
    pub turns: Arc<TurnEnds>,
    pub project: crate::project::Project,
    pub agent: String,
    /// The ACP session the agent works in (from `session/new`'s answer or a prompt).
    pub session: Mutex<Option<String>>,
}

fn send(to: &mut dyn Write, msg: &Value) -> bool {
    let mut line = msg.to_string().into_bytes();
    line.push(b'\n');
    to.write_all(&line).and_then(|()| to.flush()).is_ok()
}

impl Shared {
    /// A prompt is running (the editor's or Cairn's).
    pub fn busy(&self) -> bool {
        self.pending.lock().map_or(true, |p| p.values().any(|m| m == "session/prompt" || m == super::feedback::OWN))
    }

    pub fn session(&self) -> Option<String> {
        self.session.lock().ok().and_then(|s| s.clone())
    }

    fn set_session(&self, id: Option<&str>) {
        if let (Some(id), Ok(mut s)) = (id, self.session.lock()) {
            *s = Some(id.chars().take(256).collect());
        }
    }

    /// Keeps request `id` as pending under `method` (its answer is expected).
    pub fn expect(&self, id: &Value, method: &str) {
        if let Ok(mut p) = self.pending.lock() {
            if p.len() < MAX_PENDING {
                p.insert(id.to_string(), method.to_string());
            }
        }
    }

    fn to_agent(&self, msg: &Value) -> bool {
        match self.to_agent.lock() {
            Ok(mut a) => a.as_mut().is_some_and(|a| send(a, msg)),
            Err(_) => false,
        }
    }

    fn to_editor(&self, msg: &Value) -> bool {
        self.to_editor.lock().is_ok_and(|mut e| send(&mut **e, msg))
    }
}

/// Editor → agent, to the end of the editor's stream; then the agent's stdin is closed.
pub fn editor_to_agent(shared: &Shared, from: impl std::io::Read) {
    let mut from = std::io::BufReader::new(from);
    while let Some(line) = message::read_line(&mut from) {
        let Ok(line) = line else {
            tracing::warn!("acp: a message from the editor past the size bound was dropped");
            continue;
        };
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let Ok(mut msg) = serde_json::from_slice::<Value>(&line) else {
            tracing::warn!("acp: a line from the editor that is not JSON was dropped");
            continue;
        };
        if let Kind::Request { id, method } = message::kind(&msg) {
            let method = method.to_string();
            shared.expect(&id.clone(), &method);
            if method == "initialize" {
                message::confine_initialize(&mut msg);
            }
            if method == "session/prompt" {
                shared.set_session(msg.pointer("/params/sessionId").and_then(Value::as_str));
                // Feedback not yet sent goes with the user's own prompt, once.
                super::feedback::join(&shared.project, &shared.agent, &mut msg);
            }
        }
        if !shared.to_agent(&msg) {
            break;
        }
    }
    if let Ok(mut a) = shared.to_agent.lock() {
        a.take();
    }
}

/// Agent → editor, to the end of the agent's output.
pub fn agent_to_editor(shared: &Shared, from: impl std::io::Read) {
    let mut from = std::io::BufReader::new(from);
    while let Some(line) = message::read_line(&mut from) {
        let Ok(line) = line else {
            tracing::warn!("acp: a message from the agent past the size bound was dropped");
            continue;
        };
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let Ok(msg) = serde_json::from_slice::<Value>(&line) else {
            tracing::warn!("acp: a line from the agent that is not JSON was dropped: {}", escape(&String::from_utf8_lossy(&line[..line.len().min(200)])));
            continue;
        };
        let forward = match message::kind(&msg) {
            Kind::Response { id } => match shared.pending.lock().ok().and_then(|mut p| p.remove(&id.to_string())) {
                Some(method) => {
                    if matches!(method.as_str(), "session/new" | "session/load") {
                        shared.set_session(msg.pointer("/result/sessionId").and_then(Value::as_str));
                    }
                    if method == "session/prompt" || method == super::feedback::OWN {
                        // The turn is over: its writes are in review before the editor hears so.
                        if let Err(e) = shared.turns.end_turn() {
                            tracing::warn!("acp: the turn's end: {}", escape(&e));
                        }
                    }
                    // The answer to Cairn's own prompt is Cairn's.
                    method != super::feedback::OWN
                }
                None => false,
            },
            Kind::Request { id, method } if !message::agent_may_send(method) => {
                tracing::info!("acp: refused the agent's {}", escape(method));
                shared.to_agent(&message::refusal(id, method));
                false
            }
            Kind::Request { .. } => true,
            Kind::Notification { method } => message::agent_may_send(method),
            Kind::Invalid => false,
        };
        if forward && !shared.to_editor(&msg) {
            break;
        }
    }
}

/// Until `over`: when the agent is idle in a known session, the waiting feedback is sent as
/// its next prompt ([`super::feedback`]).
pub fn deliver(shared: &Shared, over: &std::sync::atomic::AtomicBool) {
    let mut n = 0u64;
    while !over.load(std::sync::atomic::Ordering::SeqCst) {
        std::thread::sleep(super::feedback::EVERY);
        if shared.busy() {
            continue;
        }
        let Some(session) = shared.session() else { continue };
        let Some(text) = super::feedback::take(&shared.project, &shared.agent) else { continue };
        n += 1;
        let (id, prompt) = super::feedback::prompt(&session, n, &text);
        shared.expect(&id, super::feedback::OWN);
        if !shared.to_agent(&prompt) {
            return;
        }
    }
}
