//! The LLM backends of SPEC §5 and `[llm]`: code generation for the `llm` provider and
//! `ask_llm` for scripts.
//!
//! - HTTP: POST `{endpoint}/chat/completions` (OpenAI-compatible: Ollama, llama.cpp's server,
//!   vLLM, OpenAI) with `model`, `messages`, `temperature`, `max_tokens`; `Authorization:
//!   Bearer` when the key variable is set; one retry with backoff on 429 and 5xx.
//! - Command: `command = [argv...]` gets the prompt on stdin and prints the reply.
//!
//! Generated code has its fences stripped and passes the pre-flight check; a failed check is
//! sent back to the model for a repair, `repair_attempts` times.

use crate::config::Llm;
use crate::externals::External;
use crate::error::{Error, Result};
use crate::project::Project;
use crate::sandbox::script;
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::time::{Duration, Instant};

/// One chat message.
#[derive(Debug, Clone)]
pub struct Message {
    pub role: &'static str,
    pub content: String,
}

impl Message {
    fn system(content: impl Into<String>) -> Message {
        Message { role: "system", content: content.into() }
    }
    fn user(content: impl Into<String>) -> Message {
        Message { role: "user", content: content.into() }
    }
    fn assistant(content: impl Into<String>) -> Message {
        Message { role: "assistant", content: content.into() }
    }
}

fn fail(message: impl Into<String>) -> Error {
    Error::Provider { provider: "llm".into(), message: message.into() }
}

/// Is any backend configured?
pub fn configured(cfg: &Llm) -> bool {
    !cfg.endpoint.is_empty() || !cfg.command.is_empty()
}

/// Sends `messages` to the configured backend and returns the reply text.
pub fn complete(cfg: &Llm, messages: &[Message]) -> Result<String> {
    if !cfg.endpoint.is_empty() {
        http(cfg, messages)
    } else if !cfg.command.is_empty() {
        command(cfg, messages)
    } else {
        Err(fail("no LLM is configured: set [llm] endpoint (an OpenAI-compatible URL) or [llm] command in config.toml"))
    }
}

fn http(cfg: &Llm, messages: &[Message]) -> Result<String> {
    let url = format!("{}/chat/completions", cfg.endpoint.trim_end_matches('/'));
    let body = json!({
        "model": cfg.model,
        "messages": messages.iter().map(|m| json!({ "role": m.role, "content": m.content })).collect::<Vec<_>>(),
        "temperature": cfg.temperature,
        "max_tokens": cfg.max_tokens,
        "stream": false,
    })
    .to_string();
    let timeout = Duration::from_secs(cfg.timeout_seconds);
    let deadline = Instant::now() + timeout;
    let agent = ureq::AgentBuilder::new().timeout(timeout).build();
    let mut attempt = 0;
    loop {
        attempt += 1;
        let mut req = agent.post(&url).set("Content-Type", "application/json");
        if let Some(key) = &cfg.api_key {
            req = req.set("Authorization", &format!("Bearer {key}"));
        }
        let remaining = deadline.saturating_duration_since(Instant::now());
        if remaining.is_zero() {
            return Err(fail(format!("{url}: no reply within timeout_seconds = {}", cfg.timeout_seconds)));
        }
        match req.timeout(remaining).send_string(&body) {
            Ok(resp) => {
                let text = resp.into_string().map_err(|e| fail(format!("{url}: reading the reply: {e}")))?;
                return parse_reply(&url, &text);
            }
            Err(ureq::Error::Status(code, resp)) => {
                let text = resp.into_string().unwrap_or_default();
                if attempt == 1 && (code == 429 || code >= 500) {
                    tracing::info!("{url} answered {code}; retrying once");
                    std::thread::sleep(Duration::from_millis(500).min(deadline.saturating_duration_since(Instant::now())));
                    continue;
                }
                return Err(fail(format!("{url} answered HTTP {code}: {}", server_message(&text))));
            }
            Err(ureq::Error::Transport(t)) => {
                let what = if t.kind() == ureq::ErrorKind::Io && Instant::now() >= deadline {
                    format!("no reply within timeout_seconds = {}", cfg.timeout_seconds)
                } else {
                    t.to_string()
                };
                return Err(fail(format!("cannot reach the LLM endpoint {url}: {what}")));
            }
        }
    }
}

/// The error message in an OpenAI-style error body, else the body itself (shortened).
fn server_message(body: &str) -> String {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let msg = parsed
        .as_ref()
        .and_then(|v| v.pointer("/error/message").or_else(|| v.get("error")).or_else(|| v.get("message")))
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| body.trim().to_string());
    msg.chars().take(500).collect()
}

fn parse_reply(url: &str, text: &str) -> Result<String> {
    let v: Value = serde_json::from_str(text).map_err(|_| fail(format!("malformed reply from {url}: not JSON: {}", text.chars().take(200).collect::<String>())))?;
    v.pointer("/choices/0/message/content")
        .and_then(|c| c.as_str())
        .map(str::to_string)
        .ok_or_else(|| fail(format!("malformed reply from {url}: no choices[0].message.content in {}", text.chars().take(200).collect::<String>())))
}

