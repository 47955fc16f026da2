//! The LLM backends of SPEC §5 and `[llm]`: code generation for the `llm` provider and
//! `ask_llm` for scripts.
//!
//! - HTTP ([`wire`]): `[llm] provider` chooses the API: `openai` (OpenAI-compatible chat
//!   completions: OpenAI, Ollama, llama.cpp's server, vLLM), `anthropic` (the Messages API)
//!   or `ollama` (the OpenAI-compatible API at ollama's default endpoint). A model the server
//!   does not have falls back to `[llm] default_model` once (logged); a 429 is
//!   [`Error::RateLimited`], which the orchestrator answers by re-queueing the agent.
//! - Command: `command = [argv...]` gets the prompt on stdin and prints the reply.
//!
//! Generated code has its fences stripped and passes the pre-flight check; a failed check is
//! sent back to the model for a repair, `repair_attempts` times.

mod wire;

use crate::config::Llm;
use crate::externals::External;
use crate::error::{Error, Result};
use crate::project::Project;
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
    !wire::endpoint(cfg).is_empty() || !cfg.command.is_empty()
}

/// Sends `messages` to the configured backend and returns the reply text.
pub fn complete(cfg: &Llm, messages: &[Message]) -> Result<String> {
    complete_with(&mut cfg.clone(), messages)
}

/// [`complete`], remembering a fallback to the default model in `cfg` (later requests of the
/// same generation go straight to it). An explicit endpoint wins over a command, which wins
/// over the provider's default endpoint.
fn complete_with(cfg: &mut Llm, messages: &[Message]) -> Result<String> {
    if !cfg.endpoint.is_empty() || (cfg.command.is_empty() && configured(cfg)) {
        http(cfg, messages)
    } else if !cfg.command.is_empty() {
        command(cfg, messages)
    } else {
        Err(fail("no LLM is configured: set [llm] endpoint (an OpenAI-compatible URL), [llm] provider = \"anthropic\" or \"ollama\", or [llm] command in config.toml"))
    }
}

/// One HTTP completion; a model the server does not have falls back to `[llm] default_model`
/// once, and the log says so.
fn http(cfg: &mut Llm, messages: &[Message]) -> Result<String> {
    let model = if cfg.model.is_empty() { cfg.default_model.clone() } else { cfg.model.clone() };
    match wire::send(cfg, &model, messages) {
        Err(wire::Failed::ModelNotFound(e)) if !cfg.default_model.is_empty() && cfg.default_model != model => {
            let default = cfg.default_model.clone();
            tracing::warn!("model {model:?} was not found ({e}); falling back to the default model {default:?} ([llm] default_model)");
            cfg.model = default.clone();
            wire::send(cfg, &default, messages).map_err(|f| match f.into_error() {
                Error::Provider { provider, message } => Error::Provider { provider, message: format!("{message} (the default model {default:?}, after {model:?} was not found)") },
                other => other,
            })
        }
        other => other.map_err(wire::Failed::into_error),
    }
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
The script runs in a sandbox on a copy-on-write view of the project. These functions reach \
it (`await` before a call is optional):\n{externals}\n\
Plain Python file code works on the project's files too (open(), pathlib, os, shutil, glob); what \
it writes joins the proposal like write_file. Rules: paths are relative to the project root, with \
'/' (a leading '/' is the project root). You may import these standard library modules (CPython's) \
and nothing else: {imports}; there is no subprocess and no network. print() goes to the run log. \
No interpreter internals (__globals__, __builtins__, __code__, frames). Only the files you write \
change; read a file before rewriting it. End with submit_result(summary, changed_files).\n\n\
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
    let cfg = &mut project.config.llm.clone();
    let mut messages = vec![Message::system(code_prompt(project)), Message::user(format!("Task: {task}"))];
    let mut code = strip_fences(&complete_with(cfg, &messages)?);
    for _ in 0..cfg.repair_attempts {
        let diags = crate::sandbox::interpreter::check(&code, crate::sandbox::interpreter::choose(&code, &project.config.sandbox));
        if diags.is_empty() {
            break;
        }
        let report = diags.iter().map(|d| format!("task.pym:{}:{}: {}", d.line, d.col, d.message)).collect::<Vec<_>>().join("\n");
        tracing::info!("generated code failed the check; asking for a repair:\n{report}");
        messages.push(Message::assistant(format!("```python\n{code}```")));
        messages.push(Message::user(format!(
            "The script fails the sandbox's pre-flight check:\n{report}\nReply with the whole corrected script in one ```python block."
        )));
        code = strip_fences(&complete_with(cfg, &messages)?);
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
        return Err("no LLM is configured: set [llm] endpoint, provider or command in config.toml".into());
    }
    let content = if context.is_empty() { prompt.to_string() } else { format!("{prompt}\n\nContext:\n{context}") };
    // A rate limit is the script's to handle (a run is not re-queued halfway).
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

