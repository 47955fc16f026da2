//! The host side of the external functions of SPEC §4: the only way agent code reaches
//! anything. The sandbox child forwards each call here over its pipe; [`Host::call`] checks the
//! arguments, applies the semantics against the agent's [`View`], enforces the parent-side
//! limits and appends the call to the audit log.
//!
//! [`External`] is the one definition of the set: it drives dispatch, the names the child
//! installs, the pre-flight check's known names, the LLM prompt and the docs' drift test.
//! - [`args`]: reading and describing call arguments;
//! - [`files`]: read, write, delete, list and test files;
//! - [`edit`]: edit by old/new text, move;
//! - [`search`]: glob and regex search;
//! - [`signature`]: the parameters of each signature (what the pre-flight check judges).

mod args;
mod edit;
mod files;
mod search;
mod signature;
mod written;

pub use signature::Param;
pub use written::{Applied, Skipped, Staged};

use crate::config::Sandbox as Limits;
use crate::error::Error;
use crate::events::EventKind;
use crate::lifecycle::ErrorKind;
use crate::paths;
use crate::store::overlay::{AuditRecord, Overlay};
use crate::view::View;
use args::{arg, shorten, str_arg, summarize, type_name};
use serde_json::{json, Map, Value};
use std::io::Write;
use std::time::{Duration, Instant};

pub use edit::MAX_EDITS;
pub use files::MAX_WRITE_FILE_BYTES;
pub use search::{MAX_SEARCH_RESULTS, SEARCH_DEADLINE};

closed_set! {
    /// Every external function, in the order the LLM prompt and the docs list them.
    External, "external function" {
        ReadFile = "read_file",
        WriteFile = "write_file",
        EditLines = "edit_lines",
        EditFile = "edit_file",
        MoveFile = "move_file",
        DeleteFile = "delete_file",
        ListDir = "list_dir",
        FileExists = "file_exists",
        SearchFiles = "search_files",
        SearchContent = "search_content",
        AskLlm = "ask_llm",
        SubmitResult = "submit_result",
        Log = "log",
    }
}

impl External {
    /// Does the call change the proposal (so a live agent's ghost text follows it)?
    pub fn writes(self) -> bool {
        crate::events::WRITING_TOOLS.contains(&self.as_str())
    }

    /// The Python signature, as the LLM prompt shows it and the pre-flight check reads it
    /// ([`External::params`]).
    pub fn signature(self) -> &'static str {
        match self {
            External::ReadFile => "read_file(path: str, tagged: bool = False) -> str",
            External::WriteFile => "write_file(path: str, content: str) -> bool",
            External::EditLines => "edit_lines(path: str, ops: list[dict]) -> dict",
            External::EditFile => "edit_file(path: str, edits: list[dict], dry_run: bool = False) -> dict",
            External::MoveFile => "move_file(src: str, dst: str) -> dict",
            External::DeleteFile => "delete_file(path: str) -> bool",
            External::ListDir => "list_dir(path: str = \".\", depth: int = 1, sizes: bool = False) -> list",
            External::FileExists => "file_exists(path: str) -> bool",
            External::SearchFiles => "search_files(pattern: str) -> list[str]",
            External::SearchContent => "search_content(pattern: str, path: str = \".\", glob: str = None, ignore_case: bool = False, context: int = 0, max_results: int = 10000) -> list[dict]",
            External::AskLlm => "ask_llm(prompt: str, context: str = \"\") -> str",
            External::SubmitResult => "submit_result(summary: str, changed_files: list[str] = None) -> bool",
            External::Log => "log(message: object = \"\") -> bool",
        }
    }

    /// One line on what it does, as the LLM prompt shows it.
    pub fn summary(self) -> &'static str {
        match self {
            External::ReadFile => "the file's text (tagged: each line as 'N:hash|text'); FileNotFoundError if missing, ValueError if binary",
            External::WriteFile => "create or replace a file (parent directories are implied)",
            External::EditLines => "edit lines by tag from a tagged read: ops {op: replace|insert_after|delete, tag, end?, lines?}; a stale tag raises ValueError and changes nothing",
            External::EditFile => "replace text: edits {old_text, new_text, replace_all?}, each old_text found exactly once (or every time with replace_all); all apply or none; returns {path, diff}",
            External::MoveFile => "rename a file (dst must not exist); the review shows a rename",
            External::DeleteFile => "delete a file",
            External::ListDir => "sorted names, directories end with '/'; with depth > 1 or sizes: dicts {path, type} down the tree, files with size when sizes",
            External::FileExists => "does a file or directory exist",
            External::SearchFiles => "glob over the project ('**' crosses directories, '*' does not)",
            External::SearchContent => "regex search, dicts with file, line (1-based), text (and before/after with context); glob filters files",
            External::AskLlm => "ask a language model a question",
            External::SubmitResult => "call once at the end",
            External::Log => "a line in the agent's run log",
        }
    }
}

