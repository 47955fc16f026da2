//! The `cairn` binary: everything lives in the library; this only maps to an exit code.
fn main() {
    std::process::exit(cairn::cli::main());
}
