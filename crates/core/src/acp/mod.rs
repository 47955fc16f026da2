//! `cairn acp -- AGENT-CMD`: an Agent Client Protocol agent that an editor starts in place of
//! the real one. AGENT-CMD runs inside `cairn wrap`'s boundary ([`crate::wrap`]: the same
//! view, copy-on-write project, home and network) with pipes for stdio, and ACP is relayed
//! both ways ([`relay`]): what the agent writes in its view becomes the session's proposal,
//! and when `session/prompt` returns, the turn is in review at once ([`crate::wrap::TurnEnds`]).
//! The agent is offered no client file system and no terminal, and its requests for them are
//! refused: the editor never writes a file for it ([`message`]). A reviewer's feedback reaches
//! the agent as its next prompt, once ([`feedback`]).

mod feedback;
mod message;
mod relay;

use crate::error::{Error, Result};
use crate::project::Project;
use crate::wrap::{self, TurnEnds};
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// One `cairn acp`.
pub struct Options {
    pub argv: Vec<String>,
    /// The task's description (default: the command).
    pub task: Option<String>,
    /// `--network` (default: `[wrap] network`).
    pub network: Option<String>,
    /// Working directory, relative to the project root.
    pub cwd: String,
    pub home: Option<PathBuf>,
    /// The editor's side: its messages in, ours out (the protocol pipe: nothing else goes
    /// there), and where the agent's stderr goes.
    pub editor_in: OwnedFd,
    pub editor_out: OwnedFd,
    pub stderr: OwnedFd,
}

/// Notes about the boundary (what `cairn wrap` would say before starting), then the session's
/// agent id.
pub fn begin(project: &Project, opts: &Options) -> Result<(Vec<String>, String)> {
    if opts.argv.is_empty() {
        return Err(Error::Usage("cairn acp needs the agent's command: cairn acp -- AGENT-CMD ARGS...".into()));
    }
    let w = wrap::Options { argv: opts.argv.clone(), task: opts.task.clone(), network: opts.network.clone(), cwd: opts.cwd.clone(), home: opts.home.clone(), ..Default::default() };
    let notes = wrap::check(project, &w)?;
    Ok((notes, wrap::begin(project, &w)?))
}

/// Runs the session of agent `id` (from [`begin`]) until the agent ends (the editor closing
/// its stream ends it); the proposal is `reviewing` afterwards.
pub fn run(project: &Project, id: &str, opts: Options) -> Result<wrap::Finished> {
    let pipe = || rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).map_err(|e| Error::Sandbox(format!("the agent's pipes: {e}")));
    let (agent_in, to_agent) = pipe()?;
    let (from_agent, agent_out) = pipe()?;
    let turns = Arc::new(TurnEnds::new());
    let streams = crate::runbox::pty::Streams { stdin: agent_in, stdout: agent_out, stderr: opts.stderr };
    let w = wrap::Options { argv: opts.argv, task: opts.task, network: opts.network, cwd: opts.cwd, home: opts.home, streams: Some(Arc::new(streams)), turns: Some(Arc::clone(&turns)), agent: None };
    let shared = Arc::new(relay::Shared {
        to_agent: Mutex::new(Some(std::fs::File::from(to_agent))),
        to_editor: Mutex::new(Box::new(std::fs::File::from(opts.editor_out))),
        pending: Mutex::new(Default::default()),
        turns,
        project: project.clone(),
        agent: id.to_string(),
        session: Mutex::new(None),
    });
    let s = Arc::clone(&shared);
    let editor_in = std::fs::File::from(opts.editor_in);
    // Blocked on the editor's stream until it ends: left to the process's end.
    std::thread::spawn(move || relay::editor_to_agent(&s, editor_in));
    let s = Arc::clone(&shared);
    let from_agent = std::fs::File::from(from_agent);
    let out = std::thread::spawn(move || relay::agent_to_editor(&s, from_agent));
    let over = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (s, o) = (Arc::clone(&shared), Arc::clone(&over));
    let delivering = std::thread::spawn(move || relay::deliver(&s, &o));
    let done = wrap::run(project, id, &w);
    over.store(true, std::sync::atomic::Ordering::SeqCst);
    // Our copies of the agent's ends go: its output's relay sees the end.
    drop(w);
    let _ = out.join();
    let _ = delivering.join();
    done
}
