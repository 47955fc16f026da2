//! Cairn: AI-written agent code proposes changes to a project without touching it.
//!
//! Modules in reading order: the data ([`paths`], [`config`], [`lifecycle`], [`store`]), the
//! mirror ([`sync`], [`watcher`]), the agent side ([`view`], [`externals`], [`sandbox`],
//! [`providers`], [`llm`]), the flow ([`orchestrator`], [`review`], [`workspace`], [`gc`]), and
//! the surfaces that all go through [`command`]: [`cli`], [`signals`], [`host`], [`tmux`].
#![deny(unsafe_code)]

pub mod error;
pub mod time;
pub mod paths;
pub mod config;
pub mod lifecycle;
pub mod project;
pub mod store;
pub mod sync;
pub mod watcher;
pub mod view;
pub mod externals;
pub mod sandbox;
pub mod providers;
pub mod llm;
pub mod orchestrator;
pub mod review;
pub mod workspace;
pub mod gc;
pub mod command;
pub mod signals;
pub mod tmux;
pub mod host;
pub mod logging;
pub mod cli;

pub use error::{Error, Result};
