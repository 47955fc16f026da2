//! What clients see of each tool besides its description: a title, MCP annotations (reads are
//! `readOnlyHint`; writes go to the overlay only, so they are not destructive and touch no open
//! world), an `outputSchema`, and input schemas every client tested accepts (no `$ref`, no
//! `format` such as `uint32`, no `$schema`).

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::{JsonObject, ToolAnnotations};
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// Tools that change nothing.
const READS: &[&str] = &["identity", "task_list", "task_get", "session_get", "session_list", "session_diff", "read_file", "read_files", "list_dir", "search_files", "search_content"];

fn title(name: &str) -> String {
    let mut t = name.replace('_', " ");
    if let Some(first) = t.get_mut(0..1) {
        first.make_ascii_uppercase();
    }
    t
}

/// Every tool of `router`, dressed for clients.
pub fn decorate<S>(mut router: ToolRouter<S>) -> ToolRouter<S> {
    let output: Arc<JsonObject> = Arc::new(match json!({ "type": "object", "additionalProperties": true }) {
        Value::Object(m) => m,
        _ => Map::new(),
    });
    for route in router.map.values_mut() {
        let tool = &mut route.attr;
        let read = READS.contains(&tool.name.as_ref());
        tool.title = Some(title(&tool.name));
        let mut a = ToolAnnotations::new();
        a.title = tool.title.clone();
        a.read_only_hint = Some(read);
        if !read {
            a.destructive_hint = Some(false);
            a.idempotent_hint = Some(false);
        }
        a.open_world_hint = Some(false);
        tool.annotations = Some(a);
        tool.output_schema = Some(Arc::clone(&output));
        let mut input = Value::Object((*tool.input_schema).clone());
        let defs = input.get("$defs").cloned().unwrap_or(Value::Null);
        tidy(&mut input, &defs, 0);
        if let Value::Object(mut m) = input {
            m.remove("$defs");
            m.remove("$schema");
            tool.input_schema = Arc::new(m);
        }
    }
    router
}

/// Inlines `$ref`s to `defs`, drops `format`, and turns `["T", "null"]` types into `T`
/// (optional fields are simply not required).
fn tidy(v: &mut Value, defs: &Value, depth: usize) {
    match v {
        Value::Object(m) => {
            if let Some(Value::String(r)) = m.get("$ref").cloned() {
                if let (Some(name), true) = (r.strip_prefix("#/$defs/"), depth < 8) {
                    if let Some(Value::Object(def)) = defs.get(name) {
                        m.remove("$ref");
                        for (k, val) in def {
                            m.entry(k.clone()).or_insert_with(|| val.clone());
                        }
                    }
                }
            }
            m.remove("format");
            if let Some(Value::Array(types)) = m.get("type").cloned() {
                let real: Vec<Value> = types.into_iter().filter(|t| t != "null").collect();
                if real.len() == 1 {
                    m.insert("type".into(), real[0].clone());
                }
            }
            // `anyOf: [X, {type: null}]` (an optional nested struct) becomes X.
            if let Some(Value::Array(any)) = m.get("anyOf").cloned() {
                let real: Vec<Value> = any.into_iter().filter(|a| a.get("type") != Some(&json!("null"))).collect();
                if real.len() == 1 {
                    m.remove("anyOf");
                    if let Value::Object(inner) = &real[0] {
                        for (k, val) in inner {
                            m.entry(k.clone()).or_insert_with(|| val.clone());
                        }
                    }
                }
            }
            for val in m.values_mut() {
                tidy(val, defs, depth + 1);
            }
            if m.get("default") == Some(&Value::Null) {
                m.remove("default");
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|i| tidy(i, defs, depth + 1)),
        _ => {}
    }
}

/// Why `args` do not fit a tool's input `schema`, naming the argument at fault (what serde
/// says alone — "invalid type: integer, expected a string" — names none).
pub fn explain(schema: &JsonObject, args: Option<&JsonObject>) -> Option<String> {
    let empty = Map::new();
    check_object(schema, args.unwrap_or(&empty), "")
}

fn check_object(schema: &Map<String, Value>, args: &Map<String, Value>, at: &str) -> Option<String> {
    let props = schema.get("properties").and_then(Value::as_object)?;
    if let Some(bad) = args.iter().find_map(|(k, v)| props.get(k).and_then(|p| check_value(p, v, &format!("{at}{k}")))) {
        return Some(bad);
    }
    for req in schema.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str) {
        if args.get(req).is_none_or(Value::is_null) {
            let what = props.get(req).and_then(|p| p.get("description")).and_then(Value::as_str).unwrap_or("");
            return Some(format!("missing required argument `{at}{req}`{}", if what.is_empty() { String::new() } else { format!(": {what}") }));
        }
    }
    None
}

fn check_value(schema: &Value, v: &Value, at: &str) -> Option<String> {
    let want = schema.get("type").and_then(Value::as_str)?;
    let fits = match (want, v) {
        (_, Value::Null) => true,
        ("string", Value::String(_)) | ("boolean", Value::Bool(_)) | ("array", Value::Array(_)) | ("object", Value::Object(_)) => true,
        ("number", Value::Number(_)) => true,
        ("integer", Value::Number(n)) => n.is_u64() || n.is_i64(),
        _ => false,
    };
    if !fits {
        let got = match v {
            Value::String(_) => "a string",
            Value::Bool(_) => "a boolean",
            Value::Number(_) => "a number",
            Value::Array(_) => "an array",
            Value::Object(_) => "an object",
            Value::Null => "null",
        };
        let article = if want.starts_with(['a', 'i', 'o']) { "an" } else { "a" };
        return Some(format!("argument `{at}` must be {article} {want}, not {got}"));
    }
    match (v, schema.get("items")) {
        (Value::Array(items), Some(item_schema)) => items.iter().enumerate().find_map(|(i, x)| check_value(item_schema, x, &format!("{at}[{i}]"))),
        _ => match (v, schema.as_object()) {
            (Value::Object(o), Some(s)) if s.contains_key("properties") => check_object(s, o, &format!("{at}.")),
            _ => None,
        },
    }
}
