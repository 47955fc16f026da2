//! Resolving a conflicted file of a proposal by hand: the three versions a three-way view
//! shows (the file as the agent read it, as it is now with what landed since, as the agent
//! proposes it), and the user's resolution, which becomes the agent's change of that file on
//! top of the project as it is now: no conflict is left, and an accept lands it.

use super::diff::changes;
use crate::error::{Error, Result};
use crate::project::Project;
use crate::store::hash_bytes;
use serde::Serialize;

/// The three versions of one file of a proposal (text; `None` = the file is absent there).
#[derive(Debug, Clone, Serialize)]
pub struct ThreeWay {
    pub id: String,
    pub path: String,
    /// As the agent read it.
    pub base: Option<String>,
    /// In the project now (what landed since, the user's edits).
    pub landed: Option<String>,
    /// The agent's change rebased onto `landed`, its own side where the two conflict.
    pub proposed: Option<String>,
    /// Whose changes it conflicts with (agent ids, "your edit").
    pub conflict_with: Vec<String>,
    /// Conflicting line ranges of `landed` (1-based, inclusive).
    pub conflicts: Vec<(usize, usize)>,
}

fn text(b: Option<Vec<u8>>) -> Option<String> {
    b.map(|b| String::from_utf8_lossy(&b).into_owned())
}

/// The three versions of `path` in agent `id`'s proposal.
pub fn three_way(project: &Project, id: &str, path: &str) -> Result<ThreeWay> {
    let change = changes(project, id)?.into_iter().find(|c| c.path == path).ok_or_else(|| Error::Hunk(format!("agent {id} proposes no change to {path}")))?;
    if change.binary {
        return Err(Error::Hunk(format!("{path} is binary: accept or reject the whole agent")));
    }
    let overlay = project.existing_overlay(id)?.ok_or_else(|| Error::NoProposal(id.to_string()))?;
    let base = if change.base.is_some() { overlay.base_content(path)? } else { None };
    let conflict_with = change.conflict_with.clone();
    let conflicts = change.conflicts.iter().map(|&(s, e)| (s + 1, e.max(s + 1))).collect();
    Ok(ThreeWay { id: id.to_string(), path: path.to_string(), base: text(base), landed: text(change.old), proposed: text(change.new), conflict_with, conflicts })
}

/// Records `content` as agent `id`'s version of `path`, resolved against the project as it is
/// now (which becomes its base: the change no longer conflicts). Only for a proposal under
/// review: a running agent still writes its files.
pub fn resolve(project: &Project, id: &str, path: &str, content: &[u8]) -> Result<()> {
    let _lock = super::lock::acquire(project)?;
    let rec = project.bin()?.get(id)?;
    if !rec.state.is_reviewable() || rec.accept_pending {
        return Err(Error::IllegalTransition { id: id.to_string(), from: rec.state.to_string(), action: "resolve a conflict (wait until it is reviewing)".into() });
    }
    let overlay = project.existing_overlay(id)?.ok_or_else(|| Error::NoProposal(id.to_string()))?;
    let mode = match overlay.get(path)? {
        Some(Some((_, mode))) => mode,
        _ => return Err(Error::Hunk(format!("agent {id} proposes no text for {path}: nothing to resolve"))),
    };
    let now = crate::store::fsx::read(&project.root, path)?;
    let mut overlay = overlay;
    overlay.transaction(|o| {
        o.rebase_base(path, now.as_ref().map(|(b, m)| (hash_bytes(b), *m)), now.as_ref().map(|(b, _)| b.as_slice()))?;
        o.write(path, content, mode)
    })
}
