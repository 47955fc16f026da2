//! The search externals: `search_files` (a glob over the agent's view) and `search_content`
//! (a linear-time regex over the text files of the view, bounded in time and results).

use super::files::MAX_READ_FILE_BYTES;
use super::{raise, CallError, Host};
use crate::store::fsx::Capped;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// Most results one `search_content` call returns.
pub const MAX_SEARCH_RESULTS: usize = 10_000;
/// Time bound of one `search_content` call.
pub const SEARCH_DEADLINE: Duration = Duration::from_secs(10);

/// Compiled size limits of a `search_content` regex: patterns like `(?:[^Z]+\s*){2000}Z`
/// are refused at compile time instead of running for minutes.
pub const REGEX_SIZE_LIMIT: usize = 1 << 20;
pub const REGEX_DFA_SIZE_LIMIT: usize = 2 << 20;

/// Longest glob `search_files` compiles, in bytes.
pub const MAX_GLOB_BYTES: usize = 1024;
/// Deepest `{...}` nesting, and most wildcards (`*`, `?`, `[`), in one glob.
pub const MAX_GLOB_NESTING: usize = 2;
pub const MAX_GLOB_WILDCARDS: usize = 64;

/// Refuses globs whose compilation could blow up (nested alternations, long wildcard runs)
/// before they reach the glob engine.
fn check_glob(pattern: &str) -> Result<(), CallError> {
    if pattern.len() > MAX_GLOB_BYTES {
        return Err(raise("ValueError", format!("bad pattern: longer than {MAX_GLOB_BYTES} bytes")));
    }
    let (mut depth, mut deepest, mut wildcards) = (0usize, 0usize, 0usize);
    for c in pattern.chars() {
        match c {
            '{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            '}' => depth = depth.saturating_sub(1),
            '*' | '?' | '[' => wildcards += 1,
            _ => {}
        }
    }
    if deepest > MAX_GLOB_NESTING {
        return Err(raise("ValueError", format!("bad pattern: '{{...}}' nested more than {MAX_GLOB_NESTING} deep")));
    }
    if wildcards > MAX_GLOB_WILDCARDS {
        return Err(raise("ValueError", format!("bad pattern: more than {MAX_GLOB_WILDCARDS} wildcards")));
    }
    Ok(())
}

impl Host<'_> {
    pub(super) fn search_files(&self, pattern: &str) -> Result<Value, CallError> {
        check_glob(pattern)?;
        let built = std::panic::catch_unwind(|| globset::GlobBuilder::new(pattern.trim_start_matches('/')).literal_separator(true).build());
        let glob = built
            .map_err(|_| raise("ValueError", "bad pattern: the glob engine could not compile it"))?
            .map_err(|e| raise("ValueError", format!("bad pattern: {e}")))?
            .compile_matcher();
        let files = self.view.files()?;
        self.check_deadline()?;
        Ok(json!(files.into_iter().filter(|f| glob.is_match(f)).collect::<Vec<_>>()))
    }

    pub(super) fn search_content(&mut self, pattern: &str, under: &str) -> Result<Value, CallError> {
        let re = regex::RegexBuilder::new(pattern)
            .size_limit(REGEX_SIZE_LIMIT)
            .dfa_size_limit(REGEX_DFA_SIZE_LIMIT)
            .build()
            .map_err(|e| raise("ValueError", format!("bad regex: {}", shorten_regex_error(&e))))?;
        let own_deadline = Instant::now() + SEARCH_DEADLINE;
        let prefix = if under.is_empty() { String::new() } else { format!("{under}/") };
        let overlaid: std::collections::HashSet<String> = self.overlay().paths()?.into_iter().map(|(p, _)| p).collect();
        let mut out = Vec::new();
        for file in self.view.files()? {
            if !(under.is_empty() || file == under || file.starts_with(&prefix)) {
                continue;
            }
            self.check_deadline()?;
            let content = if overlaid.contains(&file) { self.view.read_capped(&file, MAX_READ_FILE_BYTES)? } else { self.view.base_capped(&file, MAX_READ_FILE_BYTES)? };
            let Some(Capped::Content(bytes, _)) = content else { continue };
            self.charge_read(bytes.len() as u64)?;
            let Ok(text) = std::str::from_utf8(&bytes) else { continue };
            if text.contains('\0') {
                continue;
            }
            // Line by line, so that the deadlines are looked at between lines.
            for (i, line) in text.lines().enumerate() {
                if i % 64 == 0 {
                    self.check_deadline()?;
                    if Instant::now() > own_deadline {
                        return Err(raise("TimeoutError", format!("search_content exceeded {} s; narrow the path", SEARCH_DEADLINE.as_secs())));
                    }
                }
                if re.is_match(line) {
                    out.push(json!({ "file": file, "line": i + 1, "text": line }));
                    if out.len() >= MAX_SEARCH_RESULTS {
                        return Ok(Value::Array(out));
                    }
                }
            }
        }
        Ok(Value::Array(out))
    }
}

/// The regex crate's size error ends with the useful line.
fn shorten_regex_error(e: &regex::Error) -> String {
    let text = e.to_string();
    match e {
        regex::Error::CompiledTooBig(_) => format!("the pattern is too complex (compiled size over {REGEX_SIZE_LIMIT} bytes); simplify it"),
        _ => text,
    }
}
