//! The wire: msgpack values to and from JSON, request arguments, and the protocol-level error
//! reply. The only place that knows how Lua tables arrive.

use rmpv::Value;

/// serde_json -> msgpack value.
pub(super) fn to_value(v: &serde_json::Value) -> Value {
    match v {
        serde_json::Value::Null => Value::Nil,
        serde_json::Value::Bool(b) => Value::Boolean(*b),
        serde_json::Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => Value::from(i),
            (_, Some(u)) => Value::from(u),
            _ => Value::from(n.as_f64().unwrap_or(0.0)),
        },
        serde_json::Value::String(s) => Value::from(s.as_str()),
        serde_json::Value::Array(a) => Value::Array(a.iter().map(to_value).collect()),
        serde_json::Value::Object(m) => Value::Map(m.iter().map(|(k, v)| (Value::from(k.as_str()), to_value(v))).collect()),
    }
}

/// msgpack value -> serde_json (for arguments).
pub(super) fn from_value(v: &Value) -> serde_json::Value {
    match v {
        Value::Nil => serde_json::Value::Null,
        Value::Boolean(b) => serde_json::Value::Bool(*b),
        Value::Integer(i) => i.as_i64().map(serde_json::Value::from).or_else(|| i.as_u64().map(serde_json::Value::from)).unwrap_or_default(),
        Value::F32(f) => serde_json::json!(f),
        Value::F64(f) => serde_json::json!(f),
        Value::String(s) => serde_json::Value::String(s.as_str().unwrap_or_default().to_string()),
        Value::Binary(b) => serde_json::Value::String(String::from_utf8_lossy(b).into_owned()),
        Value::Array(a) => serde_json::Value::Array(a.iter().map(from_value).collect()),
        Value::Map(m) => serde_json::Value::Object(
            m.iter().map(|(k, v)| (k.as_str().map(str::to_string).unwrap_or_else(|| k.to_string()), from_value(v))).collect(),
        ),
        Value::Ext(..) => serde_json::Value::Null,
    }
}

/// A protocol-level error reply (unknown method, malformed arguments), in the `[type,
/// message]` form Neovim shows as the error text of `rpcrequest()`.
pub(super) fn rpc_error(code: &str, message: String) -> Value {
    Value::Array(vec![Value::from(0), Value::from(format!("cairn {code}: {message}"))])
}

/// The arguments of a request: one map, or nothing.
pub(super) struct Args(pub(super) serde_json::Map<String, serde_json::Value>);

impl Args {
    pub(super) fn parse(args: &[Value]) -> std::result::Result<Args, Value> {
        match args.first().map(from_value) {
            // An empty Lua table arrives as an empty array.
            None | Some(serde_json::Value::Null) => Ok(Args(Default::default())),
            Some(serde_json::Value::Array(a)) if a.is_empty() => Ok(Args(Default::default())),
            Some(serde_json::Value::Object(m)) => Ok(Args(m)),
            Some(other) => Err(rpc_error("bad_args", format!("expected one table of arguments, got {other}"))),
        }
    }
    pub(super) fn str(&self, key: &str) -> Option<String> {
        self.0.get(key).and_then(|v| v.as_str()).map(str::to_string)
    }
    pub(super) fn required(&self, key: &str) -> std::result::Result<String, Value> {
        self.str(key).ok_or_else(|| rpc_error("bad_args", format!("missing string argument '{key}'")))
    }
}

