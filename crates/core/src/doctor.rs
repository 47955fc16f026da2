//! `cairn doctor`: the integrity of a project's state. SQLite's `quick_check` on every
//! database (the index, the agents, each overlay, live and archived), and the index compared
//! with the tree. Read-only: it reports, it never repairs.

use crate::error::Result;
use crate::project::Project;
use serde::Serialize;
use std::path::PathBuf;

/// One database and what `quick_check` said of it (`ok`, or the problems).
#[derive(Debug, Serialize)]
pub struct DbCheck {
    pub path: PathBuf,
    pub result: String,
}

/// The whole report.
#[derive(Debug, Serialize)]
pub struct Report {
    pub databases: Vec<DbCheck>,
    /// Paths on disk the index lacks, in the index but gone, and with other size or mtime.
    pub unindexed: Vec<String>,
    pub ghosts: Vec<String>,
    pub stale: Vec<String>,
    /// Agents whose overlay exists but whose record `bin.db` no longer has (its commits were
    /// lost, e.g. with a deleted `bin.db-wal`).
    pub orphans: Vec<String>,
    /// FIFOs, sockets and devices in the tree: never indexed or opened (reported, not a
    /// problem).
    pub special: Vec<String>,
    /// Confined runs (checks, `run_command`): `ok`, or the layer this machine lacks (then
    /// runs are refused; see `:help cairn-runs`). Not part of `ok`, which is about state.
    pub confined_runs: String,
    /// Each layer of the run boundary as measured from inside (see `runbox::probe`).
    pub runs_layers: Vec<String>,
    /// The jj integration: on (which jj, which version) or why not. Part of `ok` only when
    /// `[jj] enabled = true` insists on it.
    pub jj: crate::jj::Detection,
    /// Why the state here is not Cairn's own (came with a clone, a pull, a copy: see
    /// `origin`), when it is not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub foreign: Option<String>,
    /// States `init` set aside (`.agentfs/set-aside-*`): kept, never read; the user's to
    /// look at or remove.
    pub set_aside: Vec<PathBuf>,
    pub ok: bool,
}

fn quick_check(path: &std::path::Path) -> String {
    let check = || -> std::result::Result<String, String> {
        if std::fs::metadata(path).map_err(|e| e.to_string())?.len() == 0 {
            return Err("empty (truncated)".into());
        }
        let conn = rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).map_err(|e| e.to_string())?;
        crate::store::harden(&conn).map_err(|e| e.to_string())?;
        let rows: Vec<String> = conn
            .prepare("PRAGMA quick_check")
            .and_then(|mut st| st.query_map([], |r| r.get::<_, String>(0))?.collect())
            .map_err(|e| e.to_string())?;
        Ok(rows.join("; "))
    };
    check().unwrap_or_else(|e| e)
}

/// Ids of the overlays among `databases` that no agent record of `bin.db` knows.
fn orphans(project: &Project, databases: &[DbCheck]) -> Result<Vec<String>> {
    let bin = project.bin()?;
    let mut out = Vec::new();
    for d in databases {
        let name = d.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if let Some(id) = name.strip_prefix("agent-").and_then(|n| n.strip_suffix(".db")) {
            if matches!(bin.get(id), Err(crate::Error::UnknownAgent(_))) {
                out.push(id.to_string());
            }
        }
    }
    Ok(out)
}

/// Checks every database of `project` and compares the index with the tree.
pub fn run(project: &Project) -> Result<Report> {
    let agentfs = project.agentfs();
    let mut dbs = vec![agentfs.join("stable.db"), agentfs.join("bin.db")];
    for dir in [agentfs.clone(), agentfs.join("bin")] {
        let mut found: Vec<PathBuf> = std::fs::read_dir(&dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("agent-") && n.ends_with(".db")))
            .collect();
        found.sort();
        dbs.extend(found);
    }
    let databases: Vec<DbCheck> = dbs.into_iter().map(|path| DbCheck { result: quick_check(&path), path }).collect();
    // One comparison of the tree with the index (when the index opens): its drift, and the
    // special files in the tree.
    // A state Cairn did not make is looked at (read-only, above), never used.
    let foreign = crate::origin::foreign(&project.root);
    let (unindexed, ghosts, stale, special) = if databases[0].result == "ok" && foreign.is_none() {
        let d = crate::sync::compare(project)?;
        (d.missing, d.extra, d.changed, d.specials)
    } else {
        Default::default()
    };
    let ok = databases.iter().all(|d| d.result == "ok") && unindexed.is_empty() && ghosts.is_empty() && stale.is_empty();
    let (confined_runs, runs_layers) = match crate::runbox::probe(project) {
        Ok(layers) => ("ok".to_string(), layers),
        Err(e) => (e, Vec::new()),
    };
    let orphans = if databases[1].result == "ok" && foreign.is_none() { orphans(project, &databases)? } else { Vec::new() };
    let ok = ok && orphans.is_empty();
    let jj = crate::jj::detect(project).0;
    let ok = ok && !jj.error && foreign.is_none();
    let mut set_aside: Vec<PathBuf> = std::fs::read_dir(&agentfs).into_iter().flatten().flatten().filter(|e| e.file_name().to_string_lossy().starts_with("set-aside-")).map(|e| e.path()).collect();
    set_aside.sort();
    Ok(Report { databases, unindexed, ghosts, stale, orphans, special, confined_runs, runs_layers, jj, foreign, set_aside, ok })
}
