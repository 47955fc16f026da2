//! Project paths: the one place that turns user- or agent-supplied path strings into safe
//! project-relative paths, and that decides which files belong to the project.
//!
//! Architecture invariant: every path an agent names goes through [`normalize`] (or
//! [`normalize_as`], which reads an MCP client's absolute path as the host's); nothing else
//! joins agent input onto the project root.

use crate::error::{Error, Result};
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use unicode_normalization::UnicodeNormalization;

/// Top-level or nested directory names that are never part of the project.
pub const ALWAYS_SKIPPED: &[&str] = &[".git", ".jj", ".agentfs", ".grail", "target", "node_modules", "__pycache__"];

/// Longest path an agent may name, in bytes (Linux PATH_MAX).
pub const MAX_PATH_BYTES: usize = 4096;
/// Longest path component, in bytes (Linux NAME_MAX).
pub const MAX_NAME_BYTES: usize = 255;

/// A path cut to 200 bytes for messages (an agent's path may be megabytes long).
fn shorten(raw: &str) -> String {
    match raw.char_indices().nth(200) {
        Some((cut, _)) if cut < raw.len() => format!("{}…", &raw[..cut]),
        _ => raw.to_string(),
    }
}

/// Normalizes an agent-supplied path to a project-relative path with `/` separators.
///
/// Paths are relative to the project root, and a leading `/` means the project root too
/// (`/src/main.py` is `src/main.py`, as the seed's scripts write it), except that the
/// project's own absolute path names the file inside it (`/home/me/proj/src/main.py`, as
/// editors and MCP clients send it). `.` components vanish; `..` may not climb above the
/// root. NUL bytes, backslashes, drive letters and `~` are refused, with an error saying paths
/// are relative to the project root. The empty result (`""`) is the project root itself.
pub fn normalize(raw: &str, root: &Path) -> Result<String> {
    let invalid = || Error::InvalidPath(format!("{} (paths are relative to the project root)", shorten(raw)));
    if raw.len() > MAX_PATH_BYTES || raw.contains('\0') || raw.contains('\\') || raw.starts_with('~') {
        return Err(invalid());
    }
    if raw.len() >= 2 && raw.as_bytes()[1] == b':' && raw.as_bytes()[0].is_ascii_alphabetic() {
        return Err(invalid());
    }
    let raw = match root.to_str().and_then(|r| if raw == r { Some("") } else { raw.strip_prefix(r).and_then(|rest| rest.strip_prefix('/')) }) {
        Some(inside) => inside,
        None => raw.trim_start_matches('/'),
    };
    let mut parts: Vec<&str> = Vec::new();
    for comp in raw.split('/') {
        match comp {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    return Err(invalid());
                }
            }
            c if c.len() > MAX_NAME_BYTES => return Err(invalid()),
            c => parts.push(c),
        }
    }
    Ok(parts.join("/"))
}

/// How an agent's absolute path is read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Rooted {
    /// A leading `/` is the project root (`/src/main.py` is `src/main.py`), as the seeds'
    /// scripts write paths; the project's own absolute path still names the file inside it.
    #[default]
    Project,
    /// An absolute path is the host's, as MCP clients send them: inside the project (reached
    /// through its own spelling, a symbolic link or a bind mount to the root) it names that
    /// file; anywhere else it is refused, naming the project root.
    Host,
}

/// [`normalize`], with an absolute path read as `rooted` says.
pub fn normalize_as(raw: &str, root: &Path, rooted: Rooted) -> Result<String> {
    if rooted == Rooted::Project || !raw.starts_with('/') {
        return normalize(raw, root);
    }
    if raw.len() > MAX_PATH_BYTES || raw.contains('\0') {
        return Err(Error::InvalidPath(format!("{} (paths are relative to the project root)", shorten(raw))));
    }
    match inside(raw, root) {
        Some(rest) => normalize(rest.trim_start_matches('/'), root),
        None => Err(Error::OutsideProject { path: shorten(raw), root: root.to_path_buf() }),
    }
}

