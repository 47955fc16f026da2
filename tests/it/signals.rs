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
    wait_until(60, "all malformed signals to fail", || names.iter().all(|n| failed.join(format!("{n}.error.txt")).exists() && failed.join(n).exists()));
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

/// 1,000 bad entries, the odd kinds included (a directory, a symlink, a dangling symlink, a
/// FIFO, a non-UTF-8 name, a 50 MB file): each ends in failed/ with a reason, `up` stays small,
/// and a valid signal afterwards runs.
#[test]
fn odd_and_oversized_entries_fail_with_a_reason() {
    use std::os::unix::ffi::OsStrExt;
    let f = Fixture::with_files(&[("a.txt", "a")]);
    f.home_config("[orchestrator]\npoll_interval_ms = 20\n");
    let dir = f.home.join("signals");
    std::fs::create_dir_all(&dir).unwrap();
    for i in 0..994 {
        drop_signal(&f, &format!("bad-{i:04}.json"), if i % 2 == 0 { b"{nope" } else { br#"{"type": "queue"}"# });
    }
    std::fs::create_dir(dir.join("a-directory.json")).unwrap();
    std::os::unix::fs::symlink(f.root.join("a.txt"), dir.join("a-symlink.json")).unwrap();
    std::os::unix::fs::symlink("/nonexistent/target", dir.join("dangling.json")).unwrap();
    rustix::fs::mknodat(rustix::fs::CWD, dir.join("a-fifo.json"), rustix::fs::FileType::Fifo, rustix::fs::Mode::from_raw_mode(0o600), 0).unwrap();
    std::fs::write(dir.join(std::ffi::OsStr::from_bytes(b"bad-\xff-name.json")), b"{}").unwrap();
    std::fs::File::create(dir.join("huge.json")).unwrap().set_len(50 << 20).unwrap();
    let mut up = Up::start(&f);
    let failed = dir.join("failed");
    let reasons = [("a-directory.json", "a directory"), ("a-symlink.json", "a symbolic link"), ("dangling.json", "a symbolic link"), ("a-fifo.json", "not a regular file"), ("huge.json", "larger than 64 KiB"), ("bad-\u{fffd}-name.json", "not UTF-8")];
    wait_until(120, "every bad entry failed", || {
        (0..994).all(|i| failed.join(format!("bad-{i:04}.json.error.txt")).exists())
            && reasons.iter().all(|(n, _)| failed.join(format!("{n}.error.txt")).exists())
            && std::fs::read_dir(&dir).unwrap().flatten().all(|e| e.file_name() == "failed")
    });
    for (n, why) in reasons {
        let text = std::fs::read_to_string(failed.join(format!("{n}.error.txt"))).unwrap();
        assert!(text.contains(why), "{n}: {text}");
    }
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().map(|e| e.file_name()).filter(|n| n != "failed").collect();
    assert!(left.is_empty(), "left in signals/: {left:?}");
    let status = std::fs::read_to_string(format!("/proc/{}/status", up.child.id())).unwrap();
    let rss: u64 = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap().split_whitespace().nth(1).unwrap().parse().unwrap();
    eprintln!("cairn up peak RSS {rss} KiB");
    assert!(rss < 100 * 1024, "cairn up peaked at {rss} KiB");
    drop_signal(&f, "zz-valid.json", br#"{"type": "queue", "reference": "write_file('a.txt', 'ok')", "provider": "inline"}"#);
    let p = f.project();
    wait_until(30, "the valid signal ran", || p.bin().unwrap().in_state(State::Reviewing).unwrap().len() == 1);
    assert!(up.alive());
}

/// SIGKILL `cairn up` at 15 instants while it takes 1,500 signals: every signal is processed
/// exactly once (a claim a killed process left is retried; a retried queue is not doubled).
#[test]
fn signals_survive_kills_exactly_once() {
    let f = Fixture::with_files(&[("a.txt", "a")]);
    f.home_config("[orchestrator]\npoll_interval_ms = 10\n");
    let dir = f.home.join("signals");
    for i in 0..1500 {
        drop_signal(&f, &format!("sig-{i:04}.json"), format!(r#"{{"type": "queue", "reference": "missing-{i:04}.pym", "provider": "file"}}"#).as_bytes());
    }
    let pending = || std::fs::read_dir(&dir).unwrap().flatten().filter(|e| e.file_name().to_string_lossy().ends_with(".json")).count();
    for round in 0..15u64 {
        let mut up = Up::start(&f);
        // Fault injection, not synchronisation: a kill somewhere in the first ~400 ms.
        std::thread::sleep(std::time::Duration::from_millis(60 + (round * 53) % 340));
        up.kill9();
    }
    let _up = Up::start(&f);
    wait_until(120, "every signal taken", || pending() == 0);
    let p = f.project();
    let mut tasks: Vec<String> = p.bin().unwrap().list(true).unwrap().into_iter().map(|r| r.task).collect();
    tasks.sort();
    let mut want: Vec<String> = (0..1500).map(|i| format!("missing-{i:04}.pym")).collect();
    want.sort();
    let doubled: Vec<&String> = tasks.windows(2).filter(|w| w[0] == w[1]).map(|w| &w[0]).collect();
    assert!(doubled.is_empty(), "queued twice: {:?}", &doubled[..doubled.len().min(5)]);
    assert_eq!(tasks, want, "every signal queued exactly once");
    assert!(!dir.join("failed").exists() || std::fs::read_dir(dir.join("failed")).unwrap().count() == 0);
}
