//! The orchestrator's subcommands: `cairn up` (workers, watcher, signal files in the
//! foreground), `cairn start` (held agents start), `cairn signals --once` (take the pending
//! signal files once and exit). clap's side and the printing; the work is the core's.

use cairn_core::error::{Error, Result};
use cairn_core::lifecycle::Provider;
use cairn_core::project::Project;
use clap::Subcommand;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

#[derive(Subcommand, Debug)]
pub enum OrchCmd {
    /// Run the orchestrator in the foreground: workers, file watcher, signal files.
    Up {
        /// The provider of work queued without one (signal files): file, inline or llm.
        #[arg(long, value_parser = parse_provider)]
        provider: Option<Provider>,
    },
    /// Let agents held by `[orchestrator] auto_spawn = false` start: all of them, or one.
    Start {
        /// Agent id (any unique prefix).
        id: Option<String>,
    },
    /// Take the pending signal files of $CAIRN_HOME/signals/ (for signal_polling = false).
    Signals {
        /// Take them once and exit (the only mode: a running `cairn up` polls by itself).
        #[arg(long)]
        once: bool,
    },
}

fn parse_provider(s: &str) -> std::result::Result<Provider, String> {
    cairn_core::providers::parse(s).map_err(|e| e.to_string())
}

/// Runs one of them on `project` (opened and initialized); the exit code.
pub fn run(mut project: Project, cmd: OrchCmd) -> Result<i32> {
    match cmd {
        OrchCmd::Up { provider } => {
            if let Some(p) = provider {
                project.config.orchestrator.default_provider = p.to_string();
            }
            up(&project).map(|_| 0)
        }
        OrchCmd::Start { id } => {
            let id = id.map(|i| cairn_core::command::resolve(&project, &i)).transpose()?;
            let started = cairn_core::orchestrator::start(&project, id.as_deref())?;
            match (started.is_empty(), id) {
                (true, Some(id)) => return Err(Error::Usage(format!("agent {id} is not held (only agents queued with auto_spawn = false wait for cairn start)"))),
                (true, None) => outln!("no agent was waiting to start"),
                _ => outln!("started {}", started.join(", ")),
            }
            Ok(0)
        }
        OrchCmd::Signals { .. } => {
            let handled = crate::signals::poll(&project);
            let mut failed = 0;
            for h in &handled {
                match &h.outcome {
                    Ok(_) => outln!("{}: done", cairn_core::display::escape(&h.name)),
                    Err(e) => {
                        failed += 1;
                        outln!("{}: failed: {} (moved to signals/failed/)", cairn_core::display::escape(&h.name), cairn_core::display::escape(e));
                    }
                }
            }
            if handled.is_empty() {
                outln!("no signal files pending in {}", project.home.signals().display());
            }
            Ok(i32::from(failed > 0))
        }
    }
}

/// `cairn up`: workers, the watcher and signal polling until SIGINT or SIGTERM.
fn up(project: &Project) -> Result<()> {
    let _only = crate::daemon::one_up(project)?;
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&stop)).map_err(|e| Error::io("signal handler", e))?;
    }
    errln!("cairn: serving {} (Ctrl-C to stop)", project.root.display());
    crate::daemon::services(project, &stop, &|line| errln!("cairn: {line}"), &Default::default())
}
