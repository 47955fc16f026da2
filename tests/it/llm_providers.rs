//! `[llm] provider` (openai, anthropic, ollama), rate limits and the default model, against
//! scripted servers on 127.0.0.1 started by the test ([`FakeLlm`]): a 429 puts the agent back
//! in the queue (its worker free) until the `Retry-After` or the backoff allows, a bounded
//! number of times; Anthropic's Messages API spoken natively; a model the server does not have
//! falls back to `default_model` once, and the log says so.

use crate::llm::{completion, llm_config, FakeLlm, Reply};
use crate::support::*;
use cairn::events::EventKind;
use serde_json::{json, Value};

const CHANGE_A: &str = "```python\nwrite_file('a.txt', 'b')\n```";

fn rate_limited(retry_after: Option<&str>) -> Reply {
    let headers = retry_after.map(|s| vec![("Retry-After", s.to_string())]).unwrap_or_default();
    Reply { status: 429, headers, body: json!({ "error": { "message": "slow down" } }).to_string() }
}

fn ok(reply: (u16, String)) -> Reply {
    Reply { status: reply.0, headers: Vec::new(), body: reply.1 }
}

/// `cairn run --provider llm TASK` to its end; the agent's status.
fn run_llm(f: &Fixture, env: &[(&str, &str)], task: &str) -> Value {
    let mut cmd = f.cmd();
    for (k, v) in env {
        cmd.env(k, v);
    }
    let r = Run::from(cmd.args(["run", "--provider", "llm", task]).output().unwrap());
    let id = r.stdout.trim().to_string();
    assert!(!id.is_empty(), "{r:?}");
    f.cairn(&["status", &id, "--json"]).ok().json()
}

/// The messages of agent `id`'s re-queue events.
fn requeues(f: &Fixture, id: &str) -> Vec<String> {
    let events = f.project().bin().unwrap().events_of(id).unwrap();
    events.into_iter().filter_map(|e| if let EventKind::Requeued { message } = e.kind { Some(message) } else { None }).collect()
}

#[test]
fn a_429_then_200_is_requeued_and_ends_reviewing() {
    let f = Fixture::with_files(&[("a.txt", "a")]);
    // Retry-After in seconds is honoured.
    let server = FakeLlm::start_with(vec![rate_limited(Some("1")), ok(completion(CHANGE_A))]);
    llm_config(&f, &server.url, "");
    let st = run_llm(&f, &[], "change a");
    assert_eq!(st["state"], "reviewing", "{st}");
    assert_eq!(server.seen().len(), 2);
    let id = st["id"].as_str().unwrap();
    let msgs = requeues(&f, id);
    assert_eq!(msgs.len(), 1, "{msgs:?}");
    assert!(msgs[0].contains("HTTP 429 (Retry-After: 1 s): slow down") && msgs[0].contains("tried again in 1 s (attempt 2 of 6)"), "{msgs:?}");
    assert!(f.cairn(&["diff", id]).ok().stdout.contains("+b"));

    // Without Retry-After: exponential backoff, 1 s then 2 s.
    let server = FakeLlm::start_with(vec![rate_limited(None), rate_limited(None), ok(completion(CHANGE_A))]);
    llm_config(&f, &server.url, "");
    let st = run_llm(&f, &[], "change a again");
    assert_eq!(st["state"], "reviewing", "{st}");
    assert_eq!(server.seen().len(), 3);
    let msgs = requeues(&f, st["id"].as_str().unwrap());
    assert!(msgs.len() == 2 && msgs[0].contains("tried again in 1 s") && msgs[1].contains("tried again in 2 s"), "{msgs:?}");
}

#[test]
fn rate_limits_are_bounded_in_attempts_and_wait() {
    let f = Fixture::with_files(&[("a.txt", "a")]);
    // A Retry-After of an hour waits rate_limit_max_wait_seconds; the second 429 is the last
    // attempt rate_limit_retries = 1 allows.
    let server = FakeLlm::start_with(vec![rate_limited(Some("3600")), rate_limited(Some("0"))]);
    llm_config(&f, &server.url, "rate_limit_retries = 1\nrate_limit_max_wait_seconds = 1\n");
    let st = run_llm(&f, &[], "change a");
    assert_eq!(st["state"], "errored", "{st}");
    assert_eq!(st["error_kind"], "provider");
    let e = st["error"].as_str().unwrap();
    assert!(e.contains("rate limited") && e.contains("HTTP 429") && e.contains("gave up after 2 attempts ([llm] rate_limit_retries = 1)"), "{e}");
    assert_eq!(server.seen().len(), 2);
    let msgs = requeues(&f, st["id"].as_str().unwrap());
    assert!(msgs.len() == 1 && msgs[0].contains("Retry-After: 3600 s") && msgs[0].contains("tried again in 1 s"), "{msgs:?}");
}

