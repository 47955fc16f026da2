//! Whether the integration is on for a project: `[jj] enabled`, a `.jj/` at the root, a usable
//! `jj` (found, probed once per process, not older than [`OLDEST`]); and, for a jj repository,
//! Cairn's temporaries excluded in the git repository behind it.

use super::Cli;
use crate::project::Project;
use serde::Serialize;
use std::path::PathBuf;
use std::sync::Mutex;

/// The oldest jj the integration is tested with; an older one leaves it off.
pub const OLDEST: (u32, u32, u32) = (0, 45, 0);

/// Whether the integration is on for a project, and why not.
#[derive(Debug, Clone, Serialize)]
pub struct Detection {
    pub on: bool,
    /// The jj used (when found) and its version.
    pub program: Option<PathBuf>,
    pub version: Option<String>,
    /// Why it is off (empty when on).
    pub why: String,
    /// Off although `[jj] enabled = true` insists on it: `status`, `doctor` and
    /// `:checkhealth` report it as an error (everything else of Cairn still works).
    pub error: bool,
}

/// Probed programs (path → version or why not), so a process asks each jj once.
static PROBED: Mutex<Vec<(PathBuf, std::result::Result<Cli, String>)>> = Mutex::new(Vec::new());
/// The reasons already logged, so each is said once per process.
static SAID: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn find_program(project: &Project) -> Option<PathBuf> {
    let name = &project.config.jj.program;
    if name.contains('/') {
        let p = PathBuf::from(name);
        return Some(if p.is_absolute() { p } else { project.root.join(p) });
    }
    let path = project.env.get("PATH")?;
    path.split(':').filter(|d| !d.is_empty()).map(|d| PathBuf::from(d).join(name)).find(|p| rustix::fs::access(p, rustix::fs::Access::EXEC_OK).is_ok() && p.is_file())
}

fn probe(project: &Project, program: PathBuf) -> std::result::Result<Cli, String> {
    let mut probed = PROBED.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, r)) = probed.iter().find(|(p, _)| *p == program) {
        return r.clone();
    }
    let r = Cli::probe(program.clone(), project.env.0.clone()).map_err(|e| e.to_string());
    probed.push((program, r.clone()));
    r
}

/// The integration's state for `project`, and its jj when on.
pub fn detect(project: &Project) -> (Detection, Option<Cli>) {
    let setting = project.config.jj.enabled.as_str();
    let off = |why: String, program: Option<PathBuf>, version: Option<String>| (Detection { on: false, program, version, why, error: setting == "true" }, None);
    if setting == "false" {
        return off("[jj] enabled = false".into(), None, None);
    }
    if !project.root.join(".jj").is_dir() {
        return off(format!("no .jj/ in the project root{}", if setting == "true" { " ([jj] enabled = true needs a jj repository)" } else { "" }), None, None);
    }
    exclude_temporaries(project);
    let then = if setting == "true" { "proposals cannot be jj changes, which [jj] enabled = true insists on" } else { "proposals are not recorded as jj changes" };
    let Some(program) = find_program(project) else {
        return said_once(off(format!("this is a jj repository, but no `{}` was found on PATH: {then}", project.config.jj.program), None, None));
    };
    match probe(project, program.clone()) {
        Err(e) => said_once(off(format!("{e}: {then}"), Some(program), None)),
        Ok(cli) => {
            let (a, b, c) = cli.version;
            let version = Some(format!("{a}.{b}.{c}"));
            if cli.version < OLDEST {
                let (x, y, z) = OLDEST;
                return said_once(off(format!("jj {a}.{b}.{c} is older than {x}.{y}.{z}, the oldest Cairn is tested with: {then}"), Some(program), version));
            }
            (Detection { on: true, program: Some(program), version, why: String::new(), error: false }, Some(cli))
        }
    }
}

/// Roots whose repository already excludes Cairn's temporaries (checked once per process).
static EXCLUDED: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Adds Cairn's temporary files (`.<hex>.cairn-tmp`, renamed over their targets as an accept
/// lands) to the git repository's `info/exclude` behind jj (`.git` when colocated, else the one
/// `.jj/repo/store/git_target` names): a `jj` command snapshotting the working copy while an accept runs
/// saw one listed, then gone, and failed. The exclude file is the repository's own, untracked.
fn exclude_temporaries(project: &Project) {
    let mut done = EXCLUDED.lock().unwrap_or_else(|p| p.into_inner());
    if done.contains(&project.root) {
        return;
    }
    done.push(project.root.clone());
    let rule = format!(".*{}", crate::store::atomic::TEMP_SUFFIX);
    // jj names its git repository in `store/git_target`, relative to the store.
    let store = project.root.join(".jj/repo/store");
    let target = std::fs::read_to_string(store.join("git_target")).ok().map(|t| store.join(t.trim()));
    let mut gits: Vec<PathBuf> = [Some(project.root.join(".git")), target].into_iter().flatten().filter(|g| g.is_dir()).filter_map(|g| g.canonicalize().ok()).collect();
    gits.dedup();
    for git in gits {
        let exclude = git.join("info").join("exclude");
        let current = std::fs::read_to_string(&exclude).unwrap_or_default();
        if current.lines().any(|l| l.trim() == rule) {
            continue;
        }
        let text = format!("{current}{}# Cairn's temporary files (an accept renames them into place)\n{rule}\n", if current.is_empty() || current.ends_with('\n') { "" } else { "\n" });
        let written = std::fs::create_dir_all(git.join("info")).and_then(|_| std::fs::write(&exclude, text));
        if let Err(e) = written {
            tracing::warn!(target: "cairn::jj", "cannot exclude Cairn's temporaries in {}: {e}", exclude.display());
        }
    }
}

fn said_once(d: (Detection, Option<Cli>)) -> (Detection, Option<Cli>) {
    let mut said = SAID.lock().unwrap_or_else(|p| p.into_inner());
    if !said.contains(&d.0.why) {
        tracing::warn!(target: "cairn::jj", "{}", d.0.why);
        said.push(d.0.why.clone());
    }
    d
}
