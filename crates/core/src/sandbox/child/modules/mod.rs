//! What a script finds in the sandbox besides the externals: the standard library behind
//! the import gate ([`imports`]), the restricted `sys` and the log streams ([`sys`]), the
//! host's clock and random seed ([`clock`]), and the runtime guards on `getattr`, `hasattr`,
//! `setattr`, `delattr` and `str.format`/`format_map` that apply [`super::policy`] to names
//! only known at run time.
//!
//! A script runs with its own builtins (a guarded copy without the forbidden names); library
//! code keeps the interpreter's builtins, which it needs (`dataclasses` and `namedtuple`
//! build code with `exec`).

pub mod clock;
pub mod fidelity;
pub mod imports;
pub mod sys;
pub mod text;

use crate::sandbox::policy::{self, FORBIDDEN_BUILTINS};
use rustpython_vm::builtins::PyDictRef;
use rustpython_vm::compiler::Mode;
use rustpython_vm::function::{FuncArgs, OptionalArg};
use rustpython_vm::{PyObjectRef, PyResult, VirtualMachine};

/// Builtins removed from the interpreter altogether (library code needs none of them).
const REMOVED_EVERYWHERE: &[&str] = &["input", "breakpoint", "help"];

/// The built-in `open`: the project's files through the externals (`_cairnfs`, imported on
/// first use: it reads the run's inputs).
fn open_file(args: FuncArgs, vm: &VirtualMachine) -> PyResult {
    let fs = vm.import("_cairnfs", 0)?;
    fs.get_attr("open", vm)?.call(args, vm)
}

/// Sets up the modules and the script's namespace; returns the script's globals.
/// `grail` is the module of externals; `guards` is false only under the test switch of the
/// syntax layer.
pub fn install(vm: &VirtualMachine, grail: PyObjectRef, guards: bool) -> PyResult<PyDictRef> {
    let real = vm.builtins.dict();
    for name in REMOVED_EVERYWHERE {
        if real.get_item_opt(*name, vm)?.is_some() {
            real.del_item(*name, vm)?;
        }
    }
    real.set_item("open", vm.new_function("open", open_file).into(), vm)?;
    fidelity::install(vm)?;
    // `sum()` of floats as CPython 3.12+ (compensated), `round()` of floats as CPython (the
    // exact value, half to even) and `chr()`'s overflow, over the interpreter's own for the rest.
    let index = vm.import("operator", 0)?.get_attr("index", vm)?;
    let natives = [("_sum", real.get_item("sum", vm)?), ("_round", real.get_item("round", vm)?), ("_index", index), ("_chr", real.get_item("chr", vm)?)];
    let numbers = module_from_source(vm, "_cairn_sum", include_str!("../py/_cairn_sum.py"), &natives)?;
    real.set_item("sum", numbers.get_attr("sum", vm)?, vm)?;
    real.set_item("round", numbers.get_attr("round", vm)?, vm)?;
    real.set_item("chr", numbers.get_attr("chr", vm)?, vm)?;
    let restricted_sys = sys::install(vm)?;
    // `exit()` and `quit()` are `sys.exit`: they end the script (0 or None: successfully).
    let sys_exit = restricted_sys.get_attr("exit", vm)?;
    real.set_item("exit", sys_exit.clone(), vm)?;
    real.set_item("quit", sys_exit, vm)?;
    let script_builtins = vm.ctx.new_dict();
    for (k, v) in real.clone() {
        script_builtins.set_item(&*k, v, vm)?;
    }
    let globals = vm.ctx.new_dict();
    globals.set_item("__builtins__", script_builtins.clone().into(), vm)?;
    globals.set_item("__name__", vm.ctx.new_str("__main__").into(), vm)?;
    // The script is `__main__` for whoever imports it (pickle finding a class it defined).
    let main = vm.new_module("__main__", globals.clone(), None);
    vm.sys_module.get_attr("modules", vm)?.set_item("__main__", main.clone().into(), vm)?;
    let special = vec![("grail", grail), ("sys", restricted_sys), ("__main__", main.into())];
    let after = vec![
        imports::AfterImport { module: "random", hook: clock::seed_random },
        imports::AfterImport { module: "time", hook: clock::patch_time },
        imports::AfterImport { module: "re", hook: text::patch_re },
        imports::AfterImport { module: "math", hook: fidelity::patch_math },
    ];
    imports::install_gate(vm, globals.clone(), special, after)?;
    script_builtins.set_item("__import__", real.get_item("__import__", vm)?, vm)?;
    // Registers the codec search function, so every codec name and alias resolves.
    vm.import("encodings", 0)?;
    if guards {
        install_guards(vm, &script_builtins)?;
        for name in FORBIDDEN_BUILTINS {
            if *name != "__import__" && script_builtins.get_item_opt(*name, vm)?.is_some() {
                script_builtins.del_item(*name, vm)?;
            }
        }
    }
    Ok(globals)
}