#[test]
fn a_rate_limited_agent_waits_in_the_queue_not_in_a_worker() {
    let f = Fixture::with_files(&[("a.txt", "a")]);
    let server = FakeLlm::start_with(vec![rate_limited(Some("600"))]);
    llm_config(&f, &server.url, "rate_limit_max_wait_seconds = 600\n[orchestrator]\nmax_concurrent_agents = 1\n");
    let waiting = f.cairn(&["queue", "--provider", "llm", "change a"]).ok().stdout.trim().to_string();
    let _up = Up::start(&f);
    let p = f.project();
    wait_until(60, "the rate-limited agent back in the queue", || !requeues(&f, &waiting).is_empty());
    // The one worker slot is free: another agent runs to review meanwhile.
    let other = f.cairn(&["queue", "--provider", "inline", "write_file('c.txt', 'c')"]).ok().stdout.trim().to_string();
    wait_until(60, "the other agent reviewing", || p.bin().unwrap().get(&other).unwrap().state.as_str() == "reviewing");
    assert_eq!(p.bin().unwrap().get(&waiting).unwrap().state.as_str(), "queued");
    assert_eq!(server.seen().len(), 1, "not asked again before its Retry-After");
}

#[test]
fn anthropic_messages_api_ends_reviewing_with_the_proposal() {
    let f = Fixture::with_files(&[("src/util.py", "def add(a, b):\n    return a + b\n")]);
    let code = "```python\nsrc = read_file('src/util.py')\nwrite_file('src/util.py', '\"\"\"Utilities.\"\"\"\\n' + src)\nsubmit_result('docstring', ['src/util.py'])\n```";
    let reply = json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
        "content": [{ "type": "thinking", "thinking": "not code" }, { "type": "text", "text": format!("Here is the script:\n{code}\n") }],
        "stop_reason": "end_turn", "usage": { "input_tokens": 10, "output_tokens": 20 }
    });
    let server = FakeLlm::start(vec![(200, reply.to_string())]);
    // The endpoint is the API's base, without /v1.
    let base = server.url.trim_end_matches("/v1");
    f.home_config(&format!("[llm]\nprovider = \"anthropic\"\nendpoint = \"{base}\"\nmodel = \"claude-test\"\ntimeout_seconds = 5\n"));
    let st = run_llm(&f, &[("ANTHROPIC_API_KEY", "sk-ant-test"), ("OPENAI_API_KEY", "sk-openai")], "add a module docstring to src/util.py");
    assert_eq!(st["state"], "reviewing", "{st}");
    let id = st["id"].as_str().unwrap();
    let diff = f.cairn(&["diff", id]).ok().stdout;
    assert!(diff.contains("+\"\"\"Utilities.\"\"\"") && diff.contains("src/util.py"), "{diff}");
    let seen = server.seen();
    assert_eq!(seen.len(), 1);
    let req = &seen[0];
    assert_eq!(req.path, "/v1/messages");
    assert_eq!(req.header("x-api-key"), Some("sk-ant-test"), "the Anthropic key, never the OpenAI one");
    assert_eq!(req.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(req.auth, None);
    assert_eq!(req.body["model"], "claude-test");
    assert_eq!(req.body["max_tokens"], 2000);
    let system = req.body["system"].as_str().expect("system is top-level");
    for external in cairn::externals::names() {
        assert!(system.contains(external), "system prompt lacks {external}");
    }
    let messages = req.body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 1, "no system message among messages: {messages:?}");
    assert_eq!(messages[0]["role"], "user");
    assert!(messages[0]["content"].as_str().unwrap().contains("add a module docstring to src/util.py"));
}

#[test]
fn a_model_not_found_falls_back_to_the_default_model_once() {
    let f = Fixture::with_files(&[("a.txt", "a")]);
    let missing = (404, json!({ "error": { "message": "model \"big-model\" not found, try pulling it first" } }).to_string());
    // The fallback's first code fails the check: its repair goes straight to the default model.
    let server = FakeLlm::start(vec![missing.clone(), completion("```python\nimport socket\n```"), completion(CHANGE_A)]);
    llm_config(&f, &server.url, "");
    let cfg = std::fs::read_to_string(f.home.join("config.toml")).unwrap().replace("model = \"test-model\"", "model = \"big-model\"\ndefault_model = \"small-model\"");
    f.home_config(&cfg);
    let st = run_llm(&f, &[], "change a");
    assert_eq!(st["state"], "reviewing", "{st}");
    let models: Vec<Value> = server.seen().iter().map(|s| s.body["model"].clone()).collect();
    assert_eq!(models, [json!("big-model"), json!("small-model"), json!("small-model")]);
    let log = std::fs::read_to_string(f.home.join("logs/cairn.log")).unwrap();
    assert!(log.contains("model \"big-model\" was not found") && log.contains("falling back to the default model \"small-model\""), "{log}");

    // Without a default model, the agent errors with the server's word.
    let server = FakeLlm::start(vec![missing]);
    llm_config(&f, &server.url, "");
    let st = run_llm(&f, &[], "change a");
    assert_eq!(st["state"], "errored");
    assert!(st["error"].as_str().unwrap().contains("HTTP 404: model \"big-model\" not found"), "{st}");
    assert_eq!(server.seen().len(), 1);
}
