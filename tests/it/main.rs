//! Integration tests, one binary (so the interpreter links once). Each module owns one area;
//! every test gets a fresh project and CAIRN_HOME in a temp dir through [`support::Fixture`].

mod support;

mod agents_mcp;
mod architecture;
mod budgets;
mod cli;
mod config_gc;
mod corpus;
mod crash;
mod events;
mod externals;
mod fidelity;
mod fuzz;
mod hashline;
mod jj;
mod jj_changes;
mod invariants;
mod library;
mod lifecycle;
mod mcp;
mod mcp_tools;
mod protected;
mod pyfiles;
mod review;
mod runs;
mod llm;
mod sandbox;
mod scarce;
mod sessions;
mod sessions_kill;
mod signals;
mod stall;
mod state;
mod tasks;
mod watcher;
mod wrap;
