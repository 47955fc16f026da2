//! The search externals: `search_files` (a glob over the agent's view) and `search_content`
//! (a linear-time regex over the text files of the view, bounded in time, bytes and results:
//! [`crate::search`]).

use super::{files, raise, CallError, Host};
use crate::lifecycle::ErrorKind;
use crate::search::{self, SearchError};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// Most results one `search_content` call returns.
pub const MAX_SEARCH_RESULTS: usize = search::MAX_RESULTS;
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

/// The options of `search_content` beyond pattern and path.
#[derive(Debug, Default)]
pub struct Options {
    /// Only files matching this glob (a glob without `/` matches the file name).
    pub glob: Option<String>,
    pub ignore_case: bool,
    /// Lines before and after each hit.
    pub context: usize,
    pub max_results: usize,
}

impl Host<'_> {
    /// Hits with `n` lines of context before and after each (`before`, `after`).
    fn with_context(&mut self, hits: &[&search::Hit], n: usize) -> Result<Value, CallError> {
        let mut out = Vec::new();
        let mut cache: Option<(String, Vec<String>)> = None;
        for h in hits {
            if cache.as_ref().is_none_or(|c| c.0 != h.file) {
                let text = match self.view.read_capped(&h.file, files::MAX_READ_FILE_BYTES)? {
                    Some(crate::store::fsx::Capped::Content(b, _)) => {
                        self.charge_read(b.len() as u64)?;
                        String::from_utf8_lossy(&b).lines().map(str::to_string).collect()
                    }
                    _ => Vec::new(),
                };
                cache = Some((h.file.clone(), text));
            }
            let lines = cache.as_ref().map(|c| &c.1[..]).unwrap_or_default();
            let at = (h.line as usize).saturating_sub(1);
            let before = lines.get(at.saturating_sub(n)..at).unwrap_or_default();
            let after = lines.get((at + 1).min(lines.len())..(at + 1 + n).min(lines.len())).unwrap_or_default();
            out.push(json!({ "file": h.file, "line": h.line, "text": h.text, "before": before, "after": after }));
        }
        Ok(Value::Array(out))
    }

    pub(super) fn search_files(&self, pattern: &str) -> Result<Value, CallError> {
        check_glob(pattern)?;
        let pattern = self.glob(pattern)?;
        let built = std::panic::catch_unwind(|| globset::GlobBuilder::new(&pattern).literal_separator(true).build());
        let glob = built
            .map_err(|_| raise("ValueError", "bad pattern: the glob engine could not compile it"))?
            .map_err(|e| raise("ValueError", format!("bad pattern: {e}")))?
            .compile_matcher();
        let files = self.view.files()?;
        self.check_deadline()?;
        Ok(json!(files.into_iter().filter(|f| glob.is_match(f)).collect::<Vec<_>>()))
    }

    pub(super) fn search_content(&mut self, pattern: &str, under: &str, options: &Options) -> Result<Value, CallError> {
        self.check_deadline()?;
        let filter = match &options.glob {
            Some(g) => {
                check_glob(g)?;
                let built = globset::GlobBuilder::new(&self.glob(g)?).literal_separator(true).build();
                let glob = built.map_err(|e| raise("ValueError", format!("bad glob: {e}")))?.compile_matcher();
                // A glob without '/' matches file names anywhere, as ripgrep's `-g` does.
                Some((glob, g.contains('/')))
            }
            None => None,
        };
        let folded;
        let pattern = if options.ignore_case {
            folded = format!("(?i){pattern}");
            folded.as_str()
        } else {
            pattern
        };
        let own = Instant::now() + SEARCH_DEADLINE;
        let run = self.deadline.unwrap_or(own);
        let bounds = search::Bounds { deadline: own.min(run), max_bytes: files::MAX_READ_BYTES.saturating_sub(self.read_bytes) };
        match search::content(&self.view, pattern, under, bounds) {
            Ok((hits, read)) => {
                self.charge_read(read)?;
                // A protected file's content is off limits as a read of it is.
                let keep = |h: &&search::Hit| crate::paths::protected(&h.file).is_none() && match &filter {
                    Some((g, true)) => g.is_match(&h.file),
                    Some((g, false)) => g.is_match(h.file.rsplit('/').next().unwrap_or(&h.file)),
                    None => true,
                };
                let hits: Vec<&search::Hit> = hits.iter().filter(keep).take(options.max_results).collect();
                if options.context == 0 {
                    return Ok(json!(hits));
                }
                self.with_context(&hits, options.context)
            }
            Err(e @ SearchError::Pattern(_)) => Err(raise("ValueError", e.to_string())),
            Err(SearchError::Deadline) if own <= run => Err(raise("TimeoutError", format!("search_content exceeded {} s; narrow the path", SEARCH_DEADLINE.as_secs()))),
            Err(SearchError::Deadline) => self.check_deadline().and(Err(CallError::Fatal { kind: ErrorKind::Timeout, message: format!("exceeded timeout_seconds = {}", self.limits.timeout_seconds) })),
            Err(SearchError::Budget(_)) => self.charge_read(files::MAX_READ_BYTES + 1).map(|_| Value::Null),
            Err(SearchError::Store(e)) => Err(e.into()),
        }
    }
}