/// Every external's name (what the child installs and the check knows).
pub fn names() -> impl Iterator<Item = &'static str> {
    External::ALL.iter().map(|e| e.as_str())
}

/// How a call failed.
#[derive(Debug)]
pub enum CallError {
    /// Raised in the script as the named Python exception; the run goes on.
    Raise { exc: &'static str, message: String },
    /// A run limit was exceeded: the run ends, errored with `kind`.
    Fatal { kind: ErrorKind, message: String },
}

pub(crate) fn raise(exc: &'static str, message: impl Into<String>) -> CallError {
    CallError::Raise { exc, message: message.into() }
}

pub(crate) fn limit(message: String) -> CallError {
    CallError::Fatal { kind: ErrorKind::Limit, message }
}

impl From<Error> for CallError {
    fn from(e: Error) -> Self {
        match e {
            Error::InvalidPath(p) => raise("ValueError", format!("Invalid path: {p}")),
            e @ Error::OutsideProject { .. } => raise("ValueError", format!("Invalid path: {e}")),
            other => raise("OSError", other.to_string()),
        }
    }
}

/// Answers `ask_llm(prompt, context)`; supplied by the orchestrator from the `[llm]` config.
/// The third argument is the time left in the run.
pub type AskLlm<'a> = &'a dyn Fn(&str, &str, Duration) -> Result<String, String>;

/// Whether a run should stop now; asked from the runner's watchdog thread.
pub type Stop = std::sync::Arc<dyn Fn() -> bool + Send + Sync>;

/// Serves external calls for one agent run.
pub struct Host<'a> {
    pub view: View<'a>,
    pub limits: Limits,
    pub ask_llm: AskLlm<'a>,
    /// `run.log` of the agent (log() lines).
    pub log_file: Option<std::fs::File>,
    /// Called with each log line (event stream).
    /// Receives the run's events: log lines and tool calls ([`crate::events`]).
    pub on_event: &'a dyn Fn(&EventKind),
    written_bytes: u64,
    /// Bytes read by `read_file` and `search_content` so far (see [`files::MAX_READ_BYTES`]).
    read_bytes: u64,
    /// When the run's time is up: long calls stop there (set by the runner).
    pub deadline: Option<Instant>,
    /// Asked now and then while the run goes on (set by the orchestrator): `true` stops it
    /// (the agent was rejected while it ran).
    pub stop: Option<Stop>,
    /// How an absolute path argument is read: a script's leading `/` is the project root
    /// (the default); an MCP client's absolute path is the host's ([`paths::Rooted`]).
    pub rooted: paths::Rooted,
    log_bytes: u64,
    submitted: bool,
    /// Calls so far (the audit log keeps the first [`MAX_AUDITED_CALLS`]).
    calls: u64,
}

/// Audit rows one run may add: a script calling in a loop cannot grow the overlay without
/// bound (each row is at most a few hundred bytes).
pub const MAX_AUDITED_CALLS: u64 = 10_000;
/// Calls of a run that appear in the event stream (`tool_requested`, then `tool_completed` or
/// `tool_failed`): enough to follow a run, bounded so a loop cannot flood `bin.db`.
pub const MAX_TOOL_EVENTS: u64 = 1_000;

/// What a host has used of its run's budgets: an MCP session carries it from one tool call
/// to the next, so its budgets hold for the whole session as they do for a run.
#[derive(Debug, Clone, Copy, Default, serde::Serialize, serde::Deserialize)]
pub struct Usage {
    pub written_bytes: u64,
    pub read_bytes: u64,
    pub log_bytes: u64,
    pub calls: u64,
}

impl<'a> Host<'a> {
    /// What this host has used so far.
    pub fn usage(&self) -> Usage {
        Usage { written_bytes: self.written_bytes, read_bytes: self.read_bytes, log_bytes: self.log_bytes, calls: self.calls }
    }

    /// Continues from `usage` (an earlier host of the same session).
    pub fn resume(&mut self, usage: Usage) {
        self.written_bytes = usage.written_bytes;
        self.read_bytes = usage.read_bytes;
        self.log_bytes = usage.log_bytes;
        self.calls = usage.calls;
    }

    /// A host serving `view` within `limits`.
    pub fn new(view: View<'a>, limits: Limits, ask_llm: AskLlm<'a>, log_file: Option<std::fs::File>, on_event: &'a dyn Fn(&EventKind)) -> Self {
        Host { view, limits, ask_llm, log_file, on_event, written_bytes: 0, read_bytes: 0, deadline: None, stop: None, rooted: paths::Rooted::Project, log_bytes: 0, submitted: false, calls: 0 }
    }

    fn overlay(&self) -> &Overlay {
        self.view.overlay
    }