/// What follows the project root in the absolute path `raw` when `raw` lies inside it: after
/// the root's own spelling, else after the first leading part of `raw` that is the root's
/// directory (a symbolic link or bind mount to it: the same device and inode). Stats at most
/// the leading parts that exist.
fn inside<'r>(raw: &'r str, root: &Path) -> Option<&'r str> {
    use std::os::unix::fs::MetadataExt;
    if let Some(r) = root.to_str() {
        if raw == r {
            return Some("");
        }
        if let Some(rest) = raw.strip_prefix(r).and_then(|rest| rest.strip_prefix('/')) {
            return Some(rest);
        }
    }
    let id = |m: std::fs::Metadata| (m.dev(), m.ino());
    let want = std::fs::metadata(root).ok().map(id)?;
    for end in raw.match_indices('/').map(|(i, _)| i).skip(1).chain([raw.len()]) {
        if std::fs::metadata(&raw[..end]).ok().map(id)? == want {
            return Some(&raw[end..]);
        }
    }
    None
}

/// A glob (`search_files`, `search_content`'s filter) made relative to the project root: under
/// [`Rooted::Host`] an absolute glob's leading directories without wildcards must lie inside
/// the project ([`normalize_as`]); otherwise a leading `/` is the root.
pub fn glob_as(pattern: &str, root: &Path, rooted: Rooted) -> Result<String> {
    if rooted == Rooted::Project || !pattern.starts_with('/') {
        return Ok(pattern.trim_start_matches('/').to_string());
    }
    let wild = pattern.find(['*', '?', '[', '{']).unwrap_or(pattern.len());
    let cut = pattern[..wild].rfind('/').unwrap_or(0);
    let dir = normalize_as(if cut == 0 { "/" } else { &pattern[..cut] }, root, Rooted::Host)?;
    let rest = &pattern[cut + 1..];
    Ok(if dir.is_empty() { rest.to_string() } else { format!("{dir}/{rest}") })
}

/// Directories that hold a repository's or cairn's own machinery: an agent never writes or
/// deletes anything below one, at any depth.
pub const PROTECTED_DIRS: &[&str] = &[".git", ".jj", ".agentfs", ".grail"];

/// File names that configure cairn: an agent never writes or deletes one, at any depth.
pub const PROTECTED_FILES: &[&str] = &[".cairn.toml"];

/// A path component as file systems and tools may treat it: NFKC (`．git` is `.git`), lower
/// case (`.GIT` on a case-insensitive disk), trailing dots and spaces stripped (`.git.` on
/// Windows-style file systems).
fn fold(component: &str) -> String {
    let folded: String = component.nfkc().collect::<String>().to_lowercase();
    folded.trim_end_matches(['.', ' ']).to_string()
}

/// A character that may not appear in a path an agent writes: control characters (C0, DEL,
/// C1: a newline forges diff headers, ESC drives terminals) and the bidirectional formatting
/// marks that make a name read differently from what it is.
fn is_hostile_char(c: char) -> bool {
    c.is_control() || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Why an agent may not write or delete the project-relative path `rel`, if it may not: the
/// rule that refuses it, for the error message.
pub fn protected(rel: &str) -> Option<&'static str> {
    if rel.chars().any(is_hostile_char) {
        return Some("paths may not contain control or bidirectional formatting characters");
    }
    let comps: Vec<String> = rel.split('/').map(fold).collect();
    if comps.iter().any(|c| PROTECTED_DIRS.iter().any(|d| c == d)) {
        return Some("repository and cairn machinery (.git, .jj, .agentfs, .grail) is off limits to agents");
    }
    if comps.last().is_some_and(|c| PROTECTED_FILES.iter().any(|f| c == f)) {
        return Some("cairn's configuration (.cairn.toml) is off limits to agents");
    }
    None
}

mod autorun;
pub use autorun::runs_by_itself;

/// True when a project-relative path lies inside a directory cairn never mirrors.
pub fn has_skipped_component(rel: &str) -> bool {
    rel.split('/').any(|c| ALWAYS_SKIPPED.contains(&c))
}

