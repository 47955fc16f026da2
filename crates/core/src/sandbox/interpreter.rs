//! Which Python runs an agent script: RustPython in the sandbox child (the default), or the
//! host's CPython inside a confined run workspace ([`super::cpython`]). One choice, made in one
//! place: `cairn run --interpreter` wins, then the script's header comment
//! (`# cairn: interpreter=cpython` in its first lines), then `[sandbox] interpreter`.

use super::script::{self, Diagnostic};
pub use crate::config::Interpreter;
use crate::config::Sandbox;

/// Lines at the top of a script where the header comment is looked for.
const HEADER_LINES: usize = 5;

/// The interpreter the script's header names (`# cairn: interpreter=NAME`), if any. Only
/// comment lines (and blank ones) at the top are read.
pub fn header(source: &str) -> Option<Interpreter> {
    for line in source.lines().take(HEADER_LINES) {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let comment = line.strip_prefix('#')?.trim();
        if let Some(rest) = comment.strip_prefix("cairn:") {
            for setting in rest.split([',', ' ']).filter(|s| !s.is_empty()) {
                if let Some(value) = setting.strip_prefix("interpreter=") {
                    return value.trim().parse().ok();
                }
            }
        }
    }
    None
}

/// The interpreter `source` runs on under `config`.
pub fn choose(source: &str, config: &Sandbox) -> Interpreter {
    config.interpreter_flag.or_else(|| header(source)).unwrap_or(config.interpreter)
}

/// The pre-flight check for `interp`: RustPython's whole check (syntax, the import policy,
/// names, the externals' arguments); for CPython, syntax and the externals' arguments only
/// (the OS boundary confines what CPython can reach, not an import policy).
pub fn check(source: &str, interp: Interpreter) -> Vec<Diagnostic> {
    match interp {
        Interpreter::Rustpython => script::check(source),
        Interpreter::Cpython => script::check_cpython(source),
    }
}

/// The interpreter `source` runs on under `config`, and its pre-flight check's findings (none
/// when the syntax layer is off).
pub fn pre_flight(source: &str, config: &Sandbox) -> (Interpreter, Vec<Diagnostic>) {
    let interp = choose(source, config);
    (interp, if config.syntax_layer { check(source, interp) } else { Vec::new() })
}

/// The source the interpreter gets, the same script for both: RustPython's without `async`
/// and `await`, CPython's without `async` and with each `await x` a call that gives the same
/// value (a library's real awaitable run to its end); the last expression captured in both.
pub fn prepare(source: &str, interp: Interpreter) -> Result<String, Diagnostic> {
    match interp {
        Interpreter::Rustpython => script::transform(source),
        Interpreter::Cpython => script::transform_cpython(source),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_is_read_from_the_first_comment_lines() {
        assert_eq!(header("# cairn: interpreter=cpython\nx = 1\n"), Some(Interpreter::Cpython));
        assert_eq!(header("#!/usr/bin/env python3\n\n# cairn: interpreter=rustpython\n"), Some(Interpreter::Rustpython));
        assert_eq!(header("x = 1\n# cairn: interpreter=cpython\n"), None);
        assert_eq!(header("# cairn: interpreter=jython\n"), None);
    }
}
