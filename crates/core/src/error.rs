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
    /// Accept refused: the agent's change and the user's edits touch the same lines (or the
    /// user deleted or replaced a file the agent changes).
    #[error("accept refused: agent {id}'s change conflicts with what changed since it read the files: {}", conflicts.join("; "))]
    Conflict { id: String, conflicts: Vec<String> },
    /// One hunk's accept refused: it touches lines the user changed.
    #[error("hunk accept refused: agent {id}'s hunk of {path} at line {line} conflicts with {with}")]
    HunkConflict { id: String, path: String, line: usize, with: String },
    /// Undo refused: these paths were edited after the accept.
    #[error("undo refused: edited since agent {id} was accepted: {}", paths.join(", "))]
    EditedSinceAccept { id: String, paths: Vec<String> },
    /// A path that escapes the project, contains NUL, or is otherwise unusable.
    #[error("invalid path {0:?}")]
    InvalidPath(String),
    /// An absolute host path outside the project, where host paths are read as such (MCP
    /// clients' paths, [`crate::paths::Rooted::Host`]).
    #[error("{path} is outside the project (its root is {}): paths are relative to the project root, or absolute inside it", root.display())]
    OutsideProject { path: String, root: PathBuf },
    /// A path agents may not write (repository or cairn machinery, cairn's configuration,
    /// control characters); `rule` says which rule refused it.
    #[error("protected path {path:?}: {rule}")]
    ProtectedPath { path: String, rule: &'static str },
    /// A path the proposal writes is a symbolic link or a special file in the project:
    /// Cairn never writes through or over one.
    #[error("{path:?} is {what} in the project: cairn never writes through or over one")]
    NotAFile { path: String, what: &'static str },
    /// A bad value or file in the configuration.
    #[error("config: {0}")]
    Config(String),

    #[error("no task matches id '{0}'")]
    UnknownTask(String),
    /// A session used by an actor other than the one that began it.
    #[error("session {session} belongs to {owner}, not to {actor}")]
    ForeignSession { session: String, owner: String, actor: String },

    /// A task rule refused the change: the deps gate, the checks gate, a claim held by
    /// someone else, an unknown status.
    #[error("task {task}: {message}")]
    TaskRefused { task: String, message: String },
    /// A bad argument from the user (CLI, signal file, RPC): the request itself is wrong.
    #[error("{0}")]
    Usage(String),
    /// Another process already does this (a second `cairn up` on one project).
    #[error("{0}")]
    Busy(String),
    /// `cairn wrap state apply --expect` refused: the CLI's state layer no longer shows what
    /// the fingerprint named (its agent wrote meanwhile); nothing was applied.
    #[error("the state of {name} is not what was shown (fingerprint {shown}, now {now}): nothing applied")]
    StateChanged { name: String, shown: String, now: String },
    /// The agent has no proposal (yet): nothing to preview or review.
    #[error("agent {0} has no proposal yet")]
    NoProposal(String),
    /// No agent is reviewing, so there is nothing to act on by default.
    #[error("no agent is reviewing")]
    NothingReviewing,
    /// A hunk-level review action that does not apply to the proposal as it is now.
    #[error("{0}")]
    Hunk(String),
    /// An agent's stored proposal is missing or incomplete.
    #[error("overlay of agent {id}: {message}")]
    Overlay { id: String, message: String },
    /// tmux could not be run or refused a command.
    #[error("tmux: {0}")]
    Tmux(String),
    /// jj could not be run or refused a command (`crate::jj`).
    #[error("preview: {0}")]
    Preview(String),

    #[error("jj: {0}")]
    Jj(String),
    /// The code provider could not produce code.
    #[error("provider {provider}: {message}")]
    Provider { provider: String, message: String },
    /// The LLM endpoint answered HTTP 429: try again no earlier than `retry_after_secs` (its
    /// `Retry-After` header, when it sent one). A run goes back to the queue meanwhile.
    #[error("rate limited: {url} answered HTTP 429{}: {message}", retry_after_secs.map(|s| format!(" (Retry-After: {s} s)")).unwrap_or_default())]
    RateLimited { url: String, retry_after_secs: Option<u64>, message: String },
    /// A signal file that cannot be understood.
    #[error("signal {name}: {message}")]
    Signal { name: String, message: String },
    /// The sandbox child could not be started or talked to.
    #[error("sandbox: {0}")]
    Sandbox(String),
    /// `cairn wrap`: a program, script or directory the command line names would not be in
    /// the wrapped view (missing, hidden, or outside what it shows); nothing was started.
    /// `fix` names the setting that would show it.
    #[error("cairn wrap: {what} {path} {why}")]
    NotVisible { what: String, path: String, why: String, fix: String },
    /// The pre-flight check of a script failed.
    #[error("check failed:\n{0}")]
    Check(String),
    /// An I/O error on a named path.
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    /// An SQLite error.
    #[error("database: {0}")]
    Db(#[from] rusqlite::Error),
    /// A database file is damaged or missing: the message names the file and how to recover.
    #[error("database {}: {message}", path.display())]
    Database { path: PathBuf, message: String },
    /// Malformed JSON stored or received.
    #[error("json: {0}")]
    Json(#[from] serde_json::Error),
    /// The file watcher failed.
    #[error("watcher: {0}")]
    Watch(String),
    /// An RPC request the host does not understand.
    #[error("rpc: {0}")]
    Rpc(String),
    /// An accept stopped by an error once files were going in place: its journal finishes or
    /// rolls it back.
    #[error("accept of agent {id} stopped midway, some of its files in place: {cause}")]
    AcceptStopped { id: String, cause: Box<Error> },
    /// A bug or a broken invariant inside cairn (a worker thread panicked, a corrupt record).
    #[error("internal error: {0}")]
    Internal(String),
}

impl Error {
    /// Did this come from running out of file descriptors (EMFILE, ENFILE)? Such a failure
    /// is not lasting: the work is retried, never lost.
    pub fn out_of_descriptors(&self) -> bool {
        match self {
            Error::Io { source, .. } => matches!(source.raw_os_error(), Some(libc::EMFILE | libc::ENFILE)),
            // SQLite says only "unable to open" when it gets no descriptor, for a file that is
            // there or one it creates in a directory it may write (a new overlay).
            Error::Database { path, message } if message.contains("unable to open database file") && (path.exists() || path.parent().is_some_and(writable_dir)) => true,
            other => {
                let text = other.to_string();
                text.contains("Too many open files") || text.contains("os error 24") || text.contains("os error 23")
            }
        }
    }

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
            Error::Conflict { .. } => "conflict",
            Error::HunkConflict { .. } => "hunk_conflict",
            Error::EditedSinceAccept { .. } => "edited_since_accept",
            Error::AcceptStopped { .. } => "accept_stopped",
            Error::InvalidPath(_) => "invalid_path",
            Error::OutsideProject { .. } => "outside_project",
            Error::ForeignSession { .. } => "foreign_session",
            Error::ProtectedPath { .. } => "protected_path",
            Error::NotAFile { .. } => "not_a_file",
            Error::Config(_) => "config",
            Error::UnknownTask(_) => "unknown_task",
            Error::TaskRefused { .. } => "task_refused",
            Error::Usage(_) => "usage",
            Error::Database { .. } => "database",
            Error::Busy(_) => "busy",
            Error::StateChanged { .. } => "state_changed",
            Error::NoProposal(_) => "no_proposal",
            Error::NothingReviewing => "nothing_reviewing",
            Error::Hunk(_) => "hunk",
            Error::Overlay { .. } => "overlay",
            Error::Tmux(_) => "tmux",
            Error::Preview(_) => "preview",
            Error::Jj(_) => "jj",
            Error::Provider { .. } => "provider",
            Error::RateLimited { .. } => "rate_limited",
            Error::Signal { .. } => "signal",
            Error::Sandbox(_) => "sandbox",
            Error::NotVisible { .. } => "not_visible",
            Error::Check(_) => "check",
            Error::Io { .. } => "io",
            Error::Db(_) => "db",
            Error::Json(_) => "json",
            Error::Watch(_) => "watch",
            Error::Rpc(_) => "rpc",
            Error::Internal(_) => "internal",
        }
    }

    /// What the user can do about it, when there is something to say.
    pub fn hint(&self) -> Option<String> {
        Some(match self {
            Error::NotInitialized(_) => "run `cairn init` in the project root, or pass --project-root".into(),
            Error::UnknownAgent(_) => "`cairn list-agents --all` shows every agent id".into(),
            Error::AmbiguousAgent { .. } => "type more characters of the id".into(),
            Error::IllegalTransition { .. } => "`cairn status <id>` shows the agent's state".into(),
            Error::HunkConflict { id, path, line, .. } => {
                format!("in Neovim, :CairnAcceptHunk! takes the agent's side inside this hunk; from a shell, `cairn accept-hunk {id} {path} N --force` (N as `cairn hunks {id}` numbers it; it was at line {line}). The version there now is journaled: `cairn undo {id}` gives it back")
            }
            Error::Conflict { id, .. } => {
                format!("see them marked CONFLICT in `cairn diff {id}`; `cairn accept {id} --force` takes the agent's side inside its own hunks and keeps every other line as it is now (the version there now is journaled: `cairn undo {id}` gives it back)")
            }
            Error::StaleBase { id, .. } => {
                format!("review the changes with `cairn diff {id}`; `cairn accept {id} --force` overwrites them")
            }
            Error::EditedSinceAccept { .. } => "revert or commit your edits to those paths first".into(),
            Error::AcceptStopped { id, .. } => format!("once the cause is fixed, `cairn accept {id}` finishes it; `cairn reject {id}` puts back what went in place (until one of them runs, no other accept does)"),
            Error::InvalidPath(_) => "paths are project-relative; they may not leave the project".into(),
            Error::ProtectedPath { .. } => "reject this agent: its proposal writes where agents may not".into(),
            Error::NotAFile { path, .. } => format!("replace {path} with a regular file (or remove it) and accept again, or reject the agent; --force does not write over it"),
            Error::Config(_) => "see `:help cairn-config` or doc/cairn.txt for every key".into(),
            Error::UnknownTask(_) => "`cairn task list` shows every task".into(),
            Error::ForeignSession { owner, .. } => format!(
                "to continue it, act as its owner: restart the MCP server with `--actor {owner}` (`cairn mcp --actor {owner}` in the client's server configuration), or `cairn session exec --actor {owner}` from a shell"
            ),
            Error::TaskRefused { task, .. } => format!("`cairn task show {task}` shows its deps, checks and status"),
            Error::Check(_) => "fix the script and run `cairn check <file>` again".into(),
            Error::NotVisible { fix, .. } => fix.clone(),
            Error::NoProposal(id) => format!("`cairn status {id}` shows where the agent is"),
            Error::StateChanged { name, .. } => format!("`cairn wrap state diff {name}` shows it as it is now"),
            Error::NothingReviewing => "`:CairnListTasks` or `cairn list-agents` shows the agents".into(),
            Error::Hunk(_) => "the proposal changed: `:CairnRefresh` redraws it, or act on the whole agent".into(),
            Error::Tmux(_) => "run cairn inside tmux, or open the workspace path yourself".into(),
            Error::Preview(_) => "`cairn preview ID` runs in a terminal; `--tmux` opens it in a tmux pane (:help cairn-preview)".into(),
            Error::Jj(_) => "`cairn doctor` says which jj Cairn uses; `[jj] enabled = false` turns the integration off".into(),
            Error::RateLimited { .. } => "try again later; an agent waits in the queue ([llm] rate_limit_retries, rate_limit_max_wait_seconds)".into(),
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

    /// Turns a worker thread's panic into an error (no panic crosses a library boundary).
    pub fn panicked(what: &str) -> Error {
        Error::Internal(format!("{what}: a worker thread panicked"))
    }
}

#[cfg(test)]
mod tests {
    use super::Error;

    /// What each variant must render as at the edges: (CLI exit code, RPC code). The match
    /// has no wildcard, so a new variant does not compile until it is listed here.
    fn expected(e: &Error) -> (i32, &'static str) {
        match e {
            Error::NotInitialized(_) => (1, "not_initialized"),
            Error::UnknownAgent(_) => (1, "unknown_agent"),
            Error::AmbiguousAgent { .. } => (1, "ambiguous_agent"),
            Error::IllegalTransition { .. } => (1, "illegal_transition"),
            Error::StaleBase { .. } => (1, "stale_base"),
            Error::Conflict { .. } => (1, "conflict"),
            Error::HunkConflict { .. } => (1, "hunk_conflict"),
            Error::EditedSinceAccept { .. } => (1, "edited_since_accept"),
            Error::AcceptStopped { .. } => (1, "accept_stopped"),
            Error::InvalidPath(_) => (1, "invalid_path"),
            Error::OutsideProject { .. } => (1, "outside_project"),
            Error::ForeignSession { .. } => (1, "foreign_session"),
            Error::ProtectedPath { .. } => (1, "protected_path"),
            Error::NotAFile { .. } => (1, "not_a_file"),
            Error::Config(_) => (1, "config"),
            Error::UnknownTask(_) => (1, "unknown_task"),
            Error::TaskRefused { .. } => (1, "task_refused"),
            Error::Usage(_) => (2, "usage"),
            Error::Database { .. } => (1, "database"),
            Error::Busy(_) => (1, "busy"),
            Error::StateChanged { .. } => (1, "state_changed"),
            Error::NoProposal(_) => (1, "no_proposal"),
            Error::NothingReviewing => (1, "nothing_reviewing"),
            Error::Hunk(_) => (1, "hunk"),
            Error::Overlay { .. } => (1, "overlay"),
            Error::Tmux(_) => (1, "tmux"),
            Error::Preview(_) => (1, "preview"),
            Error::Jj(_) => (1, "jj"),
            Error::Provider { .. } => (1, "provider"),
            Error::RateLimited { .. } => (1, "rate_limited"),
            Error::Signal { .. } => (1, "signal"),
            Error::Sandbox(_) => (1, "sandbox"),
            Error::NotVisible { .. } => (1, "not_visible"),
            Error::Check(_) => (1, "check"),
            Error::Io { .. } => (1, "io"),
            Error::Db(_) => (1, "db"),
            Error::Json(_) => (1, "json"),
            Error::Watch(_) => (1, "watch"),
            Error::Rpc(_) => (1, "rpc"),
            Error::Internal(_) => (1, "internal"),
        }
    }

    fn one_of_each() -> Vec<Error> {
        let s = || "x".to_string();
        vec![
            Error::NotInitialized("/p".into()),
            Error::UnknownAgent(s()),
            Error::AmbiguousAgent { prefix: s(), candidates: s() },
            Error::IllegalTransition { id: s(), from: s(), action: s() },
            Error::StaleBase { id: s(), paths: vec![s()] },
            Error::Conflict { id: s(), conflicts: vec![s()] },
            Error::HunkConflict { id: s(), path: s(), line: 1, with: s() },
            Error::EditedSinceAccept { id: s(), paths: vec![s()] },
            Error::AcceptStopped { id: s(), cause: Box::new(Error::Internal(s())) },
            Error::InvalidPath(s()),
            Error::OutsideProject { path: s(), root: "/p".into() },
            Error::ForeignSession { session: s(), owner: s(), actor: s() },
            Error::ProtectedPath { path: s(), rule: "r" },
            Error::NotAFile { path: s(), what: "a symbolic link" },
            Error::Config(s()),
            Error::UnknownTask(s()),
            Error::TaskRefused { task: s(), message: s() },
            Error::Usage(s()),
            Error::Busy(s()),
            Error::StateChanged { name: s(), shown: s(), now: s() },
            Error::Database { path: std::path::PathBuf::new(), message: s() },
            Error::NoProposal(s()),
            Error::NothingReviewing,
            Error::Hunk(s()),
            Error::Overlay { id: s(), message: s() },
            Error::Preview(s()),
            Error::Tmux(s()),
            Error::Jj(s()),
            Error::Provider { provider: s(), message: s() },
            Error::RateLimited { url: s(), retry_after_secs: Some(1), message: s() },
            Error::Signal { name: s(), message: s() },
            Error::Sandbox(s()),
            Error::NotVisible { what: s(), path: s(), why: s(), fix: s() },
            Error::Check(s()),
            Error::io("/p", std::io::Error::other("x")),
            Error::Db(rusqlite::Error::InvalidQuery),
            Error::Json(serde_json::from_str::<u8>("x").unwrap_err()),
            Error::Watch(s()),
            Error::Rpc(s()),
            Error::Internal(s()),
        ]
    }

    #[test]
    fn every_variant_has_its_exit_code_and_rpc_code() {
        let all = one_of_each();
        let mut codes: Vec<&str> = all.iter().map(Error::code).collect();
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), all.len(), "one sample per variant, each with its own code");
        for e in &all {
            assert_eq!((e.exit_code(), e.code()), expected(e), "{e:?}");
            assert!(!e.to_string().is_empty());
        }
    }
}

/// Is `dir` a directory this process may create files in?
fn writable_dir(dir: &std::path::Path) -> bool {
    dir.is_dir() && rustix::fs::access(dir, rustix::fs::Access::WRITE_OK).is_ok()
}
