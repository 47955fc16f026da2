//! Project paths: the one place that turns user- or agent-supplied path strings into safe
//! project-relative paths, and that decides which files belong to the project.
//!
//! Architecture invariant: every path an agent names goes through [`normalize`]; nothing else
//! joins agent input onto the project root.

use crate::error::{Error, Result};
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Top-level or nested directory names that are never part of the project.
pub const ALWAYS_SKIPPED: &[&str] = &[".git", ".jj", ".agentfs", ".grail", "target", "node_modules", "__pycache__"];

/// Normalizes an agent-supplied path to a project-relative path with `/` separators.
///
/// A leading `/` means the project root. `.` components vanish; `..` may not climb above the
/// root. NUL bytes, backslashes, drive letters, `~` and the project's own absolute path are
/// refused. The empty result (`""`) is the project root itself.
pub fn normalize(raw: &str, root: &Path) -> Result<String> {
    let invalid = || Error::InvalidPath(raw.to_string());
    if raw.contains('\0') || raw.contains('\\') || raw.starts_with('~') {
        return Err(invalid());
    }
    if raw.len() >= 2 && raw.as_bytes()[1] == b':' && raw.as_bytes()[0].is_ascii_alphabetic() {
        return Err(invalid());
    }
    if let Some(root) = root.to_str() {
        // An absolute host path into the project is still a host path: refuse it rather than
        // guess whether the agent meant the project root.
        if raw.starts_with('/') && raw.len() > 1 && (raw == root || raw.starts_with(&format!("{root}/"))) {
            return Err(invalid());
        }
    }
    let mut parts: Vec<&str> = Vec::new();
    for comp in raw.split('/') {
        match comp {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    return Err(invalid());
                }
            }
            c => parts.push(c),
        }
    }
    Ok(parts.join("/"))
}

/// True when a project-relative path lies inside a directory cairn never mirrors.
pub fn has_skipped_component(rel: &str) -> bool {
    rel.split('/').any(|c| ALWAYS_SKIPPED.contains(&c))
}

/// The parent of a project-relative path (`""` for top-level entries).
pub fn parent(rel: &str) -> &str {
    rel.rfind('/').map_or("", |i| &rel[..i])
}

/// Every proper ancestor directory of a relative path, nearest to the root first.
pub fn ancestors(rel: &str) -> impl Iterator<Item = &str> {
    rel.match_indices('/').map(move |(i, _)| &rel[..i])
}

/// Decides whether a project-relative path is ignored: [`ALWAYS_SKIPPED`] names anywhere, or a
/// `.gitignore` rule in the root or any directory on the way down. Matchers are cached per
/// directory; [`IgnoreRules::invalidate`] drops the cache when a `.gitignore` changes.
pub struct IgnoreRules {
    root: PathBuf,
    cache: HashMap<String, Option<Gitignore>>,
}

impl IgnoreRules {
    /// Rules for the project at `root`.
    pub fn new(root: &Path) -> Self {
        IgnoreRules { root: root.to_path_buf(), cache: HashMap::new() }
    }

    /// Forgets every cached `.gitignore` (call when one is created, edited or removed).
    pub fn invalidate(&mut self) {
        self.cache.clear();
    }

    /// True when `rel` is not a project file.
    pub fn is_ignored(&mut self, rel: &str, is_dir: bool) -> bool {
        if rel.is_empty() {
            return false;
        }
        if has_skipped_component(rel) {
            return true;
        }
        let dirs: Vec<String> = std::iter::once("").chain(ancestors(rel)).map(str::to_string).collect();
        let full = self.root.join(rel);
        for dir in dirs {
            let Some(gi) = self.matcher(&dir) else { continue };
            if gi.matched_path_or_any_parents(&full, is_dir).is_ignore() {
                return true;
            }
        }
        false
    }

    fn matcher(&mut self, dir: &str) -> Option<&Gitignore> {
        if !self.cache.contains_key(dir) {
            let dir_path = if dir.is_empty() { self.root.clone() } else { self.root.join(dir) };
            let file = dir_path.join(".gitignore");
            let gi = if file.is_file() {
                let mut b = GitignoreBuilder::new(&dir_path);
                b.add(&file);
                b.build().ok()
            } else {
                None
            };
            self.cache.insert(dir.to_string(), gi);
        }
        self.cache.get(dir).and_then(|g| g.as_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::normalize;
    use std::path::Path;

    #[test]
    fn normalize_cases() {
        let root = Path::new("/work/proj");
        let ok = [
            ("src/main.py", "src/main.py"),
            ("/src/main.py", "src/main.py"),
            ("./a/./b", "a/b"),
            ("a/../b", "b"),
            (".", ""),
            ("/", ""),
            ("a//b/", "a/b"),
        ];
        for (input, want) in ok {
            assert_eq!(normalize(input, root).unwrap(), want, "{input}");
        }
        for bad in ["..", "../x", "a/../../x", "x\0y", "/work/proj/src/a.py", "C:/x", "a\\b", "~/x"] {
            assert!(normalize(bad, root).is_err(), "{bad:?} should be refused");
        }
    }
}
