//! The search externals: `search_files` (a glob over the agent's view) and `search_content`
//! (a linear-time regex over the text files of the view, bounded in time and results).

use super::{raise, CallError, Host};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// Most results one `search_content` call returns.
pub const MAX_SEARCH_RESULTS: usize = 10_000;
/// Time bound of one `search_content` call.
pub const SEARCH_DEADLINE: Duration = Duration::from_secs(10);

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
        Ok(json!(files.into_iter().filter(|f| glob.is_match(f)).collect::<Vec<_>>()))
    }

    pub(super) fn search_content(&self, pattern: &str, under: &str) -> Result<Value, CallError> {
        let re = regex::RegexBuilder::new(pattern).size_limit(1 << 22).build().map_err(|e| raise("ValueError", format!("bad regex: {e}")))?;
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
                        return Ok(Value::Array(out));
                    }
                }
            }
        }
        Ok(Value::Array(out))
    }
}
