//! The seeds' contract (issue 36): what a user of the original design writes works as they
//! wrote it. Seed 000's example script, its paths with a leading `/`.

use crate::support::*;

/// Seed 000's example `.pym`, verbatim but for the processing its comment leaves out.
fn seed_example(process: &str) -> String {
    format!(
        r#"from grail import external, Input

# Inputs
task_description: str = Input("task_description")

# External function stubs
@external
async def read_file(path: str) -> str: ...

@external
async def write_file(path: str, content: str) -> bool: ...

@external
async def submit_result(summary: str, changed_files: list[str]) -> bool: ...

# Task code
content = await read_file("/src/main.py")
{process}
await submit_result(summary="Done", changed_files=["/src/main.py"])

# Return value
{{"status": "complete"}}
"#
    )
}

#[test]
fn seed_000s_example_script_reaches_reviewing_with_its_diff() {
    let f = Fixture::with_files(&[("src/main.py", "print('hi')\n")]);
    f.write("agents/example.pym", seed_example("# ... process ..."));
    let s = f.cairn(&["run", "agents/example.pym", "--json"]).ok().json();
    assert_eq!((s["state"].as_str(), s["submission"]["summary"].as_str()), (Some("reviewing"), Some("Done")), "{s}");
    f.write("agents/edit.pym", seed_example("await write_file(\"/src/main.py\", content.replace(\"hi\", \"hello\"))"));
    let s = f.cairn(&["run", "agents/edit.pym", "--json"]).ok().json();
    assert_eq!(s["state"], "reviewing", "{s}");
    assert_eq!(s["submission"]["changed_files"], serde_json::json!(["src/main.py"]), "the seed's `/src/main.py` is the project's src/main.py: {s}");
    let diff = f.cairn(&["diff", s["id"].as_str().unwrap()]).ok().stdout;
    assert!(diff.contains("-print('hi')") && diff.contains("+print('hello')") && diff.contains("b/src/main.py"), "{diff}");
    assert_eq!(f.read_str("src/main.py").unwrap(), "print('hi')\n", "nothing lands before accept");
}

fn state(f: &Fixture, id: &str) -> String {
    f.cairn(&["status", id, "--json"]).ok().json()["state"].as_str().unwrap_or_default().to_string()
}

/// Drops a signal file the way the README says.
fn signal(f: &Fixture, name: &str, body: &str) {
    let dir = f.home.join("signals");
    std::fs::write(dir.join(format!(".{name}.tmp")), body).unwrap();
    std::fs::rename(dir.join(format!(".{name}.tmp")), dir.join(name)).unwrap();
}

