//! The sandbox: agent scripts run in rustpython-vm inside a child process (the same `cairn`
//! binary in the hidden `__sandbox` mode) that reaches the host only through the external
//! functions, forwarded as JSON lines over its stdin/stdout.
//!
//! Parent side:
//! - [`policy`]: what a script may name (one set of rules for the check and the guards);
//! - [`script`]: pre-flight check and the async/await transform;
//! - [`protocol`]: the messages on the pipe;
//! - [`spawn`]: the one way a child is started (runs, the pool, the self-test);
//! - [`runner`]: runs a script in a child, serves its calls;
//! - [`watchdog`]: kills a run at its wall clock, or when its agent was rejected meanwhile;
//! - [`pool`]: ready children for long-running processes, forked by a [`zygote`].
//!
//! Child side: [`child`] (the interpreter, its modules and guards, confinement, the counting
//! allocator).
//!
//! Architecture invariant: the child owns no storage and no path; everything it learns comes
//! through [`crate::externals::Host::call`].

pub mod child;
mod cpython;
pub mod interpreter;
pub mod policy;
pub mod pool;
pub mod protocol;
pub mod runner;
pub mod script;
mod serve;
pub mod spawn;
pub mod stdlib;
mod watchdog;
pub mod zygote;
