//! The sandbox: agent scripts run in rustpython-vm inside a child process (the same `cairn`
//! binary in the hidden `__sandbox` mode) that reaches the host only through the external
//! functions, forwarded as JSON lines over its stdin/stdout.
//!
//! - [`script`]: pre-flight check and the async/await transform (parent side).
//! - [`protocol`]: the messages on the pipe.
//! - [`child`]: the interpreter side (runs in the child).
//! - [`runner`]: the parent side: spawns the child, serves calls, enforces the wall clock.
//!
//! Architecture invariant: the child owns no storage and no path; everything it learns comes
//! through [`crate::externals::Host::call`].

pub mod alloc;
pub mod child;
pub mod confine;
pub mod policy;
pub mod protocol;
pub mod pymods;
pub mod runner;
pub mod script;
