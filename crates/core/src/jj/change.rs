//! The agent's workspace: how a change gets the paths jj's diff editor cannot add.
//!
//! jj's CLI adds a file to a commit only by snapshotting a working copy, so an agent's change
//! grows through a workspace of Cairn's own (`cairn-<agent>` under `.agentfs/jj/<agent>`) whose
//! working-copy commit is the change, with sparse patterns naming only the paths the proposal
//! touches: the cost follows the size of the proposal, never the size of the project. While the
//! agent works (`[jj] create_change_on_spawn`) the workspace stays and each sync of its writes
//! is one `jj util snapshot`; it is forgotten when the agent stops working, and at once for a
//! change written at review. The user's workspace is never checked out, edited or moved (`jj
//! workspace add` only snapshots it, as any jj command does).

use super::cli::{Cli, SCRATCH};
use super::editor::{desired, Bases, Want};
use crate::error::{Error, Result};
use crate::project::Project;
use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// A change as written: its change id, commit id and jj's diff of it (`git`, no context).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    pub change: String,
    pub commit: String,
    pub diff: String,
}

fn name(agent: &str) -> String {
    format!("cairn-{agent}")
}

fn dir(project: &Project, agent: &str) -> PathBuf {
    project.agentfs().join("jj").join(&*crate::paths::id_part(agent))
}

