//! What a confined command wrote (`run_command`, `cairn session exec`, a `cairn wrap`
//! session), put into the agent's overlay through the same checks and limits as the file
//! externals. Content equal to what the command started from is no change; ignored paths
//! (`.gitignore`, caches, build output) never join a proposal; protected paths and symlinks
//! are reported, not applied.

use super::{CallError, Host};
use crate::error::Result;
use crate::paths::IgnoreRules;
use crate::runbox::Written;
use serde::Serialize;
use std::collections::{BTreeSet, HashMap};

/// The proposal a command started from: path → its content and mode there (`None`:
/// deleted). Paths not in it are as in the project.
pub type Staged<'a> = HashMap<&'a str, Option<(&'a [u8], u32)>>;

/// A path the command wrote that did not become part of the proposal, and why.
#[derive(Debug, Clone, Serialize)]
pub struct Skipped {
    pub path: String,
    pub why: String,
}

/// What applying did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Applied {
    /// Paths created or changed in the proposal.
    pub changed: Vec<String>,
    /// Paths deleted in the proposal.
    pub deleted: Vec<String>,
    pub skipped: Vec<Skipped>,
}

impl Host<'_> {
    /// Applies `written` (one command's layer) on top of the proposal.
    pub(crate) fn apply_written(&mut self, written: &[Written], staged: &Staged, ignore: &mut IgnoreRules, out: &mut Applied) -> Result<()> {
        let files: BTreeSet<&str> = written.iter().filter_map(|w| if let Written::File { path, .. } = w { Some(path.as_str()) } else { None }).collect();
        for w in written {
            match w {
                Written::File { path, mode, content } => {
                    if keep_out(ignore, path, out) || before(self, staged, path)?.is_some_and(|(b, m)| b == *content && m == mode & 0o777) {
                        continue;
                    }
                    let done = self.write_bytes(path, content, Some(*mode));
                    record(out, path, done, true);
                }
                Written::Deleted { path } => self.delete_under(path, &BTreeSet::new(), ignore, out)?,
                Written::Replaced { path } => self.delete_under(path, &files, ignore, out)?,
                Written::Symlink { path } => out.skipped.push(Skipped { path: path.clone(), why: "a symlink (proposals hold regular files)".into() }),
                Written::TooLarge { path, size } => out.skipped.push(Skipped { path: path.clone(), why: format!("{size} bytes: over the bound of what a command's writes may hold (not read)") }),
                Written::TooDeep { path } => out.skipped.push(Skipped { path: path.clone(), why: format!("a directory nested deeper than {} levels (nothing below it read)", crate::runbox::MAX_DEPTH) }),
                Written::Undecodable { path } => out.skipped.push(Skipped { path: path.clone(), why: "a name that is not UTF-8 (proposals hold text paths; nothing below it read)".into() }),
            }
        }
        Ok(())
    }

    /// Puts `path` back to what the command started from (a wrap session's layer no longer
    /// holds it: the agent made it and removed it again, or undid its change).
    pub(crate) fn revert_written(&mut self, path: &str, staged: &Staged) -> Result<()> {
        match staged.get(path) {
            Some(Some((bytes, mode))) => drop(self.write_bytes(path, bytes, Some(*mode))),
            Some(None) => drop(self.delete_file(path)),
            None => self.overlay().forget(path)?,
        }
        Ok(())
    }

    /// Deletes `path` (a file) or every file below it (a directory), except `keep`.
    fn delete_under(&mut self, path: &str, keep: &BTreeSet<&str>, ignore: &mut IgnoreRules, out: &mut Applied) -> Result<()> {
        let prefix = format!("{path}/");
        let targets: Vec<String> = self.view.files()?.into_iter().filter(|f| (f == path || f.starts_with(&prefix)) && !keep.contains(f.as_str())).collect();
        for t in targets {
            if keep_out(ignore, &t, out) {
                continue;
            }
            let done = self.delete_file(&t);
            record(out, &t, done, false);
        }
        Ok(())
    }
}

/// Ignored or protected: never part of a proposal (ignored paths are not reported: a test run
/// writes many caches).
fn keep_out(ignore: &mut IgnoreRules, path: &str, out: &mut Applied) -> bool {
    if ignore.is_ignored(path, false) {
        return true;
    }
    if let Some(rule) = crate::paths::protected(path) {
        out.skipped.push(Skipped { path: path.to_string(), why: rule.to_string() });
        return true;
    }
    false
}

/// What the command started with at `path`: the proposal's version, else the project's.
fn before(host: &Host, staged: &Staged, path: &str) -> Result<Option<(Vec<u8>, u32)>> {
    match staged.get(path) {
        Some(Some((b, m))) => Ok(Some((b.to_vec(), *m))),
        Some(None) => Ok(None),
        None => Ok(crate::store::fsx::read(&host.view.project.root, path)?.map(|(b, m)| (b, m & 0o777))),
    }
}

fn record(out: &mut Applied, path: &str, done: std::result::Result<serde_json::Value, CallError>, write: bool) {
    match done {
        Ok(_) if write => out.changed.push(path.to_string()),
        Ok(_) => out.deleted.push(path.to_string()),
        Err(CallError::Raise { message, .. } | CallError::Fatal { message, .. }) => out.skipped.push(Skipped { path: path.to_string(), why: message }),
    }
}
