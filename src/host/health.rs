//! What `:checkhealth cairn` shows: the project's state, the sandbox child's layers and the
//! run boundary's, the integrations.

/// The sandbox self-test, summarised for `:checkhealth cairn`: which layers this kernel gave
/// the child, and any probe that was not denied.
pub(super) fn sandbox_health(exe: &std::path::Path) -> serde_json::Value {
    match cairn_core::sandbox::spawn::selftest(exe, &Default::default()) {
        Ok(t) => serde_json::json!({
            "landlock": t.applied.landlock,
            "seccomp": t.applied.seccomp,
            "identity": t.applied.identity,
            "uid": t.applied.uid,
            "namespaces": t.applied.namespaces,
            "namespaces_missing": t.applied.namespaces_missing,
            "probes": t.probes.len(),
            "not_denied": t.probes.iter().filter(|(_, o)| o != "EPERM").map(|(n, o)| format!("{n}: {o}")).collect::<Vec<_>>(),
        }),
        Err(e) => serde_json::json!({ "error": e.to_string() }),
    }
}


/// What loading the configuration warned about (unknown keys, a project file's keys ignored
/// until trusted): the plugin says it once when the host starts, and `:checkhealth` shows it.
pub(super) fn config_warnings(project: &cairn_core::project::Project) -> Vec<String> {
    cairn_core::config::load(&project.home.dir, Some(&project.root), &|k| std::env::var(k).ok()).map(|l| l.warnings).unwrap_or_else(|e| vec![e.to_string()])
}

/// Can `stable.db` be written? The file when it is there; else the directory it will be made
/// in: a fresh project's first index (in the background, while the host already answers) has
/// not made it yet, which is no error.
fn writable(db: &std::path::Path) -> bool {
    match std::fs::OpenOptions::new().append(true).open(db) {
        Ok(_) => true,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            db.ancestors().skip(1).find(|d| d.is_dir()).is_some_and(|d| rustix::fs::access(d, rustix::fs::Access::WRITE_OK).is_ok())
        }
        Err(_) => false,
    }
}

/// Everything `:checkhealth cairn` shows, as one JSON object (`lua/cairn/health.lua`).
/// `indexing`: the project's first index is still running (what it makes may not exist yet).
pub(super) fn report(project: &cairn_core::project::Project, last_error: Option<String>, indexing: bool) -> serde_json::Value {
    let db = project.agentfs().join("stable.db");
    let writable = writable(&db);
    let tmux = std::process::Command::new("tmux").arg("-V").output().ok().map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    let warnings = config_warnings(project);
    let runs = cairn_core::runbox::probe(project);
    serde_json::json!({
        "version": env!("CARGO_PKG_VERSION"),
        "root": project.root,
        "cairn_home": project.home.dir,
        "stable_db": db,
        "stable_db_writable": writable,
        "indexing": indexing,
        "tmux": tmux,
        "inside_tmux": crate::tmux::inside_tmux(),
        "config_warnings": warnings,
        "llm_configured": cairn_core::llm::configured(&project.config.llm),
        "sandbox": sandbox_health(&project.exe),
        "confined_runs": runs.as_ref().err(),
        "runs_layers": runs.as_ref().ok(),
        "jj": cairn_core::jj::detect(project).0,
        "last_error": last_error,
    })
}
