//! Content search over a view (the project as indexed, with an agent's overlay on top): the
//! engine behind the `search_content` external and `cairn search`.
//!
//! The files are the view's (`stable.db` and the overlay), never a walk of the disk: an agent
//! sees exactly what it could read. Matching uses ripgrep's own crates (`grep-regex` over the
//! linear-time `regex` engine, `grep-searcher` for lines), files go in parallel on contiguous
//! chunks, and every search is bounded: a deadline, a byte budget, a result count and compiled
//! pattern size limits.

use crate::error::Error;
use crate::store::fsx::{self, Capped};
use crate::view::View;
use grep_regex::RegexMatcherBuilder;
use grep_searcher::{sinks, BinaryDetection, SearcherBuilder};
use serde::Serialize;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Most results one search returns.
pub const MAX_RESULTS: usize = 10_000;
/// Largest file searched; larger files are skipped.
pub const MAX_FILE_BYTES: u64 = 10 * 1024 * 1024;
/// Compiled size limits of a pattern: patterns like `(?:[^Z]+\s*){2000}Z` are refused at
/// compile time instead of running for minutes.
pub const REGEX_SIZE_LIMIT: usize = 1 << 20;
pub const REGEX_DFA_SIZE_LIMIT: usize = 2 << 20;
/// Files per thread before another thread is worth starting.
const FILES_PER_THREAD: usize = 256;

/// One matching line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Hit {
    pub file: String,
    pub line: u64,
    pub text: String,
}

/// What bounds a search.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    pub deadline: Instant,
    /// Bytes the search may read from disk and overlay together.
    pub max_bytes: u64,
}

/// Why a search stopped without an answer.
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    #[error("bad regex: {0}")]
    Pattern(String),
    #[error("the search ran out of time")]
    Deadline,
    #[error("the search would read more than {0} bytes")]
    Budget(u64),
    #[error(transparent)]
    Store(#[from] Error),
}

/// The first [`MAX_RESULTS`] lines matching `pattern` in the text files of `view` under
/// `under` (all when empty), in path then line order, and the bytes read. Binary files (a
/// NUL byte), files that are not UTF-8 and files over [`MAX_FILE_BYTES`] are skipped.
pub fn content(view: &View, pattern: &str, under: &str, bounds: Bounds) -> Result<(Vec<Hit>, u64), SearchError> {
    // The regex crate's own errors are the clearest (and typed: too big is said plainly).
    regex::RegexBuilder::new(pattern)
        .size_limit(REGEX_SIZE_LIMIT)
        .dfa_size_limit(REGEX_DFA_SIZE_LIMIT)
        .build()
        .map_err(|e| SearchError::Pattern(shorten(&e)))?;
    let matcher = RegexMatcherBuilder::new()
        .size_limit(REGEX_SIZE_LIMIT)
        .dfa_size_limit(REGEX_DFA_SIZE_LIMIT)
        .multi_line(true)
        // `$` matches before `\r\n` too; lines still end at `\n` (the order matters).
        .crlf(true)
        .line_terminator(Some(b'\n'))
        .build(pattern)
        .map_err(|e| SearchError::Pattern(e.to_string()))?;
    let prefix = if under.is_empty() { String::new() } else { format!("{under}/") };
    // Overlay contents are read here (the overlay's connection stays on this thread); the
    // project's files are read by the workers.
    let overlaid: std::collections::HashSet<String> = view.overlay.paths()?.into_iter().map(|(p, _)| p).collect();
    let mut files = Vec::new();
    for file in view.files()? {
        if !(under.is_empty() || file == under || file.starts_with(&prefix)) {
            continue;
        }
        let source = if overlaid.contains(&file) { Source::Bytes(view.read_capped(&file, MAX_FILE_BYTES)?) } else { Source::Disk };
        files.push((file, source));
    }
    let read = AtomicU64::new(0);
    let root = &view.project.root;
    let threads = crate::par::threads_for(files.len(), FILES_PER_THREAD, std::thread::available_parallelism().map_or(2, |n| n.get()).min(8));
    let chunks = crate::par::chunks(&files, threads, "search", |chunk| search_chunk(root, chunk, &matcher, bounds, &read))?;
    // Each chunk kept its own first MAX_RESULTS, so the first MAX_RESULTS overall are among them.
    let mut out = Vec::new();
    for hits in chunks {
        out.extend(hits?);
        if out.len() >= MAX_RESULTS {
            out.truncate(MAX_RESULTS);
            break;
        }
    }
    Ok((out, read.load(Ordering::Relaxed)))
}

/// Searches one chunk of files in order; stops at [`MAX_RESULTS`] hits of its own.
fn search_chunk(root: &std::path::Path, chunk: &[(String, Source)], matcher: &grep_regex::RegexMatcher, bounds: Bounds, read: &AtomicU64) -> Result<Vec<Hit>, SearchError> {
    let mut searcher = SearcherBuilder::new().line_number(true).binary_detection(BinaryDetection::quit(0)).build();
    let mut hits = Vec::new();
    for (file, source) in chunk {
        if Instant::now() >= bounds.deadline {
            return Err(SearchError::Deadline);
        }
        let from_disk;
        let content = match source {
            Source::Bytes(c) => c.as_ref(),
            Source::Disk => {
                from_disk = fsx::read_at_most(root, file, MAX_FILE_BYTES)?;
                from_disk.as_ref()
            }
        };
        let Some(Capped::Content(bytes, _)) = content else { continue };
        if read.fetch_add(bytes.len() as u64, Ordering::Relaxed) + bytes.len() as u64 > bounds.max_bytes {
            return Err(SearchError::Budget(bounds.max_bytes));
        }
        if std::str::from_utf8(bytes).is_err() {
            continue;
        }
        // A NUL byte ends the search of that file (binary); its hits so far are dropped.
        let before = hits.len();
        let mut binary = false;
        let sink = sinks::UTF8(|line, text| {
            hits.push(Hit { file: file.clone(), line, text: text.trim_end_matches(['\n', '\r']).to_string() });
            Ok(hits.len() < MAX_RESULTS)
        });
        searcher
            .search_slice(matcher, bytes, BinaryAware { inner: sink, binary: &mut binary })
            .map_err(|e| Error::Internal(format!("search of {file}: {e}")))?;
        if binary {
            hits.truncate(before);
        }
        if hits.len() >= MAX_RESULTS {
            break;
        }
    }
    Ok(hits)
}

enum Source {
    Disk,
    Bytes(Option<Capped>),
}

/// A sink that notes when the searcher found binary data.
struct BinaryAware<'a, S> {
    inner: S,
    binary: &'a mut bool,
}

impl<S: grep_searcher::Sink<Error = std::io::Error>> grep_searcher::Sink for BinaryAware<'_, S> {
    type Error = std::io::Error;
    fn matched(&mut self, searcher: &grep_searcher::Searcher, m: &grep_searcher::SinkMatch<'_>) -> Result<bool, Self::Error> {
        self.inner.matched(searcher, m)
    }
    fn binary_data(&mut self, _: &grep_searcher::Searcher, _: u64) -> Result<bool, Self::Error> {
        *self.binary = true;
        Ok(false)
    }
}

/// The regex crate's size error, said plainly.
fn shorten(e: &regex::Error) -> String {
    match e {
        regex::Error::CompiledTooBig(_) => format!("the pattern is too complex (compiled size over {REGEX_SIZE_LIMIT} bytes); simplify it"),
        _ => e.to_string(),
    }
}
