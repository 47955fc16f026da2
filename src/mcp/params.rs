//! The arguments of `cairn mcp`'s tools, as their JSON schemas show them to the model.
//! `session` is optional on every file tool: without it the connection's own session is used.

use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema)]
pub struct Id {
    /// Task id (any unique prefix).
    pub id: String,
}
#[derive(Deserialize, JsonSchema)]
pub struct ListArgs {
    /// Only tasks in this status.
    pub status: Option<String>,
    /// Only tasks assigned to this actor.
    pub assignee: Option<String>,
    /// Only tasks whose deps are all closed (true) or not (false).
    pub ready: Option<bool>,
    /// Only tasks whose work is `active`, `stalled` (an open session without heartbeats) or
    /// `awaiting_review`.
    pub execution: Option<String>,
}
#[derive(Deserialize, JsonSchema)]
pub struct CheckArg {
    /// What the check verifies.
    pub desc: String,
    /// Shell command run confined in the proposal's workspace; exit 0 passes. Omit for a manual check.
    pub cmd: Option<String>,
    /// "manual" for a check a person attests.
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// Working directory relative to the workspace root.
    pub cwd: Option<String>,
    /// Seconds before the command is killed.
    pub timeout: Option<u32>,
}
#[derive(Deserialize, JsonSchema)]
pub struct CreateArgs {
    /// One line (at most 200 characters).
    pub title: String,
    /// Markdown intent (at most 64 KiB).
    pub body: Option<String>,
    /// Ids of tasks that must be closed before this one starts (they must exist).
    pub deps: Option<Vec<String>>,
    /// Checks that gate closing the task and accepting its proposal.
    pub checks: Option<Vec<CheckArg>>,
}
#[derive(Deserialize, JsonSchema)]
pub struct TransitionArgs {
    pub id: String,
    /// Target status (backlog, in_progress, review, done, cancelled by default).
    pub to: String,
}
#[derive(Deserialize, JsonSchema)]
pub struct ChecksArgs {
    pub id: String,
    /// Check indices to run; all command checks when omitted.
    pub only: Option<Vec<u32>>,
}
#[derive(Deserialize, JsonSchema)]
pub struct NoteArgs {
    pub id: String,
    /// At most 64 KiB.
    pub text: String,
}
#[derive(Deserialize, JsonSchema)]
pub struct BeginArgs {
    /// The task to work on (it is claimed and moved to in_progress).
    pub task: String,
    /// Any string; retrying with the same key returns the same session.
    pub idempotency_key: String,
    /// Refuse to begin unless this server acts as this identity (see `identity`).
    pub expected_actor: Option<String>,
    /// Free runtime metadata kept on the session, e.g. {"client": ..., "model": ..., "pid": ...}.
    pub meta: Option<serde_json::Map<String, serde_json::Value>>,
}
#[derive(Deserialize, JsonSchema)]
pub struct HeartbeatArgs {
    /// Session id; omit to use this connection's own session.
    pub session: Option<String>,
    /// What you are doing now, shown to the human (`:CairnTasks`, `cairn task show`).
    pub progress: Option<String>,
}
#[derive(Deserialize, JsonSchema)]
pub struct SessionListArgs {
    /// Only sessions of this task.
    pub task: Option<String>,
    /// Only sessions of this actor.
    pub actor: Option<String>,
    /// Only sessions in this status: active, finished or cancelled.
    pub status: Option<String>,
    /// Only sessions in this health: active, stalled, finished or cancelled.
    pub health: Option<String>,
}
#[derive(Deserialize, JsonSchema)]
pub struct SessionArg {
    /// Session id; omit to use this connection's own session.
    pub session: Option<String>,
}
#[derive(Deserialize, JsonSchema)]
pub struct WaitArgs {
    /// Session id; omit for this connection's own session (finished last).
    pub session: Option<String>,
    /// Seconds to wait at most (default 600, at most 3600); then `decision: waiting`.
    pub timeout_s: Option<u32>,
}
#[derive(Deserialize, JsonSchema)]
pub struct FinishArgs {
    /// Session id; omit to finish this connection's own session.
    pub session: Option<String>,
    /// What the proposal does, for the reviewer.
    pub summary: String,
}
#[derive(Deserialize, JsonSchema)]
pub struct CancelArgs {
    pub session: String,
    pub reason: Option<String>,
}
#[derive(Deserialize, JsonSchema)]
pub struct ReadArgs {
    /// Session id; omit to use this connection's own session.
    pub session: Option<String>,
    /// Path relative to the project root (an absolute path inside the project works too).
    pub path: String,
    /// First line to return, 1-based.
    pub offset: Option<u32>,
    /// How many lines to return from `offset`.
    pub limit: Option<u32>,
    /// Prefix each line with its tag `N:hash|` for edit_lines.
    pub tagged: Option<bool>,
}
#[derive(Deserialize, JsonSchema)]
pub struct ReadManyArgs {
    pub session: Option<String>,
    /// Paths to read (at most 50); each fails or succeeds on its own.
    pub paths: Vec<String>,
}
#[derive(Deserialize, JsonSchema)]
pub struct WriteArgs {
    pub session: Option<String>,
    pub path: String,
    /// The whole new content of the file.
    pub content: String,
}
#[derive(Deserialize, JsonSchema)]
pub struct PathArgs {
    pub session: Option<String>,
    pub path: String,
}
#[derive(Deserialize, JsonSchema)]
pub struct ListDirArgs {
    pub session: Option<String>,
    /// Directory (default: the project root).
    pub path: Option<String>,
    /// Levels to descend (1: this directory only; at most 8).
    pub depth: Option<u32>,
    /// Include file sizes in bytes.
    pub sizes: Option<bool>,
}
#[derive(Deserialize, JsonSchema)]
pub struct GlobArgs {
    pub session: Option<String>,
    /// Glob: `**` crosses directories, `*` does not (e.g. `src/**/*.rs`).
    pub pattern: String,
    /// Only files under this directory.
    pub path: Option<String>,
}
#[derive(Deserialize, JsonSchema)]
pub struct GrepArgs {
    pub session: Option<String>,
    /// Regular expression (Rust regex syntax, like ripgrep).
    pub pattern: String,
    /// Directory to search under (default: the whole project).
    pub path: Option<String>,
    /// Only files matching this glob (`*.py`, `src/**/*.ts`).
    pub glob: Option<String>,
    pub ignore_case: Option<bool>,
    /// Lines of context before and after each match (at most 20).
    pub context: Option<u32>,
    /// Most matches to return (default 200).
    pub max_results: Option<u32>,
}
#[derive(Deserialize, JsonSchema)]
pub struct ScriptArgs {
    pub session: Option<String>,
    /// Python for the sandbox (see `:help cairn-scripts`): read_file, write_file, edit_file,
    /// ... act on the session's overlay; the value of the last expression is returned.
    pub code: String,
}
#[derive(Deserialize, JsonSchema)]
pub struct EditOp {
    /// replace, insert_after or delete.
    pub op: String,
    /// The line's tag from a tagged read (`0:` with insert_after: before the first line).
    pub tag: String,
    /// Last line of a range (replace, delete).
    pub end: Option<String>,
    /// New lines (replace, insert_after), without line breaks.
    pub lines: Option<Vec<String>>,
}
#[derive(Deserialize, JsonSchema)]
pub struct EditLinesArgs {
    pub session: Option<String>,
    pub path: String,
    /// Applied together, or not at all when a tag is stale or missing.
    pub ops: Vec<EditOp>,
}
#[derive(Deserialize, JsonSchema)]
pub struct TextEdit {
    /// Text to find, exactly as in the file (whitespace included); it must occur once unless replace_all.
    pub old_text: String,
    /// Its replacement.
    pub new_text: String,
    /// Replace every occurrence.
    pub replace_all: Option<bool>,
}
#[derive(Deserialize, JsonSchema)]
pub struct EditFileArgs {
    pub session: Option<String>,
    pub path: String,
    /// Applied in order; all or none.
    pub edits: Vec<TextEdit>,
    /// Show the diff without changing anything.
    pub dry_run: Option<bool>,
}
#[derive(Deserialize, JsonSchema)]
pub struct MoveArgs {
    pub session: Option<String>,
    /// The file to move.
    pub from: String,
    /// Its new path (must not exist).
    pub to: String,
}
#[derive(Deserialize, JsonSchema)]
pub struct CommandArgs {
    pub session: Option<String>,
    /// Shell command (`sh -c`), e.g. "python3 -m pytest -q" or "cargo test".
    pub command: String,
    /// Working directory, relative to the project root.
    pub cwd: Option<String>,
    /// Seconds before the whole process tree is killed (at most `[run] timeout_seconds`).
    pub timeout_seconds: Option<u32>,
    /// Files the command creates, changes or deletes become part of your proposal (default
    /// true); false throws them away.
    pub capture: Option<bool>,
}
