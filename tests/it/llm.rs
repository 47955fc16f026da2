//! SPEC §5 `llm` provider and `ask_llm`, against an OpenAI-compatible server on 127.0.0.1
//! started by the test (it records every request and answers from a script), and against
//! command providers.

use crate::support::*;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One recorded request.
#[derive(Debug, Clone)]
pub struct Seen {
    pub path: String,
    pub auth: Option<String>,
    pub body: Value,
    /// Every header, its name in lower case.
    pub headers: Vec<(String, String)>,
}

impl Seen {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

/// One scripted answer: status, extra headers, body.
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(&'static str, String)>,
    pub body: String,
}

/// A scripted LLM server (the test writes OpenAI-compatible or Anthropic answers): answers each
/// request with the next reply.
pub struct FakeLlm {
    pub url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl FakeLlm {
    pub fn start(replies: Vec<(u16, String)>) -> FakeLlm {
        FakeLlm::start_with(replies.into_iter().map(|(status, body)| Reply { status, headers: Vec::new(), body }).collect())
    }

    /// [`FakeLlm::start`] with answers that carry headers (`Retry-After`).
    pub fn start_with(replies: Vec<Reply>) -> FakeLlm {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        std::thread::spawn(move || {
            let mut replies = replies.into_iter();
            for stream in listener.incoming().take(16) {
                let Ok(mut stream) = stream else { continue };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
                let (mut len, mut auth, mut headers) = (0usize, None, Vec::new());
                loop {
                    let mut h = String::new();
                    reader.read_line(&mut h).unwrap();
                    let h = h.trim_end();
                    if h.is_empty() {
                        break;
                    }
                    let (k, v) = h.split_once(':').unwrap_or((h, ""));
                    headers.push((k.to_ascii_lowercase(), v.trim().to_string()));
                    match k.to_ascii_lowercase().as_str() {
                        "content-length" => len = v.trim().parse().unwrap_or(0),
                        "authorization" => auth = Some(v.trim().to_string()),
                        _ => {}
                    }
                }
                let mut body = vec![0; len];
                reader.read_exact(&mut body).unwrap();
                log.lock().unwrap().push(Seen { path, auth, body: serde_json::from_slice(&body).unwrap_or(Value::Null), headers });
                let Some(Reply { status, headers, body: reply }) = replies.next() else { break };
                let extra: String = headers.iter().map(|(k, v)| format!("{k}: {v}\r\n")).collect();
                let _ = write!(stream, "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n{reply}", reply.len());
            }
        });
        FakeLlm { url, seen }
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

pub fn completion(content: &str) -> (u16, String) {
    (200, json!({ "choices": [{ "message": { "role": "assistant", "content": content } }] }).to_string())
}

pub fn llm_config(f: &Fixture, endpoint: &str, extra: &str) {
    f.home_config(&format!("[llm]\nendpoint = \"{endpoint}\"\nmodel = \"test-model\"\napi_key_env = \"CAIRN_TEST_KEY\"\ntimeout_seconds = 5\n{extra}"));
}

fn run_llm(f: &Fixture, task: &str) -> (Run, Value) {
    let r = Run::from(f.cmd().env("CAIRN_TEST_KEY", "sk-test").args(["run", "--provider", "llm", task]).output().unwrap());
    let id = r.stdout.trim().to_string();
    let status = f.cairn(&["status", &id, "--json"]).ok().json();
    (r, status)
}

#[test]
fn task_becomes_code_that_runs_to_reviewing() {
    let f = Fixture::with_files(&[("src/util.py", "def add(a, b):\n    return a + b\n")]);
    let code = "Here is the script:\n```python\nsrc = await read_file('src/util.py')\nawait write_file('src/util.py', '\"\"\"Utilities.\"\"\"\\n' + src)\nawait submit_result('add a module docstring', ['src/util.py'])\n```\n";
    let server = FakeLlm::start(vec![completion(code)]);
    llm_config(&f, &server.url, "");
    let (r, st) = run_llm(&f, "add a module docstring to src/util.py");
    assert_eq!(r.code, 0, "{r:?} {st}");
    assert_eq!(st["state"], "reviewing");
    assert_eq!(st["provider"], "llm");
    let diff = f.cairn(&["diff", st["id"].as_str().unwrap()]).ok().stdout;
    assert!(diff.contains("+\"\"\"Utilities.\"\"\""), "{diff}");
    let saved = std::fs::read_to_string(f.root.join(format!(".grail/agents/{}/task.pym", st["id"].as_str().unwrap()))).unwrap();
    assert!(saved.starts_with("src = await read_file") && !saved.contains("```"), "fences kept: {saved}");
    let seen = server.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].path, "/v1/chat/completions");
    assert_eq!(seen[0].auth.as_deref(), Some("Bearer sk-test"));
    assert_eq!(seen[0].body["model"], "test-model");
    assert_eq!(seen[0].body["max_tokens"], 2000);
    let messages = seen[0].body["messages"].as_array().unwrap();
    let system = messages[0]["content"].as_str().unwrap();
    for external in cairn::externals::names() {
        assert!(system.contains(external), "prompt lacks {external}");
    }
    assert!(system.contains("src/util.py"), "prompt lacks the project listing");
    // What scripts can do now: plain file code joins the proposal; nothing stale.
    assert!(system.contains("open(), pathlib, os") && system.contains("a leading '/' is the project root"), "{system}");
    assert!(!system.contains("No open()") && !system.contains("no os"), "{system}");
    assert!(messages[1]["content"].as_str().unwrap().contains("add a module docstring to src/util.py"));
}

#[test]
fn ask_llm_returns_plain_text_and_is_audited() {
    let f = Fixture::with_files(&[("a.txt", "a")]);
    let server = FakeLlm::start(vec![completion("hello from the model")]);
    llm_config(&f, &server.url, "");
    let r = Run::from(f.cmd().args(["run", "--provider", "inline", "answer = ask_llm('say hello', context='be brief')\nanswer"]).output().unwrap());
    assert_eq!(r.code, 0, "{r:?}");
    let st = f.cairn(&["status", r.stdout.trim(), "--json"]).ok().json();
    assert_eq!(st["result"], "hello from the model");
    let seen = server.seen();
    let messages = seen[0].body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 1, "a plain prompt, not the code template");
    assert_eq!(messages[0]["content"], "say hello\n\nContext:\nbe brief");
    assert_eq!(seen[0].auth, None, "no key variable set: no Authorization header");
    let overlay = f.project().existing_overlay(r.stdout.trim()).unwrap().unwrap();
    let audit = overlay.audit_log().unwrap();
    assert_eq!(audit[0].name, "ask_llm");
    assert_eq!(audit[0].result.as_deref(), Some("\"hello from the model\""));
}

#[test]
fn a_500_then_success_is_retried() {
    let f = Fixture::with_files(&[("a.txt", "a")]);
    let server = FakeLlm::start(vec![(500, "{\"error\": {\"message\": \"overloaded\"}}".into()), completion("```python\nwrite_file('a.txt', 'b')\n```")]);
    llm_config(&f, &server.url, "");
    let (_, st) = run_llm(&f, "change a");
    assert_eq!(st["state"], "reviewing", "{st}");
    assert_eq!(server.seen().len(), 2);
}

#[test]
fn http_errors_and_malformed_replies_error_the_agent_clearly() {
    let f = Fixture::with_files(&[("a.txt", "a")]);
    let server = FakeLlm::start(vec![(401, "{\"error\": {\"message\": \"invalid api key\"}}".into())]);
    llm_config(&f, &server.url, "");
    let (r, st) = run_llm(&f, "anything");
    assert_eq!(r.code, 1);
    assert_eq!(st["state"], "errored");
    assert_eq!(st["error_kind"], "provider");
    assert!(st["error"].as_str().unwrap().contains("HTTP 401: invalid api key"), "{st}");

    let server = FakeLlm::start(vec![(200, "{\"unexpected\": true}".into())]);
    llm_config(&f, &server.url, "");
    let (_, st) = run_llm(&f, "anything");
    assert!(st["error"].as_str().unwrap().contains("malformed reply") && st["error"].as_str().unwrap().contains("choices[0].message.content"), "{st}");

    let server = FakeLlm::start(vec![(200, "<html>not json</html>".into())]);
    llm_config(&f, &server.url, "");
    let (_, st) = run_llm(&f, "anything");
    assert!(st["error"].as_str().unwrap().contains("malformed reply") && st["error"].as_str().unwrap().contains("not JSON"), "{st}");
}

#[test]
fn unreachable_and_silent_endpoints_error_within_the_timeout() {
    let f = Fixture::with_files(&[("a.txt", "a")]);
    // A port nobody listens on.
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    llm_config(&f, &format!("http://127.0.0.1:{port}/v1"), "");
    let t = Instant::now();
    let (_, st) = run_llm(&f, "anything");
    // (Refused at once; the configured 5 s timeout bounds it in any case.)
    assert!(t.elapsed() < Duration::from_secs(60), "{:?}", t.elapsed());
    assert_eq!(st["state"], "errored");
    assert!(st["error"].as_str().unwrap().contains("cannot reach the LLM endpoint"), "{st}");
    // A server that accepts and never answers.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", silent.local_addr().unwrap());
    f.home_config(&format!("[llm]\nendpoint = \"{url}\"\ntimeout_seconds = 2\n"));
    let t = Instant::now();
    let (_, st) = run_llm(&f, "anything");
    let took = t.elapsed();
    // The 2 s configured, not the 120 s default.
    assert!(took < Duration::from_secs(60), "took {took:?}");
    assert_eq!(st["state"], "errored");
    assert!(st["error"].as_str().unwrap().contains("cannot reach the LLM endpoint"), "{st}");
    drop(silent);
}

#[test]
fn a_failed_check_is_sent_back_once_for_repair() {
    let f = Fixture::with_files(&[("a.txt", "a")]);
    let server = FakeLlm::start(vec![
        completion("```python\nimport socket\nwrite_file('a.txt', socket.gethostname())\n```"),
        completion("```python\nwrite_file('a.txt', 'repaired')\n```"),
    ]);
    llm_config(&f, &server.url, "");
    let (_, st) = run_llm(&f, "fix a");
    assert_eq!(st["state"], "reviewing", "{st}");
    let seen = server.seen();
    assert_eq!(seen.len(), 2);
    let repair = seen[1].body["messages"].as_array().unwrap();
    let last = repair.last().unwrap()["content"].as_str().unwrap();
    assert!(last.contains("import of 'socket' is not allowed"), "{last}");
    assert_eq!(repair[repair.len() - 2]["role"], "assistant");

    // With repairs off, the failed check errors the agent.
    let server = FakeLlm::start(vec![completion("```python\nimport socket\n```")]);
    llm_config(&f, &server.url, "repair_attempts = 0\n");
    let (_, st) = run_llm(&f, "fix a");
    assert_eq!(st["error_kind"], "check");
    assert_eq!(server.seen().len(), 1);
}

fn command_config(f: &Fixture, script: &str) {
    let path = f.dir.path().join("llm.sh");
    std::fs::write(&path, format!("#!/bin/sh\n{script}\n")).unwrap();
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    f.home_config(&format!("[llm]\ncommand = [\"{}\", \"--flag\"]\ntimeout_seconds = 5\n", path.display()));
}

#[test]
fn command_provider_success_failure_and_empty_output() {
    let f = Fixture::with_files(&[("a.txt", "a")]);
    let prompt_copy = f.dir.path().join("prompt.txt");
    command_config(&f, &format!("cat > {}\necho '```python'\necho \"write_file('a.txt', 'from command')\"\necho '```'", prompt_copy.display()));
    let (r, st) = run_llm(&f, "change a via command");
    assert_eq!(r.code, 0, "{st}");
    assert_eq!(st["state"], "reviewing");
    assert!(std::fs::read_to_string(&prompt_copy).unwrap().contains("change a via command"), "the prompt goes to stdin");

    command_config(&f, "cat > /dev/null\necho 'model crashed: out of memory' >&2\nexit 3");
    let (_, st) = run_llm(&f, "anything");
    assert_eq!(st["state"], "errored");
    let e = st["error"].as_str().unwrap();
    assert!(e.contains("failed") && e.contains("model crashed: out of memory"), "{e}");

    command_config(&f, "cat > /dev/null");
    let (_, st) = run_llm(&f, "anything");
    assert!(st["error"].as_str().unwrap().contains("printed nothing"), "{st}");
}
