//! A wrap session's finite defaults (issue 48, item 3), attacked the way the attacker did
//! (`tests/hostile/budget_hog.py` under `cairn wrap`): 1,500 processes at once, a `/tmp`
//! filled, hundreds of idle connections to the proxy that send a request a byte at a time
//! (while `cairn wrap`'s threads are counted from outside), inotify instances taken.

use crate::support::*;
use std::process::Stdio;

const HOG: &str = include_str!("../hostile/budget_hog.py");

fn fixture() -> Fixture {
    Fixture::with_files(&[("hog.py", HOG)])
}

fn got(out: &str, what: &str) -> u64 {
    assert!(out.contains("hog-done"), "the hog did not finish:\n{out}");
    out.lines().find_map(|l| l.strip_prefix(&format!("got {what} "))?.trim().parse().ok()).unwrap_or_else(|| panic!("no {what}:\n{out}"))
}

fn wrap(f: &Fixture, network: &str, args: &[&str]) -> String {
    let out = f.cmd().args(["wrap", "--network", network, "--", "python3", "hog.py"]).args(args).stdin(Stdio::null()).output().unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

#[test]
fn a_wrapped_agent_runs_at_most_max_processes() {
    let f = fixture();
    let out = wrap(&f, "none", &["procs", "1500"]);
    let n = got(&out, "procs");
    assert!((100..1024).contains(&n), "1,500 processes asked, {n} started under [wrap] max_processes = 1024:\n{out}");
    f.home_config("[wrap]\nmax_processes = 50\n");
    let n = got(&wrap(&f, "none", &["procs", "1500"]), "procs");
    assert!(n < 50, "{n} started under max_processes = 50");
}

#[test]
fn a_wrapped_agents_tmp_is_bounded() {
    let f = fixture();
    f.home_config("[wrap]\nmax_tmp_mb = 32\n");
    let written = got(&wrap(&f, "none", &["tmp", "100"]), "tmp");
    assert!(written <= 32 << 20, "{} MiB written into a 32 MiB /tmp", written >> 20);
}

#[test]
fn a_wrapped_agent_takes_a_few_inotify_instances() {
    let f = fixture();
    let n = got(&wrap(&f, "none", &["inotify"]), "inotify");
    assert!((1..=64).contains(&n), "a wrap session took {n} inotify instances");
}

/// 300 connections to the proxy, each sending a request head a byte every 2 s: those past
/// `[wrap] max_connections` are refused at once, the rest closed once their head is late
/// (a 30 s wait per read kept them forever), and `cairn wrap` never runs a thread per
/// connection past the cap.
#[test]
fn idle_proxy_connections_are_capped_and_closed() {
    let f = fixture();
    let mut child = f.cmd().args(["wrap", "--network", "proxy", "--", "python3", "hog.py", "proxy", "300"]).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let pid = child.id();
    let mut most = 0;
    let (out, err) = {
        let mut stdout = child.stdout.take().unwrap();
        let mut stderr = child.stderr.take().unwrap();
        let reader = std::thread::spawn(move || {
            let mut s = String::new();
            std::io::Read::read_to_string(&mut stdout, &mut s).unwrap();
            s
        });
        let errs = std::thread::spawn(move || {
            let mut s = String::new();
            std::io::Read::read_to_string(&mut stderr, &mut s).unwrap();
            s
        });
        // Counted while it runs, until it ends.
        while child.try_wait().unwrap().is_none() {
            let threads = std::fs::read_dir(format!("/proc/{pid}/task")).map(|d| d.count()).unwrap_or(0);
            most = most.max(threads);
            std::thread::yield_now();
            std::thread::park_timeout(std::time::Duration::from_millis(20));
        }
        (reader.join().unwrap(), errs.join().unwrap())
    };
    let all = format!("{out}\n{err}");
    let connected = got(&all, "connected");
    let refused = got(&all, "refused");
    let open = got(&all, "open");
    assert_eq!(connected, 300, "{all}");
    assert!(refused >= 200, "only {refused} of 300 connections refused past max_connections = 64:\n{all}");
    assert_eq!(open, 0, "connections that never sent a whole request stayed open:\n{all}");
    assert!(most <= 64 * 2 + 32, "cairn wrap ran {most} threads for 300 idle connections");
}

/// The same as an ordinary user (uid 65534 when the tests run as root), whose processes
/// count against that user's own limits on the host.
#[test]
fn a_wrapped_agent_runs_at_most_max_processes_as_an_ordinary_user() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let (root, home) = (dir.path().join("proj"), dir.path().join("home"));
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(root.join("hog.py"), HOG).unwrap();
    std::fs::write(home.join("config.toml"), "[wrap]\nmax_processes = 200\n").unwrap();
    if crate::runs::is_root() {
        assert!(std::process::Command::new("chown").arg("-R").arg("65534:65534").arg(&root).arg(&home).status().unwrap().success());
    }
    let cairn = |args: &[&str]| {
        let exe = exe();
        let mut all = vec![exe.as_os_str(), "--project-root".as_ref(), root.as_os_str(), "--cairn-home".as_ref(), home.as_os_str()];
        all.extend(args.iter().map(std::ffi::OsStr::new));
        let out = crate::runs::as_ordinary_user(&all).env("HOME", &home).env_remove("CAIRN_HOME").stdin(Stdio::null()).output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
    };
    cairn(&["init"]);
    let n = got(&cairn(&["wrap", "--network", "none", "--", "python3", "hog.py", "procs", "1500"]), "procs");
    assert!((20..200).contains(&n), "1,500 processes asked, {n} started under max_processes = 200");
}
