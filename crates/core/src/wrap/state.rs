//! `cairn wrap state [list|diff|apply|reset] NAME`: what an agent CLI changed in its own
//! copy-on-write layer of the home (`$CAIRN_HOME/wrap-state/<cli>/`, see
//! [`crate::runbox::HomePlan`]), shown against the real home, applied to it deliberately
//! (after a login, say), or dropped. The real home changes only through `apply`.
//!
//! The layer is the agent's writing, maybe while it runs: it is read as the capture reads a
//! command's writes ([`runbox::scan_home`]: descriptor-relative, never through a symlink,
//! sizes bounded before a byte is read), and the real home the same way (`store::fsx`,
//! `store::atomic`). `apply` installs exactly what it read and showed: each file is read once,
//! compared and copied from memory; with `--expect`, only what `diff` showed (its
//! fingerprint). A symlink, a file over the bounds, a name that is not UTF-8 are shown as left
//! out and never applied; a file that is not UTF-8 is shown whole, its bytes escaped. Every
//! file is written beside its target before the first is put in place (nothing half applied).
//!
//! A wrap session holds its layer's lock (shared) while it runs: `reset` waits for none and
//! refuses, `apply` keeps the layer under a live session (which reads and writes it still).

use crate::error::{Error, Result};
use crate::project::Project;
use crate::runbox::{self, Limits, Written};
use crate::store::fsx;
use std::path::{Path, PathBuf};

mod names;
pub(super) use names::{cli_of, state_of};
pub use names::state_layer;

/// What a layer's files may hold to be shown and applied: one file, and all of them together.
const LIMITS: Limits = Limits { file: 16 << 20, total: 128 << 20 };

/// How long one file's diff may take (then it is coarser).
const DIFF_TIME: std::time::Duration = std::time::Duration::from_secs(2);

/// One path the layer changes, relative to the home.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Change {
    pub path: String,
    /// `added`, `modified`, `deleted`, or `left out` (shown, never applied).
    pub kind: &'static str,
    /// A file's unified diff (bytes that are not text shown as `\xNN`), or why it is left out.
    pub diff: String,
    /// What `apply` writes: the content and mode read from the layer.
    #[serde(skip)]
    install: Option<(Vec<u8>, u32)>,
}

/// What a layer changes, as `diff` shows it and `apply` applies it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Shown {
    pub changes: Vec<Change>,
    /// A digest of all of it: `apply --expect` applies only a layer that shows this.
    pub fingerprint: String,
}

/// What `apply` did.
#[derive(Debug, Clone)]
pub struct Applied {
    pub shown: Shown,
    /// The layer was kept: a wrap session of that CLI runs on it.
    pub kept: bool,
}

/// The layers there are (one per CLI name).
pub fn list(project: &Project) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(project.home.dir.join("wrap-state")).into_iter().flatten().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).filter(|n| !n.starts_with('.')).collect();
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

/// What layer `name` changes against the real `home`.
pub fn diff(project: &Project, name: &str, home: &Path) -> Result<Shown> {
    shown(&layer(project, name)?, home)
}

/// Copies layer `name` into the real `home` (deletions too), then drops the layer, unless a
/// session of that CLI runs on it. `expect`: the fingerprint `diff` showed; a layer that shows
/// anything else is refused whole.
pub fn apply(project: &Project, name: &str, home: &Path, expect: Option<&str>) -> Result<Applied> {
    let dir = layer(project, name)?;
    let alone = exclusive(&dir)?;
    let shown = shown(&dir, home)?;
    if let Some(want) = expect.filter(|w| *w != shown.fingerprint) {
        return Err(Error::StateChanged { name: name.to_string(), shown: want.to_string(), now: shown.fingerprint });
    }
    // Every file beside its target first: an error here leaves the home as it was.
    let mut ready = Vec::new();
    for c in &shown.changes {
        if let Some((content, mode)) = &c.install {
            ready.push(crate::store::atomic::prepare(home, &c.path, content, *mode)?);
        }
    }
    for p in ready {
        p.commit()?;
    }
    for c in shown.changes.iter().filter(|c| c.kind == "deleted") {
        let (parent, file) = c.path.rsplit_once('/').unwrap_or(("", &c.path));
        let at = match fsx::open_dir(home, parent, false) {
            Ok(at) => at,
            // Gone meanwhile: nothing left to delete.
            Err(Error::Io { source, .. }) if source.raw_os_error() == Some(libc::ENOENT) => continue,
            Err(e) => return Err(e),
        };
        fsx::remove_tree_at(std::os::fd::AsFd::as_fd(&at), file.as_ref()).map_err(|e| Error::io(home.join(&c.path), e))?;
    }
    let kept = alone.is_none();
    if alone.is_some() {
        drop_layer(&dir)?;
    }
    Ok(Applied { shown, kept })
}

