//! The host side of the external functions of SPEC §4: the only way agent code reaches
//! anything. The sandbox child forwards each call here over its pipe; [`Host::call`] checks the
//! arguments, applies the semantics against the agent's [`View`], enforces the parent-side
//! limits and appends the call to the audit log.

use crate::config::Sandbox as Limits;
use crate::error::Error;
use crate::paths;
use crate::store::overlay::{AuditRecord, Overlay};
use crate::store::{fsx, hash_bytes};
use crate::view::{Node, View};
use serde_json::{json, Map, Value};
use std::io::Write;
use std::time::{Duration, Instant};

/// Largest content one `write_file` call accepts.
pub const MAX_WRITE_FILE_BYTES: usize = 10 * 1024 * 1024;
/// Most results one `search_content` call returns.
pub const MAX_SEARCH_RESULTS: usize = 10_000;
/// Time bound of one `search_content` call.
pub const SEARCH_DEADLINE: Duration = Duration::from_secs(10);

/// Every external, in the order the LLM prompt lists them.
pub const NAMES: &[&str] = &[
    "read_file",
    "write_file",
    "delete_file",
    "list_dir",
    "file_exists",
    "search_files",
    "search_content",
    "ask_llm",
    "submit_result",
    "log",
];

/// How a call failed.
#[derive(Debug)]
pub enum CallError {
    /// Raised in the script as the named Python exception; the run goes on.
    Raise { exc: &'static str, message: String },
    /// A run limit was exceeded: the run ends, errored with `kind`.
    Fatal { kind: &'static str, message: String },
}

fn raise(exc: &'static str, message: impl Into<String>) -> CallError {
    CallError::Raise { exc, message: message.into() }
}

impl From<Error> for CallError {
    fn from(e: Error) -> Self {
        match e {
            Error::InvalidPath(_) => raise("ValueError", "Invalid path"),
            other => raise("OSError", other.to_string()),
        }
    }
}

/// Answers `ask_llm(prompt, context)`; supplied by the orchestrator from the `[llm]` config.
pub type AskLlm<'a> = &'a dyn Fn(&str, &str) -> Result<String, String>;

/// Serves external calls for one agent run.
pub struct Host<'a> {
    pub view: View<'a>,
    pub limits: Limits,
    pub ask_llm: AskLlm<'a>,
    /// `run.log` of the agent (log() lines).
    pub log_file: Option<std::fs::File>,
    /// Called with each log line (event stream).
    pub on_log: &'a dyn Fn(&str),
    written_bytes: u64,
    log_bytes: u64,
    submitted: bool,
}

/// Reads a positional-or-keyword argument.
fn arg<'v>(args: &'v [Value], kwargs: &'v Map<String, Value>, i: usize, name: &str) -> Option<&'v Value> {
    args.get(i).or_else(|| kwargs.get(name))
}

fn str_arg(args: &[Value], kwargs: &Map<String, Value>, i: usize, name: &str, default: Option<&str>) -> Result<String, CallError> {
    match arg(args, kwargs, i, name) {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(raise("TypeError", format!("{name} must be str, not {}", type_name(other)))),
        None => default.map(str::to_string).ok_or_else(|| raise("TypeError", format!("missing required argument '{name}'"))),
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "NoneType",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "int",
        Value::String(_) => "str",
        Value::Array(_) => "list",
        Value::Object(_) => "dict",
    }
}

fn summarize(v: &Value) -> String {
    let mut s = v.to_string();
    if s.len() > 200 {
        let mut cut = 200;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
        s.push('…');
    }
    s
}

impl<'a> Host<'a> {
    /// A host serving `view` within `limits`.
    pub fn new(view: View<'a>, limits: Limits, ask_llm: AskLlm<'a>, log_file: Option<std::fs::File>, on_log: &'a dyn Fn(&str)) -> Self {
        Host { view, limits, ask_llm, log_file, on_log, written_bytes: 0, log_bytes: 0, submitted: false }
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
        let result = self.dispatch(name, args, kwargs);
        let mut all_args = args.to_vec();
        if !kwargs.is_empty() {
            all_args.push(Value::Object(kwargs.clone()));
        }
        let rec = AuditRecord {
            ts_ms: crate::time::now_ms(),
            name: name.to_string(),
            args: summarize(&Value::Array(all_args)),
            result: result.as_ref().ok().map(summarize),
            error: result.as_ref().err().map(|e| match e {
                CallError::Raise { exc, message } => format!("{exc}: {message}"),
                CallError::Fatal { kind, message } => format!("{kind}: {message}"),
            }),
            duration_us: start.elapsed().as_micros() as i64,
        };
        if let Err(e) = self.overlay().audit(&rec) {
            tracing::warn!("audit log write failed: {e}");
        }
        result
    }

