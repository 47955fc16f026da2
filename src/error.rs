//! The library's typed errors. Every fallible library operation returns [`Error`]; the edges
//! (CLI, RPC host, signal files) render it exactly once, with [`Error::hint`] and
//! [`Error::exit_code`].

use std::path::PathBuf;

/// Result alias used throughout the library.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Every way a library operation can fail, one variant per cause.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The project has no `.agentfs/` yet.
    #[error("{0} is not a cairn project (no .agentfs/)")]
    NotInitialized(PathBuf),
    /// No agent id starts with the given prefix.
    #[error("no agent matches id '{0}'")]
    UnknownAgent(String),
    /// More than one agent id starts with the given prefix.
    #[error("agent id '{prefix}' is ambiguous: {candidates}")]
    AmbiguousAgent { prefix: String, candidates: String },
    /// A lifecycle move that SPEC §3 does not allow.
    #[error("agent {id} is {from}; cannot {action}")]
    IllegalTransition { id: String, from: String, action: String },
    /// Accept refused: these paths changed in the project after the agent read or wrote them.
    #[error("accept refused: changed in the project since agent {id} read them: {}", paths.join(", "))]
    StaleBase { id: String, paths: Vec<String> },
    /// Undo refused: these paths were edited after the accept.
    #[error("undo refused: edited since agent {id} was accepted: {}", paths.join(", "))]
    EditedSinceAccept { id: String, paths: Vec<String> },
    /// A path that escapes the project, contains NUL, or is otherwise unusable.
    #[error("invalid path {0:?}")]
    InvalidPath(String),
    /// A bad value or file in the configuration.
    #[error("config: {0}")]
    Config(String),
    /// A bad argument from the user (CLI, signal file, RPC).
    #[error("{0}")]
    Usage(String),
    /// The code provider could not produce code.
    #[error("provider {provider}: {message}")]
    Provider { provider: String, message: String },
    /// A signal file that cannot be understood.
    #[error("signal {name}: {message}")]
    Signal { name: String, message: String },
    /// The sandbox child could not be started or talked to.
    #[error("sandbox: {0}")]
    Sandbox(String),
    /// The pre-flight check of a script failed.
    #[error("check failed:\n{0}")]
    Check(String),
    /// An I/O error on a named path.
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    /// An SQLite error.
    #[error("database: {0}")]
    Db(#[from] rusqlite::Error),
    /// Malformed JSON stored or received.
    #[error("json: {0}")]
    Json(#[from] serde_json::Error),
    /// The file watcher failed.
    #[error("watcher: {0}")]
    Watch(String),
    /// An RPC request the host does not understand.
    #[error("rpc: {0}")]
    Rpc(String),
}

impl Error {
    /// Wraps an I/O error with the path it concerns.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io { path: path.into(), source }
    }

    /// A short machine-readable name for the error kind (used by RPC and `--json`).
    pub fn code(&self) -> &'static str {
        match self {
            Error::NotInitialized(_) => "not_initialized",
            Error::UnknownAgent(_) => "unknown_agent",
            Error::AmbiguousAgent { .. } => "ambiguous_agent",
            Error::IllegalTransition { .. } => "illegal_transition",
            Error::StaleBase { .. } => "stale_base",
            Error::EditedSinceAccept { .. } => "edited_since_accept",
            Error::InvalidPath(_) => "invalid_path",
            Error::Config(_) => "config",
            Error::Usage(_) => "usage",
            Error::Provider { .. } => "provider",
            Error::Signal { .. } => "signal",
            Error::Sandbox(_) => "sandbox",
            Error::Check(_) => "check",
            Error::Io { .. } => "io",
            Error::Db(_) => "db",
            Error::Json(_) => "json",
            Error::Watch(_) => "watch",
            Error::Rpc(_) => "rpc",
        }
    }

    /// What the user can do about it, when there is something to say.
    pub fn hint(&self) -> Option<String> {
        Some(match self {
            Error::NotInitialized(_) => "run `cairn init` in the project root, or pass --project-root".into(),
            Error::UnknownAgent(_) => "`cairn list-agents --all` shows every agent id".into(),
            Error::AmbiguousAgent { .. } => "type more characters of the id".into(),
            Error::IllegalTransition { .. } => "`cairn status <id>` shows the agent's state".into(),
            Error::StaleBase { id, .. } => {
                format!("review the changes with `cairn diff {id}`; `cairn accept {id} --force` overwrites them")
            }
            Error::EditedSinceAccept { .. } => "revert or commit your edits to those paths first".into(),
            Error::InvalidPath(_) => "paths are project-relative; they may not leave the project".into(),
            Error::Config(_) => "see `:help cairn-config` or doc/cairn.txt for every key".into(),
            Error::Check(_) => "fix the script and run `cairn check <file>` again".into(),
            _ => return None,
        })
    }

    /// The CLI exit code: 2 for usage errors, 1 for everything refused or failed.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Usage(_) => 2,
            _ => 1,
        }
    }
}
