//! Reading call arguments (positional or keyword, typed as Python would name them) and
//! describing them for the audit log.

use super::{raise, CallError};
use serde_json::{Map, Value};

/// Reads a positional-or-keyword argument.
pub(super) fn arg<'v>(args: &'v [Value], kwargs: &'v Map<String, Value>, i: usize, name: &str) -> Option<&'v Value> {
    args.get(i).or_else(|| kwargs.get(name))
}

/// A `str` argument, or its default when absent.
pub(super) fn str_arg(args: &[Value], kwargs: &Map<String, Value>, i: usize, name: &str, default: Option<&str>) -> Result<String, CallError> {
    match arg(args, kwargs, i, name) {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(raise("TypeError", format!("{name} must be str, not {}", type_name(other)))),
        None => default.map(str::to_string).ok_or_else(|| raise("TypeError", format!("missing required argument '{name}'"))),
    }
}

/// A non-negative `int` argument, or `default` when absent or None.
pub(super) fn int_arg(args: &[Value], kwargs: &Map<String, Value>, i: usize, name: &str, default: u64) -> Result<u64, CallError> {
    match arg(args, kwargs, i, name) {
        None | Some(Value::Null) => Ok(default),
        Some(Value::Number(n)) if n.as_u64().is_some() => Ok(n.as_u64().unwrap_or(default)),
        Some(other) => Err(raise("TypeError", format!("{name} must be a non-negative int, not {}", type_name(other)))),
    }
}

/// The Python type name of a JSON value.
pub(super) fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "NoneType",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "int",
        Value::String(_) => "str",
        Value::Array(_) => "list",
        Value::Object(_) => "dict",
    }
}

/// A value as JSON, shortened to 200 bytes for the audit log.
pub(super) fn summarize(v: &Value) -> String {
    shorten(v.to_string())
}

/// Text shortened to 200 bytes (at a character boundary, marked with `…`).
pub(super) fn shorten(mut s: String) -> String {
    if s.len() > 200 {
        let mut cut = 200;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
        s.push('…');
    }
    s
}
