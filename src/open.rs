//! Finding the project from the command line: `CAIRN_HOME`, the project root, the
//! configuration layers and the acting human, resolved once for every command.

use cairn_core::config;
use cairn_core::error::{Error, Result};
use cairn_core::project::{Home, Project};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Resolves `CAIRN_HOME`: flag, then `$CAIRN_HOME`, then the platform data directory.
pub fn cairn_home(flag: Option<&Path>) -> PathBuf {
    let chosen = flag.map(Path::to_path_buf).or_else(|| std::env::var_os("CAIRN_HOME").filter(|p| !p.is_empty()).map(PathBuf::from));
    let home = chosen.unwrap_or_else(|| directories::ProjectDirs::from("", "", "cairn").map(|d| d.data_dir().to_path_buf()).unwrap_or_else(|| PathBuf::from(".cairn")));
    // Absolute from here on: confined helpers start in `/`, where a relative path means
    // something else.
    if home.is_absolute() {
        home
    } else {
        std::env::current_dir().map(|d| d.join(&home)).unwrap_or(home)
    }
}

/// Loads the configuration and opens the project the flags point at.
pub fn open_project(project_root: Option<&Path>, home: &Path, init: bool) -> Result<Project> {
    let root = match project_root {
        Some(r) => r.to_path_buf(),
        None => {
            let cwd = std::env::current_dir().map_err(|e| Error::io(".", e))?;
            match Project::discover(&cwd) {
                Ok(r) => r,
                Err(_) if init => cwd,
                Err(e) => return Err(e),
            }
        }
    };
    let mut loaded = config::load(home, Some(&root), &|k| std::env::var(k).ok())?;
    let names: Vec<String> = std::env::vars_os().filter_map(|(k, _)| k.into_string().ok()).collect();
    for name in config::unknown_env(names.iter().map(String::as_str)) {
        loaded.warnings.push(format!("{name} is not a setting Cairn reads (CAIRN_<SECTION>_<KEY> sets a key of config.toml; see :help cairn-config)"));
    }
    for w in &loaded.warnings {
        let _ = writeln!(std::io::stderr().lock(), "cairn: warning: {w}");
        tracing::warn!("{w}");
    }
    // The sandbox child is this very binary in `__sandbox` mode.
    let exe = std::env::current_exe().map_err(|e| Error::io("the cairn executable", e))?;
    let mut config = loaded.config;
    if std::env::var_os("CAIRN_TEST_NO_SYNTAX_LAYER").is_some_and(|v| v == "1") {
        // Test-only: the escape suites run once more without the policy check and guards.
        config.sandbox.syntax_layer = false;
    }
    let mut project = Project::new(&root, Home::new(home), config, exe)?;
    project.actor = human_actor();
    // Confined runs take their allow-list from it (the core reads no environment).
    project.env = cairn_core::project::HostEnv(std::env::vars().collect());
    Ok(project)
}

/// `human:<login>` for task provenance (`$USER`, else `$LOGNAME`).
pub fn human_actor() -> String {
    let user = std::env::var("USER").or_else(|_| std::env::var("LOGNAME")).unwrap_or_default();
    if user.is_empty() { "human".to_string() } else { format!("human:{user}") }
}

/// The project the flags point at, which must be initialized.
pub fn opened(root: Option<&Path>, home: &Path) -> Result<Project> {
    let project = open_project(root, home, false)?;
    project.ensure_initialized()?;
    Ok(project)
}