    fn path(&self, raw: &str) -> Result<String, CallError> {
        paths::normalize(raw, &self.view.project.root).map_err(CallError::from)
    }

    /// Records the project's state at `rel` if the agent has not touched it before.
    fn touch_base(&self, rel: &str, content: Option<&[u8]>) -> Result<(), CallError> {
        if self.overlay().has_base(rel)? {
            return Ok(());
        }
        let base = match content {
            Some(bytes) => fsx::stat_mode(&self.view.project.root, rel)?.map(|m| (hash_bytes(bytes), m)),
            None => self.view.base(rel)?.map(|(bytes, mode)| (hash_bytes(&bytes), mode)),
        };
        self.overlay().record_base(rel, base)?;
        Ok(())
    }

    fn dispatch(&mut self, name: &str, args: &[Value], kwargs: &Map<String, Value>) -> Result<Value, CallError> {
        match name {
            "read_file" => {
                let rel = self.path(&str_arg(args, kwargs, 0, "path", None)?)?;
                let from_overlay = self.overlay().get(&rel)?.is_some();
                match self.view.read(&rel)? {
                    Some((bytes, _)) => {
                        if !from_overlay {
                            self.touch_base(&rel, Some(&bytes))?;
                        }
                        if bytes.contains(&0) {
                            return Err(raise("ValueError", format!("binary file: {rel}")));
                        }
                        String::from_utf8(bytes).map(Value::String).map_err(|_| raise("ValueError", format!("binary file: {rel}")))
                    }
                    None if self.view.node(&rel)? == Node::Dir => Err(raise("IsADirectoryError", format!("is a directory: {rel}"))),
                    None => Err(raise("FileNotFoundError", format!("no such file: {rel}"))),
                }
            }
            "write_file" => {
                let rel = self.path(&str_arg(args, kwargs, 0, "path", None)?)?;
                let content = str_arg(args, kwargs, 1, "content", None)?;
                if rel.is_empty() || paths::has_skipped_component(&rel) {
                    return Err(raise("ValueError", "Invalid path"));
                }
                if content.len() > MAX_WRITE_FILE_BYTES {
                    return Err(raise("ValueError", format!("content is {} bytes; write_file takes at most {MAX_WRITE_FILE_BYTES}", content.len())));
                }
                if self.view.node(&rel)? == Node::Dir {
                    return Err(raise("IsADirectoryError", format!("is a directory: {rel}")));
                }
                for anc in paths::ancestors(&rel) {
                    if self.view.node(anc)? == Node::File {
                        return Err(raise("NotADirectoryError", format!("not a directory: {anc}")));
                    }
                }
                self.written_bytes += content.len() as u64;
                if self.written_bytes > self.limits.max_write_bytes {
                    return Err(CallError::Fatal {
                        kind: "limit",
                        message: format!("wrote more than max_write_bytes = {} bytes", self.limits.max_write_bytes),
                    });
                }
                let new_path = self.overlay().get(&rel)?.is_none();
                if new_path && self.overlay().changed_count()? >= self.limits.max_files_written {
                    return Err(CallError::Fatal {
                        kind: "limit",
                        message: format!("wrote more than max_files_written = {} files", self.limits.max_files_written),
                    });
                }
                self.touch_base(&rel, None)?;
                let mode = match self.view.read(&rel)? {
                    Some((_, mode)) => mode,
                    None => 0o644,
                };
                self.overlay().write(&rel, content.as_bytes(), mode)?;
                Ok(Value::Bool(true))
            }
            "delete_file" => {
                let rel = self.path(&str_arg(args, kwargs, 0, "path", None)?)?;
                match self.view.node(&rel)? {
                    Node::Absent => return Err(raise("FileNotFoundError", format!("no such file: {rel}"))),
                    Node::Dir => return Err(raise("IsADirectoryError", format!("is a directory: {rel}"))),
                    Node::File => {}
                }
                if self.overlay().get(&rel)?.is_none() && self.overlay().changed_count()? >= self.limits.max_files_written {
                    return Err(CallError::Fatal {
                        kind: "limit",
                        message: format!("changed more than max_files_written = {} files", self.limits.max_files_written),
                    });
                }
                self.touch_base(&rel, None)?;
                if self.view.base(&rel)?.is_some() {
                    self.overlay().whiteout(&rel)?;
                } else {
                    // Created by this agent only: deleting it leaves no trace.
                    self.overlay().forget(&rel)?;
                }
                Ok(Value::Bool(true))
            }
            "list_dir" => {
                let rel = self.path(&str_arg(args, kwargs, 0, "path", Some("."))?)?;
                match self.view.node(&rel)? {
                    Node::Dir => Ok(json!(self.view.list_dir(&rel)?)),
                    Node::File => Err(raise("NotADirectoryError", format!("not a directory: {rel}"))),
                    Node::Absent => Err(raise("FileNotFoundError", format!("no such directory: {rel}"))),
                }
            }
            "file_exists" => {
                let rel = self.path(&str_arg(args, kwargs, 0, "path", None)?)?;
                Ok(Value::Bool(self.view.node(&rel)? != Node::Absent))
            }
            "search_files" => {
                let pattern = str_arg(args, kwargs, 0, "pattern", None)?;
                let glob = globset::GlobBuilder::new(pattern.trim_start_matches('/'))
                    .literal_separator(true)
                    .build()
                    .map_err(|e| raise("ValueError", format!("bad pattern: {e}")))?
                    .compile_matcher();
                let files = self.view.files()?;
                Ok(json!(files.into_iter().filter(|f| glob.is_match(f)).collect::<Vec<_>>()))
            }
            "search_content" => {
                let pattern = str_arg(args, kwargs, 0, "pattern", None)?;
                let rel = self.path(&str_arg(args, kwargs, 1, "path", Some("."))?)?;
                let re = regex::RegexBuilder::new(&pattern)
                    .size_limit(1 << 22)
                    .build()
                    .map_err(|e| raise("ValueError", format!("bad regex: {e}")))?;
                Ok(Value::Array(self.search_content(&re, &rel)?))
            }
            "ask_llm" => {
                let prompt = str_arg(args, kwargs, 0, "prompt", None)?;
                let context = str_arg(args, kwargs, 1, "context", Some(""))?;
                (self.ask_llm)(&prompt, &context).map(Value::String).map_err(|m| raise("RuntimeError", m))
            }
            "submit_result" => {
                let summary = str_arg(args, kwargs, 0, "summary", None)?;
                let changed = match arg(args, kwargs, 1, "changed_files") {
                    None | Some(Value::Null) => Vec::new(),
                    Some(Value::Array(items)) => items
                        .iter()
                        .map(|v| v.as_str().map(str::to_string).ok_or_else(|| raise("TypeError", "changed_files must be a list of str")))
                        .collect::<Result<Vec<_>, _>>()?,
                    Some(other) => return Err(raise("TypeError", format!("changed_files must be a list, not {}", type_name(other)))),
                };
                let sub = json!({ "summary": summary, "changed_files": changed });
                self.overlay().kv_set("submission", &sub.to_string())?;
                self.submitted = true;
                Ok(Value::Bool(true))
            }
            "log" => {
                let message = match arg(args, kwargs, 0, "message") {
                    Some(Value::String(s)) => s.clone(),
                    Some(v) => v.to_string(),
                    None => String::new(),
                };
                self.append_log(&message)?;
                Ok(Value::Bool(true))
            }
            other => Err(raise("NameError", format!("unknown external function '{other}'"))),
        }
    }

