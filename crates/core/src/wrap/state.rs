//! `cairn wrap state [list|diff|apply|reset] NAME`: what an agent CLI changed in its own
//! copy-on-write layer of the home (`$CAIRN_HOME/wrap-state/<cli>/`, see
//! [`crate::runbox::HomePlan`]), shown against the real home, applied to it deliberately
//! (after a login, say), or dropped. The real home changes only through `apply`.

use crate::error::{Error, Result};
use crate::project::Project;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

/// The `[wrap] state` entries command `program` sees: its own (`claude:.claude` for
/// `claude`), and those without a command. Another CLI's state (its credentials) is hidden.
/// `search`: the command's `PATH`.
pub(super) fn state_of(program: &str, project: &Path, search: &str, entries: &[String]) -> Vec<String> {
    let name = cli_of(program, project, search);
    entries
        .iter()
        .filter_map(|e| match e.split_once(':') {
            Some((cli, path)) if !cli.contains('/') => (!name.is_empty() && cli == name).then(|| path.to_string()),
            _ => Some(e.clone()),
        })
        .collect()
}

/// The agent CLI command `program` is, by name (`claude`), for its state and its keys: empty
/// for a program in the project (which agents write) or given by a relative path: `./claude`
/// is no agent CLI, nor is a `claude` that `PATH` (a relative entry in it, say) finds there.
/// `search`: the command's `PATH`.
pub(super) fn cli_of(program: &str, project: &Path, search: &str) -> String {
    let path = Path::new(program);
    let found = if program.contains('/') {
        path.is_absolute().then(|| path.to_path_buf())
    } else {
        // A relative entry of `PATH` (`.`, empty) is taken in the project.
        crate::runbox::which(program, search, Some(project))
    };
    let in_project = match found {
        Some(p) => p.starts_with(project) || std::fs::canonicalize(&p).is_ok_and(|c| c.starts_with(project)),
        None => true,
    };
    if in_project { String::new() } else { state_name(program) }
}

/// The copy-on-write layer of an agent CLI's state: one per command name (`claude`,
/// `codex`, ...), kept across sessions under `$CAIRN_HOME/wrap-state/`.
pub fn state_layer(project: &Project, program: &str) -> PathBuf {
    project.home.dir.join("wrap-state").join(state_name(program))
}

/// A command's name as its state layer is named (`/usr/bin/claude` → `claude`).
fn state_name(program: &str) -> String {
    let base = Path::new(program).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let name: String = base.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') { c } else { '_' }).collect();
    if name.is_empty() || name.starts_with('.') { format!("_{name}") } else { name }
}

/// One path the layer changes, relative to the home.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Change {
    pub path: String,
    /// `added`, `modified` or `deleted`.
    pub kind: &'static str,
    /// The unified diff of a text file (empty otherwise).
    pub diff: String,
}

/// The layers there are (one per CLI name).
pub fn list(project: &Project) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(project.home.dir.join("wrap-state")).into_iter().flatten().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

fn layer(project: &Project, name: &str) -> Result<PathBuf> {
    let dir = state_layer(project, name);
    if !dir.is_dir() {
        return Err(Error::Usage(format!("no wrap state named {name:?} (there are: {})", list(project).join(", "))));
    }
    Ok(dir)
}

/// Every entry of the layer: (path relative to the home, the layer's file, or `None` for a
/// deletion).
fn entries(dir: &Path) -> Vec<(String, Option<PathBuf>)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir.join("files")).into_iter().flatten().flatten() {
        out.push((crate::runbox::entry_path(&e.file_name().to_string_lossy()), Some(e.path())));
    }
    for e in std::fs::read_dir(dir.join("dirs")).into_iter().flatten().flatten() {
        walk(&e.path().join("upper"), &crate::runbox::entry_path(&e.file_name().to_string_lossy()), &mut out);
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn walk(dir: &Path, rel: &str, out: &mut Vec<(String, Option<PathBuf>)>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = format!("{rel}/{}", e.file_name().to_string_lossy());
        let Ok(meta) = std::fs::symlink_metadata(e.path()) else { continue };
        let ft = meta.file_type();
        if ft.is_char_device() {
            out.push((path, None));
        } else if ft.is_dir() {
            walk(&e.path(), &path, out);
        } else if ft.is_file() {
            out.push((path, Some(e.path())));
        }
    }
}

/// What layer `name` changes against the real `home`.
pub fn diff(project: &Project, name: &str, home: &Path) -> Result<Vec<Change>> {
    let dir = layer(project, name)?;
    let mut out = Vec::new();
    for (rel, file) in entries(&dir) {
        let real = std::fs::read(home.join(&rel)).ok();
        match file {
            None if real.is_some() || home.join(&rel).exists() => out.push(Change { path: rel, kind: "deleted", diff: String::new() }),
            None => {}
            Some(f) => {
                let new = std::fs::read(&f).map_err(|e| Error::io(&f, e))?;
                if real.as_deref() == Some(&new[..]) {
                    continue;
                }
                let text = |b: &[u8]| std::str::from_utf8(b).ok().map(str::to_string);
                let diff = match (real.as_deref().map_or(Some(String::new()), text), text(&new)) {
                    (Some(old), Some(new)) => similar::TextDiff::from_lines(&old, &new).unified_diff().header(&format!("a/{rel}"), &format!("b/{rel}")).to_string(),
                    _ => String::new(),
                };
                out.push(Change { kind: if real.is_some() { "modified" } else { "added" }, path: rel, diff });
            }
        }
    }
    Ok(out)
}

/// Copies layer `name` into the real `home` (deletions too), then drops the layer.
pub fn apply(project: &Project, name: &str, home: &Path) -> Result<Vec<Change>> {
    let changes = diff(project, name, home)?;
    let dir = layer(project, name)?;
    for (rel, file) in entries(&dir) {
        let target = home.join(&rel);
        match file {
            Some(f) => {
                if let Some(parent) = target.parent() {
                    std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
                }
                let bytes = std::fs::read(&f).map_err(|e| Error::io(&f, e))?;
                // The CLI's own mode (its keys stay 0600), never wider than the umask lets.
                let mode = std::fs::metadata(&f).map(|m| std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o777).unwrap_or(0o600) & !crate::store::mode::umask();
                crate::store::atomic::write_atomic(home, &rel, &bytes, mode)?;
            }
            None => {
                let gone = if target.is_dir() { std::fs::remove_dir_all(&target) } else { std::fs::remove_file(&target) };
                if let Err(e) = gone {
                    if e.kind() != std::io::ErrorKind::NotFound {
                        return Err(Error::io(&target, e));
                    }
                }
            }
        }
    }
    reset(project, name)?;
    Ok(changes)
}

/// Drops layer `name`: the CLI starts from the real home again.
pub fn reset(project: &Project, name: &str) -> Result<()> {
    let dir = layer(project, name)?;
    std::fs::remove_dir_all(&dir).map_err(|e| Error::io(&dir, e))
}
