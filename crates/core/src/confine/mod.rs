//! What every confinement room shares (the sandbox child's, and `runbox`'s for runs,
//! checks, `cairn wrap` and previews): the seccomp tables ([`filter`]). The rooms themselves
//! are [`crate::sandbox::child::confine`] (a process that confines itself before it runs a
//! script) and [`crate::runbox`] (a view of the system built for a command).

pub mod filter;
