//! One HTTP request to the model in the wire format of `[llm] provider`, and how its answer is
//! read.
//!
//! - `openai` and `ollama`: POST `{endpoint}/chat/completions` (OpenAI-compatible: OpenAI,
//!   Ollama, llama.cpp's server, vLLM) with `model`, `messages`, `temperature`, `max_tokens`;
//!   `Authorization: Bearer` when a key is set; the reply is `choices[0].message.content`.
//!   `ollama` differs only in its default endpoint, [`OLLAMA_ENDPOINT`].
//! - `anthropic`: POST `{endpoint}/v1/messages` (the Messages API) with `x-api-key` and
//!   `anthropic-version`, the system prompt top-level, the other `messages`, `max_tokens`,
//!   `temperature`; the reply is the text of its `content` blocks.
//!
//! A 429 is [`Error::RateLimited`] with its `Retry-After` in seconds, never waited out here
//! (a run goes back to the queue); a model the server does not have is
//! [`Failed::ModelNotFound`] (the caller falls back to the default model); a 5xx is retried
//! once after half a second.

use super::{fail, Message};
use crate::config::Llm;
use crate::error::Error;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// Where `ollama serve` listens by default (its OpenAI-compatible API).
pub const OLLAMA_ENDPOINT: &str = "http://127.0.0.1:11434/v1";
/// Anthropic's API.
pub const ANTHROPIC_ENDPOINT: &str = "https://api.anthropic.com";
/// The Messages API version sent as `anthropic-version`.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Why a request failed.
pub enum Failed {
    /// The server has no such model: HTTP 404, or an error that says so.
    ModelNotFound(Error),
    /// Anything else (a rate limit included).
    Other(Error),
}

impl Failed {
    pub fn into_error(self) -> Error {
        match self {
            Failed::ModelNotFound(e) | Failed::Other(e) => e,
        }
    }
}

/// Where requests go: `[llm] endpoint`, else the provider's default; empty when there is none
/// (`openai`: no endpoint is assumed).
pub fn endpoint(cfg: &Llm) -> &str {
    match (cfg.endpoint.is_empty(), cfg.provider.as_str()) {
        (false, _) => &cfg.endpoint,
        (true, "ollama") => OLLAMA_ENDPOINT,
        (true, "anthropic") => ANTHROPIC_ENDPOINT,
        _ => "",
    }
}

fn anthropic(cfg: &Llm) -> bool {
    cfg.provider == "anthropic"
}

/// The URL of a request.
pub fn url(cfg: &Llm) -> String {
    let base = endpoint(cfg).trim_end_matches('/');
    if anthropic(cfg) {
        // `https://api.anthropic.com` and `https://api.anthropic.com/v1` both name the API.
        format!("{}/v1/messages", base.strip_suffix("/v1").unwrap_or(base))
    } else {
        format!("{base}/chat/completions")
    }
}

fn body(cfg: &Llm, model: &str, messages: &[Message]) -> String {
    let turn = |m: &Message| json!({ "role": m.role, "content": m.content });
    if anthropic(cfg) {
        let system: Vec<&str> = messages.iter().filter(|m| m.role == "system").map(|m| m.content.as_str()).collect();
        let mut body = json!({
            "model": model,
            "max_tokens": cfg.max_tokens,
            "temperature": cfg.temperature,
            "messages": messages.iter().filter(|m| m.role != "system").map(turn).collect::<Vec<_>>(),
        });
        if !system.is_empty() {
            body["system"] = Value::String(system.join("\n\n"));
        }
        return body.to_string();
    }
    json!({
        "model": model,
        "messages": messages.iter().map(turn).collect::<Vec<_>>(),
        "temperature": cfg.temperature,
        "max_tokens": cfg.max_tokens,
        "stream": false,
    })
    .to_string()
}

fn request(agent: &ureq::Agent, cfg: &Llm, url: &str) -> ureq::Request {
    let req = agent.post(url).set("Content-Type", "application/json");
    match (&cfg.api_key, anthropic(cfg)) {
        (Some(key), true) => req.set("x-api-key", key).set("anthropic-version", ANTHROPIC_VERSION),
        (None, true) => req.set("anthropic-version", ANTHROPIC_VERSION),
        (Some(key), false) => req.set("Authorization", &format!("Bearer {key}")),
        (None, false) => req,
    }
}

