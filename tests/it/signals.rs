//! SPEC §8: signal files taken once in name order; malformed or failing ones go to
//! `signals/failed/` with an `.error.txt`; the orchestrator keeps running.

use crate::support::*;
use cairn::lifecycle::State;

fn drop_signal(f: &Fixture, name: &str, body: &[u8]) {
    let dir = f.home.join("signals");
    std::fs::create_dir_all(&dir).unwrap();
    let tmp = dir.join(format!(".{name}.tmp"));
    std::fs::write(&tmp, body).unwrap();
    std::fs::rename(tmp, dir.join(name)).unwrap();
}

#[test]
fn hundred_malformed_signals_fail_and_a_valid_one_runs() {
    let f = Fixture::with_files(&[("a.txt", "a")]);
    f.home_config("[orchestrator]\npoll_interval_ms = 20\n");
    let mut names = Vec::new();
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    for i in 0..100 {
        let name = format!("bad-{i:03}.json");
        let body: Vec<u8> = match i % 5 {
            0 => b"{not json".to_vec(),
            1 => br#"{"type": "explode", "reference": "x"}"#.to_vec(),
            2 => br#"{"type": "accept", "agent_id": "ffffff"}"#.to_vec(),
            3 => br#"{"type": "queue"}"#.to_vec(),
            _ => (0..64)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    (seed & 0xff) as u8
                })
                .collect(),
        };
        drop_signal(&f, &name, &body);
        names.push(name);
    }
    let mut up = Up::start(&f);
    let failed = f.home.join("signals/failed");
    wait_until(60, "all malformed signals to fail", || names.iter().all(|n| failed.join(format!("{n}.error.txt")).exists()));
    for n in &names {
        assert!(failed.join(n).exists(), "{n} not moved to failed/");
        assert!(!f.home.join("signals").join(n).exists(), "{n} left in signals/");
    }
    let err = |i: usize| std::fs::read_to_string(failed.join(format!("{}.error.txt", names[i]))).unwrap();
    assert!(err(0).contains("invalid JSON"), "{}", err(0));
    assert!(err(1).contains("unknown type 'explode'"), "{}", err(1));
    assert!(err(2).contains("no agent 'ffffff' in any running project"), "{}", err(2));
    assert!(err(3).contains("queue needs \"reference\""), "{}", err(3));
    assert!(up.alive(), "orchestrator died on malformed signals");

    // A valid one still runs: queue through a signal, then accept through a name-prefixed one.
    drop_signal(&f, "zz-queue.json", br#"{"type": "queue", "reference": "write_file('a.txt', 'from signal')", "provider": "inline"}"#);
    let p = f.project();
    wait_until(30, "signalled agent to reach reviewing", || p.bin().unwrap().in_state(State::Reviewing).unwrap().len() == 1);
    let id = p.bin().unwrap().in_state(State::Reviewing).unwrap()[0].id.clone();
    drop_signal(&f, &format!("accept-{id}.json"), b"");
    wait_until(30, "signalled accept", || p.bin().unwrap().get(&id).unwrap().state == State::Accepted);
    assert_eq!(f.read_str("a.txt").as_deref(), Some("from signal"));
    assert!(up.alive());
}

#[test]
fn signals_are_taken_in_name_order() {
    let f = Fixture::with_files(&[("a.txt", "a")]);
    let p = f.project();
    for (i, tag) in ["c", "a", "b"].iter().enumerate() {
        let body = format!(r#"{{"type": "queue", "reference": "x = '{tag}'", "provider": "inline"}}"#);
        drop_signal(&f, &format!("{tag}-{i}.json"), body.as_bytes());
    }
    let handled = cairn::signals::poll(&p);
    let names: Vec<&str> = handled.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(names, ["a-1.json", "b-2.json", "c-0.json"]);
    let tasks: Vec<String> = p.bin().unwrap().list(true).unwrap().into_iter().map(|r| r.task).collect();
    assert_eq!(tasks, ["x = 'a'", "x = 'b'", "x = 'c'"]);
    assert!(cairn::signals::poll(&p).is_empty(), "a signal was taken twice");
}

/// Two projects' orchestrators share one CAIRN_HOME: an id-named accept signal (no
/// project_root) reaches the project that has the agent, never the other; an id no running
/// project has fails at once, saying where it looked.
#[test]
fn id_named_signals_reach_the_project_that_has_the_agent() {
    let a = Fixture::with_files(&[("a.txt", "a")]);
    let b = Fixture::with_files(&[("b.txt", "b")]);
    a.home_config("[orchestrator]\npoll_interval_ms = 20\n");
    let on_b = |args: &[&str]| {
        let mut c = std::process::Command::new(exe());
        c.arg("--project-root").arg(&b.root).arg("--cairn-home").arg(&a.home).args(args).env_remove("CAIRN_HOME");
        c
    };
    let out = on_b(&["run", "--provider", "inline", "write_file('x.txt', 'x')"]).output().unwrap();
    let id = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert_eq!(id.len(), 6, "{out:?}");
    let _up_a = Up::start(&a);
    let mut up_b = Up { child: on_b(&["up"]).stdin(std::process::Stdio::null()).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null()).spawn().unwrap() };
    wait_until(30, "both orchestrators registered", || std::fs::read_dir(a.home.join("hosts")).map(|d| d.count() == 2).unwrap_or(false));
    drop_signal(&a, &format!("accept-{id}.json"), b"");
    let b_state = || {
        let out = on_b(&["status", &id, "--json"]).output().unwrap();
        serde_json::from_slice::<serde_json::Value>(&out.stdout).map(|v| v["state"].as_str().unwrap_or("").to_string()).unwrap_or_default()
    };
    wait_until(30, "B's agent accepted", || b_state() == "accepted");
    assert_eq!(std::fs::read_to_string(b.root.join("x.txt")).unwrap(), "x");
    assert!(!a.home.join("signals/failed").join(format!("accept-{id}.json")).exists(), "A took B's signal");

    drop_signal(&a, "accept-ffffff.json", b"");
    let err = a.home.join("signals/failed/accept-ffffff.json.error.txt");
    wait_until(30, "the unknown id failed", || err.exists());
    let text = std::fs::read_to_string(&err).unwrap();
    assert!(text.contains("no agent 'ffffff' in any running project") && text.contains(&a.root.display().to_string()) && text.contains(&b.root.display().to_string()), "{text}");
    up_b.kill9();
}