/// Drops layer `name`: the CLI starts from the real home again. Refused while a wrap session
/// of that CLI runs on it.
pub fn reset(project: &Project, name: &str) -> Result<()> {
    let dir = layer(project, name)?;
    let Some(_lock) = exclusive(&dir)? else {
        return Err(Error::Busy(format!("a wrap session of {name} runs on its state; reset it once that session has ended")));
    };
    drop_layer(&dir)
}

/// The layer's lock, held shared by a wrap session of its CLI while it runs (`layer` is
/// created if missing).
pub(super) fn hold(layer: &Path) -> Result<std::fs::File> {
    loop {
        let lock = open_lock(layer)?;
        rustix::fs::flock(&lock, rustix::fs::FlockOperation::LockShared).map_err(|e| Error::io(layer.join("lock"), e.into()))?;
        // Still this layer's (a drop moves a layer away whole, its lock with it)?
        let held = rustix::fs::fstat(&lock).map(|s| (s.st_dev, s.st_ino)).map_err(|e| Error::io(layer.join("lock"), e.into()))?;
        if rustix::fs::stat(layer.join("lock")).is_ok_and(|s| (s.st_dev, s.st_ino) == held) {
            return Ok(lock);
        }
    }
}

/// The layer's lock held exclusively, `None` while a session holds it.
fn exclusive(layer: &Path) -> Result<Option<std::fs::File>> {
    let lock = open_lock(layer)?;
    match rustix::fs::flock(&lock, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(Some(lock)),
        Err(rustix::io::Errno::WOULDBLOCK) => Ok(None),
        Err(e) => Err(Error::io(layer.join("lock"), e.into())),
    }
}

fn open_lock(layer: &Path) -> Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::create_dir_all(layer).map_err(|e| Error::io(layer, e))?;
    let path = layer.join("lock");
    std::fs::OpenOptions::new().create(true).truncate(false).write(true).mode(0o600).custom_flags(libc::O_NOFOLLOW).open(&path).map_err(|e| Error::io(&path, e))
}

/// Moves the layer away in one step (the CLI starts from the real home from then on), then
/// removes what earlier drops left and it.
fn drop_layer(dir: &Path) -> Result<()> {
    let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let trash = dir.with_file_name(format!(".dropped-{name}-{}-{}", std::process::id(), crate::time::now_ms()));
    std::fs::rename(dir, &trash).map_err(|e| Error::io(dir, e))?;
    for e in std::fs::read_dir(dir.parent().unwrap_or(dir)).into_iter().flatten().flatten() {
        if e.file_name().to_string_lossy().starts_with(".dropped-") {
            // What cannot go now (a file held busy) goes at the next drop.
            let _ = runbox::remove_tree(&e.path());
        }
    }
    Ok(())
}

