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
        "collections" => module_from_source(vm, "collections", COLLECTIONS_PRELUDE, &[]),
        "__future__" => module_from_source(vm, "__future__", FUTURE_PRELUDE, &[]),
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

/// `__future__`: every feature is already on.
const FUTURE_PRELUDE: &str = r#"
all_feature_names = ["nested_scopes", "generators", "division", "absolute_import", "with_statement",
                     "print_function", "unicode_literals", "barry_as_FLUFL", "generator_stop", "annotations"]
for _n in all_feature_names:
    globals()[_n] = True
"#;

/// `collections` for agent scripts: `namedtuple`, `OrderedDict`, `defaultdict`, `Counter`.
const COLLECTIONS_PRELUDE: &str = r#"
def namedtuple(typename, field_names, *, rename=False, defaults=None, module=None):
    if isinstance(field_names, str):
        field_names = field_names.replace(",", " ").split()
    fields = tuple(str(f) for f in field_names)
    for f in fields:
        if not f.isidentifier() or f.startswith("_"):
            raise ValueError("invalid field name: %r" % f)
    defaults = tuple(defaults or ())
    if len(defaults) > len(fields):
        raise TypeError("got more default values than field names")
    first_default = len(fields) - len(defaults)

    def __new__(cls, *args, **kwargs):
        if len(args) > len(fields):
            raise TypeError("%s() takes %d positional arguments but %d were given" % (typename, len(fields), len(args)))
        values = list(args)
        for i in range(len(args), len(fields)):
            name = fields[i]
            if name in kwargs:
                values.append(kwargs.pop(name))
            elif i >= first_default:
                values.append(defaults[i - first_default])
            else:
                raise TypeError("%s() missing required argument: '%s'" % (typename, name))
        if kwargs:
            raise TypeError("%s() got an unexpected keyword argument '%s'" % (typename, next(iter(kwargs))))
        return tuple.__new__(cls, values)

    def _asdict(self):
        return dict(zip(fields, self))

    def _replace(self, **changes):
        unknown = [k for k in changes if k not in fields]
        if unknown:
            raise ValueError("got unexpected field names: %r" % unknown)
        return type(self)(*[changes.get(f, v) for f, v in zip(fields, self)])

    def _make(cls, iterable):
        return cls(*iterable)

    def __repr__(self):
        return "%s(%s)" % (typename, ", ".join("%s=%r" % (f, v) for f, v in zip(fields, self)))

    def __getnewargs__(self):
        return tuple(self)

    ns = {"__slots__": (), "_fields": fields, "_field_defaults": dict(zip(fields[first_default:], defaults)),
          "__new__": __new__, "_asdict": _asdict, "_replace": _replace, "_make": classmethod(_make),
          "__repr__": __repr__, "__getnewargs__": __getnewargs__, "__match_args__": fields}
    for i, f in enumerate(fields):
        ns[f] = property(lambda self, i=i: tuple.__getitem__(self, i), doc="Alias for field number %d" % i)
    return type(typename, (tuple,), ns)


class OrderedDict(dict):
    def move_to_end(self, key, last=True):
        value = self.pop(key)
        if last:
            self[key] = value
        else:
            rest = list(self.items())
            self.clear()
            self[key] = value
            self.update(rest)

    def popitem(self, last=True):
        if not self:
            raise KeyError("dictionary is empty")
        key = next(reversed(list(self))) if last else next(iter(self))
        return key, self.pop(key)


class defaultdict(dict):
    def __init__(self, default_factory=None, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.default_factory = default_factory

    def __missing__(self, key):
        if self.default_factory is None:
            raise KeyError(key)
        value = self.default_factory()
        self[key] = value
        return value

    def __getitem__(self, key):
        if key in self:
            return dict.__getitem__(self, key)
        return self.__missing__(key)

    def __repr__(self):
        return "defaultdict(%r, %s)" % (self.default_factory, dict.__repr__(self))


class Counter(dict):
    def __init__(self, iterable=None, **kwargs):
        super().__init__()
        self.update(iterable, **kwargs)

    def __missing__(self, key):
        return 0

    def __getitem__(self, key):
        if key in self:
            return dict.__getitem__(self, key)
        return 0

    def update(self, iterable=None, **kwargs):
        if iterable is not None:
            if isinstance(iterable, dict):
                for k, v in iterable.items():
                    self[k] = self[k] + v
            else:
                for k in iterable:
                    self[k] = self[k] + 1
        for k, v in kwargs.items():
            self[k] = self[k] + v

    def most_common(self, n=None):
        items = sorted(self.items(), key=lambda kv: kv[1], reverse=True)
        return items if n is None else items[:n]

    def elements(self):
        for k, v in self.items():
            for _ in range(v):
                yield k

    def total(self):
        return sum(self.values())
"#;
