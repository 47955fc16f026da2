//! The `cairn` command line (SPEC §7): parses arguments with clap into a [`Command`], runs it
//! through [`command::execute`] and renders the output or the error, once. Exit codes: 0 ok,
//! 1 refused or failed, 2 usage.

use cairn_core::command::{self, Command, Output};
use cairn_core::error::Result;
use cairn_core::lifecycle::{Priority, Provider, State};
use cairn_core::sandbox::interpreter::Interpreter;
use crate::open::{cairn_home, open_project, opened};
use clap::{Parser, Subcommand};
use std::path::{Path, PathBuf};

/// Cairn: sandboxed agents propose changes; you review them in Neovim or here.
#[derive(Parser, Debug)]
#[command(name = "cairn", version, about, propagate_version = true)]
pub struct Cli {
    /// Project root (default: the nearest ancestor of the current directory with .agentfs/).
    #[arg(long, global = true, value_name = "DIR")]
    pub project_root: Option<PathBuf>,
    /// Where cairn keeps workspaces, signals and logs (default: $CAIRN_HOME or the platform data dir).
    #[arg(long, global = true, value_name = "DIR")]
    pub cairn_home: Option<PathBuf>,
    /// Log debug details to $CAIRN_HOME/logs/cairn.log.
    #[arg(short, long, global = true)]
    pub verbose: bool,
    #[command(subcommand)]
    pub command: Cmd,
}

/// `cairn wrap state ...`.
#[derive(Debug, Subcommand)]
pub enum WrapSub {
    /// An agent CLI's copy-on-write state (`[wrap] state`): list, diff, apply, reset.
    State {
        #[command(subcommand)]
        cmd: crate::wrap::StateCmd,
    },
}