/// Refuses a stored project-relative path Cairn never writes or deletes: not normalized, in
/// a protected or never-mirrored place, or naming the root. What accept checks of an overlay's
/// paths and what a journal's paths (undo, rollback, a resumed accept) must pass too: a
/// database may be damaged or not Cairn's.
pub fn refuse_unwritable(rel: &str) -> Result<()> {
    if let Some(rule) = protected(rel) {
        return Err(Error::ProtectedPath { path: rel.to_string(), rule });
    }
    if rel.is_empty() || normalize(rel, Path::new("")).ok().as_deref() != Some(rel) || has_skipped_component(rel) {
        return Err(Error::InvalidPath(shorten(rel)));
    }
    Ok(())
}

/// The parent of a project-relative path (`""` for top-level entries).
pub fn parent(rel: &str) -> &str {
    rel.rfind('/').map_or("", |i| &rel[..i])
}

/// The last component of a project-relative path.
pub fn file_name(rel: &str) -> &str {
    rel.rfind('/').map_or(rel, |i| &rel[i + 1..])
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

    /// Does any `.gitignore` apply to the children of `dir` (its own or an ancestor's)? When
    /// none does, only [`ALWAYS_SKIPPED`] names are left out there: a scan asks once per
    /// directory instead of once per file.
    pub fn any_in(&mut self, dir: &str) -> bool {
        let dirs: Vec<String> = std::iter::once("").chain(ancestors(dir)).chain((!dir.is_empty()).then_some(dir)).map(str::to_string).collect();
        dirs.iter().any(|d| self.matcher(d).is_some())
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

/// Agent id `id` as one path component. Ids come from `bin.db`, which a clone may carry: one
/// that is not an id Cairn makes (letters, digits, `-`, `_`; at most 64) becomes a name of
/// its own that cannot leave the directory it is joined to (`x-` and a hash of it). Every path
/// named after an agent is made through this.
pub fn id_part(id: &str) -> std::borrow::Cow<'_, str> {
    let ok = (1..=64).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if ok {
        std::borrow::Cow::Borrowed(id)
    } else {
        std::borrow::Cow::Owned(format!("x-{}", &blake3::hash(id.as_bytes()).to_hex()[..16]))
    }
}

#[cfg(test)]
mod tests {
    use super::{id_part, normalize, protected, runs_by_itself};
    use std::path::Path;

    #[test]
    fn an_id_from_a_database_names_one_path_component() {
        assert_eq!(id_part("a5c2c6"), "a5c2c6");
        for hostile in ["../../home/u/important", "x/../../y", "", ".", "..", "a\0b", &"a".repeat(65), "/abs", "a b"] {
            let part = id_part(hostile);
            assert!(part.starts_with("x-") && part.len() == 18 && part.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'), "{hostile:?} -> {part}");
            assert_eq!(Path::new("/d").join(&*part).parent(), Some(Path::new("/d")));
        }
        assert_ne!(id_part("../a"), id_part("../b"), "distinct ids stay distinct");
    }

    #[test]
    fn protected_paths() {
        for p in [
            ".cairn.toml", "sub/.cairn.toml", ".Cairn.TOML", ".cairn.toml.", ".git/hooks/pre-commit", ".GIT/x", ".git./x",
            "\u{ff0e}git/x", "a/.git/x", ".git", ".jj/x", ".agentfs/x", ".grail/x", "a\nb", "a\u{1b}[31m", "x\u{202e}txt.py",
            ".git /x", "\u{ff0e}\u{ff27}\u{ff29}\u{ff34}/config",
        ] {
            assert!(protected(p).is_some(), "{p:?} should be protected");
        }
        for p in ["src/main.py", ".gitignore", ".github/workflows/ci.yml", "git/x", "a.git/x", "cairn.toml", "docs/.cairn.toml.md"] {
            assert_eq!(protected(p), None, "{p:?} should be writable");
        }
    }

    /// Every kind of file an attacker had run unflagged (issue 48), by name or by a key.
    #[test]
    fn files_that_run_by_themselves_are_flagged() {
        for p in [
            "rust-toolchain.toml", "rust-toolchain", ".pnpmfile.cjs", "bunfig.toml", ".lfsconfig", ".nvim.lua", ".exrc", "sub/.nvimrc", "CLAUDE.md", "pkg/AGENTS.md",
            "GEMINI.md", ".github/copilot-instructions.md", ".env", ".env.local", "mise.toml", "lefthook.yml", ".vscode/mcp.json", ".idea/workspace.xml", "app.code-workspace",
            "eslint.config.mjs", "sitecustomize.py", ".cursor/rules/x.mdc", "crates/a/.cargo/config.toml", ".envrc", "hooks/pre-commit", ".circleci/config.yml",
        ] {
            assert!(runs_by_itself(p, None, Some(b"x")).is_some(), "{p} is not flagged");
        }
        for p in ["src/main.rs", "src/hooks/use_state.ts", ".env.example", "README.md", "Cargo.toml", "pyproject.toml", "docs/config.toml", "x.cargo/config.toml"] {
            assert_eq!(runs_by_itself(p, None, Some(b"[package]\nname = \"x\"\n")), None, "{p} is flagged");
        }
        let cargo = |extra: &str| format!("[package]\nname = \"x\"\n{extra}\n[dependencies]\n");
        for extra in ["build = \"src/innocent.rs\"", "\"build\" = 'x.rs'", "[lib]\nproc-macro = true"] {
            let new = cargo(extra);
            assert!(runs_by_itself("Cargo.toml", Some(cargo("").as_bytes()), Some(new.as_bytes())).is_some(), "{extra}");
            assert_eq!(runs_by_itself("Cargo.toml", Some(new.as_bytes()), Some(new.replace("name = \"x\"", "name = \"y\"").as_bytes())), None, "{extra} was there");
        }
        assert!(runs_by_itself("sub/Cargo.toml", None, Some(b"package.build = \"b.rs\"")).is_some(), "a dotted key");
        assert!(runs_by_itself("Cargo.toml", None, Some(b"[package\nbuild = 1")).is_some(), "not TOML, naming the key");
        let py = "[build-system]\nrequires = []\nbuild-backend = \"backend\"\nbackend-path = [\".\"]\n";
        assert!(runs_by_itself("pyproject.toml", Some(b"[project]\nname = \"x\"\n"), Some(py.as_bytes())).is_some());
        assert_eq!(runs_by_itself("Cargo.toml", Some(cargo("build = \"b.rs\"").as_bytes()), None), None, "a deletion runs nothing");
    }

    #[test]
    fn normalize_cases() {
        let root = Path::new("/work/proj");
        let ok = [
            ("src/main.py", "src/main.py"),
            ("/work/proj/src/main.py", "src/main.py"),
            ("/work/proj", ""),
            ("./a/./b", "a/b"),
            ("a/../b", "b"),
            (".", ""),
            ("a//b/", "a/b"),
            // A leading `/` is the project root, as the seed's scripts write paths.
            ("/src/main.py", "src/main.py"),
            ("/tmp/abs.txt", "tmp/abs.txt"),
            ("/", ""),
            ("/work/project/x", "work/project/x"),
        ];
        for (input, want) in ok {
            assert_eq!(normalize(input, root).unwrap(), want, "{input}");
        }
        for bad in ["..", "../x", "a/../../x", "x\0y", "/../x", "/work/proj/../x", "C:/x", "a\\b", "~/x"] {
            let e = normalize(bad, root).unwrap_err().to_string();
            assert!(e.contains("paths are relative to the project root"), "{bad:?} should be refused, saying how paths are read: {e}");
        }
        assert!(normalize(&"a/".repeat(600_000), root).is_err(), "600,000 components");
        assert!(normalize(&"x".repeat(256), root).is_err(), "a 256-byte name");
        assert!(normalize(&"x".repeat(255), root).is_ok());
        let long = "y".repeat(5000);
        assert!(normalize(&long, root).unwrap_err().to_string().len() < 300, "the error quotes a bounded path");
    }
}
