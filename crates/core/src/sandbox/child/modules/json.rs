//! `json` for agent scripts: `dumps` and `loads` in Rust (serde_json) behind a small Python
//! prelude, no host access.

use super::module_from_source;
use rustpython_vm::builtins::PyStrRef;
use rustpython_vm::{PyObjectRef, PyResult, VirtualMachine};

/// `json.dumps` with Python's default separators (`, ` and `: `), or indentation.
fn dumps(obj: PyObjectRef, indent: Option<usize>, sort_keys: bool, vm: &VirtualMachine) -> PyResult<String> {
    let mut value = crate::sandbox::child::value::to_json(vm, &obj).map_err(|e| vm.new_type_error(format!("Object of {} is not JSON serializable", e.0)))?;
    if sort_keys {
        sort(&mut value);
    }
    let mut out = Vec::new();
    let result = match indent {
        Some(n) => {
            let pad = vec![b' '; n];
            let mut ser = serde_json::Serializer::with_formatter(&mut out, serde_json::ser::PrettyFormatter::with_indent(&pad));
            serde::Serialize::serialize(&value, &mut ser)
        }
        None => {
            let mut ser = serde_json::Serializer::with_formatter(&mut out, PythonCompact);
            serde::Serialize::serialize(&value, &mut ser)
        }
    };
    result.map_err(|e| vm.new_value_error(e.to_string()))?;
    String::from_utf8(out).map_err(|e| vm.new_value_error(e.to_string()))
}

fn sort(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(m) => {
            m.sort_keys();
            m.values_mut().for_each(sort);
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(sort),
        _ => {}
    }
}

/// `ensure_ascii=True`, Python's default: every non-ASCII character as `\uXXXX` (a surrogate
/// pair beyond the BMP). Non-ASCII only ever appears inside JSON strings, so this is exact.
fn ascii_only(text: &str) -> String {
    if text.is_ascii() {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{:04x}", u));
            }
        }
    }
    out
}

/// Python's compact separators: `", "` between items, `": "` after keys.
struct PythonCompact;

impl serde_json::ser::Formatter for PythonCompact {
    fn begin_array_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W, first: bool) -> std::io::Result<()> {
        if first { Ok(()) } else { w.write_all(b", ") }
    }
    fn begin_object_key<W: ?Sized + std::io::Write>(&mut self, w: &mut W, first: bool) -> std::io::Result<()> {
        if first { Ok(()) } else { w.write_all(b", ") }
    }
    fn begin_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        w.write_all(b": ")
    }
}

const JSON_PRELUDE: &str = r#"
class JSONDecodeError(ValueError):
    pass

def loads(s, **kwargs):
    if isinstance(s, (bytes, bytearray)):
        s = s.decode("utf-8")
    try:
        return _loads(s)
    except ValueError as e:
        raise JSONDecodeError(str(e))

def dumps(obj, indent=None, sort_keys=False, ensure_ascii=True, **kwargs):
    if isinstance(indent, str):
        indent = len(indent)
    return _dumps(obj, indent, sort_keys, bool(ensure_ascii))
"#;

/// The `json` module.
pub fn module(vm: &VirtualMachine) -> PyResult<PyObjectRef> {
    let loads = vm.new_function("_loads", |s: PyStrRef, vm: &VirtualMachine| -> PyResult {
        let value: serde_json::Value = serde_json::from_str(&s.to_string_lossy()).map_err(|e| vm.new_value_error(format!("invalid JSON: {e}")))?;
        rustpython_vm::py_serde::deserialize(vm, value).map_err(|e| vm.new_value_error(e.to_string()))
    });
    let dumps_fn = vm.new_function("_dumps", |obj: PyObjectRef, indent: Option<usize>, sort_keys: bool, ensure_ascii: bool, vm: &VirtualMachine| -> PyResult<String> {
        let text = dumps(obj, indent, sort_keys, vm)?;
        Ok(if ensure_ascii { ascii_only(&text) } else { text })
    });
    module_from_source(vm, "json", JSON_PRELUDE, &[("_loads", loads.into()), ("_dumps", dumps_fn.into())])
}

// ---------------------------------------------------------------- re
