//! The merged view an agent sees: its overlay over the project (SPEC §1.2). Reads fall through
//! overlay -> stable; whiteouts hide; directories are implied by the files below them.
//! The externals, diff and workspace materialization all read through this one type.

use crate::error::Result;
use crate::project::Project;
use crate::store::fsx::{self, Capped};
use crate::store::{overlay::Overlay, stable::Stable, Kind};
use std::collections::{BTreeMap, BTreeSet};

/// The merged view of one agent.
pub struct View<'a> {
    pub project: &'a Project,
    pub stable: Stable,
    pub overlay: &'a Overlay,
}

/// What is at a path in the merged view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Node {
    File,
    Dir,
    Absent,
}

impl<'a> View<'a> {
    /// The view of `overlay` over `project`.
    pub fn new(project: &'a Project, overlay: &'a Overlay) -> Result<View<'a>> {
        Ok(View { project, stable: project.stable()?, overlay })
    }

    /// The project's own version of `rel` (ignoring the overlay): content and mode.
    pub fn base(&self, rel: &str) -> Result<Option<(Vec<u8>, u32)>> {
        match self.stable.get(rel)? {
            Some(e) if e.kind == Kind::File => fsx::read(&self.project.root, rel),
            _ => Ok(None),
        }
    }

    /// Hash and mode of the project's own version of `rel`, streamed (never held whole).
    pub fn base_hash(&self, rel: &str) -> Result<Option<(crate::store::Hash, u32)>> {
        match self.stable.get(rel)? {
            Some(e) if e.kind == Kind::File => match (fsx::hash(&self.project.root, rel)?, fsx::stat_mode(&self.project.root, rel)?) {
                (Some((hash, _)), Some(mode)) => Ok(Some((hash, mode))),
                _ => Ok(None),
            },
            _ => Ok(None),
        }
    }

    /// Like [`View::base`], never holding more than `max` bytes.
    pub fn base_capped(&self, rel: &str, max: u64) -> Result<Option<Capped>> {
        match self.stable.get(rel)? {
            Some(e) if e.kind == Kind::File => fsx::read_at_most(&self.project.root, rel, max),
            _ => Ok(None),
        }
    }

    /// Like [`View::read`], never holding more than `max` bytes of a file (agents' reads).
    pub fn read_capped(&self, rel: &str, max: u64) -> Result<Option<Capped>> {
        match self.overlay.get(rel)? {
            Some(Some((bytes, _))) if bytes.len() as u64 > max => Ok(Some(Capped::TooLarge(bytes.len() as u64))),
            Some(Some((bytes, mode))) => Ok(Some(Capped::Content(bytes, mode))),
            Some(None) => Ok(None),
            None => self.base_capped(rel, max),
        }
    }

    /// Content and mode of the file `rel` in the merged view.
    pub fn read(&self, rel: &str) -> Result<Option<(Vec<u8>, u32)>> {
        match self.overlay.get(rel)? {
            Some(Some(found)) => Ok(Some(found)),
            Some(None) => Ok(None),
            None => self.base(rel),
        }
    }

    /// What is at `rel`.
    pub fn node(&self, rel: &str) -> Result<Node> {
        if rel.is_empty() {
            return Ok(Node::Dir);
        }
        match self.overlay.get(rel)? {
            Some(Some(_)) => return Ok(Node::File),
            Some(None) => return Ok(Node::Absent),
            None => {}
        }
        if self.overlay.has_file_under(rel)? {
            return Ok(Node::Dir);
        }
        Ok(match self.stable.get(rel)?.map(|e| e.kind) {
            Some(Kind::Dir) => Node::Dir,
            Some(Kind::File) => Node::File,
            _ => Node::Absent,
        })
    }

    /// Sorted names in directory `dir`; directories end with `/`.
    pub fn list_dir(&self, dir: &str) -> Result<Vec<String>> {
        let mut names: BTreeMap<String, bool> = BTreeMap::new();
        for e in self.stable.children(dir)? {
            let name = e.path.rsplit('/').next().unwrap_or(&e.path).to_string();
            names.insert(name, e.kind == Kind::Dir);
        }
        let prefix = if dir.is_empty() { String::new() } else { format!("{dir}/") };
        for (path, whiteout) in self.overlay.paths()? {
            let Some(rest) = path.strip_prefix(&prefix) else { continue };
            match rest.split_once('/') {
                None if whiteout => {
                    names.remove(rest);
                }
                None => {
                    names.insert(rest.to_string(), false);
                }
                Some((first, _)) if !whiteout => {
                    names.insert(first.to_string(), true);
                }
                Some(_) => {}
            }
        }
        Ok(names.into_iter().map(|(n, is_dir)| if is_dir { format!("{n}/") } else { n }).collect())
    }

    /// Every file path in the merged view, sorted.
    pub fn files(&self) -> Result<Vec<String>> {
        let mut set: BTreeSet<String> =
            self.stable.all()?.into_iter().filter(|e| e.kind == Kind::File).map(|e| e.path).collect();
        for (path, whiteout) in self.overlay.paths()? {
            if whiteout {
                set.remove(&path);
            } else {
                set.insert(path);
            }
        }
        Ok(set.into_iter().collect())
    }
}
