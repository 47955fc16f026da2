//! Rows about runs: a trivial agent from queue to `reviewing` on every path a user takes
//! (in-process as `cairn up` and the host run it, `cairn run`, `cairn queue` with `cairn up`
//! serving, an MCP session), importing the whole library, and reject.

use crate::stats::{peak_rss_mb, sample, time, Row, Stat};
use crate::{done, Ctx};
use cairn::command::{self, Command};
use cairn::lifecycle::{Priority, Provider};
use cairn::sandbox::pool::Pool;
use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::time::{Duration, Instant};

const TRIVIAL: &str = "x = 1";

/// Queue, claim and run to `reviewing` in this process, the child forked by the pool's zygote.
pub fn pooled(c: &Ctx, pool: &Pool, code: &str) -> String {
    cairn::orchestrator::queue(&c.p, code, Some(Provider::Inline), Priority::Normal).expect("queue");
    let rec = cairn::orchestrator::run_next(&c.p, Some(pool)).expect("run").expect("claimed");
    assert_eq!(rec.state.as_str(), "reviewing", "{:?}", rec.error);
    rec.id
}

pub fn all(c: &Ctx, rows: &mut Vec<Row>) {
    let mut ids = Vec::new();
    let pool = Pool::new(&c.p.exe, true);
    // The zygote's first build is not a steady state: one run first, untimed.
    ids.push(pooled(c, &pool, TRIVIAL));
    let v = sample(c.runs * 3, || {
        let (t, id) = time(|| pooled(c, &pool, TRIVIAL));
        ids.push(id);
        t
    });
    done(rows, Row::new("run_inproc", "queue → reviewing, in-process (a worker of `cairn up`/the host; child forked by the zygote), back to back", v, "< 10 ms"));
    let v = sample(c.runs, || {
        let (t, id) = time(|| c.run_inline(TRIVIAL));
        ids.push(id);
        t
    });
    done(rows, Row::new("run_cold", "queue → reviewing, in-process, a fresh child instead (no zygote)", v, ""));
    // The same path on CPython (`# cairn: interpreter=cpython`): the host's python3 in a
    // confined run workspace, a one-file agent.
    let cpython = "# cairn: interpreter=cpython\nwrite_file('bench_cpython.txt', 'x\\n')\n";
    ids.push(pooled(c, &pool, cpython));
    let v = sample(c.runs, || {
        let (t, id) = time(|| pooled(c, &pool, cpython));
        ids.push(id);
        t
    });
    done(rows, Row::new("run_cpython", "queue → reviewing, in-process, a one-file agent on CPython (python3 in a confined run workspace)", v, "< 80 ms at 10k"));
    import_all(c, &pool, rows, &mut ids);
    run_workspace(c, &pool, rows, &mut ids);
    drop(pool);

    std::fs::write(c.root.join("trivial.pym"), format!("{TRIVIAL}\n")).expect("write");
    cairn::sync::init(&c.p).expect("index");
    let v = sample(c.runs, || {
        let (t, out) = time(|| c.cairn().args(["run", "trivial.pym"]).output().expect("cairn run"));
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        ids.push(String::from_utf8_lossy(&out.stdout).trim().to_string());
        t
    });
    done(rows, Row::new("run_cli", "queue → reviewing via `cairn run` (no watcher: re-index, start a zygote)", v, "< 150 ms"));
    via_wrap(c, rows);
    via_up(c, rows, &mut ids);
    via_mcp(c, rows);

    let v: Vec<Duration> = ids.iter().map(|id| time(|| command::execute(&c.p, Command::Reject { id: id.clone(), reason: None }).expect("reject")).0).collect();
    done(rows, Row::new("reject", "reject", Stat::ms(&v), "< 5 ms"));
}

