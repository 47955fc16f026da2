//! `cairn-confine`: the confined side of a run, a wrap session or a preview
//! ([`cairn_core::runbox::enter`]) as a binary of its own. It links none of the interpreter, so
//! starting it costs a fraction of `cairn __confine` (the same entry point, kept for a `cairn`
//! installed without this file beside it).

fn main() {
    std::process::exit(cairn_core::runbox::enter::main());
}