/// Every entry of the layer in `dir`, by its path relative to the home.
fn entries(dir: &Path) -> Result<Vec<(String, Written)>> {
    let mut budget = LIMITS;
    let mut out = Vec::new();
    // The state files: one entry each, named with `/` escaped (not pid 1's temporaries).
    for w in scan(&dir.join("files"), &mut budget)? {
        let name = w.path().to_string();
        if !name.contains('/') && !name.ends_with(".cairn-tmp") {
            out.push((runbox::entry_path(&name), w));
        }
    }
    // The state directories: each one's upper layer.
    let mut dirs: Vec<_> = std::fs::read_dir(dir.join("dirs")).into_iter().flatten().flatten().filter_map(|e| e.file_name().into_string().ok()).collect();
    dirs.sort();
    for d in dirs {
        let base = runbox::entry_path(&d);
        for w in scan(&dir.join("dirs").join(&d).join("upper"), &mut budget)? {
            out.push((format!("{base}/{}", w.path()), w));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

fn scan(upper: &Path, budget: &mut Limits) -> Result<Vec<Written>> {
    match runbox::scan_home(upper, budget) {
        Ok(w) => Ok(w),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(Error::io(upper, e)),
    }
}

/// What the layer in `dir` changes against `home`.
fn shown(dir: &Path, home: &Path) -> Result<Shown> {
    let mut changes = Vec::new();
    for (path, w) in entries(dir)? {
        changes.extend(change(home, path, w)?);
    }
    let fingerprint = fingerprint(&changes);
    Ok(Shown { changes, fingerprint })
}

fn left_out(path: String, why: String) -> Option<Change> {
    Some(Change { path, kind: "left out", diff: why, install: None })
}

/// What one entry of the layer changes in `home`.
fn change(home: &Path, path: String, w: Written) -> Result<Option<Change>> {
    Ok(match w {
        Written::File { content, mode, .. } => {
            let umask = crate::store::mode::umask();
            // A new file: the agent's permission bits less the umask (a 0600 credential stays
            // private, a 0666 never lands group- or world-writable); a file there now keeps its
            // own, only the executable bit following the layer's.
            let fresh = mode & 0o777 & !umask;
            let (kind, diff, mode) = match real(home, &path)? {
                Real::File(old, old_mode) => {
                    let mode = crate::store::mode::landing(mode, Some(old_mode), umask);
                    if old == content && old_mode & 0o777 == mode {
                        return Ok(None);
                    }
                    ("modified", text_diff(&path, Some((&old, old_mode & 0o777)), &content, mode), mode)
                }
                Real::TooLarge(size) => ("modified", format!("(your file is {size} bytes, not read; the new one whole:)\n{}", text_diff(&path, None, &content, fresh)), fresh),
                Real::Absent => ("added", text_diff(&path, None, &content, fresh), fresh),
                Real::Other(what) => return Ok(left_out(path, format!("your home has {what} there: never written through or over"))),
            };
            Some(Change { path, kind, diff, install: Some((content, mode)) })
        }
        Written::Deleted { .. } => match real(home, &path)? {
            Real::Absent => None,
            Real::Other(what @ "a symlink or a file on the way") => left_out(path, format!("your home has {what}: never removed through it")),
            Real::Other("a directory") => Some(Change { path, kind: "deleted", diff: "(your directory, and everything in it)\n".into(), install: None }),
            _ => Some(Change { path, kind: "deleted", diff: String::new(), install: None }),
        },
        Written::Replaced { .. } => None,
        Written::Symlink { .. } => left_out(path, "a symlink: never applied".into()),
        Written::TooLarge { size, .. } => left_out(path, format!("{size} bytes: over what is shown and applied ({} MiB a file, {} MiB in all); not read", LIMITS.file >> 20, LIMITS.total >> 20)),
        Written::TooDeep { .. } => left_out(path, format!("a directory nested deeper than {} levels: nothing below it read", runbox::MAX_DEPTH)),
        Written::Undecodable { .. } => left_out(path, "a name that is not UTF-8: never applied".into()),
    })
}

/// What the real home has at a path.
enum Real {
    Absent,
    File(Vec<u8>, u32),
    TooLarge(u64),
    /// Not a regular file (or not reached without following a link): never written over.
    Other(&'static str),
}

/// What is at `rel` in `home`, read without following a symlink anywhere below the home.
fn real(home: &Path, rel: &str) -> Result<Real> {
    use rustix::fs::FileType;
    let parent = rel.rsplit_once('/').map_or("", |(p, _)| p);
    if let Err(e) = fsx::open_dir(home, parent, false) {
        return match &e {
            Error::Io { source, .. } if source.raw_os_error() == Some(libc::ENOENT) => Ok(Real::Absent),
            Error::Io { source, .. } if matches!(source.raw_os_error(), Some(libc::ELOOP | libc::ENOTDIR)) => Ok(Real::Other("a symlink or a file on the way")),
            _ => Err(e),
        };
    }
    let Some(st) = fsx::stat_nofollow(home, rel)? else { return Ok(Real::Absent) };
    Ok(match FileType::from_raw_mode(st.st_mode) {
        FileType::RegularFile => match fsx::read_at_most(home, rel, LIMITS.file)? {
            Some(fsx::Capped::Content(bytes, mode)) => Real::File(bytes, mode),
            Some(fsx::Capped::TooLarge(size)) => Real::TooLarge(size),
            None => Real::Absent,
        },
        FileType::Directory => Real::Other("a directory"),
        FileType::Symlink => Real::Other("a symlink"),
        _ => Real::Other("a special file"),
    })
}

/// A file's change as a unified diff; when either version is not UTF-8, both are shown with
/// their bytes escaped (said first), so nothing in them is hidden.
fn text_diff(rel: &str, old: Option<(&[u8], u32)>, new: &[u8], mode: u32) -> String {
    let before = old.map_or(&[][..], |(b, _)| b);
    let mut out = String::new();
    let text = std::str::from_utf8(before).is_ok() && std::str::from_utf8(new).is_ok();
    if !text {
        out.push_str("(not UTF-8: each byte that is not text is shown as \\xNN, a backslash as \\\\)\n");
    }
    match old {
        Some((_, was)) if was != mode => out.push_str(&format!("(mode {was:o} -> {mode:o})\n")),
        None if mode & 0o111 != 0 => out.push_str(&format!("(mode {mode:o})\n")),
        _ => {}
    }
    let shown = |b: &[u8]| if text { String::from_utf8_lossy(b).into_owned() } else { crate::display::bytes_escaped(b) };
    let (a, b) = (shown(before), shown(new));
    let diff = similar::TextDiff::configure().timeout(DIFF_TIME).diff_lines(&a, &b);
    out.push_str(&diff.unified_diff().header(&format!("a/{rel}"), &format!("b/{rel}")).to_string());
    out
}

/// A digest of what is shown, and of the bytes applied.
fn fingerprint(changes: &[Change]) -> String {
    let mut h = blake3::Hasher::new();
    for c in changes {
        for part in [c.path.as_bytes(), c.kind.as_bytes(), c.diff.as_bytes()] {
            h.update(&(part.len() as u64).to_le_bytes());
            h.update(part);
        }
        if let Some((content, mode)) = &c.install {
            h.update(&mode.to_le_bytes());
            h.update(&(content.len() as u64).to_le_bytes());
            h.update(content);
        }
    }
    h.finalize().to_hex()[..16].to_string()
}