/// Sends `messages` to the model `model` and returns the reply's text.
pub fn send(cfg: &Llm, model: &str, messages: &[Message]) -> Result<String, Failed> {
    let url = url(cfg);
    let body = body(cfg, model, messages);
    let timeout = Duration::from_secs(cfg.timeout_seconds);
    let deadline = Instant::now() + timeout;
    let agent = ureq::AgentBuilder::new().timeout(timeout).build();
    let mut retried = false;
    loop {
        let remaining = deadline.saturating_duration_since(Instant::now());
        if remaining.is_zero() {
            return Err(Failed::Other(fail(format!("{url}: no reply within timeout_seconds = {}", cfg.timeout_seconds))));
        }
        match request(&agent, cfg, &url).timeout(remaining).send_string(&body) {
            Ok(resp) => {
                let text = resp.into_string().map_err(|e| Failed::Other(fail(format!("{url}: reading the reply: {e}"))))?;
                return parse_reply(cfg, &url, &text).map_err(Failed::Other);
            }
            Err(ureq::Error::Status(429, resp)) => {
                let retry_after_secs = resp.header("Retry-After").and_then(|v| v.trim().parse::<u64>().ok());
                let message = server_message(&resp.into_string().unwrap_or_default());
                return Err(Failed::Other(Error::RateLimited { url, retry_after_secs, message }));
            }
            Err(ureq::Error::Status(code, resp)) => {
                let text = resp.into_string().unwrap_or_default();
                if code >= 500 && !retried {
                    retried = true;
                    tracing::info!("{url} answered {code}; retrying once");
                    std::thread::sleep(Duration::from_millis(500).min(deadline.saturating_duration_since(Instant::now())));
                    continue;
                }
                let e = fail(format!("{url} answered HTTP {code}: {}", server_message(&text)));
                return Err(if model_not_found(code, &text) { Failed::ModelNotFound(e) } else { Failed::Other(e) });
            }
            Err(ureq::Error::Transport(t)) => {
                let what = if t.kind() == ureq::ErrorKind::Io && Instant::now() >= deadline {
                    format!("no reply within timeout_seconds = {}", cfg.timeout_seconds)
                } else {
                    t.to_string()
                };
                return Err(Failed::Other(fail(format!("cannot reach the LLM endpoint {url}: {what}"))));
            }
        }
    }
}

/// Does this error answer say the model does not exist? A 404 (OpenAI, Ollama and Anthropic
/// all answer an unknown model so), or a client error whose body says so (some servers answer
/// 400 "model ... does not exist").
pub fn model_not_found(code: u16, body: &str) -> bool {
    if code == 404 {
        return true;
    }
    let lower = body.to_ascii_lowercase();
    (400..500).contains(&code)
        && lower.contains("model")
        && ["not found", "not_found", "does not exist", "doesn't exist", "no such model", "unknown model"].iter().any(|w| lower.contains(w))
}

/// The error message in an OpenAI- or Anthropic-style error body, else the body itself
/// (shortened).
fn server_message(body: &str) -> String {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let msg = parsed
        .as_ref()
        .and_then(|v| v.pointer("/error/message").or_else(|| v.get("error")).or_else(|| v.get("message")))
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| body.trim().to_string());
    msg.chars().take(500).collect()
}

fn parse_reply(cfg: &Llm, url: &str, text: &str) -> Result<String, Error> {
    let short = || text.chars().take(200).collect::<String>();
    let v: Value = serde_json::from_str(text).map_err(|_| fail(format!("malformed reply from {url}: not JSON: {}", short())))?;
    if anthropic(cfg) {
        let blocks = v.get("content").and_then(Value::as_array);
        let texts: Vec<&str> = blocks.into_iter().flatten().filter(|b| b["type"] == "text").filter_map(|b| b["text"].as_str()).collect();
        if texts.is_empty() {
            return Err(fail(format!("malformed reply from {url}: no text block in content in {}", short())));
        }
        return Ok(texts.concat());
    }
    v.pointer("/choices/0/message/content")
        .and_then(|c| c.as_str())
        .map(str::to_string)
        .ok_or_else(|| fail(format!("malformed reply from {url}: no choices[0].message.content in {}", short())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(provider: &str, endpoint: &str) -> Llm {
        let mut c = crate::config::Config::default().llm;
        c.provider = provider.into();
        c.endpoint = endpoint.into();
        c
    }

    #[test]
    fn endpoints_and_urls_by_provider() {
        assert_eq!(url(&cfg("ollama", "")), "http://127.0.0.1:11434/v1/chat/completions");
        assert_eq!(url(&cfg("openai", "http://h:1/v1/")), "http://h:1/v1/chat/completions");
        assert_eq!(endpoint(&cfg("openai", "")), "");
        assert_eq!(url(&cfg("anthropic", "")), "https://api.anthropic.com/v1/messages");
        assert_eq!(url(&cfg("anthropic", "http://h:1/v1")), "http://h:1/v1/messages");
    }

    #[test]
    fn model_not_found_answers() {
        assert!(model_not_found(404, ""));
        assert!(model_not_found(400, r#"{"error": {"message": "The model `x` does not exist"}}"#));
        assert!(!model_not_found(400, r#"{"error": {"message": "max_tokens too large"}}"#));
        assert!(!model_not_found(500, "model not found"));
    }

    #[test]
    fn anthropic_body_has_the_system_prompt_top_level() {
        let messages = [Message::system("rules"), Message::user("task")];
        let b: Value = serde_json::from_str(&body(&cfg("anthropic", ""), "m", &messages)).unwrap();
        assert_eq!(b["system"], "rules");
        assert_eq!(b["messages"], json!([{ "role": "user", "content": "task" }]));
        assert_eq!(b["max_tokens"], 2000);
    }
}