/// A confined run (`true`) in a run workspace of a 10-file proposal: staging, namespaces,
/// overlay, masks, the command, its result (the tear-down finishes in the background).
/// Independent of the project's size by design.
fn run_workspace(c: &Ctx, pool: &Pool, rows: &mut Vec<Row>, ids: &mut Vec<String>) {
    let id = pooled(c, pool, "for i in range(10):\n    write_file('bench_run/f%d.txt' % i, 'x' * 1000)\n");
    let changes = cairn::review::diff::changes(&c.p, &id).expect("changes");
    ids.push(id);
    let req = cairn::runbox::Request { cmd: "true", cwd: "", timeout: Duration::from_secs(60), capture: false };
    let v = sample(c.runs * 3, || {
        let (t, out) = time(|| cairn::runbox::run(&c.p, &changes, &req).expect("confined run"));
        assert!(out.exit.success(), "{:?}", String::from_utf8_lossy(&out.output));
        t
    });
    // Each run's tear-down (namespaces, cgroup, directory) overlapped the next one's start.
    cairn::runbox::settle();
    done(rows, Row::new("run_workspace", "confined run workspace of a 10-file proposal ready, `true` run in it, its result back (back to back: each tear-down goes on beside the next run)", v, "< 20 ms at 10k, < 50 ms at 100k"));
    // The same without the memory cgroup (per-process limits): the cgroup's set-up costs the
    // difference (a v1 cgroup as root on a hybrid host, v2 where delegated).
    let mut per_process = c.p.clone();
    per_process.env.0.push(("CAIRN_TEST_NO_CGROUP".into(), "1".into()));
    let v = sample(c.runs * 3, || {
        let (t, out) = time(|| cairn::runbox::run(&per_process, &changes, &req).expect("confined run"));
        assert!(out.exit.success() && out.budget.starts_with("per-process"), "{:?} {}", String::from_utf8_lossy(&out.output), out.budget);
        t
    });
    cairn::runbox::settle();
    done(rows, Row::new("run_workspace_no_cgroup", "the same run workspace with the memory cgroup switched off (the budget per process): the cgroup's cost is the difference", v, ""));
}

/// Every module a script may import, in one script, timed inside the child.
fn import_all(c: &Ctx, pool: &Pool, rows: &mut Vec<Row>, ids: &mut Vec<String>) {
    let every = cairn::sandbox::stdlib::PUBLIC.iter().filter(|m| **m != "grail").copied().collect::<Vec<_>>().join(", ");
    let script = format!("import time\nt0 = time.perf_counter()\nimport {every}\n(time.perf_counter() - t0) * 1000\n");
    let mut v = Vec::new();
    for _ in 0..c.runs {
        let id = pooled(c, pool, &script);
        let millis = c.p.bin().expect("bin").get(&id).expect("record").result.and_then(|r| r.as_f64()).expect("a duration");
        v.push(Duration::from_secs_f64(millis / 1000.0));
        ids.push(id);
    }
    done(rows, Row::new("import_all", "import every library module (timed in the child)", Stat::ms(&v), "< 250 ms"));
}

/// `cairn wrap -- true`: the whole command, process start to its exit (the session, its
/// boundary, its end: nothing proposed).
fn via_wrap(c: &Ctx, rows: &mut Vec<Row>) {
    let v = sample(c.runs, || {
        let (t, out) = time(|| c.cairn().args(["wrap", "--", "true"]).stdin(Stdio::null()).output().expect("cairn wrap"));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success() && err.contains("wrap session "), "{err}");
        t
    });
    done(rows, Row::new("wrap", "`cairn wrap -- true` (process start to exit: a session, its boundary with pty, proxy and home, its end)", v, "< 30 ms at 10k, < 50 ms at 100k"));
    relay(c, rows);
}

