//! The event stream: every state change, external (tool) call, log line, hunk decision,
//! accept and undo is one typed, append-only event in `bin.db` ([`crate::store::Bin`]),
//! numbered by a sequence without gaps (an event commits with the change it reports, or not
//! at all). `cairn events` prints them as JSON Lines; the Neovim host follows them.
//!
//! [`EventKind`] is the one definition of what can happen; it serializes with a `type`
//! discriminator (`{"type": "tool_completed", "tool": "read_file", ...}`).

use crate::lifecycle::State;
use serde::{Deserialize, Serialize};

/// The tools whose completion changes a proposal (the externals that write, and commands an
/// agent runs): a live agent's ghost text follows them.
pub const WRITING_TOOLS: &[&str] = &["write_file", "edit_lines", "edit_file", "move_file", "delete_file", "run_command", "session_exec"];

/// What happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventKind {
    /// The agent moved to the event's state.
    StateChanged { message: String },
    /// A line the agent logged (`log()`, `print`).
    Log { message: String },
    /// An external call arrived from the agent (arguments summarized as JSON text).
    ToolRequested { tool: String, args: String },
    /// It returned (result summarized).
    ToolCompleted { tool: String, duration_us: i64, result: String },
    /// It raised, or ended the run.
    ToolFailed { tool: String, duration_us: i64, error: String },
    /// A worker died and its agent went back to the queue.
    Requeued { message: String },
    /// One hunk of `path` was accepted into the project or dropped from the proposal.
    HunkDecided { path: String, accepted: bool },
    /// What an accept had changed was put back (`paths`: the files restored or removed).
    Undone {
        #[serde(default)]
        paths: Vec<String>,
    },
    /// A task was written: `did` is its provenance entry, `who` the actor.
    TaskChanged { task: String, who: String, did: String },
    /// A confined command ran for the agent (`run_command`, `cairn session exec`): how it
    /// ended and how many paths it changed in the proposal.
    CommandRan { command: String, exit: String, duration_ms: i64, changed: usize },
    /// The agent's jj change (`crate::jj`): `what` happened to change `change`.
    Jj { change: String, what: String },
    /// The user told the agent something: a reason, a note on lines, a hunk decision
    /// (`kind`), delivered with the next revise.
    Feedback { kind: String, path: Option<String>, lines: Option<(u32, u32)>, text: String },
    /// Revision `revision` of the proposal started (`why`: the feedback sent, or new writes
    /// after a turn).
    Revised { revision: u32, why: String },
    /// Feedback reached the agent (`via`: terminal, review_wait, prompt, command line).
    FeedbackDelivered { via: String, count: usize },
    /// A running agent's proposal changed (`paths` of it): ghost text follows.
    Wrote { paths: Vec<String> },
}

impl EventKind {
    /// One line for people (notifications, `cairn events` without `--json`).
    pub fn describe(&self) -> String {
        match self {
            EventKind::StateChanged { message } | EventKind::Requeued { message } => message.clone(),
            EventKind::Log { message } => format!("log: {message}"),
            EventKind::ToolRequested { tool, .. } => format!("{tool}() called"),
            EventKind::ToolCompleted { tool, duration_us, .. } => format!("{tool}() returned after {} µs", duration_us),
            EventKind::ToolFailed { tool, error, .. } => format!("{tool}() failed: {error}"),
            EventKind::HunkDecided { path, accepted } => format!("{} a hunk of {path}", if *accepted { "accepted" } else { "rejected" }),
            EventKind::Undone { .. } => "undone".to_string(),
            EventKind::TaskChanged { task, who, did } => format!("task {task}: {did} ({who})"),
            EventKind::CommandRan { command, exit, duration_ms, changed } => format!("ran `{command}`: {exit} after {duration_ms} ms, {changed} path(s) changed"),
            EventKind::Jj { change, what } => format!("jj change {} {what}", change.chars().take(8).collect::<String>()),
            EventKind::Feedback { kind, path, lines, text } => {
                let at = match (path, lines) {
                    (Some(p), Some((a, b))) if a == b => format!(" on {p}:{a}"),
                    (Some(p), Some((a, b))) => format!(" on {p}:{a}-{b}"),
                    (Some(p), None) => format!(" on {p}"),
                    _ => String::new(),
                };
                format!("{}{at}: {text}", kind.replace('_', " "))
            }
            EventKind::Revised { revision, why } => format!("revision {revision}: {why}"),
            EventKind::FeedbackDelivered { via, count } => format!("{count} piece(s) of feedback delivered ({via})"),
            EventKind::Wrote { paths } => format!("wrote {}", paths.join(", ")),
        }
    }

