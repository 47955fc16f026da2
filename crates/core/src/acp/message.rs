//! ACP's messages as the relay reads them: newline-delimited JSON-RPC, each line bounded
//! before it is parsed ([`read_line`]), sorted into requests, notifications and responses
//! ([`Kind`]), and the editor's `initialize` rewritten so that the agent is offered no
//! client file system and no terminal ([`confine_initialize`]): it writes in its own view,
//! where every write is captured.

use serde_json::{json, Value};
use std::io::BufRead;

/// The longest message read from either side; a longer line is dropped whole.
pub const MAX_MESSAGE: usize = 16 << 20;

/// One line, without its newline: `None` at the end of the stream, `Some(Err(n))` for a line
/// of `n` bytes past [`MAX_MESSAGE`] (skipped, never held whole).
pub fn read_line(r: &mut impl BufRead) -> Option<Result<Vec<u8>, usize>> {
    let mut line = Vec::new();
    let mut dropped = 0usize;
    loop {
        let buf = match r.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => &[],
        };
        if buf.is_empty() {
            return match (line.is_empty(), dropped) {
                (true, 0) => None,
                (_, 0) => Some(Ok(line)),
                (_, n) => Some(Err(n)),
            };
        }
        let (chunk, end) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (&buf[..i], Some(i + 1)),
            None => (buf, None),
        };
        if dropped > 0 || line.len() + chunk.len() > MAX_MESSAGE {
            dropped += line.len() + chunk.len();
            line.clear();
        } else {
            line.extend_from_slice(chunk);
        }
        let used = end.unwrap_or(buf.len());
        r.consume(used);
        if end.is_some() {
            return Some(if dropped > 0 { Err(dropped) } else { Ok(line) });
        }
    }
}

/// What a JSON-RPC message is.
#[derive(Debug, PartialEq)]
pub enum Kind<'a> {
    Request { id: &'a Value, method: &'a str },
    Notification { method: &'a str },
    Response { id: &'a Value },
    /// Not JSON-RPC 2.0.
    Invalid,
}

/// Sorts a parsed message.
pub fn kind(msg: &Value) -> Kind<'_> {
    let Some(obj) = msg.as_object() else { return Kind::Invalid };
    let id = obj.get("id").filter(|i| i.is_string() || i.is_number());
    match (obj.get("method").and_then(Value::as_str), id) {
        (Some(method), Some(id)) => Kind::Request { id, method },
        (Some(method), None) if !obj.contains_key("id") => Kind::Notification { method },
        (None, Some(id)) if obj.contains_key("result") || obj.contains_key("error") => Kind::Response { id },
        _ => Kind::Invalid,
    }
}

/// The editor's `initialize`, with no `fs` and no `terminal` capability offered to the agent.
pub fn confine_initialize(msg: &mut Value) {
    if let Some(params) = msg.get_mut("params").and_then(Value::as_object_mut) {
        let caps = params.entry("clientCapabilities").or_insert_with(|| json!({}));
        if let Some(caps) = caps.as_object_mut() {
            caps.insert("fs".into(), json!({ "readTextFile": false, "writeTextFile": false }));
            caps.insert("terminal".into(), json!(false));
        }
    }
}

/// The answer to an agent's request the relay refuses.
pub fn refusal(id: &Value, method: &str) -> Value {
    let message = format!("cairn acp does not serve {method}: the agent works in its own confined view (its writes there are the proposal)");
    json!({ "jsonrpc": "2.0", "id": id, "error": { "code": -32601, "message": message } })
}

/// The requests and notifications an agent may send the editor: everything else (the client's
/// `fs/*` and `terminal/*`, extension methods) is refused, never forwarded.
pub fn agent_may_send(method: &str) -> bool {
    matches!(method, "session/request_permission" | "session/update")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_bounded_and_kinds_sorted() {
        let long = vec![b'x'; MAX_MESSAGE + 10];
        let mut input = Vec::new();
        input.extend_from_slice(b"{\"a\":1}\n");
        input.extend_from_slice(&long);
        input.extend_from_slice(b"\nlast");
        let mut r = std::io::BufReader::with_capacity(4096, &input[..]);
        assert_eq!(read_line(&mut r), Some(Ok(b"{\"a\":1}".to_vec())));
        assert_eq!(read_line(&mut r), Some(Err(MAX_MESSAGE + 10)));
        assert_eq!(read_line(&mut r), Some(Ok(b"last".to_vec())));
        assert_eq!(read_line(&mut r), None);
        let req = json!({"jsonrpc": "2.0", "id": 3, "method": "fs/write_text_file", "params": {}});
        assert_eq!(kind(&req), Kind::Request { id: &json!(3), method: "fs/write_text_file" });
        assert_eq!(kind(&json!({"jsonrpc": "2.0", "id": 3, "result": null})), Kind::Response { id: &json!(3) });
        assert_eq!(kind(&json!({"jsonrpc": "2.0", "method": "session/cancel"})), Kind::Notification { method: "session/cancel" });
        assert_eq!(kind(&json!([1])), Kind::Invalid);
        assert!(!agent_may_send("fs/write_text_file") && !agent_may_send("terminal/create") && agent_may_send("session/update"));
        let mut init = json!({"id": 0, "method": "initialize", "params": {"clientCapabilities": {"fs": {"readTextFile": true, "writeTextFile": true}, "terminal": true}}});
        confine_initialize(&mut init);
        assert_eq!(init["params"]["clientCapabilities"], json!({"fs": {"readTextFile": false, "writeTextFile": false}, "terminal": false}));
    }
}
