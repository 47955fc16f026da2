//! Scarce resources. A full disk (a small tmpfs in a private mount namespace holds the project
//! and CAIRN_HOME): reads keep working, a write fails with one clear error and no logger noise,
//! nothing is lost. Too few file descriptors (`ulimit -n 64`): no agent is lost to it.

use crate::support::*;
use std::process::Command;

#[test]
fn a_full_disk_keeps_reads_working_and_errors_print_once() {
    let t = tempfile::tempdir().unwrap();
    let disk = t.path().join("disk");
    std::fs::create_dir(&disk).unwrap();
    let script = r#"
set -u
mount -t tmpfs -o size=4m tmpfs "$D" || exit 90
mkdir "$D/p" "$D/home" && cd "$D/p" && echo a > a.txt && git init -q . 2>/dev/null
c() { "$CAIRN" --project-root "$D/p" --cairn-home "$D/home" "$@"; }
c init >/dev/null || exit 91
id=$(c run --provider inline "write_file('a.txt', 'b\n')") || exit 92
echo "id=$id"
dd if=/dev/zero of="$D/fill" bs=16k 2>/dev/null
echo "== list"
c list-agents; echo "rc=$?"
echo "== run"
c run --provider inline "write_file('c.txt', 'c\n')" 2>&1; echo "rc=$?"
echo "== status"
c status "$id" 2>&1; echo "rc=$?"
rm -f "$D/fill"
echo "== after"
c diff "$id" 2>&1; echo "rc=$?"
"#;
    let out = Command::new("unshare")
        .args(["--user", "--map-root-user", "--mount", "sh", "-c", script])
        .env("D", &disk)
        .env("CAIRN", exe())
        .env_remove("CAIRN_HOME")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(90), "no tmpfs in a user namespace here: {text}");
    let id = text.lines().find_map(|l| l.strip_prefix("id=")).unwrap_or_else(|| panic!("no agent: {text}")).trim().to_string();
    let part = |name: &str| text.split(&format!("== {name}\n")).nth(1).and_then(|r| r.split("\n== ").next()).unwrap_or("").to_string();
    let list = part("list");
    assert!(list.contains(&id) && list.contains("rc=0"), "list-agents on a full disk: {list}");
    let run = part("run");
    assert!(!run.contains("rc=0"), "a run on a full disk claimed success: {run}");
    assert!(!run.contains("tracing"), "logger noise: {run}");
    let errs = run.lines().filter(|l| l.contains("error")).count();
    assert_eq!(errs, 1, "the error is printed once: {run}");
    assert!(run.to_lowercase().contains("space") || run.to_lowercase().contains("full"), "the error says the disk is full: {run}");
    assert!(part("status").contains("reviewing"), "status on a full disk: {text}");
    let after = part("after");
    assert!(after.contains("+b") && after.contains("rc=0"), "the proposal survived: {after}");
}

/// `cairn up` under `ulimit -n 64` with 16 agents queued: every one ends reviewing (runs that
/// found no descriptor went back to the queue), none errored, none crashed.
#[test]
fn too_few_descriptors_lose_no_agent() {
    let f = Fixture::with_files(&[("a.txt", "a\n")]);
    f.init();
    for i in 0..16 {
        f.cairn(&["queue", "--provider", "inline", &format!("write_file('f{i}.txt', '{i}\\n')")]).ok();
    }
    let mut up = Command::new("sh");
    up.args(["-c", "ulimit -n 64 && exec \"$0\" \"$@\""]).arg(exe()).arg("--project-root").arg(&f.root).arg("--cairn-home").arg(&f.home).arg("up");
    let _up = Up { child: up.env_remove("CAIRN_HOME").stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null()).spawn().unwrap() };
    let states = || -> Vec<String> {
        let out = f.cairn(&["list-agents", "--all", "--json"]).ok().json();
        out.as_array().unwrap().iter().map(|a| format!("{} {}", a["state"].as_str().unwrap_or(""), a["error"].as_str().unwrap_or(""))).collect()
    };
    // Polled every 100 ms: a `cairn list-agents` per look must not starve the `up` it waits on.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(300);
    loop {
        let now = states();
        if now.iter().all(|s| s.starts_with("reviewing") || s.starts_with("errored")) {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "timed out waiting for every agent to end its run: {now:?}");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let s = states();
    assert_eq!(s.len(), 16, "{s:?}");
    assert!(s.iter().all(|x| x.starts_with("reviewing")), "agents lost to a shortage of descriptors: {s:?}");
}

/// A new agent's overlay whose creation is cut short (here SQLite cannot make the WAL, as
/// when no descriptor is left) is an error and leaves no file at the overlay's name: an empty
/// one would read as a damaged overlay for good, and its agent would be lost (seen under
/// `ulimit -n 64` on a loaded machine).
#[test]
fn a_failed_overlay_creation_leaves_no_empty_overlay() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent-x.db");
    for blocked in ["agent-x.db-wal", "agent-x.db.part-wal"] {
        std::fs::create_dir(dir.path().join(blocked)).unwrap();
    }
    // No template can be made either: its directory is missing.
    let template = dir.path().join("missing/template.db");
    assert!(cairn::store::overlay::Overlay::create(&path, &template).is_err(), "the creation should fail");
    assert!(!path.exists(), "an empty overlay was left at its name");
}