/// Runs trusted prelude code in a fresh module namespace with `natives` bound.
pub fn module_from_source(vm: &VirtualMachine, name: &str, source: &str, natives: &[(&'static str, PyObjectRef)]) -> PyResult<PyObjectRef> {
    let scope = vm.new_scope_with_builtins();
    for (n, f) in natives {
        scope.globals.set_item(*n, f.clone(), vm)?;
    }
    let code = vm
        .compile(source, Mode::Exec, format!("<{name}>"))
        .map_err(|e| vm.new_runtime_error(format!("{name} prelude: {e}")))?;
    vm.run_code_obj(code, scope.clone())?;
    Ok(vm.new_module(name, scope.globals.clone(), None).into())
}

// ---------------------------------------------------------------- guards

/// Replaces `getattr`, `hasattr`, `setattr`, `delattr` with versions that refuse the attribute
/// names the static policy refuses, and wraps `str.format` / `str.format_map`.
pub fn install_guards(vm: &VirtualMachine, builtins: &PyDictRef) -> PyResult<()> {
    for name in ["getattr", "hasattr", "setattr", "delattr"] {
        let original = builtins.get_item(name, vm)?;
        let guarded = vm.new_function(name, move |args: FuncArgs, vm: &VirtualMachine| -> PyResult {
            if let Some(attr) = args.args.get(1) {
                if let Ok(s) = attr.str(vm) {
                    if let Some(why) = policy::attribute_refusal(&s.to_string_lossy()) {
                        return Err(vm.new_attribute_error(why));
                    }
                }
            }
            original.call(args, vm)
        });
        builtins.set_item(name, guarded.into(), vm)?;
    }
    let str_type = vm.ctx.types.str_type;
    for name in ["format", "format_map"] {
        let interned = vm.ctx.intern_str(name);
        let Some(original) = str_type.get_attr(interned) else { continue };
        // A method descriptor, so that `"...".format(x)` binds the template as self.
        let guarded = vm.new_method(name, str_type, move |args: FuncArgs, vm: &VirtualMachine| -> PyResult {
            if let Some(template) = args.args.first().and_then(|t| t.downcast_ref::<rustpython_vm::builtins::PyStr>()) {
                if let Some(why) = policy::format_refusal(&template.to_string_lossy()) {
                    return Err(vm.new_value_error(why));
                }
            }
            original.call(args, vm)
        });
        str_type.set_attr(interned, guarded.into());
    }
    Ok(())
}

/// The arguments of `Input`, positional or by keyword as documented.
#[derive(rustpython_vm::FromArgs)]
struct InputArgs {
    #[pyarg(any)]
    name: String,
    #[pyarg(any, optional)]
    default: OptionalArg<PyObjectRef>,
}

/// Values for `Input(name, default=None)`.
pub fn input_fn(vm: &VirtualMachine, inputs: &'static std::sync::OnceLock<serde_json::Map<String, serde_json::Value>>) -> PyObjectRef {
    vm.new_function("Input", move |InputArgs { name, default }: InputArgs, vm: &VirtualMachine| -> PyResult {
        match inputs.get().and_then(|m| m.get(&name)) {
            Some(v) => rustpython_vm::py_serde::deserialize(vm, v.clone()).map_err(|e| vm.new_value_error(e.to_string())),
            None => Ok(default.unwrap_or_none(vm)),
        }
    })
    .into()
}

/// An optional argument, unless absent or `None`.
fn given(vm: &VirtualMachine, obj: Option<&PyObjectRef>) -> Option<PyObjectRef> {
    obj.filter(|o| !vm.is_none(o)).cloned()
}
