//! The child's import system: an interpreter with the frozen standard library of
//! [`crate::sandbox::stdlib`], and one `__import__` gate in front of the bootstrap importer.
//!
//! Only the sandbox's library can be imported: [`stdlib::PUBLIC`] and the helpers those
//! modules import ([`stdlib::FROZEN`], [`stdlib::OWN`], [`stdlib::NATIVE`], [`VM_INTERNAL`]).
//! A script's own `import sys` (made from its globals) gets a small restricted module, and
//! `grail` the externals. The static check limits scripts to [`stdlib::PUBLIC`]; at run time
//! the helpers stay reachable from a script's frame because native code imports on its
//! behalf (`str.encode` loads `_pycodecs`, `time.strptime` loads `_strptime`). Every module
//! is frozen or native, loaded on first import, and none reaches the host: the child is
//! confined before any script runs, so this gate keeps the surface small and the errors
//! clear rather than being the boundary.

use crate::sandbox::stdlib;
use rustpython_vm::builtins::PyDictRef;
use rustpython_vm::frozen::FrozenLib;
use rustpython_vm::function::FuncArgs;
use rustpython_vm::{AsObject, Interpreter, PyObjectRef, PyResult, Settings, VirtualMachine};
use std::cell::Cell;

/// Bytecode compiled by `build.rs`.
static FROZEN: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/stdlib.frozen"));

/// Native modules of `rustpython-vm` that library code may import.
const VM_INTERNAL: &[&str] = &[
    "_abc", "_ast", "_codecs", "_collections", "_functools", "_io", "_operator", "_sre", "_stat", "_string",
    "_thread", "_typing", "_types", "_warnings", "_weakref", "builtins", "errno", "itertools", "sys", "time",
    "_frozen_importlib",
];

/// An interpreter with the sandbox's native modules and frozen library registered (none
/// of them loaded yet).
pub fn interpreter(settings: Settings) -> Interpreter {
    let builder = Interpreter::builder(settings);
    let natives: Vec<_> = rustpython_stdlib::stdlib_module_defs(&builder.ctx)
        .into_iter()
        .filter(|def| stdlib::NATIVE.contains(&def.name.as_str()))
        .collect();
    builder.add_native_modules(&natives).add_frozen_modules(FrozenLib::from_ref(FROZEN)).build()
}

/// True for a name library code may import.
fn internal(top: &str) -> bool {
    stdlib::PUBLIC.contains(&top)
        || stdlib::NATIVE.contains(&top)
        || VM_INTERNAL.contains(&top)
        || stdlib::OWN.contains(&top)
        || stdlib::FROZEN.iter().any(|m| m.split('.').next() == Some(top))
}

/// The message for a module a script cannot import.
pub fn unavailable(name: &str) -> String {
    format!("No module named '{name}' in the sandbox (available: {})", stdlib::PUBLIC.join(", "))
}

/// Hooks run once, after the first import that loads their module.
pub struct AfterImport {
    pub module: &'static str,
    pub hook: fn(&VirtualMachine, &PyObjectRef) -> PyResult<()>,
}

/// Installs the `__import__` gate on the interpreter's builtins. `script` is the globals of
/// the agent script; `special` maps names a script gets instead of the library's (`grail`,
/// the restricted `sys`).
pub fn install_gate(vm: &VirtualMachine, script: PyDictRef, special: Vec<(&'static str, PyObjectRef)>, after: Vec<AfterImport>) -> PyResult<()> {
    let delegate = vm.import_func.clone();
    let done: Vec<Cell<bool>> = after.iter().map(|_| Cell::new(false)).collect();
    // Hooks run when the outermost import returns: inner ones may see a module half loaded.
    let depth = Cell::new(0usize);
    let gate = vm.new_function("__import__", move |args: FuncArgs, vm: &VirtualMachine| -> PyResult {
        let name = match args.args.first() {
            Some(n) => n.str(vm)?.to_string(),
            None => return Err(vm.new_type_error("__import__() missing required argument 'name' (pos 1)")),
        };
        let level = match args.args.get(4).or_else(|| args.kwargs.get("level")) {
            Some(l) => l.try_to_value::<i64>(vm)?,
            None => 0,
        };
        let from_script = args.args.get(1).or_else(|| args.kwargs.get("globals")).is_some_and(|g| g.is(&script));
        let top = name.split('.').next().unwrap_or_default().to_string();
        if from_script {
            if level > 0 {
                return Err(vm.new_import_error("attempted relative import in an agent script", vm.ctx.new_str(name)));
            }
            if let Some((_, m)) = special.iter().find(|(n, _)| *n == top) {
                return Ok(m.clone());
            }
        } else if name == "__main__" && level == 0 {
            // The script's own module, for the library (pickle, inspect) as for the script.
            if let Some((_, m)) = special.iter().find(|(n, _)| *n == "__main__") {
                return Ok(m.clone());
            }
        }
        if level == 0 && !internal(&top) {
            return Err(not_found(vm, &name));
        }
        depth.set(depth.get() + 1);
        let module = delegate.call(args, vm);
        depth.set(depth.get() - 1);
        let module = module?;
        if depth.get() > 0 {
            return Ok(module);
        }
        for (hook, flag) in after.iter().zip(&done) {
            if !flag.get() {
                if let Some(m) = loaded(vm, hook.module)? {
                    flag.set(true);
                    (hook.hook)(vm, &m)?;
                }
            }
        }
        Ok(module)
    });
    vm.builtins.set_attr("__import__", gate, vm)?;
    Ok(())
}

fn not_found(vm: &VirtualMachine, name: &str) -> rustpython_vm::builtins::PyBaseExceptionRef {
    let exc = vm.new_exception_msg(vm.ctx.exceptions.module_not_found_error.to_owned(), unavailable(name).into());
    let _ = exc.as_object().set_attr("name", vm.ctx.new_str(name), vm);
    exc
}

/// The module `name` if an import has loaded it.
pub fn loaded(vm: &VirtualMachine, name: &str) -> PyResult<Option<PyObjectRef>> {
    let modules = vm.sys_module.get_attr("modules", vm)?;
    Ok(modules.get_item(name, vm).ok())
}
