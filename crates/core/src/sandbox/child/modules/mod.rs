//! The modules and guarded builtins a script gets inside the sandbox: `json` and `re` (native
//! helpers in Rust with a small trusted Python front end), `typing`, and the runtime guards on
//! `getattr`/`hasattr`/`setattr`/`delattr` and `str.format`/`format_map` that apply
//! [`super::policy`] to names only known at run time.

mod json;
mod re;

use crate::sandbox::policy;
use rustpython_vm::builtins::PyDictRef;
use rustpython_vm::compiler::Mode;
use rustpython_vm::function::{FuncArgs, OptionalArg};
use rustpython_vm::{PyObjectRef, PyResult, VirtualMachine};

/// Builds the importable module `name` (one of [`policy::ALLOWED_IMPORTS`] other than
/// `grail`, which the child assembles from the externals).
pub fn load(vm: &VirtualMachine, name: &str) -> PyResult<PyObjectRef> {
    match name {
        "typing" => module_from_source(vm, "typing", TYPING_PRELUDE, &[]),
        "json" => json::module(vm),
        "re" => re::module(vm),
        other => Err(vm.new_runtime_error(format!("the sandbox has no module '{other}'"))),
    }
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

// ---------------------------------------------------------------- json

/// Values for `Input(name, default=None)`.
pub fn input_fn(vm: &VirtualMachine, inputs: &'static std::sync::OnceLock<serde_json::Map<String, serde_json::Value>>) -> PyObjectRef {
    vm.new_function("Input", move |name: String, default: OptionalArg<PyObjectRef>, vm: &VirtualMachine| -> PyResult {
        match inputs.get().and_then(|m| m.get(&name)) {
            Some(v) => rustpython_vm::py_serde::deserialize(vm, v.clone()).map_err(|e| vm.new_value_error(e.to_string())),
            None => Ok(default.unwrap_or_none(vm)),
        }
    })
    .into()
}

/// `typing` for agent scripts: names that annotate and do nothing at run time.
const TYPING_PRELUDE: &str = r#"
class _Alias:
    def __init__(self, name):
        self.name = name
    def __getitem__(self, item):
        return self
    def __call__(self, *args, **kwargs):
        return args[0] if args else None
    def __or__(self, other):
        return self
    def __ror__(self, other):
        return self
    def __repr__(self):
        return "typing." + self.name
for _n in ("Any", "Optional", "List", "Dict", "Tuple", "Set", "FrozenSet", "Union", "Callable", "Iterable",
           "Iterator", "Sequence", "Mapping", "MutableMapping", "Literal", "Type", "Generator", "Awaitable",
           "Coroutine", "NoReturn", "Final", "ClassVar", "Annotated", "TypedDict", "NamedTuple", "Protocol"):
    globals()[_n] = _Alias(_n)
def cast(typ, value):
    return value
def TypeVar(name, *args, **kwargs):
    return _Alias(name)
TYPE_CHECKING = False
"#;
