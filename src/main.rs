//! The `cairn` binary: everything lives in the `cairn` (edges) and `cairn_core` libraries; this
//! only installs the allocator and maps to an exit code.

/// The counting allocator, declared here and nowhere else: the sandbox child (this binary as
/// `cairn __sandbox`) arms it with the run's heap cap, past which it answers `memory` on the
/// protocol pipe and aborts, so the cap holds even against a script that catches MemoryError.
/// In every other mode of the binary it only counts. Tests and benches link the libraries
/// without it and keep the system allocator.
#[global_allocator]
static ALLOC: cairn_core::sandbox::child::alloc::Counting = cairn_core::sandbox::child::alloc::Counting;

fn main() {
    std::process::exit(cairn::cli::main());
}