    /// The `type` discriminator alone (as serialized).
    pub fn type_name(&self) -> &'static str {
        match self {
            EventKind::StateChanged { .. } => "state_changed",
            EventKind::Log { .. } => "log",
            EventKind::ToolRequested { .. } => "tool_requested",
            EventKind::ToolCompleted { .. } => "tool_completed",
            EventKind::ToolFailed { .. } => "tool_failed",
            EventKind::Requeued { .. } => "requeued",
            EventKind::HunkDecided { .. } => "hunk_decided",
            EventKind::Undone { .. } => "undone",
            EventKind::TaskChanged { .. } => "task_changed",
            EventKind::CommandRan { .. } => "command_ran",
            EventKind::Jj { .. } => "jj",
            EventKind::Feedback { .. } => "feedback",
            EventKind::Revised { .. } => "revised",
            EventKind::FeedbackDelivered { .. } => "feedback_delivered",
            EventKind::Wrote { .. } => "wrote",
        }
    }

    /// True for an agent's activity (log lines, tool calls, its writes as they happen, feedback
    /// handed around): not worth a notification.
    pub fn is_activity(&self) -> bool {
        matches!(
            self,
            EventKind::Log { .. } | EventKind::ToolRequested { .. } | EventKind::ToolCompleted { .. } | EventKind::ToolFailed { .. } | EventKind::Feedback { .. } | EventKind::FeedbackDelivered { .. } | EventKind::Wrote { .. }
        )
    }

    /// Does the event change what a proposal shows (the host then redraws the ghost text)?
    /// Everything but activity, and a live agent's writes.
    pub fn changes_proposal(&self) -> bool {
        !self.is_activity() || matches!(self, EventKind::Wrote { .. }) || matches!(self, EventKind::ToolCompleted { tool, .. } if WRITING_TOOLS.contains(&tool.as_str()))
    }
}

/// One persisted event.
#[derive(Debug, Clone, Serialize)]
pub struct Event {
    /// Position in the stream: 1, 2, 3, ... with no gaps.
    pub seq: i64,
    pub ts_ms: i64,
    #[serde(rename = "agent")]
    pub agent_id: String,
    /// The agent's state when it happened.
    pub state: State,
    /// [`EventKind::describe`] of the event, kept for readers that want text.
    #[serde(rename = "text")]
    pub message: String,
    #[serde(flatten)]
    pub kind: EventKind,
}

#[cfg(test)]
mod tests {
    use super::EventKind;

    #[test]
    fn type_name_is_the_serialized_discriminator() {
        let all = [
            EventKind::StateChanged { message: String::new() },
            EventKind::Log { message: String::new() },
            EventKind::ToolRequested { tool: String::new(), args: String::new() },
            EventKind::ToolCompleted { tool: String::new(), duration_us: 0, result: String::new() },
            EventKind::ToolFailed { tool: String::new(), duration_us: 0, error: String::new() },
            EventKind::Requeued { message: String::new() },
            EventKind::HunkDecided { path: String::new(), accepted: true },
            EventKind::Undone { paths: Vec::new() },
            EventKind::TaskChanged { task: String::new(), who: String::new(), did: String::new() },
            EventKind::CommandRan { command: String::new(), exit: String::new(), duration_ms: 0, changed: 0 },
            EventKind::Jj { change: String::new(), what: String::new() },
            EventKind::Feedback { kind: String::new(), path: None, lines: None, text: String::new() },
            EventKind::Revised { revision: 2, why: String::new() },
            EventKind::FeedbackDelivered { via: String::new(), count: 1 },
            EventKind::Wrote { paths: Vec::new() },
        ];
        for k in all {
            assert_eq!(serde_json::to_value(&k).unwrap()["type"], k.type_name());
        }
    }
}