fn command(cfg: &Llm, messages: &[Message]) -> Result<String> {
    let prompt = messages.iter().map(|m| format!("### {}\n{}\n", m.role, m.content)).collect::<String>();
    let argv0 = &cfg.command[0];
    let mut child = std::process::Command::new(argv0)
        .args(&cfg.command[1..])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| fail(format!("cannot run LLM command {argv0}: {e}")))?;
    let (stdin, mut stdout, mut stderr) = match (child.stdin.take(), child.stdout.take(), child.stderr.take()) {
        (Some(i), Some(o), Some(e)) => (i, o, e),
        _ => return Err(fail("LLM command pipes missing")),
    };
    let writer = std::thread::spawn(move || {
        let mut stdin = stdin;
        let _ = stdin.write_all(prompt.as_bytes());
    });
    let out_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + Duration::from_secs(cfg.timeout_seconds);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(fail(format!("LLM command {argv0} did not finish within timeout_seconds = {}", cfg.timeout_seconds)));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(e) => return Err(fail(format!("LLM command {argv0}: {e}"))),
        }
    };
    let _ = writer.join();
    let out = out_reader.join().unwrap_or_default();
    let err = err_reader.join().unwrap_or_default();
    if !status.success() {
        let tail: Vec<&str> = err.lines().rev().take(5).collect::<Vec<_>>().into_iter().rev().collect();
        return Err(fail(format!("LLM command {argv0} failed ({status}): {}", tail.join("\n"))));
    }
    if out.trim().is_empty() {
        return Err(fail(format!("LLM command {argv0} printed nothing")));
    }
    Ok(out)
}

/// The system prompt for code generation: the externals, the rules, the project.
fn code_prompt(project: &Project) -> String {
    let listing = project
        .stable()
        .and_then(|s| s.all())
        .map(|entries| entries.into_iter().filter(|e| e.kind == crate::store::Kind::File).take(200).map(|e| e.path).collect::<Vec<_>>().join("\n"))
        .unwrap_or_default();
    let externals: String = External::ALL.iter().map(|e| format!("- {}: {}\n", e.signature(), e.summary())).collect();
    let imports = crate::sandbox::policy::ALLOWED_IMPORTS.iter().filter(|m| **m != "grail").copied().collect::<Vec<_>>().join(", ");
    format!(
        "You write one Python script that carries out a change to a software project. Reply with the script \
only, in one ```python fenced block.\n\n\
The script runs in a sandbox. It reaches the project only through these functions (no other I/O; \
`await` before a call is optional):\n{externals}\n\
Rules: paths are relative to the project root, with '/'. You may import these standard library \
modules (CPython's) and nothing else: {imports}; there is no os, subprocess or file access. \
print() goes to the run log. No open(), eval(), exec(), compile(), globals(), no object internals (__subclasses__, __globals__, \
__builtins__, __code__, __mro__, __bases__), no frame or code internals. Use plain Python: \
functions, classes, comprehensions, f-strings, str methods. Only the files you write change; read \
a file before rewriting it. End with submit_result(summary, changed_files).\n\n\
Project files (up to 200):\n{listing}\n"
    )
}

/// Extracts the code from a reply: the first fenced block, else the whole text.
pub fn strip_fences(reply: &str) -> String {
    if let Some(start) = reply.find("```") {
        let after = &reply[start + 3..];
        let body_start = after.find('\n').map_or(0, |i| i + 1);
        let body = &after[body_start..];
        let end = body.find("```").unwrap_or(body.len());
        return body[..end].trim_end().to_string() + "\n";
    }
    reply.trim().to_string() + "\n"
}

/// Generates agent code for a natural-language task, repairing a failed check up to
/// `repair_attempts` times. The returned code may still fail the check (the caller reports it).
pub fn generate_code(project: &Project, task: &str) -> Result<String> {
    let cfg = &project.config.llm;
    let mut messages = vec![Message::system(code_prompt(project)), Message::user(format!("Task: {task}"))];
    let mut code = strip_fences(&complete(cfg, &messages)?);
    for _ in 0..cfg.repair_attempts {
        let diags = script::check(&code);
        if diags.is_empty() {
            break;
        }
        let report = diags.iter().map(|d| format!("task.pym:{}:{}: {}", d.line, d.col, d.message)).collect::<Vec<_>>().join("\n");
        tracing::info!("generated code failed the check; asking for a repair:\n{report}");
        messages.push(Message::assistant(format!("```python\n{code}```")));
        messages.push(Message::user(format!(
            "The script fails the sandbox's pre-flight check:\n{report}\nReply with the whole corrected script in one ```python block."
        )));
        code = strip_fences(&complete(cfg, &messages)?);
    }
    Ok(code)
}

/// Answers `ask_llm(prompt, context)` from a script: a plain completion, not the code template.
/// It waits no longer than `budget` (what is left of the run) nor than `[llm] timeout_seconds`.
pub fn ask(project: &Project, prompt: &str, context: &str, budget: Duration) -> std::result::Result<String, String> {
    let mut cfg = project.config.llm.clone();
    cfg.timeout_seconds = cfg.timeout_seconds.min(budget.as_secs().max(1));
    let cfg = &cfg;
    if !configured(cfg) {
        return Err("no LLM is configured: set [llm] endpoint or command in config.toml".into());
    }
    let content = if context.is_empty() { prompt.to_string() } else { format!("{prompt}\n\nContext:\n{context}") };
    complete(cfg, &[Message::user(content)]).map_err(|e| match e {
        Error::Provider { message, .. } => message,
        other => other.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::strip_fences;

    #[test]
    fn fences() {
        assert_eq!(strip_fences("Here:\n```python\nx = 1\n```\nDone."), "x = 1\n");
        assert_eq!(strip_fences("```\ny = 2\n```"), "y = 2\n");
        assert_eq!(strip_fences("z = 3"), "z = 3\n");
        assert_eq!(strip_fences("```py\nunterminated"), "unterminated\n");
    }
}

