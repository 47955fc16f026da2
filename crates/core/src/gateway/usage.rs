//! Token usage out of a model response as it streams past: a JSON body (kept up to a bound,
//! read at its end) or server-sent events (read line by line, each `data:` line's JSON as it
//! arrives). What the providers report, field by field, the last report of each field winning
//! (a stream's later events carry the running totals):
//! - Anthropic: `usage` (and `message.usage` of `message_start`): `input_tokens`,
//!   `output_tokens`, `cache_read_input_tokens`, `cache_creation_input_tokens`;
//! - OpenAI: `usage` (and `response.usage` of `response.completed`): `input_tokens`/
//!   `prompt_tokens`, `output_tokens`/`completion_tokens`, `*_tokens_details.cached_tokens`
//!   (OpenAI counts cached tokens inside the input);
//! - Gemini: `usageMetadata`: `promptTokenCount`, `candidatesTokenCount` plus
//!   `thoughtsTokenCount` (billed as output), `cachedContentTokenCount`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The longest JSON body, and the longest event line, read for usage (a response past it is
/// still relayed whole; its usage is not counted).
const MAX_JSON: usize = 16 << 20;

/// Tokens of one response, or totals.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_write_tokens: u64,
}

impl Usage {
    /// Every token counted, as a budget counts them.
    pub fn total(&self) -> u64 {
        self.input_tokens + self.output_tokens + self.cache_read_tokens + self.cache_write_tokens
    }

    pub fn add(&mut self, o: &Usage) {
        self.input_tokens += o.input_tokens;
        self.output_tokens += o.output_tokens;
        self.cache_read_tokens += o.cache_read_tokens;
        self.cache_write_tokens += o.cache_write_tokens;
    }
}

/// Reads a response body's usage as its bytes pass.
pub struct Tap {
    sse: bool,
    buf: Vec<u8>,
    /// Past the bound: nothing more is kept.
    over: bool,
    /// Per field, the last value reported (`None`: never).
    fields: [Option<u64>; 5],
    model: Option<String>,
}

/// Field slots: input, output, cache read, cache write, thoughts (Gemini's, added to output).
const SLOTS: usize = 5;

impl Tap {
    /// A tap for a body of this `Content-Type`.
    pub fn new(content_type: &str) -> Tap {
        Tap { sse: content_type.to_ascii_lowercase().contains("event-stream"), buf: Vec::new(), over: false, fields: [None; SLOTS], model: None }
    }

    /// The next bytes of the body.
    pub fn feed(&mut self, mut bytes: &[u8]) {
        if !self.sse {
            if self.buf.len() + bytes.len() > MAX_JSON {
                self.over = true;
                self.buf = Vec::new();
            }
            if !self.over {
                self.buf.extend_from_slice(bytes);
            }
            return;
        }
        while let Some(i) = bytes.iter().position(|b| *b == b'\n') {
            if !self.over && self.buf.len() + i <= MAX_JSON {
                self.buf.extend_from_slice(&bytes[..i]);
                let line = std::mem::take(&mut self.buf);
                self.event_line(&line);
            }
            self.buf.clear();
            self.over = false;
            bytes = &bytes[i + 1..];
        }
        if self.buf.len() + bytes.len() > MAX_JSON {
            self.over = true;
            self.buf.clear();
        } else if !self.over {
            self.buf.extend_from_slice(bytes);
        }
    }

    fn event_line(&mut self, line: &[u8]) {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let Some(data) = line.strip_prefix(b"data:") else { return };
        if let Ok(v) = serde_json::from_slice::<Value>(data) {
            self.take(&v);
        }
    }

    /// The usage read, and the model the response names; `None` when it reported none.
    pub fn finish(mut self) -> Option<(Usage, Option<String>)> {
        if self.sse {
            let rest = std::mem::take(&mut self.buf);
            if !self.over {
                self.event_line(&rest);
            }
        } else if !self.over {
            if let Ok(v) = serde_json::from_slice::<Value>(&self.buf) {
                self.take(&v);
            }
        }
        if self.fields.iter().all(Option::is_none) {
            return None;
        }
        let f = |i: usize| self.fields[i].unwrap_or(0);
        let usage = Usage { input_tokens: f(0), output_tokens: f(1) + f(4), cache_read_tokens: f(2), cache_write_tokens: f(3) };
        Some((usage, self.model))
    }

