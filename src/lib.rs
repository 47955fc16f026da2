//! The edges of Cairn: everything that talks to a user, a terminal, the environment or another
//! program, over the engine in [`cairn_core`] (which does none of that).
//!
//! - [`cli`]: the `cairn` command line (clap); `open` is the one place that resolves
//!   `CAIRN_HOME`, the configuration layers and the project root from the environment;
//!   `render` shows outputs;
//! - [`daemon`]: the loop of a long-running process (`cairn up`, the Neovim host): recovery,
//!   the watcher, signal files and the worker pool;
//! - [`config_cli`]: `cairn config trust`, the user vouching for a project's `.cairn.toml`;
//! - [`signals`]: signal files dropped by shells, parsed into commands;
//! - [`stream`]: `cairn events`, the event stream on stdout;
//! - [`task_cli`]: `cairn task`, the task graph, and `cairn session exec`;
//! - [`wrap`]: `cairn wrap`, an agent CLI confined, its writes a proposal;
//! - [`acp`]: `cairn acp`, an ACP agent confined between an editor and its proposal;
//! - [`host`]: `cairn nvim`, the msgpack-RPC host of the Neovim plugin;
//! - [`mcp`]: `cairn mcp`, the MCP server (rmcp) for coding agents;
//! - [`tmux`]: the preview split;
//! - [`logging`]: `tracing` to `$CAIRN_HOME/logs/`.
//!
//! Architecture invariant: `cairn_core` never imports this crate; every operation is a
//! `cairn_core::command::Command` run through `cairn_core::command::execute`.
#![deny(unsafe_code)]

/// `println!` that never panics: a closed pipe (`cairn list-agents | head`) is not an error.
macro_rules! outln {
    ($($arg:tt)*) => {{ let _ = std::io::Write::write_fmt(&mut std::io::stdout().lock(), format_args!("{}\n", format_args!($($arg)*))); }};
}

/// `eprintln!` that never panics (stderr may be closed, as under `jobstart`).
macro_rules! errln {
    ($($arg:tt)*) => {{ let _ = std::io::Write::write_fmt(&mut std::io::stderr().lock(), format_args!("{}\n", format_args!($($arg)*))); }};
}

pub mod acp;
pub mod cli;
pub mod config_cli;
pub mod daemon;
pub mod stream;
pub mod task_cli;
pub mod host;
pub mod logging;
pub mod mcp;
mod open;
pub mod preview;
mod relay;
mod render;
pub mod hunk_cli;
pub mod review_cli;
pub mod orch_cli;
pub mod signals;
pub mod tmux;
pub mod wrap;

pub use cairn_core::*;
