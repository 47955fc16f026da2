//! Freezes the sandbox's Python standard library: compiles the modules listed in
//! `src/sandbox/stdlib.rs` (the same file the library compiles) (CPython's sources from the `rustpython-pylib` crate, and Cairn's
//! own stand-ins in `src/sandbox/child/py/`) to bytecode, written to `$OUT_DIR/stdlib.frozen`.

use rustpython_compiler::{compile, CompileOpts, Mode};
use rustpython_compiler_core::frozen::{FrozenCodeObject, FrozenLib, FrozenModule};
use std::path::{Path, PathBuf};

#[allow(dead_code)]
#[path = "src/sandbox/stdlib.rs"]
mod stdlib;

fn source_of(root: &Path, name: &str) -> (PathBuf, bool) {
    let base = root.join(name.replace('.', "/"));
    let package = base.join("__init__.py");
    if package.is_file() {
        (package, true)
    } else {
        (base.with_extension("py"), false)
    }
}

fn main() {
    let lib = PathBuf::from(rustpython_pylib::LIB_PATH);
    let own = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR")).join("src/sandbox/child/py");
    println!("cargo:rerun-if-changed=src/sandbox/stdlib.rs");
    println!("cargo:rerun-if-changed=src/sandbox/child/py");
    let mut compiled: Vec<(String, Vec<u8>, bool)> = Vec::new();
    let sources = stdlib::FROZEN.iter().map(|n| (lib.as_path(), *n)).chain(stdlib::OWN.iter().map(|n| (own.as_path(), *n)));
    for (root, name) in sources {
        let (path, package) = source_of(root, name);
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
        let code = compile(&text, Mode::Exec, &format!("<frozen {name}>"), CompileOpts::default())
            .unwrap_or_else(|e| panic!("compiling {}: {e}", path.display()));
        compiled.push((name.to_string(), FrozenCodeObject::encode(&code).bytes, package));
    }
    let lib = FrozenLib::encode(compiled.iter().map(|(n, b, p)| (n.as_str(), FrozenModule { code: FrozenCodeObject { bytes: b.as_slice() }, package: *p })));
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("stdlib.frozen");
    std::fs::write(&out, lib.bytes).unwrap_or_else(|e| panic!("writing {}: {e}", out.display()));
}
