//! Rewriting a change without a working copy: `jj diffedit` with Cairn as the diff editor.
//!
//! jj checks out the change's parents (left) and the change (right), only the paths the change
//! touches, runs `cairn __jj-edit PLAN LEFT RIGHT`, and records what the right side holds
//! afterwards as the change's tree: one operation, no workspace, no snapshot of anyone's files.
//! The plan (`.agentfs/jj/<agent>.plan/`) says what each path should hold; the editor merges the
//! proposal's edit onto the parents' version (the left side), as a workspace on the parents
//! would. A diff editor cannot add a path jj did not check out (one the change does not touch
//! yet): the editor then gives up, jj records nothing, and the caller writes through the
//! agent's workspace (`change.rs`), with the parents' versions the editor copied out. In read
//! mode it only copies them out: a read of the parents' side in one jj command.

use super::cli::{Cli, SCRATCH};
use crate::error::{Error, Result};
use crate::project::Project;
use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// What one path of the change should hold: the old content (the project's file now, which
/// the proposal was reviewed against) and the proposal's.
pub struct Want {
    pub path: String,
    pub old: Option<Vec<u8>>,
    pub new: Option<(Vec<u8>, u32)>,
}

/// What the change should hold at `w.path`, given its parents' version there: the proposal's
/// edit (old → new) merged onto the parents' version where that is not the old content (the
/// proposal's side where they overlap); `None`: absent.
pub(super) fn desired(w: &Want, base: Option<&[u8]>) -> Option<(Vec<u8>, u32)> {
    let (new, mode) = w.new.as_ref()?;
    let bytes = match (base, &w.old) {
        (Some(b), Some(old)) if b != old.as_slice() => crate::review::merge::agent_side(&crate::review::merge::merge(old, b, new)),
        _ => new.clone(),
    };
    Some((bytes, *mode))
}

/// The parents' versions of the paths a change touches, as the editor copied them out.
#[derive(Debug, Default)]
pub struct Bases {
    /// Every path the change touched (it differs from its parents there).
    pub touched: BTreeSet<String>,
    dir: PathBuf,
}

impl Bases {
    /// The parents' version of `path` (`None`: absent there) and its mode.
    pub fn get(&self, path: &str) -> Option<(Vec<u8>, u32)> {
        let p = self.dir.join(path);
        let meta = std::fs::symlink_metadata(&p).ok().filter(|m| m.is_file())?;
        std::fs::read(&p).ok().map(|b| (b, meta.permissions().mode()))
    }
}

/// How a rewrite through the editor went.
pub enum Rewrite {
    /// The change holds the wants (its new commit id follows from its change id).
    Done,
    /// A want names a path jj did not check out: nothing was recorded; the parents' versions
    /// of what the change touches.
    Missing(Bases),
}

pub(super) fn plan_dir(project: &Project, agent: &str) -> PathBuf {
    project.agentfs().join("jj").join(format!("{}.plan", crate::paths::id_part(agent)))
}

/// Rewrites `commit` (an agent's change) to hold `wants` on its parents, in one operation;
/// with `read_only`, only reads the parents' versions of what it touches (no operation).
pub fn rewrite(cli: &Cli, project: &Project, agent: &str, commit: &str, wants: &[Want], read_only: bool) -> Result<Rewrite> {
    let plan = plan_dir(project, agent);
    let _ = std::fs::remove_dir_all(&plan);
    write_plan(&plan, wants, read_only)?;
    let program = toml::Value::String(project.exe.to_string_lossy().into_owned()).to_string();
    let args = toml::Value::Array(["__jj-edit", &plan.to_string_lossy(), "$left", "$right"].iter().map(|s| toml::Value::String(s.to_string())).collect()).to_string();
    let mut extra = vec![format!("merge-tools.cairn.program={program}"), format!("merge-tools.cairn.edit-args={args}"), "ui.diff-instructions=false".to_string()];
    extra.extend(SCRATCH.iter().map(|s| s.to_string()));
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    let ran = cli.run_quiet_with(&project.root, &["diffedit", "-r", commit, "--tool", "cairn"], &extra);
    let result = match ran {
        Ok(_) if !read_only => Ok(Rewrite::Done),
        _ if plan.join("touched.json").exists() => {
            let touched: BTreeSet<String> = serde_json::from_slice(&std::fs::read(plan.join("touched.json")).map_err(|e| Error::io(&plan, e))?)?;
            return Ok(Rewrite::Missing(Bases { touched, dir: plan.join("left") }));
        }
        Ok(_) => Err(Error::Jj("the diff editor read nothing".into())),
        Err(e) => match std::fs::read_to_string(plan.join("error.txt")) {
            Ok(why) => Err(Error::Jj(format!("Cairn's diff editor failed: {}", crate::display::escape_line(&why)))),
            Err(_) => Err(e),
        },
    };
    let _ = std::fs::remove_dir_all(&plan);
    result
}

/// Removes what a rewrite left for reading (the parents' versions).
pub fn clear(project: &Project, agent: &str) {
    let _ = std::fs::remove_dir_all(plan_dir(project, agent));
}