#[derive(Subcommand, Debug)]
pub enum Cmd {
    /// Create .agentfs/ and index the project into stable.db (a state Cairn did not make is set aside).
    Init { #[arg(long, help = "Keep the .agentfs/ found here as yours (a backup you restored, an older Cairn's)")] adopt: bool },
    /// Queue an agent; prints its id.
    Queue {
        /// A .pym path (file provider), code (inline) or a task (llm).
        reference: String,
        /// `file` (a .pym script), `inline` (the code itself) or `llm` (a task for the configured model); default: from the reference.
        #[arg(long, value_parser = parse_provider)]
        provider: Option<Provider>,
        /// low, normal, high or urgent.
        #[arg(long, default_value = "normal", value_parser = parse_priority)]
        priority: Priority,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Queue an agent with high priority; prints its id.
    Spawn {
        /// A .pym path (file provider), code (inline) or a task (llm).
        reference: String,
        /// `file` (a .pym script), `inline` (the code itself) or `llm` (a task for the configured model); default: from the reference.
        #[arg(long, value_parser = parse_provider)]
        provider: Option<Provider>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Run an agent now, in this process, to reviewing or errored; prints its id.
    Run {
        /// A .pym path (file provider), code (inline) or a task (llm).
        reference: String,
        /// `file` (a .pym script), `inline` (the code itself) or `llm` (a task for the configured model); default: from the reference.
        #[arg(long, value_parser = parse_provider)]
        provider: Option<Provider>,
        /// rustpython or cpython (wins over the script's header and [sandbox] interpreter).
        #[arg(long, value_parser = <Interpreter as std::str::FromStr>::from_str)]
        interpreter: Option<Interpreter>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// List agents, oldest first (active ones; --all for every one).
    ListAgents {
        /// Every agent, the ended ones too.
        #[arg(long)]
        all: bool,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Show one agent; without an id, the project: its agents by state, the pending proposals
    /// with their overlaps and a landing order, the jj integration.
    Status {
        /// Agent id (any unique prefix).
        id: Option<String>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        /// `tmux`: one short line for tmux's status line (`#(cairn status --format tmux)`).
        #[arg(long, value_parser = ["tmux"])]
        format: Option<String>,
    },
    /// Show an agent's proposal as a unified diff (`--since-review`: what changed since you
    /// last reviewed it).
    Diff {
        /// Agent id (any unique prefix).
        id: String,
        /// Only the changed paths with their added and removed line counts.
        #[arg(long)]
        stat: bool,
        /// What changed since you last reviewed it (its previous revision as you left it).
        #[arg(long)]
        since_review: bool,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Apply a reviewing agent's changes to the project.
    Accept {
        /// Agent id (any unique prefix).
        id: String,
        /// Overwrite paths changed in the project since the agent read them.
        #[arg(long)]
        force: bool,
    },
    /// Discard an agent's proposal (reviewing), cancel it (queued) or discard it (errored);
    /// `--reason` is sent to the agent by `cairn revise`.
    Reject {
        /// Agent id (any unique prefix).
        id: String,
        /// Why, for the agent (sent by `cairn revise`).
        #[arg(long)]
        reason: Option<String>,
    },
    /// Restore what accepting an agent changed.
    Undo {
        /// Agent id (any unique prefix).
        id: String,
    },
    /// Check the project's state: every database (SQLite quick_check) and the index against
    /// the tree. Read-only; exit 1 when anything is wrong.
    Doctor {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// MCP server on stdio: tasks, sessions and file tools for coding agents.
    Mcp {
        /// The identity recorded in provenance, fixed for the server's life (default: agent:<the client's name>-<a suffix of this instance>).
        #[arg(long)]
        actor: Option<String>,
    },
    /// Run an agent CLI (or any command) in a confined copy-on-write view of the project; what
    /// it writes becomes a proposal, reviewed like any agent's.
    ///
    /// The command sees the project (its writes land in the proposal), the system and what it
    /// runs (through env, nice, timeout, npx, ...: else refused) read-only, a home with only
    /// `[wrap] home` and its own state, a private, empty /tmp and /var/tmp (the host's, /var, /run,
    /// /srv, /mnt, other homes, $CAIRN_HOME hidden). See `:help cairn-wrap`, `cairn-wrap-programs`.
    #[command(subcommand_negates_reqs = true, args_conflicts_with_subcommands = true)]
    Wrap {
        #[command(subcommand)]
        state: Option<WrapSub>,
        /// The task's description (default: the command).
        #[arg(long)]
        task: Option<String>,
        /// Continue this wrap session's proposal (any unique prefix of its id).
        #[arg(long)]
        agent: Option<String>,
        /// `proxy` (its own network; allow_hosts through Cairn's proxy, host_ports), `none`
        /// (a loopback only) or `host` (the host's: an explicit opt-in). Default: `[wrap] network`.
        #[arg(long)]
        network: Option<String>,
        /// The command and its arguments (with --agent: default, the session's own, with the
        /// feedback `cairn revise` sent appended to its last argument).
        #[arg(last = true)]
        cmd: Vec<String>,
    },
    /// Run an ACP agent (Agent Client Protocol, on stdio) for an editor, confined as by `cairn
    /// wrap`; its writes become a proposal, reviewing when each prompt returns (:help cairn-acp).
    Acp(crate::acp::Args),
    /// Agent sessions from a shell: `exec` runs a command confined against a session's proposal.
    Session {
        #[command(subcommand)]
        cmd: crate::task_cli::SessionCmd,
    },
    /// Tasks: create, list, show, claim, transition, check, attest, note.
    Task {
        #[command(subcommand)]
        cmd: crate::task_cli::TaskCmd,
    },
    /// Print the event stream: state changes, tool calls, log lines, hunk decisions, undos.
    Events {
        /// Print events after this sequence number (0: from the start).
        #[arg(long, default_value_t = 0)]
        since: i64,
        /// Keep printing new events as they happen (until Ctrl-C).
        #[arg(long, short)]
        follow: bool,
        /// Only this agent's events (any prefix of its id).
        #[arg(long)]
        agent: Option<String>,
        /// JSON Lines: one object per event, with a `type` field.
        #[arg(long)]
        json: bool,
    },
    #[command(flatten)]
    Hunk(crate::hunk_cli::HunkCmd),
    #[command(flatten)]
    Review(crate::review_cli::ReviewCmd),
    #[command(flatten)]
    Orch(crate::orch_cli::OrchCmd),
    /// The project's .cairn.toml: `cairn config trust` lets its keys that reach your machine apply.
    Config { #[command(subcommand)] cmd: crate::config_cli::ConfigCmd },
    /// Open the agent's version in your editor, in a confined copy-on-write view (nothing copied);
    /// what you write there is thrown away unless --amend. A jj workspace preview prints its path.
    Preview {
        /// Agent id (any unique prefix).
        id: String,
        /// Open it in a tmux pane (a split of your window, or a session of the project's own).
        #[arg(long)]
        tmux: bool,
        /// The file to open (relative to the project root).
        #[arg(long)]
        file: Option<String>,
        /// The line to open the file at.
        #[arg(long)]
        line: Option<usize>,
        /// Run your $SHELL in the view instead of the editor.
        #[arg(long)]
        shell: bool,
        /// What you write joins the proposal as your amendment when the preview ends.
        #[arg(long)]
        amend: bool,
        /// Forward this port of the view's loopback to the host's 127.0.0.1 (repeat it; default: [preview] ports).
        #[arg(long = "port")]
        ports: Vec<u16>,
        /// The editor (default: nvim).
        #[arg(long)]
        editor: Option<String>,
    },
    /// Pre-flight check of an agent script: file:line:col diagnostics.
    Check {
        /// The .pym script.
        file: PathBuf,
        /// rustpython (default) or cpython; the script's header also chooses.
        #[arg(long, value_parser = <Interpreter as std::str::FromStr>::from_str)]
        interpreter: Option<Interpreter>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Remove old terminal agents and surplus workspaces.
    Gc,
    /// Search the project as indexed for a regex (as an agent's `search_content` does).
    Search {
        /// A regular expression (Rust syntax).
        pattern: String,
        /// Only under this directory.
        #[arg(default_value = "")]
        path: String,
        /// With this agent's proposal on top.
        #[arg(long)]
        agent: Option<String>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// RPC host for the Neovim plugin (msgpack-RPC on stdin/stdout).
    Nvim,
    /// The confined side of a run (see `cairn_core::runbox`).
    #[command(name = "__confine", hide = true)]
    Confine {},
    /// The diff editor Cairn gives `jj diffedit` (see `cairn_core::jj::editor`).
    #[command(name = "__jj-edit", hide = true)]
    JjEdit { plan: PathBuf, left: PathBuf, right: PathBuf },
    #[command(name = "__sandbox", hide = true)]
    Sandbox {
        /// Confine this process like a sandbox child and report what is still possible.
        #[arg(long)]
        selftest: bool,
        /// Without the runtime guards (the test switch of the syntax layer).
        #[arg(long)]
        no_guards: bool,
        /// Build the interpreter once, then fork a confined child per run (the pool's zygote).
        #[arg(long)]
        zygote: bool,
    },
}

fn parse_priority(s: &str) -> std::result::Result<Priority, String> {
    s.parse()
}

fn parse_provider(s: &str) -> std::result::Result<Provider, String> {
    s.parse()
}

/// Runs the CLI; returns the process exit code.
pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    if let Cmd::Sandbox { selftest, no_guards, zygote } = cli.command {
        use cairn_core::sandbox::child::Mode;
        let mode = if selftest { Mode::SelfTest } else if zygote { Mode::Zygote } else { Mode::Run };
        return cairn_core::sandbox::child::main(mode, !no_guards);
    }
    if let Cmd::Confine {} = &cli.command {
        return cairn_core::runbox::enter::main();
    }
    if let Cmd::JjEdit { plan, left, right } = &cli.command {
        return cairn_core::jj::editor::tool_main(plan, left, right);
    }
    let home = cairn_home(cli.cairn_home.as_deref());
    crate::logging::init(&home, cli.verbose);
    let code = run(cli, &home).unwrap_or_else(|e| {
        render_error(&e);
        e.exit_code()
    });
    // A confined run's tear-down may still go on: its cgroup and directory go before we do.
    cairn_core::runbox::settle();
    code
}

pub use crate::render::render_error;

fn run(cli: Cli, home: &Path) -> Result<i32> {
    let root = cli.project_root.as_deref();
    let (cmd, json) = match cli.command {
        // Handled by `main` before logging starts.
        Cmd::Sandbox { .. } | Cmd::Confine { .. } | Cmd::JjEdit { .. } => return Ok(0),
        Cmd::Nvim => return crate::host::run(open_project(root, home, false)?).map(|_| 0),
        Cmd::Orch(cmd) => return crate::orch_cli::run(opened(root, home)?, cmd),
        Cmd::Config { cmd } => return crate::config_cli::run(root, home, cmd),
        Cmd::Doctor { json } => return Ok(crate::render::doctor(&cairn_core::doctor::run(&open_project(root, home, false)?)?, json)),
        Cmd::Events { since, follow, agent, json } => return crate::stream::run(&opened(root, home)?, since, follow, json, agent.as_deref()).map(|_| 0),
        Cmd::Task { cmd } => return crate::task_cli::run(&opened(root, home)?, cmd),
        Cmd::Session { cmd } => return crate::task_cli::session(&opened(root, home)?, cmd),
        Cmd::Wrap { state: Some(WrapSub::State { cmd }), .. } => return crate::wrap::state(&opened(root, home)?, cmd),
        Cmd::Wrap { state: None, task, agent, network, cmd } => return crate::wrap::run(&opened(root, home)?, task, agent, network, cmd),
        Cmd::Acp(args) => return crate::acp::run(&opened(root, home)?, args),
        Cmd::Mcp { actor } => return crate::mcp::run(opened(root, home)?, actor).map(|_| 0),
        Cmd::Check { file, interpreter, json } => {
            let out = command::execute_check(&file, interpreter)?;
            return Ok(crate::render::check(&out, json));
        }
        Cmd::Init { adopt } => (if adopt { cairn_core::origin::mark(&open_project(root, home, true)?.root).map(|()| Command::Init)? } else { Command::Init }, false),
        Cmd::Queue { reference, provider, priority, json } => (Command::Queue { reference, provider, priority, key: None }, json),
        Cmd::Spawn { reference, provider, json } => (Command::Queue { reference, provider, priority: Priority::High, key: None }, json),
        Cmd::Run { reference, provider, interpreter, json } => (Command::Run { reference, provider, interpreter }, json),
        Cmd::ListAgents { all, json } => (Command::ListAgents { all }, json),
        Cmd::Status { format: Some(_), .. } => return crate::render::status_line(&opened(root, home)?),
        Cmd::Status { id: Some(id), json, .. } => (Command::Status { id }, json),
        Cmd::Status { id: None, json, .. } => return crate::render::overview(&command::overview(&opened(root, home)?)?, json),
        Cmd::Diff { id, stat, since_review, json } => (Command::Diff { id, stat, since_review }, json),
        Cmd::Review(cmd) => crate::review_cli::command(cmd)?,
        Cmd::Accept { id, force } => (Command::Accept { id, force }, false),
        Cmd::Reject { id, reason } => (Command::Reject { id, reason }, false),
        Cmd::Undo { id } => (Command::Undo { id }, false),
        Cmd::Preview { id, tmux, file, line, shell, amend, ports, editor } => {
            let project = open_project(root, home, false)?;
            return crate::preview::run(&project, &id, crate::preview::Args { tmux, file, line, shell, amend, ports, editor });
        }
        Cmd::Gc => (Command::Gc, false),
        Cmd::Search { pattern, path, agent, json } => (Command::Search { pattern, under: path, agent }, json),
        Cmd::Hunk(cmd) => crate::hunk_cli::command(cmd, || open_project(root, home, false))?,
    };
    let is_init = cmd == Command::Init;
    let project = open_project(root, home, is_init)?;
    if !is_init {
        project.ensure_initialized()?;
    }
    let out = command::execute(&project, cmd)?;
    if json {
        match &out {
            Output::Agents { agents, .. } => crate::render::print_json(agents)?,
            Output::Agent(s) | Output::Status(s) => crate::render::print_json(s)?,
            other => crate::render::print_json(other)?,
        }
        return Ok(match &out {
            Output::Agent(s) if s.state == State::Errored => 1,
            _ => 0,
        });
    }
    Ok(crate::render::output(&project, &out))
}