    /// Appends a line to `run.log`, enforcing `max_log_bytes`.
    pub fn append_log(&mut self, message: &str) -> Result<(), CallError> {
        self.log_bytes += message.len() as u64 + 1;
        if self.log_bytes > self.limits.max_log_bytes {
            return Err(CallError::Fatal { kind: "limit", message: format!("log output exceeded max_log_bytes = {}", self.limits.max_log_bytes) });
        }
        if let Some(f) = self.log_file.as_mut() {
            let _ = writeln!(f, "{message}");
        }
        (self.on_log)(message);
        Ok(())
    }

    fn search_content(&self, re: &regex::Regex, under: &str) -> Result<Vec<Value>, CallError> {
        let deadline = Instant::now() + SEARCH_DEADLINE;
        let prefix = if under.is_empty() { String::new() } else { format!("{under}/") };
        let overlaid: std::collections::HashSet<String> = self.overlay().paths()?.into_iter().map(|(p, _)| p).collect();
        let mut out = Vec::new();
        for file in self.view.files()? {
            if !(under.is_empty() || file == under || file.starts_with(&prefix)) {
                continue;
            }
            if Instant::now() > deadline {
                return Err(raise("TimeoutError", format!("search_content exceeded {} s; narrow the path", SEARCH_DEADLINE.as_secs())));
            }
            let content = if overlaid.contains(&file) { self.view.read(&file)? } else { self.view.base(&file)? };
            let Some((bytes, _)) = content else { continue };
            let Ok(text) = std::str::from_utf8(&bytes) else { continue };
            if text.contains('\0') || !re.is_match(text) {
                continue;
            }
            for (i, line) in text.lines().enumerate() {
                if re.is_match(line) {
                    out.push(json!({ "file": file, "line": i + 1, "text": line }));
                    if out.len() >= MAX_SEARCH_RESULTS {
                        return Ok(out);
                    }
                }
            }
        }
        Ok(out)
    }
}
