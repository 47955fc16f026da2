//! Writing a proposal's tree into a jj change, with the CLI only.
//!
//! jj's CLI builds a tree from files in a working copy, so each write goes through a scratch
//! workspace of Cairn's own (`cairn-<agent>` under `.agentfs/jj/`) with *empty* sparse
//! patterns: nothing is checked out but the paths the proposal touches, so the cost follows the
//! size of the proposal, never the size of the project. The scratch workspace is forgotten and
//! removed at once; only the change stays. The user's workspace is never checked out, edited
//! or moved (`jj workspace add` only snapshots it, as any jj command does).

use super::cli::{Cli, SCRATCH};
use crate::error::{Error, Result};
use crate::project::Project;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// What one path of the change should hold: the old content (the project's file now, which
/// the proposal was reviewed against) and the proposal's.
pub struct Want {
    pub path: String,
    pub old: Option<Vec<u8>>,
    pub new: Option<(Vec<u8>, u32)>,
}

/// Where a change goes.
pub enum Target<'a> {
    /// A new change on these parents (commit ids), described by `message`.
    New { parents: &'a [String], message: &'a str },
    /// The change with this commit id, rewritten in place (it keeps its change id).
    Existing { commit: &'a str },
}

/// A change as written: its change id and commit id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    pub change: String,
    pub commit: String,
}

fn scratch_name(agent: &str) -> String {
    format!("cairn-{agent}")
}

fn scratch_dir(project: &Project, agent: &str) -> PathBuf {
    project.agentfs().join("jj").join(agent)
}

/// Forgets and removes a scratch workspace a killed run may have left.
pub fn clear_scratch(cli: &Cli, project: &Project, agent: &str) {
    let dir = scratch_dir(project, agent);
    if dir.exists() {
        let _ = cli.run_quiet(&project.root, &["workspace", "forget", &scratch_name(agent)]);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// Writes `wants` into the change `target` (on top of its parents' tree: a path the wants do
/// not name is as in the parents). Where a parent's version of a file is not the old content,
/// the proposal's edit is merged onto the parent's version (three-way; the proposal's side
/// where they overlap), so the change holds the proposal's edit and nothing else.
pub fn write(cli: &Cli, project: &Project, agent: &str, target: Target<'_>, wants: &[Want]) -> Result<Written> {
    clear_scratch(cli, project, agent);
    let dir = scratch_dir(project, agent);
    if let Some(parent) = dir.parent() {
        std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
    }
    let name = scratch_name(agent);
    let d = dir.to_string_lossy().into_owned();
    let result = (|| {
        match target {
            Target::New { parents, message } => {
                let mut args = vec!["workspace", "add", "--name", &name, "--sparse-patterns", "empty", "-m", message];
                for p in parents {
                    args.extend(["-r", p.as_str()]);
                }
                args.push(&d);
                cli.run(&project.root, &args, &[])?;
            }
            Target::Existing { commit } => {
                cli.run(&project.root, &["workspace", "add", "--name", &name, "--sparse-patterns", "empty", "-r", commit, &d], &[])?;
                cli.run(&dir, &["edit", commit], SCRATCH)?;
                // Back to the parents' tree: the wants say all the change holds.
                cli.run(&dir, &["restore"], SCRATCH)?;
            }
        }
        fill(cli, &dir, wants)?;
        cli.run(&dir, &["util", "snapshot"], SCRATCH)?;
        let ids = cli.run_quiet(&dir, &["log", "--no-graph", "-r", "@", "-T", "change_id ++ \" \" ++ commit_id"])?;
        let mut it = ids.split_whitespace();
        match (it.next(), it.next()) {
            (Some(change), Some(commit)) => Ok(Written { change: change.to_string(), commit: commit.to_string() }),
            _ => Err(Error::Jj(format!("could not read the new change's ids from {ids:?}"))),
        }
    })();
    clear_scratch(cli, project, agent);
    result
}

/// Checks out the wanted paths (the parents' versions) and writes what each should hold.
fn fill(cli: &Cli, dir: &Path, wants: &[Want]) -> Result<()> {
    for chunk in wants.chunks(500) {
        let adds: Vec<String> = chunk.iter().map(|w| format!("--add={}", w.path)).collect();
        let mut args = vec!["sparse", "set"];
        args.extend(adds.iter().map(String::as_str));
        cli.run(dir, &args, SCRATCH)?;
    }
    for w in wants {
        if crate::paths::protected(&w.path).is_some() || crate::paths::has_skipped_component(&w.path) || w.path.starts_with('/') || w.path.split('/').any(|c| c == ".." || c.is_empty()) {
            return Err(Error::ProtectedPath { path: w.path.clone(), rule: "a jj change holds project files only" });
        }
        let target = dir.join(&w.path);
        let parent_version = std::fs::read(&target).ok();
        match &w.new {
            None => match std::fs::remove_file(&target) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::io(&target, e)),
            },
            Some((new, mode)) => {
                let bytes = match (&parent_version, &w.old) {
                    (Some(p), Some(old)) if p != old => {
                        crate::review::merge::agent_side(&crate::review::merge::merge(old, p, new))
                    }
                    _ => new.clone(),
                };
                if let Some(parent) = target.parent() {
                    std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
                }
                let _ = std::fs::remove_file(&target);
                std::fs::write(&target, &bytes).map_err(|e| Error::io(&target, e))?;
                std::fs::set_permissions(&target, std::fs::Permissions::from_mode(mode & 0o777)).map_err(|e| Error::io(&target, e))?;
            }
        }
    }
    Ok(())
}
