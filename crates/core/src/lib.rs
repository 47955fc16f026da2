//! Cairn's engine: AI-written agent code proposes changes to a project without touching it.
//!
//! This crate is the core: it reads no environment, prints nothing and knows no frontend
//! (no clap, nvim-rs, rmcp, tokio or tracing-subscriber). Every input is an argument: the
//! edges in the `cairn` package (CLI, Neovim host, signal files, tmux, the daemon loop)
//! resolve `CAIRN_HOME`, the configuration layers and the binary path and pass them in.
//!
//! Modules in reading order: the data ([`paths`], [`config`], [`lifecycle`], [`project`],
//! [`origin`], [`store`]), the mirror ([`sync`], [`watcher`], [`index`]), the agent side ([`view`],
//! [`externals`], [`sandbox`], [`providers`], [`llm`]), the flow ([`orchestrator`],
//! [`review`], [`workspace`], [`gc`]) and the one command model every edge goes through
//! ([`command`]), and [`display`] (agent text made safe to show).
#![deny(unsafe_code)]

#[macro_use]
mod macros;

pub mod error;
pub mod time;
pub mod par;
pub mod paths;
pub mod config;
pub mod lifecycle;
pub mod events;
pub mod bell;
pub mod project;
pub mod origin;
pub mod store;
pub mod sync;
pub mod tasks;
pub mod watcher;
pub mod index;
pub mod view;
pub mod search;
pub mod externals;
pub mod hashline;
pub mod confine;
pub mod sandbox;
pub mod runbox;
pub mod wrap;
pub mod acp;
pub mod providers;
pub mod llm;
pub mod orchestrator;
pub mod review;
pub mod jj;
pub mod workspace;
pub mod gc;
pub mod command;
pub mod display;
pub mod doctor;

pub use error::{Error, Result};
