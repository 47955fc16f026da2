//! A project and where cairn keeps its state: the project root with `.agentfs/` and `.grail/`,
//! and `CAIRN_HOME` with workspaces, previews, signals, state and logs (SPEC §2).
//!
//! The library never guesses these from the environment: the edge (CLI, host) resolves
//! `CAIRN_HOME` and passes it in.

use crate::config::Config;
use crate::error::{Error, Result};
use crate::store::{bin::Bin, overlay::Overlay, stable::Stable};
use std::path::{Path, PathBuf};

/// Where `CAIRN_HOME` lives and what is under it.
#[derive(Debug, Clone)]
pub struct Home {
    pub dir: PathBuf,
}

impl Home {
    /// `CAIRN_HOME` at `dir` (created on demand by the operations that write there).
    pub fn new(dir: impl Into<PathBuf>) -> Home {
        Home { dir: dir.into() }
    }
    /// Preview workspaces, one directory per agent.
    pub fn workspaces(&self) -> PathBuf {
        self.dir.join("workspaces")
    }
    /// The workspace of one agent.
    pub fn workspace(&self, id: &str) -> PathBuf {
        self.workspaces().join(&*crate::paths::id_part(id))
    }
    /// Saved diffs of previews.
    pub fn previews(&self) -> PathBuf {
        self.dir.join("previews")
    }
    /// The signal directory shells drop files into.
    pub fn signals(&self) -> PathBuf {
        self.dir.join("signals")
    }
    /// Internal state (workspace manifests).
    pub fn state(&self) -> PathBuf {
        self.dir.join("state")
    }
    /// Log files.
    pub fn logs(&self) -> PathBuf {
        self.dir.join("logs")
    }
    /// One file per running orchestrator (`<pid>.root`, holding its project root), so that
    /// orchestrators sharing this home can route signals to each other's projects.
    pub fn hosts(&self) -> PathBuf {
        self.dir.join("hosts")
    }
}

/// An initialized (or to-be-initialized) project with its configuration.
#[derive(Debug, Clone)]
pub struct Project {
    /// Canonical absolute project root.
    pub root: PathBuf,
    pub home: Home,
    pub config: Config,
    /// The `cairn` binary, started for sandbox children (`cairn __sandbox`): the edge passes
    /// the running executable; tests pass the built binary.
    pub exe: PathBuf,
    /// Who acts through this handle, for task provenance (`human:<user>` from the CLI and the
    /// Neovim host, the agent's identity from `cairn mcp`); the edge sets it.
    pub actor: String,
    /// The environment of the process that opened the project, passed in by the edge: confined
    /// runs pick their allow-list (`PATH`, `LANG`, `TERM`, `[run] env`) and `HOME` from it.
    pub env: HostEnv,
    /// When the state was last found Cairn's own (`origin::check`), in ms: checked again after
    /// a second (a long-lived host notices a pull that replaced it), not on every open.
    pub(crate) origin_ok_ms: std::sync::Arc<std::sync::atomic::AtomicI64>,
}

/// Environment variables handed to the core by the edge. Its `Debug` shows names only: the
/// values may be secrets, and a project handle ends up in logs.
#[derive(Clone, Default)]
pub struct HostEnv(pub Vec<(String, String)>);

impl HostEnv {
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

impl std::fmt::Debug for HostEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.0.iter().map(|(k, _)| k)).finish()
    }
}

impl Project {
    /// A project at `root` (canonicalized), without checking it is initialized; `exe` is the
    /// `cairn` binary that sandbox children run.
    pub fn new(root: &Path, home: Home, config: Config, exe: PathBuf) -> Result<Project> {
        let root = root.canonicalize().map_err(|e| Error::io(root, e))?;
        Ok(Project { root, home, config, exe, actor: "human".to_string(), env: HostEnv::default(), origin_ok_ms: Default::default() })
    }

    /// Finds the project containing `start`: the nearest ancestor with `.agentfs/`.
    pub fn discover(start: &Path) -> Result<PathBuf> {
        let start = start.canonicalize().map_err(|e| Error::io(start, e))?;
        start
            .ancestors()
            .find(|d| d.join(".agentfs").is_dir())
            .map(Path::to_path_buf)
            .ok_or(Error::NotInitialized(start))
    }

