//! CPython behaviours the interpreter (rustpython-vm 0.5) lacks, restored on the builtin
//! types' slots when the child starts. Each wrapper calls the original slot and changes only
//! the case it names:
//! - a dict's `keys()`/`items()` compare equal to a `frozenset` of the same elements;
//! - `str()`/`repr()` of an int over the string-digit limit raises `ValueError`, as
//!   `sys.set_int_max_str_digits` documents;
//! - error messages as CPython words them: `int(s, 0)` names base 0, `"abc"[9]` says
//!   "string index out of range", `"a" + 1` "can only concatenate str", `[].index(3)`
//!   "3 is not in list", an unknown codec keeps the name given, and `UnboundLocalError`
//!   reads as in CPython 3.11+;
//! - `reversed()` of a dict (or its views) ends after a deletion (it looped for ever);
//! - an `OverflowError` names C types ("to C ssize_t"), not Rust ones;
//! - `s[i]` and `s[a:b]` of a long non-ASCII string take time independent of its length
//!   (`text::char_at`, `text::substring`).

use rustpython_vm::builtins::{PyBaseExceptionRef, PyFrozenSet, PyInt, PyStr, PyStrRef};
use rustpython_vm::function::{Either, FuncArgs, PyComparisonValue};
use rustpython_vm::builtins::PyTypeRef;
use rustpython_vm::protocol::{PyMapping, PySequence};
use rustpython_vm::types::PyComparisonOp;
use rustpython_vm::{AsObject, PyObject, PyObjectRef, PyRef, PyResult, VirtualMachine};
use std::sync::OnceLock;