/// Output through the pty relay: `cairn wrap` on a terminal (a pty pair made here plays the
/// user's), the agent writing 100 MiB of text in lines of 80 bytes (`yes`: text passes the
/// relay's filter, where NULs, like every control a terminal acts on, are left out), the
/// bench reading them as a terminal emulator would, up to an end line the agent prints last.
fn relay(c: &Ctx, rows: &mut Vec<Row>) {
    use rustix::pty::OpenptFlags;
    const BYTES: u64 = 100 << 20;
    const END: &[u8] = b"cairn-bench-end";
    const LINE: &str = "warning: unused variable `x` in src/lib.rs:42:9 (a line of build output, 80 B).";
    assert_eq!(LINE.len() + 1, 80);
    let script = format!("yes '{LINE}' | head -c {BYTES}; echo cairn-bench-end");
    let v = sample(c.runs, || {
        let master = rustix::pty::openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC).expect("openpt");
        rustix::pty::grantpt(&master).expect("grantpt");
        rustix::pty::unlockpt(&master).expect("unlockpt");
        let slave = rustix::pty::ioctl_tiocgptpeer(&master, OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC).expect("slave");
        let t = Instant::now();
        let mut child = c
            .cairn()
            .args(["wrap", "--", "sh", "-c", &script])
            .stdin(Stdio::from(slave.try_clone().expect("dup")))
            .stdout(Stdio::from(slave.try_clone().expect("dup")))
            .stderr(Stdio::from(slave))
            .spawn()
            .expect("cairn wrap");
        // Lines of exactly LINE are the agent's; every other line is the session's banner.
        let (mut lines, mut line, mut banner, mut ended) = (0u64, Vec::with_capacity(256), Vec::new(), false);
        let mut buf = vec![0u8; 1 << 16];
        while !ended {
            let n = match rustix::io::read(&master, &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            for &b in &buf[..n] {
                if b != b'\n' {
                    if line.len() < 256 && b != b'\r' {
                        line.push(b);
                    }
                    continue;
                }
                if line == LINE.as_bytes() {
                    lines += 1;
                } else if line.ends_with(END) {
                    ended = true;
                } else {
                    banner.extend_from_slice(&line);
                    banner.push(b'\n');
                }
                line.clear();
            }
        }
        let elapsed = t.elapsed();
        // The rest (the closing banner) until cairn wrap ends.
        std::thread::spawn(move || while matches!(rustix::io::read(&master, &mut buf), Ok(n) if n > 0) {});
        child.wait().expect("wait");
        assert!(ended, "the relay lost the agent's last line");
        assert_eq!(lines, BYTES / 80, "the relay lost output");
        assert!(String::from_utf8_lossy(&banner).contains("wrap session "), "no session banner");
        elapsed
    });
    done(rows, Row::new("wrap_relay", "100 MiB of output through `cairn wrap`'s pty relay (start to last byte)", v, "< 2 s (>= 50 MB/s)"));
}

/// `cairn queue` with `cairn up` serving: wall clock from starting `cairn queue` to the
/// `reviewing` state in bin.db; then `cairn up`'s peak memory.
fn via_up(c: &Ctx, rows: &mut Vec<Row>, ids: &mut Vec<String>) {
    let mut up = c.cairn().arg("up").stdout(Stdio::null()).stderr(Stdio::null()).spawn().expect("cairn up");
    let bin = c.p.bin().expect("bin");
    let once = || {
        let t = Instant::now();
        let out = c.cairn().args(["queue", "trivial.pym"]).output().expect("cairn queue");
        let id = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let deadline = Instant::now() + Duration::from_secs(120);
        while bin.get(&id).map(|r| r.state.as_str() != "reviewing").unwrap_or(true) {
            assert!(Instant::now() < deadline, "agent {id} never reached reviewing");
            std::thread::sleep(Duration::from_micros(100));
        }
        (t.elapsed(), id)
    };
    // Serving once the first agent went through (it waited for the start-up re-index).
    ids.push(once().1);
    let v = sample(c.runs, || {
        let (t, id) = once();
        ids.push(id);
        t
    });
    done(rows, Row::new("run_up", "queue → reviewing via `cairn queue` with `cairn up` serving (wall clock)", v, "< 50 ms"));
    let rss = peak_rss_mb(up.id()).expect("VmHWM");
    if let Some(pid) = rustix::process::Pid::from_raw(up.id() as i32) {
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
    }
    let _ = up.wait();
    done(rows, Row::new("rss_up", "peak RSS of `cairn up` (watcher on, after these runs)", Stat::mb(rss), "< 200 MB at 100k"));
}