    /// Did the script call `submit_result`?
    pub fn submitted(&self) -> bool {
        self.submitted
    }

    /// Runs one call and records it in the audit log.
    pub fn call(&mut self, name: &str, args: &[Value], kwargs: &Map<String, Value>) -> Result<Value, CallError> {
        let start = Instant::now();
        let audited = self.calls < MAX_AUDITED_CALLS;
        let evented = self.calls < MAX_TOOL_EVENTS;
        let mut all_args = args.to_vec();
        if !kwargs.is_empty() {
            all_args.push(Value::Object(kwargs.clone()));
        }
        let summary = if audited { summarize(&Value::Array(all_args)) } else { String::new() };
        if evented {
            (self.on_event)(&EventKind::ToolRequested { tool: shorten(name.to_string()), args: summary.clone() });
        }
        let result = match name.parse::<External>() {
            // A panic in a call (a bug, or a dependency failing on hostile input) ends the run
            // as `internal`; it never unwinds through the runner and leaves the agent running.
            Ok(external) => std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.dispatch(external, args, kwargs)))
                .unwrap_or_else(|_| Err(CallError::Fatal { kind: ErrorKind::Internal, message: format!("{name}() failed inside cairn") })),
            Err(_) => Err(raise("NameError", format!("unknown external function '{}'", shorten(name.to_string())))),
        };
        self.calls += 1;
        if self.calls > MAX_AUDITED_CALLS {
            // Past the cap the calls still run; the audit log keeps what it has.
            return result;
        }
        let rec = AuditRecord {
            ts_ms: crate::time::now_ms(),
            name: name.to_string(),
            args: summary,
            result: result.as_ref().ok().map(summarize),
            error: result.as_ref().err().map(|e| match e {
                CallError::Raise { exc, message } => shorten(format!("{exc}: {message}")),
                CallError::Fatal { kind, message } => shorten(format!("{kind}: {message}")),
            }),
            duration_us: start.elapsed().as_micros() as i64,
        };
        if evented {
            let tool = shorten(name.to_string());
            (self.on_event)(&match (&rec.result, &rec.error) {
                (_, Some(error)) => EventKind::ToolFailed { tool, duration_us: rec.duration_us, error: error.clone() },
                (result, None) => EventKind::ToolCompleted { tool, duration_us: rec.duration_us, result: result.clone().unwrap_or_default() },
            });
        }
        if let Err(e) = self.overlay().audit(&rec) {
            tracing::warn!("audit log write failed: {e}");
        }
        result
    }

    /// Ends the run as `timeout` once its deadline has passed: host-side work counts against
    /// `timeout_seconds` like the script's own.
    fn check_deadline(&self) -> Result<(), CallError> {
        match self.deadline {
            Some(d) if Instant::now() >= d => Err(CallError::Fatal { kind: ErrorKind::Timeout, message: format!("exceeded timeout_seconds = {}", self.limits.timeout_seconds) }),
            _ => Ok(()),
        }
    }

    /// Counts `n` bytes read against the run's read budget.
    fn charge_read(&mut self, n: u64) -> Result<(), CallError> {
        self.read_bytes += n;
        if self.read_bytes > files::MAX_READ_BYTES {
            return Err(CallError::Fatal { kind: ErrorKind::Limit, message: format!("read more than {} MiB in one run", files::MAX_READ_BYTES >> 20) });
        }
        Ok(())
    }

    fn path(&self, raw: &str) -> Result<String, CallError> {
        paths::normalize_as(raw, &self.view.project.root, self.rooted).map_err(CallError::from)
    }

    /// A glob argument made relative to the project root, as [`Host::path`] reads paths.
    fn glob(&self, pattern: &str) -> Result<String, CallError> {
        paths::glob_as(pattern, &self.view.project.root, self.rooted).map_err(CallError::from)
    }

    /// The path argument `name` at position `i`, normalized.
    fn path_arg(&self, args: &[Value], kwargs: &Map<String, Value>, i: usize, name: &str, default: Option<&str>) -> Result<String, CallError> {
        self.path(&str_arg(args, kwargs, i, name, default)?)
    }

    fn dispatch(&mut self, external: External, args: &[Value], kwargs: &Map<String, Value>) -> Result<Value, CallError> {
        match external {
            External::ReadFile => {
                let rel = self.path_arg(args, kwargs, 0, "path", None)?;
                let text = self.read_file(&rel)?;
                match (arg(args, kwargs, 1, "tagged"), text) {
                    (Some(Value::Bool(true)), Value::String(t)) => Ok(Value::String(crate::hashline::tagged(&t))),
                    (None | Some(Value::Bool(false) | Value::Null), text) => Ok(text),
                    (Some(other), _) => Err(raise("TypeError", format!("read_file(): tagged must be a bool, not {}", type_name(other)))),
                }
            }
            External::EditLines => {
                let rel = self.path_arg(args, kwargs, 0, "path", None)?;
                self.edit_lines(&rel, arg(args, kwargs, 1, "ops"))
            }
            External::EditFile => {
                let rel = self.path_arg(args, kwargs, 0, "path", None)?;
                let dry_run = edit::flag(args, kwargs, 2, "dry_run")?;
                self.edit_file(&rel, arg(args, kwargs, 1, "edits"), dry_run)
            }
            External::MoveFile => {
                let src = self.path_arg(args, kwargs, 0, "src", None)?;
                let dst = self.path_arg(args, kwargs, 1, "dst", None)?;
                self.move_file(&src, &dst)
            }
            External::WriteFile => {
                let rel = self.path_arg(args, kwargs, 0, "path", None)?;
                self.write_file(&rel, &str_arg(args, kwargs, 1, "content", None)?)
            }
            External::DeleteFile => self.delete_file(&self.path_arg(args, kwargs, 0, "path", None)?),
            External::ListDir => {
                let depth = args::int_arg(args, kwargs, 1, "depth", 1)?;
                self.list_dir(&self.path_arg(args, kwargs, 0, "path", Some("."))?, depth, edit::flag(args, kwargs, 2, "sizes")?)
            }
            External::FileExists => self.file_exists(&self.path_arg(args, kwargs, 0, "path", None)?),
            External::SearchFiles => self.search_files(&str_arg(args, kwargs, 0, "pattern", None)?),
            External::SearchContent => {
                let options = search::Options {
                    glob: match arg(args, kwargs, 2, "glob") {
                        None | Some(Value::Null) => None,
                        Some(_) => Some(str_arg(args, kwargs, 2, "glob", None)?),
                    },
                    ignore_case: edit::flag(args, kwargs, 3, "ignore_case")?,
                    context: args::int_arg(args, kwargs, 4, "context", 0)?.min(20) as usize,
                    max_results: args::int_arg(args, kwargs, 5, "max_results", MAX_SEARCH_RESULTS as u64)? as usize,
                };
                let pattern = str_arg(args, kwargs, 0, "pattern", None)?;
                self.search_content(&pattern, &self.path_arg(args, kwargs, 1, "path", Some("."))?, &options)
            }
            External::AskLlm => {
                let prompt = str_arg(args, kwargs, 0, "prompt", None)?;
                let context = str_arg(args, kwargs, 1, "context", Some(""))?;
                self.check_deadline()?;
                let budget = self.deadline.map_or(Duration::from_secs(self.limits.timeout_seconds), |d| d.saturating_duration_since(Instant::now()));
                (self.ask_llm)(&prompt, &context, budget).map(Value::String).map_err(|m| raise("RuntimeError", m))
            }
            External::SubmitResult => self.submit_result(args, kwargs),
            External::Log => {
                let message = match arg(args, kwargs, 0, "message") {
                    Some(Value::String(s)) => s.clone(),
                    Some(v) => v.to_string(),
                    None => String::new(),
                };
                self.append_log(&message)?;
                Ok(Value::Bool(true))
            }
        }
    }

    fn submit_result(&mut self, args: &[Value], kwargs: &Map<String, Value>) -> Result<Value, CallError> {
        let summary = str_arg(args, kwargs, 0, "summary", None)?;
        let changed = match arg(args, kwargs, 1, "changed_files") {
            None | Some(Value::Null) => Vec::new(),
            // Paths as every external reads them (a leading `/` is the project root).
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| v.as_str().ok_or_else(|| raise("TypeError", "changed_files must be a list of str")).and_then(|p| self.path(p)))
                .collect::<Result<Vec<_>, _>>()?,
            Some(other) => return Err(raise("TypeError", format!("changed_files must be a list, not {}", type_name(other)))),
        };
        let sub = json!({ "summary": summary, "changed_files": changed });
        let size = sub.to_string().len() as u64;
        if size > self.limits.max_log_bytes {
            return Err(raise("ValueError", format!("the submission is {size} bytes; at most max_log_bytes = {}", self.limits.max_log_bytes)));
        }
        self.overlay().kv_set("submission", &sub.to_string())?;
        self.submitted = true;
        Ok(Value::Bool(true))
    }

    /// Appends a line to `run.log`, enforcing `max_log_bytes`.
    pub fn append_log(&mut self, message: &str) -> Result<(), CallError> {
        self.log_bytes += message.len() as u64 + 1;
        if self.log_bytes > self.limits.max_log_bytes {
            return Err(limit(format!("log output exceeded max_log_bytes = {}", self.limits.max_log_bytes)));
        }
        if let Some(f) = self.log_file.as_mut() {
            let _ = writeln!(f, "{message}");
        }
        (self.on_event)(&EventKind::Log { message: message.to_string() });
        Ok(())
    }
}