    /// `<root>/.agentfs`.
    pub fn agentfs(&self) -> PathBuf {
        self.root.join(".agentfs")
    }
    /// Creates `dir` (`.agentfs`, or a directory under `.grail`) with a `.gitignore` of `*`
    /// in Cairn's top directory, so git never sees, stashes, cleans or commits Cairn's state
    /// and jj never snapshots it.
    pub fn state_dir(&self, dir: &Path) -> Result<()> {
        let fresh = std::fs::symlink_metadata(self.agentfs()).is_err();
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        if fresh && dir.starts_with(self.agentfs()) {
            crate::origin::mark(&self.root)?;
        }
        for top in [self.agentfs(), self.root.join(".grail")] {
            let ignore = top.join(".gitignore");
            if dir.starts_with(&top) && !ignore.exists() {
                std::fs::write(&ignore, "# Cairn's state: never tracked (see `:help cairn`).\n*\n").map_err(|e| Error::io(&ignore, e))?;
            }
        }
        Ok(())
    }
    /// `<root>/.grail/agents/<id>`.
    pub fn agent_dir(&self, id: &str) -> PathBuf {
        self.root.join(".grail").join("agents").join(&*crate::paths::id_part(id))
    }
    /// `<root>/.agentfs/agent-<id>.db`.
    pub fn overlay_path(&self, id: &str) -> PathBuf {
        self.agentfs().join(format!("agent-{}.db", crate::paths::id_part(id)))
    }

    /// Fails unless `init` has run.
    pub fn ensure_initialized(&self) -> Result<()> {
        self.refuse_lost_bin()?;
        if self.agentfs().join("bin.db").is_file() {
            Ok(())
        } else {
            Err(Error::NotInitialized(self.root.clone()))
        }
    }

    /// Refuses to go on when `bin.db` is missing or empty beside existing agent overlays.
    pub fn refuse_lost_bin(&self) -> Result<()> {
        // Nothing of a state Cairn did not make is read (see `origin`).
        crate::origin::check(&self.root, &self.origin_ok_ms)?;
        let bin = self.agentfs().join("bin.db");
        let len = std::fs::metadata(&bin).map(|m| m.len()).ok();
        // Never a silent fresh start over existing agents: their overlays would be orphaned.
        if len.is_none() && !self.agentfs().is_dir() && self.had_agents() {
            return Err(Error::Database {
                path: self.agentfs(),
                message: "is gone, but .grail/agents shows that agents existed here (was it deleted, stashed or cleaned away?): restore it from a backup or from where it went (`git stash pop`); or remove .grail/agents and run `cairn init` to start afresh (those agents are then forgotten)".into(),
            });
        }
        if len.is_none_or(|l| l == 0) && self.has_overlays() {
            let what = if len.is_some() { "is empty (truncated)" } else { "is missing" };
            return Err(Error::Database {
                path: bin,
                message: format!("{what}, but agent overlays exist beside it: restore it from a backup (with its bin.db-wal file, which holds recent commits); or move .agentfs/agent-*.db and .agentfs/bin/ aside and run `cairn init` (their agents are then forgotten)"),
            });
        }
        Ok(())
    }

    /// Did agents run here (their run logs are under `.grail/agents/`)?
    fn had_agents(&self) -> bool {
        std::fs::read_dir(self.root.join(".grail").join("agents")).into_iter().flatten().flatten().any(|e| e.file_type().is_ok_and(|t| t.is_dir()))
    }

    fn has_overlays(&self) -> bool {
        let live = std::fs::read_dir(self.agentfs()).into_iter().flatten().flatten();
        let archived = std::fs::read_dir(self.agentfs().join("bin")).into_iter().flatten().flatten();
        live.chain(archived).any(|e| {
            let n = e.file_name();
            let n = n.to_string_lossy();
            n.starts_with("agent-") && n.ends_with(".db")
        })
    }