/// A trivial MCP session (begin, finish: `reviewing` when the reply arrives) over `cairn mcp`'s
/// stdio, in plain JSON-RPC lines.
fn via_mcp(c: &Ctx, rows: &mut Vec<Row>) {
    let mut server = c.cairn().args(["mcp", "--actor", "agent:bench"]).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().expect("cairn mcp");
    let mut stdin = server.stdin.take().expect("stdin");
    let mut lines = BufReader::new(server.stdout.take().expect("stdout")).lines();
    let mut next_id = 0;
    let mut rpc = |method: &str, params: serde_json::Value| -> serde_json::Value {
        next_id += 1;
        writeln!(stdin, "{}", serde_json::json!({ "jsonrpc": "2.0", "id": next_id, "method": method, "params": params })).expect("send");
        loop {
            let v: serde_json::Value = serde_json::from_str(&lines.next().expect("reply").expect("read")).expect("json");
            if v["id"] == next_id {
                return v;
            }
        }
    };
    rpc("initialize", serde_json::json!({ "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": { "name": "bench", "version": "1" } }));
    let mut tool = |name: &str, args: serde_json::Value| -> serde_json::Value {
        let r = rpc("tools/call", serde_json::json!({ "name": name, "arguments": args }));
        assert!(r["result"]["isError"] != serde_json::Value::Bool(true), "{name}: {r}");
        r["result"]["structuredContent"].clone()
    };
    let mut round = 0;
    let mut v = Vec::new();
    for _ in 0..=c.runs {
        round += 1;
        let task = tool("task_create", serde_json::json!({ "title": format!("bench {round}") }));
        let (t, s) = time(|| {
            let s = tool("session_begin", serde_json::json!({ "task": task["id"], "idempotency_key": format!("bench-{round}-{}", task["id"]) }));
            tool("session_finish", serde_json::json!({ "session": s["id"], "summary": "nothing" }));
            s
        });
        assert_eq!(c.p.bin().expect("bin").get(s["agent"].as_str().expect("agent")).expect("record").state.as_str(), "reviewing");
        v.push(t);
    }
    v.remove(0);
    done(rows, Row::new("run_mcp", "session_begin → session_finish → reviewing via `cairn mcp` (JSON-RPC on stdio)", Stat::ms(&v), "< 50 ms"));
    // edit_file: one exact replacement in a 300-line file of the session's proposal.
    let task = tool("task_create", serde_json::json!({ "title": "bench edits" }));
    let s = tool("session_begin", serde_json::json!({ "task": task["id"], "idempotency_key": "bench-edits" }));
    let body: String = (0..300).map(|i| format!("    value_{i} = compute({i})\n")).collect();
    tool("write_file", serde_json::json!({ "session": s["id"], "path": "bench_edit.py", "content": body }));
    let mut v = Vec::new();
    for i in 0..=c.runs.min(299) {
        let (t, _) = time(|| tool("edit_file", serde_json::json!({ "session": s["id"], "path": "bench_edit.py", "edits": [{ "old_text": format!("value_{i} = compute({i})"), "new_text": format!("value_{i} = edited({i})") }] })));
        v.push(t);
    }
    v.remove(0);
    let _ = server.kill();
    let _ = server.wait();
    done(rows, Row::new("edit_file", "`edit_file` via `cairn mcp`: one exact replacement in a 300-line file, diff returned", Stat::ms(&v), "< 5 ms"));
}