type Compare = fn(&PyObject, &PyObject, PyComparisonOp, &VirtualMachine) -> PyResult<Either<PyObjectRef, PyComparisonValue>>;
type Stringify = fn(&PyObject, &VirtualMachine) -> PyResult<PyRef<PyStr>>;
type New = fn(PyTypeRef, FuncArgs, &VirtualMachine) -> PyResult;
type Subscript = fn(PyMapping<'_>, &PyObject, &VirtualMachine) -> PyResult;
type Concat = fn(PySequence<'_>, &PyObject, &VirtualMachine) -> PyResult;

static KEYS_COMPARE: OnceLock<Compare> = OnceLock::new();
static ITEMS_COMPARE: OnceLock<Compare> = OnceLock::new();
static INT_REPR: OnceLock<Stringify> = OnceLock::new();
static INT_NEW: OnceLock<New> = OnceLock::new();
static STR_NEW: OnceLock<New> = OnceLock::new();
static STR_SUBSCRIPT: OnceLock<Subscript> = OnceLock::new();
static STR_CONCAT: OnceLock<Concat> = OnceLock::new();
static LIST_CONCAT: OnceLock<Concat> = OnceLock::new();
static TUPLE_CONCAT: OnceLock<Concat> = OnceLock::new();

/// Keeps a slot's function in `original` and puts `with` in its place.
macro_rules! wrap {
    ($slot:expr, $original:expr, $with:expr) => {
        if let Some(f) = $slot.load() {
            if $original.set(f).is_ok() {
                $slot.store(Some($with));
            }
        }
    };
}

/// Installs every wrapper (once per process).
pub fn install(vm: &VirtualMachine) -> PyResult<()> {
    let t = &vm.ctx.types;
    wrap!(t.dict_keys_type.slots.richcompare, KEYS_COMPARE, keys_compare as Compare);
    wrap!(t.dict_items_type.slots.richcompare, ITEMS_COMPARE, items_compare as Compare);
    wrap!(t.int_type.slots.repr, INT_REPR, int_repr as Stringify);
    wrap!(t.int_type.slots.new, INT_NEW, int_new as New);
    wrap!(t.str_type.slots.new, STR_NEW, str_new as New);
    wrap!(t.str_type.slots.as_mapping.subscript, STR_SUBSCRIPT, str_subscript as Subscript);
    wrap!(t.str_type.slots.as_sequence.concat, STR_CONCAT, str_concat as Concat);
    wrap!(t.list_type.slots.as_sequence.concat, LIST_CONCAT, list_concat as Concat);
    wrap!(t.tuple_type.slots.as_sequence.concat, TUPLE_CONCAT, tuple_concat as Concat);
    c_type_names(vm);
    bounded_length(vm);
    for typ in [t.dict_type, t.dict_keys_type, t.dict_values_type, t.dict_items_type] {
        reversed_by_copy(vm, typ);
    }
    reword_method(vm, t.list_type, "index", |vm, args, e| {
        let what = args.args.get(1).and_then(|x| x.repr(vm).ok())?;
        e.class().is(vm.ctx.exceptions.value_error).then(|| format!("{what} is not in list"))
    });
    for (typ, name) in [(t.str_type, "encode"), (t.bytes_type, "decode"), (t.bytearray_type, "decode")] {
        reword_method(vm, typ, name, |vm, args, e| {
            let encoding = args.args.get(1).or_else(|| args.kwargs.get("encoding"))?.str(vm).ok()?;
            (e.class().is(vm.ctx.exceptions.lookup_error) && text_of(vm, &e).starts_with("unknown encoding: ")).then(|| format!("unknown encoding: {encoding}"))
        });
    }
    // `str(x)` and `format` look these up as methods, not slots.
    for name in ["__str__", "__format__"] {
        let interned = vm.ctx.intern_str(name);
        let Some(original) = t.int_type.get_attr(interned) else { continue };
        let checked = vm.new_method(name, t.int_type, move |args: FuncArgs, vm: &VirtualMachine| -> PyResult {
            if let Some(zelf) = args.args.first() {
                let decimal = name == "__str__" || args.args.get(1).and_then(|s| s.downcast_ref::<PyStr>()).is_none_or(|spec| decimal_spec(&spec.to_string_lossy()));
                if decimal {
                    check_digits(zelf, vm)?;
                }
            }
            original.call(args, vm)
        });
        t.int_type.set_attr(interned, checked.into());
    }
    let unbound = vm.ctx.exceptions.unbound_local_error;
    let base_str = vm.ctx.exceptions.base_exception_type.get_attr(vm.ctx.intern_str("__str__"));
    if let Some(original) = base_str {
        let reworded = vm.new_method("__str__", unbound, move |args: FuncArgs, vm: &VirtualMachine| -> PyResult {
            let text = original.call(args, vm)?;
            let s = text.str(vm)?.to_string_lossy().into_owned();
            Ok(match s.strip_prefix("local variable '").and_then(|r| r.strip_suffix("' referenced before assignment")) {
                Some(name) => vm.ctx.new_str(format!("cannot access local variable '{name}' where it is not associated with a value")).into(),
                None => text,
            })
        });
        unbound.set_attr(vm.ctx.intern_str("__str__"), reworded.into());
    }
    Ok(())
}

/// True when a format spec gives an int in decimal (no type, `d` or `n`).
fn decimal_spec(spec: &str) -> bool {
    match spec.chars().last() {
        Some(c) if c.is_ascii_alphabetic() || c == '%' => c == 'd' || c == 'n',
        _ => true,
    }
}

fn view_compare(original: &OnceLock<Compare>, zelf: &PyObject, other: &PyObject, op: PyComparisonOp, vm: &VirtualMachine) -> PyResult<Either<PyObjectRef, PyComparisonValue>> {
    if other.downcast_ref::<PyFrozenSet>().is_some() {
        // As CPython does: the view compares as the set of its elements.
        let as_set = vm.ctx.types.set_type.as_object().call((zelf.to_owned(),), vm)?;
        return as_set.rich_compare(other.to_owned(), op, vm).map(Either::A);
    }
    match original.get() {
        Some(f) => f(zelf, other, op, vm),
        None => Ok(Either::B(PyComparisonValue::NotImplemented)),
    }
}

fn keys_compare(zelf: &PyObject, other: &PyObject, op: PyComparisonOp, vm: &VirtualMachine) -> PyResult<Either<PyObjectRef, PyComparisonValue>> {
    view_compare(&KEYS_COMPARE, zelf, other, op, vm)
}

fn items_compare(zelf: &PyObject, other: &PyObject, op: PyComparisonOp, vm: &VirtualMachine) -> PyResult<Either<PyObjectRef, PyComparisonValue>> {
    view_compare(&ITEMS_COMPARE, zelf, other, op, vm)
}

/// Refuses an int whose decimal form is over the string-digit limit, before converting it
/// when the bit length already tells (the conversion is what the limit protects).
pub fn check_digits(obj: &PyObject, vm: &VirtualMachine) -> PyResult<()> {
    let limit = vm.state.int_max_str_digits.load();
    let Some(int) = obj.downcast_ref::<PyInt>() else { return Ok(()) };
    if limit == 0 || obj.class().is(vm.ctx.types.bool_type) {
        return Ok(());
    }
    let too_many = || vm.new_value_error(format!("Exceeds the limit ({limit} digits) for integer string conversion; use sys.set_int_max_str_digits() to increase the limit"));
    // An int of b bits has at least (b - 1) * log10(2) + 1 decimal digits, at most one more.
    let bits = int.as_bigint().bits() as f64;
    let least = (bits - 1.0).max(0.0) * std::f64::consts::LOG10_2 + 1.0;
    if least.floor() > limit as f64 {
        return Err(too_many());
    }
    if least.floor() + 1.0 > limit as f64 && int.as_bigint().to_string().trim_start_matches('-').len() > limit {
        return Err(too_many());
    }
    Ok(())
}

fn int_repr(zelf: &PyObject, vm: &VirtualMachine) -> PyResult<PyRef<PyStr>> {
    check_digits(zelf, vm)?;
    match INT_REPR.get() {
        Some(f) => f(zelf, vm),
        None => Err(vm.new_type_error("int repr is unavailable")),
    }
}

type BuiltinType = &'static rustpython_vm::Py<rustpython_vm::builtins::PyType>;

/// Puts `with` in place of the method `name` of `typ`; it gets the original method (found
/// through the type's MRO) and the call's arguments, self first.
fn wrap_method(vm: &VirtualMachine, typ: BuiltinType, name: &'static str, with: impl Fn(&PyObjectRef, FuncArgs, &VirtualMachine) -> PyResult + 'static) {
    let interned = vm.ctx.intern_str(name);
    let Some(original) = typ.get_attr(interned) else { return };
    let wrapped = vm.new_method(name, typ, move |args: FuncArgs, vm: &VirtualMachine| -> PyResult { with(&original, args, vm) });
    typ.set_attr(interned, wrapped.into());
}

/// An `OverflowError` names C types as CPython's does ("Python int too large to convert to C
/// ssize_t"), not the interpreter's Rust ones (its `__str__`, which `str()` and tracebacks use).
fn c_type_names(vm: &VirtualMachine) {
    wrap_method(vm, vm.ctx.exceptions.overflow_error, "__str__", |original, args, vm| {
        let text = original.call(args, vm)?;
        let s = text.str(vm)?.to_string_lossy().into_owned();
        if !s.contains("to convert to ") {
            return Ok(text);
        }
        Ok(vm.ctx.new_str(c_names(&s)).into())
    });
}

/// `int.to_bytes(length)` with a length beyond a C ssize_t is CPython's OverflowError, not an
/// attempt to allocate it.
fn bounded_length(vm: &VirtualMachine) {
    wrap_method(vm, vm.ctx.types.int_type, "to_bytes", |original, args, vm| {
        let length = args.args.get(1).or_else(|| args.kwargs.get("length"));
        if length.and_then(|l| l.downcast_ref::<PyInt>()).is_some_and(|n| n.try_to_primitive::<isize>(vm).is_err()) {
            return Err(vm.new_overflow_error("Python int too large to convert to C ssize_t"));
        }
        original.call(args, vm)
    });
}

/// `text` with the interpreter's Rust integer type names as CPython's C ones.
pub fn c_names(text: &str) -> String {
    const NAMES: &[(&str, &str)] = &[
        ("Rust isize", "C ssize_t"), ("Rust usize", "C size_t"), ("Rust i64", "C long"), ("Rust u64", "C unsigned long"),
        ("Rust i32", "C int"), ("Rust u32", "C unsigned int"), ("Rust i16", "C short"), ("Rust u16", "C unsigned short"),
        ("Rust i8", "C char"), ("Rust u8", "C unsigned char"), ("convert to usize", "convert to C ssize_t"), ("convert to i64", "convert to C long"),
    ];
    let mut out = text.to_string();
    for (rust, c) in NAMES {
        out = out.replace(rust, c);
    }
    out
}

fn str_new(cls: PyTypeRef, args: FuncArgs, vm: &VirtualMachine) -> PyResult {
    if args.args.len() == 1 && args.kwargs.is_empty() {
        check_digits(&args.args[0], vm)?;
    }
    match STR_NEW.get() {
        Some(f) => f(cls, args, vm),
        None => Err(vm.new_type_error("str() is unavailable")),
    }
}

fn int_new(cls: PyTypeRef, args: FuncArgs, vm: &VirtualMachine) -> PyResult {
    let base_zero = args.args.get(1).or_else(|| args.kwargs.get("base")).is_some_and(|b| b.try_to_value::<i64>(vm).is_ok_and(|b| b == 0));
    let Some(original) = INT_NEW.get() else { return Err(vm.new_type_error("int() is unavailable")) };
    let result = original(cls, args, vm);
    match result {
        Err(e) if base_zero && e.class().is(vm.ctx.exceptions.value_error) => Err(reword(vm, e, "invalid literal for int() with base 10:", "invalid literal for int() with base 0:")),
        other => other,
    }
}

fn str_subscript(mapping: PyMapping<'_>, key: &PyObject, vm: &VirtualMachine) -> PyResult {
    let Some(original) = STR_SUBSCRIPT.get() else { return Err(vm.new_type_error("str indexing is unavailable")) };
    if let Some(i) = key.downcast_ref_if_exact::<PyInt>(vm).and_then(|i| i.try_to_primitive::<isize>(vm).ok()) {
        if let Some(c) = super::text::char_at(mapping.obj, i, vm) {
            return Ok(c);
        }
    } else if let Some(slice) = key.downcast_ref::<rustpython_vm::builtins::PySlice>() {
        if let Some(part) = super::text::substring(mapping.obj, slice, vm) {
            return Ok(part);
        }
    }
    match original(mapping, key, vm) {
        Err(e) if e.class().is(vm.ctx.exceptions.index_error) => Err(reword(vm, e, "index out of range", "string index out of range")),
        other => other,
    }
}

/// Wraps the method `name` of `typ`: when it raises, `message` may give the exception's
/// CPython wording (same class).
fn reword_method(vm: &VirtualMachine, typ: BuiltinType, name: &'static str, message: fn(&VirtualMachine, &FuncArgs, &PyBaseExceptionRef) -> Option<String>) {
    wrap_method(vm, typ, name, move |original, args, vm| {
        original.call(args.clone(), vm).map_err(|e| match message(vm, &args, &e) {
            Some(text) => fresh(vm, &e, text),
            None => e,
        })
    });
}

/// `reversed()` of a dict or one of its views walks a copy: the interpreter's own reverse
/// iterator never ends once the dict's first entry was deleted.
fn reversed_by_copy(vm: &VirtualMachine, typ: BuiltinType) {
    wrap_method(vm, typ, "__reversed__", |_, args, vm| {
        let Some(zelf) = args.args.first() else { return Err(vm.new_type_error("__reversed__ needs its object")) };
        let list = vm.ctx.types.list_type.as_object().call((zelf.clone(),), vm)?;
        vm.call_method(&list, "__reversed__", ())
    });
}

fn text_of(vm: &VirtualMachine, e: &PyBaseExceptionRef) -> String {
    e.as_object().str(vm).map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
}

/// `"a" + 1` and `[1] + (2,)` say what CPython says: only the same type concatenates.
fn concat(original: &OnceLock<Concat>, what: &str, seq: PySequence<'_>, other: &PyObject, vm: &VirtualMachine) -> PyResult {
    let refused = || vm.new_type_error(format!("can only concatenate {what} (not \"{}\") to {what}", other.class().name()));
    let Some(f) = original.get() else { return Err(refused()) };
    match f(seq, other, vm) {
        Ok(r) if r.is(&vm.ctx.not_implemented) && !other.class().fast_issubclass(seq.obj.class()) => Err(refused()),
        Err(e) if e.class().is(vm.ctx.exceptions.type_error) && text_of(vm, &e).starts_with("Cannot add ") => Err(refused()),
        other => other,
    }
}

fn str_concat(seq: PySequence<'_>, other: &PyObject, vm: &VirtualMachine) -> PyResult {
    concat(&STR_CONCAT, "str", seq, other, vm)
}

fn list_concat(seq: PySequence<'_>, other: &PyObject, vm: &VirtualMachine) -> PyResult {
    concat(&LIST_CONCAT, "list", seq, other, vm)
}

fn tuple_concat(seq: PySequence<'_>, other: &PyObject, vm: &VirtualMachine) -> PyResult {
    concat(&TUPLE_CONCAT, "tuple", seq, other, vm)
}

/// A new exception of `e`'s class with `message`, made by calling the class (as Python
/// would) so that subclasses with their own state (OSError's errno) are initialised.
fn fresh(vm: &VirtualMachine, e: &PyBaseExceptionRef, message: String) -> PyBaseExceptionRef {
    vm.invoke_exception(e.class().to_owned(), vec![vm.ctx.new_str(message).into()]).unwrap_or_else(|other| other)
}

/// The same exception with its message's `from` prefix replaced by `to`.
fn reword(vm: &VirtualMachine, e: PyBaseExceptionRef, from: &str, to: &str) -> PyBaseExceptionRef {
    let message = e.as_object().str(vm).map(|s: PyStrRef| s.to_string_lossy().into_owned()).unwrap_or_default();
    match message.strip_prefix(from) {
        Some(rest) => fresh(vm, &e, format!("{to}{rest}")),
        None => e,
    }
}

/// After `math` is imported: `isclose(a=..., b=...)` takes its operands by keyword, as
/// CPython's does.
pub fn patch_math(vm: &VirtualMachine, math: &PyObjectRef) -> PyResult<()> {
    const SOURCE: &str = "def isclose(a, b, *, rel_tol=1e-09, abs_tol=0.0):\n    return _isclose(a, b, rel_tol=rel_tol, abs_tol=abs_tol)\n";
    let helpers = super::module_from_source(vm, "_cairn_math", SOURCE, &[("_isclose", math.get_attr("isclose", vm)?)])?;
    math.set_attr("isclose", helpers.get_attr("isclose", vm)?, vm)
}