/// Forgets and removes the agent's workspace, if there is one (one operation when it was
/// registered).
pub fn detach(cli: &Cli, project: &Project, agent: &str) {
    let dir = dir(project, agent);
    if dir.exists() {
        let _ = cli.run_quiet(&project.root, &["workspace", "forget", &name(agent)]);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// Whether the agent's workspace is there (its working-copy commit is the agent's change: only
/// Cairn works in it, and a change abandoned in jj is noticed before a write; [`write`] checks).
pub fn attached(project: &Project, agent: &str) -> bool {
    dir(project, agent).join(".jj").is_dir()
}

fn prepare(cli: &Cli, project: &Project, agent: &str) -> Result<(PathBuf, String)> {
    detach(cli, project, agent);
    let dir = dir(project, agent);
    if let Some(parent) = dir.parent() {
        std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
    }
    let d = dir.to_string_lossy().into_owned();
    Ok((dir, d))
}

/// Makes the agent's workspace with a new, empty change described by `message`. No parents
/// given: jj puts it on the parents of `@` (after it has snapshotted the working copy, so a git
/// HEAD moved in a colocated repository is seen).
pub fn open_new(cli: &Cli, project: &Project, agent: &str, message: &str) -> Result<Written> {
    let (dir, d) = prepare(cli, project, agent)?;
    let added = cli.run(&project.root, &["workspace", "add", "--name", &name(agent), "--sparse-patterns", "empty", "-m", message, &d], &[]);
    added.and_then(|_| ids(cli, &dir)).inspect_err(|_| detach(cli, project, agent))
}

/// Makes the agent's workspace on the existing change at `commit` (jj abandons the empty change
/// `workspace add` made when the workspace moves to it).
pub fn attach(cli: &Cli, project: &Project, agent: &str, commit: &str) -> Result<()> {
    let (dir, d) = prepare(cli, project, agent)?;
    let added = cli.run(&project.root, &["workspace", "add", "--name", &name(agent), "--sparse-patterns", "empty", "-r", commit, &d], &[]);
    added.and_then(|_| cli.run(&dir, &["edit", commit], SCRATCH)).map(|_| ()).inspect_err(|_| detach(cli, project, agent))
}

/// Runs a command in the workspace; a workspace gone stale (its change rewritten elsewhere, e.g.
/// rebased by the user) is brought up to date first.
fn in_workspace(cli: &Cli, dir: &Path, args: &[&str]) -> Result<String> {
    match cli.run(dir, args, SCRATCH) {
        Err(Error::Jj(e)) if e.contains("stale") => {
            cli.run(dir, &["workspace", "update-stale"], SCRATCH)?;
            cli.run(dir, args, SCRATCH)
        }
        other => other,
    }
}

/// Writes `wants` into the workspace's change and snapshots it: one operation when anything
/// changed. `bases`: the parents' versions of what the change touches already (`None`: it
/// touches nothing, so every path checked out is the parents' version). A path the change
/// touches that the wants no longer name goes back to the parents' version.
pub fn write(cli: &Cli, project: &Project, agent: &str, wants: &[Want], bases: Option<&Bases>) -> Result<Written> {
    let dir = dir(project, agent);
    let wants: BTreeMap<&str, &Want> = wants.iter().map(|w| (w.path.as_str(), w)).collect();
    let mut paths: BTreeSet<&str> = wants.keys().copied().collect();
    if let Some(b) = bases {
        paths.extend(b.touched.iter().map(String::as_str));
    }
    for p in &paths {
        if crate::paths::protected(p).is_some() || crate::paths::has_skipped_component(p) || p.starts_with('/') || p.split('/').any(|c| c == ".." || c.is_empty()) {
            return Err(Error::ProtectedPath { path: p.to_string(), rule: "a jj change holds project files only" });
        }
    }
    let all: Vec<&str> = paths.iter().copied().collect();
    // A path on disk in the workspace is in its sparse patterns already.
    let missing: Vec<&str> = all.iter().copied().filter(|p| std::fs::symlink_metadata(dir.join(p)).is_err()).collect();
    for chunk in missing.chunks(500) {
        let adds: Vec<String> = chunk.iter().map(|p| format!("--add={p}")).collect();
        let mut args = vec!["sparse", "set"];
        args.extend(adds.iter().map(String::as_str));
        in_workspace(cli, &dir, &args)?;
    }
    for path in all {
        let target = dir.join(path);
        let touched = bases.is_some_and(|b| b.touched.contains(path));
        let base = match bases {
            Some(b) if touched => b.get(path),
            // Not touched by the change: what jj checked out is the parents' version.
            _ => std::fs::symlink_metadata(&target).ok().filter(|m| m.is_file()).and_then(|_| std::fs::read(&target).ok()).map(|b| (b, 0)),
        };
        let want = match wants.get(path) {
            Some(w) => desired(w, base.as_ref().map(|(b, _)| b.as_slice())),
            None if touched => base,
            None => continue,
        };
        put(&target, want)?;
    }
    in_workspace(cli, &dir, &["util", "snapshot"])?;
    ids(cli, &dir)
}

/// [`write`] into the workspace of an agent whose change is `change`: an error (and the
/// workspace forgotten) when its working-copy commit turns out to be another.
pub fn write_to(cli: &Cli, project: &Project, agent: &str, change: &str, wants: &[Want], bases: Option<&Bases>) -> Result<Written> {
    let w = write(cli, project, agent, wants, bases)?;
    if w.change != change {
        detach(cli, project, agent);
        return Err(Error::Jj(format!("Cairn's workspace of agent {agent} was on change {}, not its change {change}: forgotten", w.change)));
    }
    Ok(w)
}

/// Makes `target` hold `want` (`None`: absent), leaving it alone when it does already.
fn put(target: &Path, want: Option<(Vec<u8>, u32)>) -> Result<()> {
    let now = std::fs::symlink_metadata(target).ok();
    match want {
        None => match std::fs::remove_file(target) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io(target, e)),
            _ => Ok(()),
        },
        Some((bytes, mode)) => {
            let same_mode = now.as_ref().is_some_and(|m| m.is_file() && m.permissions().mode() & 0o111 == mode & 0o111);
            if same_mode && std::fs::read(target).is_ok_and(|b| b == bytes) {
                return Ok(());
            }
            if let Some(parent) = target.parent() {
                std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
            }
            let _ = std::fs::remove_file(target);
            std::fs::write(target, &bytes).map_err(|e| Error::io(target, e))?;
            std::fs::set_permissions(target, std::fs::Permissions::from_mode(mode & 0o777)).map_err(|e| Error::io(target, e))
        }
    }
}

/// The workspace's change as it is now, its diff included (one jj command).
fn ids(cli: &Cli, dir: &Path) -> Result<Written> {
    let out = cli.run_quiet(dir, &["log", "--no-graph", "-r", "@", "-T", "change_id ++ \" \" ++ commit_id ++ \"\\n\" ++ diff.git(0)"])?;
    let (ids, diff) = out.split_once('\n').unwrap_or((out.as_str(), ""));
    match ids.split_once(' ') {
        Some((change, commit)) => Ok(Written { change: change.to_string(), commit: commit.trim().to_string(), diff: diff.to_string() }),
        None => Err(Error::Jj(format!("could not read the change's ids from {ids:?}"))),
    }
}