#[test]
fn auto_spawn_false_holds_queued_agents_until_cairn_start() {
    let f = Fixture::with_files(&[("a.txt", "a\n")]);
    f.home_config("[orchestrator]\nauto_spawn = false\npoll_interval_ms = 20\n");
    f.init();
    assert!(f.home.join("signals").is_dir(), "cairn init makes the signal directory");
    let held = f.cairn(&["queue", "--provider", "inline", "write_file('h.txt', 'held\\n')"]).ok().stdout.trim().to_string();
    let _up = Up::start(&f);
    // A signal taken by `up` proves its loop went round after the queue: the held agent stayed.
    signal(&f, "q1.json", r#"{"type": "queue", "provider": "inline", "reference": "write_file('s.txt', 's\\n')"}"#);
    wait_until(60, "the signal taken", || !f.home.join("signals/q1.json").exists());
    let queued: Vec<String> = f.cairn(&["list-agents", "--json"]).ok().json().as_array().unwrap().iter().map(|a| a["state"].as_str().unwrap().to_string()).collect();
    assert_eq!(queued, ["queued", "queued"], "both held by auto_spawn = false");
    assert_eq!(state(&f, &held), "queued");
    // `cairn run` runs at once whatever auto_spawn says.
    assert_eq!(f.cairn(&["run", "--provider", "inline", "write_file('r.txt', 'r\\n')", "--json"]).ok().json()["state"], "reviewing");
    let out = f.cairn(&["start", &held]).ok().stdout;
    assert!(out.contains(&format!("started {held}")), "{out}");
    wait_until(60, "the started agent to run", || state(&f, &held) == "reviewing");
    let rest = f.cairn(&["start"]).ok().stdout;
    assert!(rest.starts_with("started "), "the signal's agent: {rest}");
    wait_until(60, "every agent reviewing", || f.cairn(&["list-agents", "--json"]).ok().json().as_array().unwrap().iter().all(|a| a["state"] == "reviewing"));
    assert!(f.cairn(&["start"]).ok().stdout.contains("no agent was waiting"));
    assert!(f.cairn(&["start", &held]).code != 0, "a started agent is not held");
}

#[test]
fn up_with_a_provider_queues_signal_work_with_it() {
    let f = Fixture::with_files(&[("a.txt", "a\n")]);
    f.home_config("[orchestrator]\npoll_interval_ms = 20\n");
    f.init();
    let mut c = f.cmd();
    c.args(["up", "--provider", "inline"]).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null());
    let _up = Up { child: c.spawn().unwrap() };
    signal(&f, "p.json", r#"{"type": "queue", "reference": "write_file('p.txt', 'from up\\n')"}"#);
    wait_until(60, "the signal's agent reviewing", || f.cairn(&["list-agents", "--json"]).ok().json().as_array().unwrap().iter().any(|a| a["state"] == "reviewing"));
    let a = &f.cairn(&["list-agents", "--json"]).ok().json()[0];
    assert_eq!(a["provider"], "inline", "{a}");
    assert!(f.cairn(&["diff", a["id"].as_str().unwrap()]).ok().stdout.contains("+from up"));
}

#[test]
fn signals_once_takes_pending_files_and_exits() {
    let f = Fixture::with_files(&[("a.txt", "a\n")]);
    f.init();
    signal(&f, "ok.json", r#"{"type": "queue", "provider": "inline", "reference": "write_file('o.txt', 'o\\n')"}"#);
    signal(&f, "bad.json", "{not json");
    let out = f.cairn(&["signals", "--once"]);
    assert_eq!(out.code, 1, "one failed: {out:?}");
    assert!(out.stdout.contains("ok.json: done") && out.stdout.contains("bad.json: failed"), "{out:?}");
    assert!(f.home.join("signals/failed/bad.json").exists());
    let listed = f.cairn(&["list-agents", "--json"]).ok().json();
    assert_eq!(listed.as_array().unwrap().len(), 1, "the queue signal queued: {listed}");
    let again = f.cairn(&["signals", "--once"]).ok().stdout;
    assert!(again.contains("no signal files pending"), "{again}");
}

#[test]
fn an_unknown_cairn_variable_is_named_not_ignored() {
    let f = Fixture::with_files(&[("a.txt", "a\n")]);
    f.init();
    let out = f.cmd().args(["status"]).env("CAIRN_MAX_AGENTS", "3").env("CAIRN_MAX_CONCURRENT_AGENTS", "2").output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("CAIRN_MAX_AGENTS is not a setting Cairn reads"), "{err}");
    assert!(!err.contains("CAIRN_MAX_CONCURRENT_AGENTS"), "the seed's name is an alias: {err}");
}

/// `cairn preview ID --tmux` outside tmux, on a tmux server private to the test.
/// Its `nvim` is a stand-in that stays, as an editor does, until the server is killed.
fn preview(f: &Fixture, tmpdir: &std::path::Path, id: &str) -> Run {
    preview_with(f, tmpdir, id, &[])
}

fn preview_with(f: &Fixture, tmpdir: &std::path::Path, id: &str, env: &[(&str, &std::path::Path)]) -> Run {
    let bin = tmpdir.join("bin");
    if !bin.join("nvim").exists() {
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::write(bin.join("nvim"), "#!/bin/sh\nexec sleep 3600\n").unwrap();
        std::fs::set_permissions(bin.join("nvim"), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    }
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    Run::from(f.cmd().args(["preview", id, "--tmux"]).env_remove("TMUX").env("TMUX_TMPDIR", tmpdir).env("PATH", path).envs(env.iter().copied()).output().unwrap())
}

fn panes(tmpdir: &std::path::Path, session: &str) -> usize {
    let out = std::process::Command::new("tmux").args(["list-panes", "-s", "-t", session, "-F", "#{pane_id}"]).env_remove("TMUX").env("TMUX_TMPDIR", tmpdir).output().unwrap();
    String::from_utf8_lossy(&out.stdout).lines().count()
}

#[test]
fn outside_tmux_previews_open_in_a_session_of_their_own_laid_out() {
    let f = Fixture::with_files(&[("a.txt", "a\n")]);
    let tmpdir = tempfile::tempdir().unwrap();
    let a = f.run_ok("write_file('a.txt', 'A\\n')").id;
    let b = f.run_ok("write_file('b.txt', 'B\\n')").id;
    // Off by default: outside tmux, a clear refusal that names the setting.
    let refused = preview(&f, tmpdir.path(), &a);
    assert!(refused.code != 0 && refused.stderr.contains("auto_create_session"), "{refused:?}");
    f.home_config("[tmux]\nauto_create_session = true\n");
    let first = preview(&f, tmpdir.path(), &a);
    assert_eq!(first.code, 0, "{first:?}");
    let session = first.stderr.split("tmux attach -t ").nth(1).and_then(|s| s.split(')').next()).unwrap_or_default().to_string();
    assert!(session.starts_with("cairn-"), "the session is named: {first:?}");
    assert_eq!(panes(tmpdir.path(), &session), 1);
    // Without a layout, the next preview reuses the pane.
    assert_eq!(preview(&f, tmpdir.path(), &b).code, 0);
    assert_eq!(panes(tmpdir.path(), &session), 1, "one reused preview pane");
    // With a layout, each agent has its own pane.
    f.home_config("[tmux]\nauto_create_session = true\nlayout = \"tiled\"\n");
    assert_eq!(preview(&f, tmpdir.path(), &a).code, 0);
    assert_eq!(preview(&f, tmpdir.path(), &b).code, 0);
    assert_eq!(preview(&f, tmpdir.path(), &a).code, 0, "the agent's own pane again");
    assert_eq!(panes(tmpdir.path(), &session), 3, "the first shared pane, then one per agent");
    let _ = std::process::Command::new("tmux").args(["kill-server"]).env_remove("TMUX").env("TMUX_TMPDIR", tmpdir.path()).status();
}

/// tmux expands its `-c` directory as a format: a project directory whose name the repository
/// chose (`p#(cmd)`, the top directory of a tarball) runs nothing on the host.
#[test]
fn a_project_directory_named_like_a_tmux_format_runs_nothing_from_a_preview() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("RAN");
    let root = dir.path().join("p#(touch $CAIRN_TEST_MARK)#{pane_id}");
    let home = dir.path().join("home");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(root.join("a.txt"), "a\n").unwrap();
    let f = Fixture { root: root.canonicalize().unwrap(), home, dir, config: Default::default() };
    f.init();
    let id = f.run_ok("write_file('a.txt', 'A\\n')").id;
    f.home_config("[tmux]\nauto_create_session = true\n");
    let tmpdir = tempfile::tempdir().unwrap();
    // The mark's path reaches the tmux server through the environment it starts with.
    let opened = preview_with(&f, tmpdir.path(), &id, &[("CAIRN_TEST_MARK", &marker)]);
    assert_eq!(opened.code, 0, "{opened:?}");
    let session = opened.stderr.split("tmux attach -t ").nth(1).and_then(|s| s.split(')').next()).unwrap_or_default().to_string();
    // The pane started in the project directory, named as it is.
    let tmux = |args: &[&str]| std::process::Command::new("tmux").args(args).env_remove("TMUX").env("TMUX_TMPDIR", tmpdir.path()).output().unwrap();
    let out = tmux(&["display-message", "-p", "-t", &session, "#{pane_current_path}"]);
    // A control job, started after the pane: once it ran, the pane's would have too.
    let control = f.dir.path().join("CONTROL");
    wait_until(30, "tmux's control job", || {
        tmux(&["display-message", "-p", "-t", &session, &format!("#(touch {})", control.display())]);
        control.exists()
    });
    tmux(&["kill-server"]);
    assert!(!marker.exists(), "tmux ran a command from the project's name");
    assert!(String::from_utf8_lossy(&out.stdout).contains("#(touch"), "{out:?}");
}
