//! Preview workspaces: the merged view of an agent materialized as a real directory under
//! `$CAIRN_HOME/workspaces/<id>/`, so that tools (a second Neovim, a test runner) can use it.
//!
//! Materialization is incremental: a manifest (path -> hash, mode) in `$CAIRN_HOME/state/`
//! records what the directory holds, and a repeat writes only what changed and removes what
//! went away. Files are copied, never hard-linked: an edit in the preview never reaches the
//! project.

use crate::error::{Error, Result};
use crate::project::Project;
use crate::store::{hash_bytes, Hash, Kind};
use crate::view::View;
use serde::Serialize;
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// What a materialization did.
#[derive(Debug, Clone, Serialize)]
pub struct Materialized {
    pub path: PathBuf,
    pub written: usize,
    pub removed: usize,
    pub unchanged: usize,
}

/// What a workspace directory holds: path → (content hash, mode). Stored compactly
/// (`len path hash mode` records), since it is read and written whole on every preview.
#[derive(Default)]
struct Manifest {
    files: BTreeMap<String, (Hash, u32)>,
}

impl Manifest {
    fn read(path: &Path) -> Manifest {
        let Ok(bytes) = std::fs::read(path) else { return Manifest::default() };
        let mut files = BTreeMap::new();
        let mut rest = bytes.as_slice();
        while rest.len() >= 4 {
            let n = u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
            let Some(record) = rest.get(4..4 + n + 36) else { return Manifest::default() };
            let (name, tail) = record.split_at(n);
            let (Ok(name), Ok(hash), Ok(mode)) = (std::str::from_utf8(name), Hash::try_from(&tail[..32]), <[u8; 4]>::try_from(&tail[32..])) else { return Manifest::default() };
            files.insert(name.to_string(), (hash, u32::from_le_bytes(mode)));
            rest = &rest[4 + n + 36..];
        }
        Manifest { files }
    }

    fn write(&self, path: &Path) -> Result<()> {
        let mut out = Vec::with_capacity(self.files.len() * 96);
        for (name, (hash, mode)) in &self.files {
            out.extend_from_slice(&(name.len() as u32).to_le_bytes());
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(hash);
            out.extend_from_slice(&mode.to_le_bytes());
        }
        std::fs::write(path, out).map_err(|e| Error::io(path, e))
    }
}

fn manifest_path(project: &Project, id: &str) -> PathBuf {
    project.home.state().join(format!("workspace-{id}.manifest"))
}

enum Source {
    Project,
    Bytes(Vec<u8>),
}

/// Materializes agent `id`'s merged view into its workspace directory and writes the
/// proposal's diff to `$CAIRN_HOME/previews/<id>.diff`.
/// In a jj project whose agent has a live change, the workspace is a jj workspace on that
/// change instead (`crate::jj::preview`).
pub fn materialize(project: &Project, id: &str) -> Result<Materialized> {
    if let Some(path) = crate::jj::preview(project, id)? {
        write_preview_diff(project, id)?;
        return Ok(Materialized { path, written: 0, removed: 0, unchanged: 0 });
    }
    let dir = project.home.workspace(id);
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    let state = project.home.state();
    std::fs::create_dir_all(&state).map_err(|e| Error::io(&state, e))?;
    let mpath = manifest_path(project, id);
    // The manifest says what the directory holds; without one (first run, or lost), every
    // file is written.
    let old = Manifest::read(&mpath);

    let overlay = project
        .existing_overlay(id)?
        .ok_or_else(|| Error::NoProposal(id.to_string()))?;
    let view = View::new(project, &overlay)?;
    let mut desired: BTreeMap<String, (Hash, u32, Source)> = BTreeMap::new();
    for e in view.stable.all()? {
        if e.kind == Kind::File {
            if let Some(h) = e.hash {
                desired.insert(e.path, (h, e.mode, Source::Project));
            }
        }
    }
    for (path, whiteout) in overlay.paths()? {
        if whiteout {
            desired.remove(&path);
        } else if let Some(Some((content, mode))) = overlay.get(&path)? {
            desired.insert(path, (hash_bytes(&content), mode, Source::Bytes(content)));
        }
    }

    let mut report = Materialized { path: dir.clone(), written: 0, removed: 0, unchanged: 0 };
    let mut todo: Vec<(&String, &(Hash, u32, Source))> = Vec::new();
    for (path, entry) in &desired {
        if old.files.get(path).is_some_and(|(h, m)| *h == entry.0 && *m == entry.1) {
            report.unchanged += 1;
        } else {
            todo.push((path, entry));
        }
    }
    for path in old.files.keys() {
        if !desired.contains_key(path) {
            let _ = std::fs::remove_file(dir.join(path));
            report.removed += 1;
        }
    }
    report.written = todo.len();
    let written = crate::par::map(&todo, 2, "materialize", |(path, (_, mode, source))| write_one(project, &dir, path, *mode, source))?;
    written.into_iter().collect::<Result<()>>()?;

    if report.written > 0 || report.removed > 0 || old.files.is_empty() {
        Manifest { files: desired.into_iter().map(|(p, (h, m, _))| (p, (h, m))).collect() }.write(&mpath)?;
    }
    write_preview_diff(project, id)?;
    Ok(report)
}

/// `$CAIRN_HOME/previews/<id>.diff`: the proposal's diff, for the preview pane.
fn write_preview_diff(project: &Project, id: &str) -> Result<()> {
    let previews = project.home.previews();
    std::fs::create_dir_all(&previews).map_err(|e| Error::io(&previews, e))?;
    let diff = crate::review::unified(&crate::review::changes(project, id)?);
    let dpath = previews.join(format!("{id}.diff"));
    std::fs::write(&dpath, diff).map_err(|e| Error::io(&dpath, e))
}

fn write_one(project: &Project, dir: &Path, rel: &str, mode: u32, source: &Source) -> Result<()> {
    let target = dir.join(rel);
    if let Some(parent) = target.parent() {
        std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
    }
    // Replace rather than write through: the old file may be open in the preview editor.
    let _ = std::fs::remove_file(&target);
    match source {
        Source::Bytes(bytes) => std::fs::write(&target, bytes).map_err(|e| Error::io(&target, e))?,
        Source::Project => {
            let Some((bytes, _)) = crate::store::fsx::read(&project.root, rel)? else { return Ok(()) };
            std::fs::write(&target, bytes).map_err(|e| Error::io(&target, e))?
        }
    }
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(mode)).map_err(|e| Error::io(&target, e))
}

/// Removes agent `id`'s workspace (forgotten in jj first, when it is a jj workspace),
/// manifest and preview diff.
pub fn remove(project: &Project, id: &str) -> Result<()> {
    crate::jj::forget_preview(project, id);
    let dir = project.home.workspace(id);
    if dir.exists() {
        std::fs::remove_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    }
    for p in [manifest_path(project, id), project.home.previews().join(format!("{id}.diff"))] {
        let _ = std::fs::remove_file(p);
    }
    Ok(())
}
