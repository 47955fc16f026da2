//! Python values to JSON for the pipe: arguments of external calls and the script's result.
//!
//! Agent values are hostile input even on the child's side: a string may hold lone
//! surrogates (sent as U+FFFD), a list may contain itself or nest without end (refused past
//! [`MAX_DEPTH`]), an int may be too large for JSON (refused). Only `None`, `bool`, `int`,
//! `float`, `str`, `list`, `tuple` and `dict` with `str` keys cross.

use rustpython_vm::builtins::{PyDict, PyFloat, PyInt, PyList, PyStr, PyTuple};
use rustpython_vm::{AsObject, PyObjectRef, VirtualMachine};
use serde_json::{Map, Number, Value};

/// Deepest nesting sent over the pipe.
pub const MAX_DEPTH: usize = 64;

/// Why a value cannot cross.
#[derive(Debug)]
pub struct NotPlain(pub String);

/// The JSON form of `obj`, or why it has none.
pub fn to_json(vm: &VirtualMachine, obj: &PyObjectRef) -> Result<Value, NotPlain> {
    convert(vm, obj, 0)
}

fn convert(vm: &VirtualMachine, obj: &PyObjectRef, depth: usize) -> Result<Value, NotPlain> {
    if depth > MAX_DEPTH {
        return Err(NotPlain(format!("nested deeper than {MAX_DEPTH} levels")));
    }
    let seq = |items: &[PyObjectRef]| items.iter().map(|e| convert(vm, e, depth + 1)).collect::<Result<Vec<_>, _>>().map(Value::Array);
    if vm.is_none(obj) {
        Ok(Value::Null)
    } else if let Some(s) = obj.downcast_ref::<PyStr>() {
        Ok(Value::String(s.to_string_lossy().into_owned()))
    } else if obj.class().is(vm.ctx.types.bool_type) {
        Ok(Value::Bool(obj.is(&vm.ctx.true_value)))
    } else if let Some(i) = obj.downcast_ref::<PyInt>() {
        let v = i.as_bigint();
        let n = v.try_into().map(|n: i64| Number::from(n)).or_else(|_| v.try_into().map(|n: u64| Number::from(n)));
        n.map(Value::Number).map_err(|_| NotPlain("an int too large for JSON".into()))
    } else if let Some(f) = obj.downcast_ref::<PyFloat>() {
        Ok(Number::from_f64(f.to_f64()).map_or(Value::Null, Value::Number))
    } else if let Some(l) = obj.downcast_ref::<PyList>() {
        let items = l.borrow_vec().to_vec();
        seq(&items)
    } else if let Some(t) = obj.downcast_ref::<PyTuple>() {
        seq(t.as_slice())
    } else if let Some(d) = obj.downcast_ref::<PyDict>() {
        let mut map = Map::new();
        for (k, v) in d.items_vec() {
            let Some(key) = k.downcast_ref::<PyStr>() else {
                return Err(NotPlain("a dict key that is not a str".into()));
            };
            map.insert(key.to_string_lossy().into_owned(), convert(vm, &v, depth + 1)?);
        }
        Ok(Value::Object(map))
    } else {
        Err(NotPlain(format!("an object of type '{}'", obj.class().name())))
    }
}