    /// Opens `stable.db`.
    pub fn stable(&self) -> Result<Stable> {
        Stable::open(&self.agentfs().join("stable.db"))
    }
    /// Opens `bin.db`.
    pub fn bin(&self) -> Result<Bin> {
        self.ensure_initialized()?;
        Bin::open(&self.agentfs().join("bin.db"))
    }
    /// Opens (creating) the overlay of agent `id`. Its template (an empty overlay, copied)
    /// lives in `CAIRN_HOME`, never in the project, where a clone or a pull could put one.
    pub fn overlay(&self, id: &str) -> Result<Overlay> {
        let template = self.home.dir.join(format!("overlay-v{}.template", crate::store::SCHEMA_VERSION));
        Overlay::create(&self.overlay_path(id), &template)
    }
    /// `<root>/.agentfs/bin/agent-<id>.db`: where a decided agent's overlay is kept until GC.
    pub fn archived_overlay_path(&self, id: &str) -> PathBuf {
        self.agentfs().join("bin").join(format!("agent-{}.db", crate::paths::id_part(id)))
    }
    /// Opens the overlay of agent `id`, live or archived, only if it exists.
    pub fn existing_overlay(&self, id: &str) -> Result<Option<Overlay>> {
        for p in [self.overlay_path(id), self.archived_overlay_path(id)] {
            if p.is_file() {
                match Overlay::open_existing(&p) {
                    Ok(o) => return Ok(Some(o)),
                    // Moved away meanwhile (accept or reject archiving it): look where it went.
                    Err(_) if !p.is_file() => continue,
                    Err(e) => return Err(Error::Overlay { id: id.to_string(), message: format!("the overlay is damaged ({e}); reject the agent, or restore the file") }),
                }
            }
        }
        Ok(None)
    }
    /// Moves the overlay of a decided agent into `.agentfs/bin/` (kept for diff and undo).
    pub fn archive_overlay(&self, id: &str) -> Result<()> {
        self.move_overlay(id, &self.archived_overlay_path(id))
    }

    /// Puts a decided agent's overlay back in place (a revision, an undo): the live path wins
    /// when both exist.
    pub fn unarchive_overlay(&self, id: &str) -> Result<()> {
        let (live, archived) = (self.overlay_path(id), self.archived_overlay_path(id));
        if live.is_file() || !archived.is_file() {
            return Ok(());
        }
        let _ = std::fs::remove_file(format!("{}-shm", archived.display()));
        let wal = crate::store::wal_of(&archived);
        if wal.exists() {
            std::fs::rename(&wal, crate::store::wal_of(&live)).map_err(|e| Error::io(&wal, e))?;
        }
        std::fs::rename(&archived, &live).map_err(|e| Error::io(&archived, e))
    }

    /// Sets aside the overlay an interrupted run left, so that the re-run starts from an empty
    /// one: it goes to `.agentfs/bin/agent-<id>.attempt-<ms>.db` (removed with the agent by
    /// GC). Returns where it went, or `None` when there was none.
    pub fn set_aside_overlay(&self, id: &str) -> Result<Option<PathBuf>> {
        if !self.overlay_path(id).is_file() {
            return Ok(None);
        }
        let to = self.agentfs().join("bin").join(format!("agent-{}.attempt-{}.db", crate::paths::id_part(id), crate::time::now_ms()));
        self.move_overlay(id, &to)?;
        Ok(Some(to))
    }

    fn move_overlay(&self, id: &str, to: &Path) -> Result<()> {
        let from = self.overlay_path(id);
        if !from.is_file() {
            return Ok(());
        }
        // No connection is open on a decided agent's overlay: moving the database together
        // with its WAL keeps every committed row (SQLite replays the WAL at the new name).
        if let Some(dir) = to.parent() {
            std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        }
        // Folded first, the database is one file: a kill between the renames below cannot
        // part it from commits still in its WAL. (If the fold cannot run, the WAL moves too.)
        if let Ok(o) = Overlay::open_existing(&from) {
            o.fold();
        }
        let _ = std::fs::remove_file(format!("{}-shm", from.display()));
        let wal = crate::store::wal_of(&from);
        if std::fs::metadata(&wal).is_ok_and(|m| m.len() == 0) {
            let _ = std::fs::remove_file(&wal);
        }
        if wal.exists() {
            std::fs::rename(&wal, crate::store::wal_of(to)).map_err(|e| Error::io(&wal, e))?;
        }
        std::fs::rename(&from, to).map_err(|e| Error::io(&from, e))?;
        Ok(())
    }
    /// Deletes the overlay files of agent `id`, live and archived.
    pub fn remove_overlay(&self, id: &str) -> Result<()> {
        for base in [self.overlay_path(id), self.archived_overlay_path(id)] {
            self.remove_db_files(&base)?;
        }
        let attempt = format!("agent-{}.attempt-", crate::paths::id_part(id));
        for e in std::fs::read_dir(self.agentfs().join("bin")).into_iter().flatten().flatten() {
            if e.file_name().to_string_lossy().starts_with(&attempt) {
                let p = e.path();
                std::fs::remove_file(&p).map_err(|err| Error::io(&p, err))?;
            }
        }
        Ok(())
    }
    fn remove_db_files(&self, base: &Path) -> Result<()> {
        for suffix in ["", "-wal", "-shm"] {
            let p = PathBuf::from(format!("{}{suffix}", base.display()));
            match std::fs::remove_file(&p) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::io(p, e)),
            }
        }
        Ok(())
    }
}