    /// One JSON value's reports.
    fn take(&mut self, v: &Value) {
        if let Some(m) = v.get("model").or_else(|| v.pointer("/message/model")).or_else(|| v.pointer("/response/model")).or_else(|| v.get("modelVersion")).and_then(Value::as_str) {
            self.model = Some(m.chars().take(200).collect());
        }
        for u in [v.get("usage"), v.pointer("/message/usage"), v.pointer("/response/usage"), v.get("usageMetadata")].into_iter().flatten() {
            if !u.is_object() {
                continue;
            }
            let num = |p: &str| u.pointer(p).and_then(Value::as_u64);
            let reads: [&[&str]; SLOTS] = [
                &["/input_tokens", "/prompt_tokens", "/promptTokenCount"],
                &["/output_tokens", "/completion_tokens", "/candidatesTokenCount"],
                &["/cache_read_input_tokens", "/input_tokens_details/cached_tokens", "/prompt_tokens_details/cached_tokens", "/cachedContentTokenCount"],
                &["/cache_creation_input_tokens"],
                &["/thoughtsTokenCount"],
            ];
            for (slot, paths) in reads.iter().enumerate() {
                if let Some(n) = paths.iter().find_map(|p| num(p)) {
                    self.fields[slot] = Some(n);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tapped(content_type: &str, body: &str, piece: usize) -> Option<(Usage, Option<String>)> {
        let mut t = Tap::new(content_type);
        for c in body.as_bytes().chunks(piece) {
            t.feed(c);
        }
        t.finish()
    }

    #[test]
    fn each_providers_usage_is_read_streamed_or_not() {
        let u = |i, o, r, w| Usage { input_tokens: i, output_tokens: o, cache_read_tokens: r, cache_write_tokens: w };
        let anthropic = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"claude-x\",\"usage\":{\"input_tokens\":17,\"output_tokens\":1,\"cache_read_input_tokens\":4,\"cache_creation_input_tokens\":2}}}\n\nevent: message_delta\r\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":29}}\r\n\r\n";
        for piece in [1, 7, 4096] {
            assert_eq!(tapped("text/event-stream", anthropic, piece), Some((u(17, 29, 4, 2), Some("claude-x".into()))));
        }
        let json = "{\"id\":\"m\",\"model\":\"claude-y\",\"usage\":{\"input_tokens\":3,\"output_tokens\":9}}";
        assert_eq!(tapped("application/json", json, 5), Some((u(3, 9, 0, 0), Some("claude-y".into()))));
        let responses = "data: {\"type\":\"response.created\",\"response\":{\"usage\":null}}\n\ndata: {\"type\":\"response.completed\",\"response\":{\"model\":\"gpt-z\",\"usage\":{\"input_tokens\":50,\"input_tokens_details\":{\"cached_tokens\":8},\"output_tokens\":6}}}\n\n";
        assert_eq!(tapped("text/event-stream; charset=utf-8", responses, 3), Some((u(50, 6, 8, 0), Some("gpt-z".into()))));
        let gemini = "data: {\"usageMetadata\":{\"promptTokenCount\":11,\"candidatesTokenCount\":2}}\r\n\r\ndata: {\"usageMetadata\":{\"promptTokenCount\":11,\"candidatesTokenCount\":7,\"thoughtsTokenCount\":3},\"modelVersion\":\"gemini-q\"}\r\n\r\n";
        assert_eq!(tapped("text/event-stream", gemini, 2), Some((u(11, 10, 0, 0), Some("gemini-q".into()))));
        // Token counting answers are no usage; a body with none reports none.
        assert_eq!(tapped("application/json", "{\"input_tokens\":10}", 4), None);
        assert_eq!(tapped("application/json", "not json", 4), None);
    }
}