#[derive(serde::Serialize, serde::Deserialize)]
struct PlanWant {
    path: String,
    old: Option<usize>,
    new: Option<(usize, u32)>,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Plan {
    read_only: bool,
    wants: Vec<PlanWant>,
}

fn write_plan(plan: &Path, wants: &[Want], read_only: bool) -> Result<()> {
    let blobs = plan.join("blob");
    std::fs::create_dir_all(&blobs).map_err(|e| Error::io(&blobs, e))?;
    let mut n = 0;
    let mut blob = |bytes: &[u8]| -> Result<usize> {
        n += 1;
        std::fs::write(blobs.join(n.to_string()), bytes).map_err(|e| Error::io(&blobs, e))?;
        Ok(n)
    };
    let mut out = Vec::new();
    for w in wants {
        let old = w.old.as_deref().map(&mut blob).transpose()?;
        let new = match &w.new {
            Some((b, mode)) => Some((blob(b)?, *mode)),
            None => None,
        };
        out.push(PlanWant { path: w.path.clone(), old, new });
    }
    let text = serde_json::to_vec(&Plan { read_only, wants: out })?;
    std::fs::write(plan.join("plan.json"), text).map_err(|e| Error::io(plan, e))
}

/// The editor itself (`cairn __jj-edit PLAN LEFT RIGHT`, run by jj): 0 when the right side
/// holds the plan, 3 when it gave up (the plan names a path jj did not check out, or only a
/// read was asked; the parents' side copied to `PLAN/left`), 1 on an error.
pub fn tool_main(plan: &Path, left: &Path, right: &Path) -> i32 {
    match tool(plan, left, right) {
        Ok(true) => 0,
        Ok(false) => 3,
        Err(e) => {
            let _ = std::fs::write(plan.join("error.txt"), e.to_string());
            1
        }
    }
}

fn tool(plan: &Path, left: &Path, right: &Path) -> Result<bool> {
    let p: Plan = serde_json::from_slice(&std::fs::read(plan.join("plan.json")).map_err(|e| Error::io(plan, e))?)?;
    let mut touched = BTreeSet::new();
    for side in [left, right] {
        walk(side, "", &mut touched)?;
    }
    let blob = |n: usize| std::fs::read(plan.join("blob").join(n.to_string())).map_err(|e| Error::io(plan, e));
    let mut wants = BTreeMap::new();
    for w in &p.wants {
        let old = w.old.map(blob).transpose()?;
        let new = match w.new {
            Some((n, mode)) => Some((blob(n)?, mode)),
            None => None,
        };
        wants.insert(w.path.clone(), Want { path: w.path.clone(), old, new });
    }
    if p.read_only || wants.keys().any(|w| !touched.contains(w)) {
        give_up(plan, left, &touched)?;
        return Ok(false);
    }
    for path in &touched {
        let (l, r) = (left.join(path), right.join(path));
        let left_meta = std::fs::symlink_metadata(&l).ok();
        let base = left_meta.as_ref().filter(|m| m.is_file()).and_then(|_| std::fs::read(&l).ok());
        let want = match wants.get(path) {
            Some(w) => desired(w, base.as_deref()),
            // No longer proposed: back to the parents' version.
            None => {
                let _ = std::fs::remove_file(&r);
                if let Some(m) = &left_meta {
                    if m.is_symlink() {
                        let target = std::fs::read_link(&l).map_err(|e| Error::io(&l, e))?;
                        std::os::unix::fs::symlink(target, &r).map_err(|e| Error::io(&r, e))?;
                        continue;
                    }
                }
                base.zip(left_meta.map(|m| m.permissions().mode()))
            }
        };
        let _ = std::fs::remove_file(&r);
        if let Some((bytes, mode)) = want {
            if let Some(dir) = r.parent() {
                std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
            }
            std::fs::write(&r, &bytes).map_err(|e| Error::io(&r, e))?;
            std::fs::set_permissions(&r, std::fs::Permissions::from_mode(mode & 0o777)).map_err(|e| Error::io(&r, e))?;
        }
    }
    Ok(true)
}

/// Every file and symlink under `dir`, as paths relative to it.
fn walk(dir: &Path, rel: &str, out: &mut BTreeSet<String>) -> Result<()> {
    let Ok(rd) = std::fs::read_dir(dir.join(rel)) else { return Ok(()) };
    for e in rd {
        let e = e.map_err(|e| Error::io(dir, e))?;
        let Some(name) = e.file_name().to_str().map(str::to_string) else { continue };
        let path = if rel.is_empty() { name } else { format!("{rel}/{name}") };
        match e.file_type() {
            Ok(t) if t.is_dir() => walk(dir, &path, out)?,
            Ok(_) => {
                out.insert(path);
            }
            Err(e) => return Err(Error::io(dir, e)),
        }
    }
    Ok(())
}

/// Copies the left side (the parents' versions) into the plan for the caller, with the list of
/// what the change touches.
fn give_up(plan: &Path, left: &Path, touched: &BTreeSet<String>) -> Result<()> {
    let out = plan.join("left");
    for path in touched {
        let from = left.join(path);
        if !std::fs::symlink_metadata(&from).is_ok_and(|m| m.is_file()) {
            continue;
        }
        let to = out.join(path);
        if let Some(dir) = to.parent() {
            std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        }
        std::fs::copy(&from, &to).map_err(|e| Error::io(&to, e))?;
    }
    std::fs::write(plan.join("touched.json"), serde_json::to_vec(touched)?).map_err(|e| Error::io(plan, e))
}
