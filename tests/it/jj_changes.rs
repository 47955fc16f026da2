//! Every proposal is a jj change (`cairn_core::jj`), against the real `jj` the test command
//! installs into `.venv/jj`: recorded on reviewing, rewritten by hunk decisions, abandoned on
//! accept and reject, back on undo, a jj workspace as preview; `@` and the user's files never
//! touched; what users do in jj noticed, never overwritten.

use crate::support::*;
use std::path::{Path, PathBuf};
use std::process::Command;

pub(crate) fn jj() -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv/jj/bin/jj");
    assert!(p.exists(), "jj is missing: run `bash scripts/test.sh` (it installs .venv/jj)");
    p
}

/// The user's jj: their identity, no config of their own.
pub(crate) fn user_jj(dir: &Path, args: &[&str]) -> String {
    let out = Command::new(jj())
        .current_dir(dir)
        .env("JJ_CONFIG", "/dev/null")
        .args(["--config", "user.name=u", "--config", "user.email=u@example.com", "--color", "never", "--no-pager"])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "jj {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A jj repository (colocated with git or not) with a committed base and Cairn initialized,
/// its `[jj] program` the test's jj.
pub(crate) fn repo(colocate: bool, files: &[(&str, &[u8])]) -> Fixture {
    let f = Fixture::new();
    for (p, c) in files {
        f.write(p, c);
        if p.ends_with(".sh") {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(f.root.join(p), std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    }
    user_jj(&f.root, if colocate { &["git", "init", "--colocate"] } else { &["git", "init", "--no-colocate"] });
    user_jj(&f.root, &["commit", "-m", "base"]);
    f.home_config(&format!("[jj]\nprogram = \"{}\"\n", jj().display()));
    f.init();
    f
}

/// The agent's change as `status --json` shows it: (change id, status).
pub(crate) fn change_of(f: &Fixture, id: &str) -> (String, String) {
    let s = f.cairn(&["status", id, "--json"]).ok().json();
    let j = &s["jj"];
    assert!(j.is_object(), "no jj change on {id}: {s}");
    (j["change"].as_str().unwrap().to_string(), j["status"].as_str().unwrap().to_string())
}

/// A git-style diff with the parts jj and Cairn print differently made alike: no `index`
/// lines, hunk headers with explicit counts.
pub(crate) fn normalized(diff: &str) -> String {
    let mut out = String::new();
    for line in diff.lines() {
        if line.starts_with("index ") {
            continue;
        }
        if let Some(rest) = line.strip_prefix("@@ -") {
            let body = rest.split(" @@").next().unwrap();
            let (old, new) = body.split_once(" +").unwrap();
            let full = |r: &str| if r.contains(',') { r.to_string() } else { format!("{r},1") };
            out.push_str(&format!("@@ -{} +{} @@\n", full(old), full(new)));
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// The project's files without the repositories' own (`.jj`, `.git`).
pub(crate) fn user_files(f: &Fixture) -> Vec<(String, Vec<u8>)> {
    f.tree().into_iter().filter(|(p, _)| !p.starts_with(".jj") && !p.starts_with(".git")).collect()
}

pub(crate) fn visible_with(f: &Fixture, text: &str) -> usize {
    user_jj(&f.root, &["log", "--no-graph", "-r", &format!("description(substring:{text:?})"), "-T", "change_id ++ \"\\n\""]).lines().count()
}

pub(crate) const BASE: &[(&str, &[u8])] = &[
    ("f.txt", b"a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl\nm\nn\no\np\n"),
    ("old.txt", b"old\n"),
    ("b.bin", b"\xff\xfebin\x00x"),
    ("keep.txt", b"keep\n"),
    ("run.sh", b"#!/bin/sh\necho run\n"),
];

pub(crate) const AGENT_A: &str = "s = read_file('f.txt').replace('b\\n', 'B\\n').replace('h\\n', 'H\\n').replace('o\\n', 'O\\n')\nwrite_file('f.txt', s)\nwrite_file('run.sh', '#!/bin/sh\\necho changed\\n')\ndelete_file('old.txt')\nopen('b.bin', 'wb').write(b'\\xff\\xfebin\\x00y')\n";
pub(crate) const AGENT_B: &str = "write_file('sub/new.txt', 'new\\n')\nwrite_file('keep.txt', 'kept and changed\\n')\n";

#[test]
fn two_proposals_are_two_changes_with_the_exact_diff_and_the_user_is_untouched() {
    for colocate in [true, false] {
        let f = repo(colocate, BASE);
        let at_before = user_jj(&f.root, &["log", "--no-graph", "-r", "@", "-T", "commit_id"]);
        let files_before = user_files(&f);
        let a = f.run_ok(AGENT_A);
        // run.sh is executable: the change keeps the bit (jj would show a mode change).
        let b = f.run_ok(AGENT_B);
        for agent in [&a, &b] {
            let (change, status) = change_of(&f, &agent.id);
            assert_eq!(status, "proposed");
            // Made when the agent started (`create_change_on_spawn`): described by its task.
            let desc = user_jj(&f.root, &["log", "--no-graph", "-r", &change, "-T", "description"]);
            let task = f.status(&agent.id).task;
            assert!(desc.starts_with(&format!("cairn: {} {}\n\nCairn-Agent: {}\n", agent.id, task.lines().next().unwrap(), agent.id)), "colocate={colocate}: {desc:?}");
            let jj_diff = user_jj(&f.root, &["diff", "--git", "-r", &change]);
            let cairn_diff = f.cairn(&["diff", &agent.id]).ok().stdout;
            assert_eq!(normalized(&jj_diff), normalized(&cairn_diff), "colocate={colocate}: jj diff -r {change} differs from cairn diff");
            // And each file byte for byte.
            for c in f.status(&agent.id).changes {
                let shown = Command::new(jj()).current_dir(&f.root).env("JJ_CONFIG", "/dev/null").args(["file", "show", "-r", &change, &c.path]).output().unwrap();
                match f.project().existing_overlay(&agent.id).unwrap().unwrap().get(&c.path).unwrap().flatten() {
                    Some((bytes, _)) => assert_eq!(shown.stdout, bytes, "{}", c.path),
                    None => assert!(!shown.status.success(), "{} is deleted in the proposal", c.path),
                }
            }
        }
        assert_eq!(visible_with(&f, "Cairn-Agent: "), 2);
        assert_eq!(user_jj(&f.root, &["log", "--no-graph", "-r", "@", "-T", "commit_id"]), at_before, "colocate={colocate}: @ moved");
        assert_eq!(user_files(&f), files_before, "colocate={colocate}: the working copy changed");
        assert!(user_jj(&f.root, &["st"]).contains("The working copy has no changes"), "colocate={colocate}");
    }
}

/// The operations of `jj op log` as (user, description, args) lines, newest first.
pub(crate) fn op_log(f: &Fixture, limit: usize) -> String {
    user_jj(&f.root, &["op", "log", "--no-graph", "--limit", &limit.to_string(), "-T", "user ++ \" | \" ++ description ++ \" | \" ++ attributes ++ \"\\n\""])
}

#[test]
fn accept_and_reject_leave_no_change_and_the_op_log_names_cairn() {
    for colocate in [true, false] {
        let f = repo(colocate, BASE);
        let a = f.run_ok(AGENT_A);
        let b = f.run_ok(AGENT_B);
        let (ca, _) = change_of(&f, &a.id);
        let (cb, _) = change_of(&f, &b.id);
        f.cairn(&["accept", &a.id]).ok();
        f.cairn(&["reject", &b.id]).ok();
        assert_eq!(change_of(&f, &a.id).1, "squashed");
        assert_eq!(change_of(&f, &b.id).1, "abandoned");
        // Neither shows in jj log (the default revset shows every mutable head).
        let log = user_jj(&f.root, &["log"]);
        assert!(!log.contains(&format!("cairn: {}", a.id)) && !log.contains(&format!("cairn: {}", b.id)), "colocate={colocate}: {log}");
        assert_eq!(visible_with(&f, "Cairn-Agent: "), 0);
        // `@` holds the accepted content (once jj looks at the working copy, as any command does).
        assert_eq!(user_jj(&f.root, &["file", "show", "-r", "@", "f.txt"]), "a\nB\nc\nd\ne\nf\ng\nH\ni\nj\nk\nl\nm\nn\nO\np\n");
        assert_eq!(user_jj(&f.root, &["file", "show", "-r", "@", "run.sh"]), "#!/bin/sh\necho changed\n");
        assert!(!user_jj(&f.root, &["file", "list", "-r", "@"]).contains("old.txt"));
        assert!(!user_jj(&f.root, &["file", "list", "-r", "@"]).contains("sub/new.txt"), "the rejected proposal is not in @");
        let ops = op_log(&f, 40);
        let accept = ops.lines().find(|l| l.starts_with(&format!("cairn accept {}@", a.id)) && l.contains("abandon commit")).unwrap_or_else(|| panic!("no accept op: {ops}"));
        let reject = ops.lines().find(|l| l.starts_with(&format!("cairn reject {}@", b.id)) && l.contains("abandon commit")).unwrap_or_else(|| panic!("no reject op: {ops}"));
        // Each abandons the agent's change, and its recorded arguments name it.
        for (line, change) in [(accept, &ca), (reject, &cb)] {
            let commit = line.split("abandon commit ").nth(1).unwrap().split_whitespace().next().unwrap();
            assert!(line.contains(&format!("abandon {commit}")), "the args name the commit: {line}");
            assert_eq!(&user_jj(&f.root, &["log", "--no-graph", "-r", commit, "-T", "change_id"]), change);
        }
    }
}

#[test]
fn undo_brings_the_change_back_and_jj_undo_is_noticed() {
    let f = repo(true, BASE);
    let a = f.run_ok(AGENT_A);
    let (change, _) = change_of(&f, &a.id);
    let proposed = normalized(&user_jj(&f.root, &["diff", "--git", "-r", &change]));
    let before = user_files(&f);
    f.cairn(&["accept", &a.id]).ok();
    assert_ne!(user_files(&f), before);
    f.cairn(&["undo", &a.id]).ok();
    assert_eq!(user_files(&f), before, "the files are restored");
    assert_eq!(change_of(&f, &a.id), (change.clone(), "proposed".to_string()), "the same change is back");
    assert_eq!(normalized(&user_jj(&f.root, &["diff", "--git", "-r", &change])), proposed, "with its content");
    assert_eq!(visible_with(&f, &format!("Cairn-Agent: {}", a.id)), 1);

    // The user's `jj undo` right after an accept: the change is visible again; Cairn says so,
    // and its state agrees with the files (accepted, content in place).
    let b = f.run_ok(AGENT_B);
    let (cb, _) = change_of(&f, &b.id);
    f.cairn(&["accept", &b.id]).ok();
    let accepted = user_files(&f);
    user_jj(&f.root, &["undo"]);
    assert_eq!(visible_with(&f, &format!("Cairn-Agent: {}", b.id)), 1, "jj undo brought the change back");
    let st = f.cairn(&["status", &b.id]).ok().stdout;
    assert!(st.contains("state     accepted") && st.contains(&format!("change    {cb} (back)")) && st.contains("jj undo?"), "{st}");
    assert_eq!(user_files(&f), accepted, "the accepted content is in the files, as the status says");
    assert_eq!(f.read_str("keep.txt").unwrap(), "kept and changed\n");
    // `cairn undo` then takes the content out, and the change stays as the proposal.
    f.cairn(&["undo", &b.id]).ok();
    assert_eq!(f.read_str("keep.txt").unwrap(), "keep\n");
    assert_eq!(change_of(&f, &b.id), (cb.clone(), "proposed".to_string()));
    assert!(user_jj(&f.root, &["diff", "--git", "-r", &cb]).contains("+kept and changed"));
}

#[test]
fn a_hunk_accepted_leaves_the_change_with_exactly_the_other_hunks() {
    let f = repo(false, BASE);
    let a = f.run_ok("s = read_file('f.txt').replace('b\\n', 'B\\n').replace('h\\n', 'H\\n').replace('o\\n', 'O\\n')\nwrite_file('f.txt', s)\n");
    let (change, _) = change_of(&f, &a.id);
    f.cairn(&["accept-hunk", &a.id, "f.txt", "2"]).ok();
    assert_eq!(f.read_str("f.txt").unwrap(), "a\nb\nc\nd\ne\nf\ng\nH\ni\nj\nk\nl\nm\nn\no\np\n");
    assert_eq!(change_of(&f, &a.id), (change.clone(), "proposed".to_string()), "the same change, rewritten");
    let diff = user_jj(&f.root, &["diff", "--git", "--context", "0", "-r", &change]);
    let changed: Vec<&str> = diff.lines().filter(|l| (l.starts_with('+') || l.starts_with('-')) && !l.starts_with("+++") && !l.starts_with("---")).collect();
    assert_eq!(changed, ["-b", "+B", "-o", "+O"], "{diff}");
    // Rejecting one of the two left: the change keeps the last.
    f.cairn(&["reject-hunk", &a.id, "f.txt", "1"]).ok();
    let diff = user_jj(&f.root, &["diff", "--git", "--context", "0", "-r", &change]);
    let changed: Vec<&str> = diff.lines().filter(|l| (l.starts_with('+') || l.starts_with('-')) && !l.starts_with("+++") && !l.starts_with("---")).collect();
    assert_eq!(changed, ["-o", "+O"], "{diff}");
    assert_eq!(f.read_str("f.txt").unwrap(), "a\nb\nc\nd\ne\nf\ng\nH\ni\nj\nk\nl\nm\nn\no\np\n", "a rejected hunk touches no file");
}

#[test]
fn preview_is_a_jj_workspace_on_the_change_and_gc_forgets_it() {
    let f = repo(true, BASE);
    let a = f.run_ok(AGENT_A);
    let b = f.run_ok(AGENT_B);
    let (change, _) = change_of(&f, &a.id);
    for agent in [&a, &b] {
        let path = f.cairn(&["preview", &agent.id]).ok().stdout.trim().to_string();
        assert!(Path::new(&path).join(".jj").is_dir(), "{path}");
    }
    let pa = PathBuf::from(f.cairn(&["preview", &a.id]).ok().stdout.trim());
    let st = user_jj(&pa, &["st"]);
    for line in ["M f.txt", "M run.sh", "D old.txt", "M b.bin"] {
        assert!(st.contains(line), "jj st in the preview: {st}");
    }
    assert!(st.contains(&format!("cairn: {}", a.id)), "{st}");
    assert_eq!(user_jj(&pa, &["log", "--no-graph", "-r", "@", "-T", "change_id"]), change);
    assert_eq!(std::fs::read_to_string(pa.join("run.sh")).unwrap(), "#!/bin/sh\necho changed\n");
    let list = user_jj(&f.root, &["workspace", "list"]);
    assert!(list.contains(&format!("cairn-preview-{}", a.id)) && list.contains(&format!("cairn-preview-{}", b.id)), "{list}");
    // A reviewing agent's preview goes when GC trims previews; an ended agent's at once.
    f.write(".cairn.toml", "[gc]\nmax_workspaces = 1\n");
    f.cairn(&["reject", &b.id]).ok();
    let gc = f.cairn(&["gc"]).ok();
    let list = user_jj(&f.root, &["workspace", "list"]);
    assert!(!list.contains(&format!("cairn-preview-{}", b.id)), "{list}");
    assert!(list.contains(&format!("cairn-preview-{}", a.id)), "one preview is kept: {list} {}", gc.stdout);
    f.write(".cairn.toml", "[gc]\nmax_workspaces = 0\n");
    f.cairn(&["gc"]).ok();
    let list = user_jj(&f.root, &["workspace", "list"]);
    assert!(!list.contains("cairn-"), "{list}");
    assert!(!pa.exists());
    assert_eq!(change_of(&f, &a.id).1, "proposed", "gc of a preview leaves the change");
    assert_eq!(visible_with(&f, &format!("Cairn-Agent: {}", a.id)), 1);
}

#[test]
fn the_user_commits_and_rebases_meanwhile_and_accept_still_merges() {
    for colocate in [true, false] {
        let f = repo(colocate, BASE);
        let a = f.run_ok("write_file('f.txt', read_file('f.txt').replace('b\\n', 'B\\n'))\n");
        let (change, _) = change_of(&f, &a.id);
        // The user edits the same file elsewhere, commits, and rebases the agent's change
        // onto their commit.
        f.write("f.txt", "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl\nm\nn\no\nP\n");
        user_jj(&f.root, &["commit", "-m", "mine"]);
        user_jj(&f.root, &["rebase", "-s", &change, "-d", "@-"]);
        let st = f.cairn(&["status", &a.id]).ok().stdout;
        assert!(st.contains(&format!("change    {change} (proposed)")), "a rebase by jj is not an edit: {st}");
        assert_eq!(visible_with(&f, &format!("Cairn-Agent: {}", a.id)), 1);
        f.cairn(&["accept", &a.id]).ok();
        assert_eq!(f.read_str("f.txt").unwrap(), "a\nB\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl\nm\nn\no\nP\n", "colocate={colocate}: three-way");
        assert_eq!(visible_with(&f, &format!("Cairn-Agent: {}", a.id)), 0, "colocate={colocate}: not duplicated");
        assert!(user_jj(&f.root, &["log", "--no-graph", "-r", "divergent()", "-T", "change_id"]).is_empty());
        assert_eq!(user_jj(&f.root, &["file", "show", "-r", "@", "f.txt"]), f.read_str("f.txt").unwrap());
    }
}

#[test]
fn a_change_abandoned_or_edited_in_jj_is_reported_not_recreated() {
    let f = repo(true, BASE);
    let a = f.run_ok(AGENT_A);
    let b = f.run_ok("s = read_file('f.txt').replace('b\\n', 'B\\n').replace('o\\n', 'O\\n')\nwrite_file('f.txt', s)\n");
    let (ca, _) = change_of(&f, &a.id);
    let (cb, _) = change_of(&f, &b.id);
    user_jj(&f.root, &["abandon", &ca]);
    let st = f.cairn(&["status", &a.id]).ok().stdout;
    assert!(st.contains("(gone): abandoned in jj"), "{st}");
    // Someone edits b's change by hand in jj.
    user_jj(&f.root, &["describe", "-r", &cb, "-m", "cairn: hand-edited\n\nCairn-Agent: x\n"]);
    user_jj(&f.root, &["restore", "--from", &format!("{cb}-"), "--into", &cb, "f.txt"]);
    let edited = user_jj(&f.root, &["diff", "--git", "-r", &cb]);
    assert!(f.cairn(&["status", &b.id]).ok().stdout.contains("(edited): edited in jj"));
    // A hunk decision would rewrite the change: not over the user's edit.
    f.cairn(&["reject-hunk", &b.id, "f.txt", "1"]).ok();
    assert_eq!(user_jj(&f.root, &["diff", "--git", "-r", &cb]), edited);
    // Accepting still works on the files; the gone change is not re-created.
    f.cairn(&["accept", &a.id]).ok();
    assert_eq!(f.read_str("run.sh").unwrap(), "#!/bin/sh\necho changed\n");
    assert_eq!(visible_with(&f, &format!("Cairn-Agent: {}", a.id)), 0);
    let events = f.cairn(&["events", "--json"]).ok().stdout;
    assert!(events.contains("was abandoned in jj") && events.contains("was edited in jj"), "{events}");
}

#[test]
fn without_a_usable_jj_cairn_works_as_before_and_says_why() {
    let f = repo(true, BASE);
    f.home_config("[jj]\nprogram = \"/nonexistent/jj\"\n");
    let a = f.run_ok(AGENT_A);
    let st = f.cairn(&["status", &a.id]).ok().stdout;
    assert!(st.contains("jj        off: ") && st.contains("/nonexistent/jj"), "{st}");
    assert!(!st.contains("change    "), "{st}");
    f.cairn(&["accept", &a.id]).ok();
    assert_eq!(f.read_str("run.sh").unwrap(), "#!/bin/sh\necho changed\n");
    assert_eq!(visible_with(&f, "Cairn-Agent: "), 0);
    let doctor = f.cairn(&["doctor"]).stdout;
    assert!(doctor.contains("jj: off (") && doctor.contains("/nonexistent/jj"), "{doctor}");
    let overview = f.cairn(&["status"]).ok().stdout;
    assert!(overview.contains("jj        off: ") && overview.contains("/nonexistent/jj"), "{overview}");
    // Turned off by configuration: the same, and said as such.
    f.home_config("[jj]\nenabled = false\n");
    let b = f.run_ok(AGENT_B);
    assert!(f.cairn(&["status", &b.id]).ok().stdout.contains("jj        off: [jj] enabled = false"));
    assert_eq!(visible_with(&f, "Cairn-Agent: "), 0);
    // A jj older than the oldest tested: off, saying so.
    let old = f.dir.path().join("old-jj");
    std::fs::write(&old, "#!/bin/sh\necho 'jj 0.30.0'\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o755)).unwrap();
    f.home_config(&format!("[jj]\nprogram = \"{}\"\n", old.display()));
    let c = f.run_ok(AGENT_B);
    let st = f.cairn(&["status", &c.id]).ok().stdout;
    assert!(st.contains("jj        off: jj 0.30.0 is older than 0.45.0"), "{st}");
    // On, the doctor names the jj and its version.
    f.home_config(&format!("[jj]\nprogram = \"{}\"\n", jj().display()));
    let doctor = f.cairn(&["doctor"]).stdout;
    assert!(doctor.contains("jj: on, jj 0.45.1 ("), "{doctor}");
    let overview = f.cairn(&["status"]).ok().stdout;
    assert!(overview.contains("jj        on: jj 0.45.1 (") && overview.contains("agents    "), "{overview}");
}

#[test]
fn agents_finish_while_the_user_runs_jj_in_a_loop() {
    let files: Vec<(String, Vec<u8>)> = (0..8).map(|i| (format!("m{i}.txt"), format!("{i}\n").into_bytes())).collect();
    let refs: Vec<(&str, &[u8])> = files.iter().map(|(p, c)| (p.as_str(), c.as_slice())).collect();
    let f = repo(true, &refs);
    let up = Up::start(&f);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    // The user: status, log and an edit of their own now and then, as fast as jj goes.
    let user = {
        let (root, stop) = (f.root.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut problems = Vec::new();
            let mut n = 0;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                n += 1;
                if n % 7 == 0 {
                    std::fs::write(root.join("mine.txt"), format!("{n}\n")).unwrap();
                }
                for args in [&["st"][..], &["log", "-r", "all()"][..]] {
                    let out = Command::new(jj()).current_dir(&root).env("JJ_CONFIG", "/dev/null").args(["--config", "user.name=u", "--config", "user.email=u@example.com"]).args(args).output().unwrap();
                    let err = String::from_utf8_lossy(&out.stderr).into_owned();
                    if !out.status.success() || err.contains("stale") || err.contains("divergent") {
                        problems.push(format!("jj {args:?}: {err}"));
                    }
                }
            }
            (n, problems)
        })
    };
    let ids: Vec<String> = (0..8).map(|i| f.cairn(&["queue", "--provider", "inline", &format!("write_file('m{i}.txt', 'agent {i}\\n')\n")]).ok().stdout.trim().to_string()).collect();
    let recorded = || ids.iter().all(|id| f.project().bin().unwrap().jj_get(id).unwrap().is_some_and(|r| r.status == "proposed"));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while !recorded() {
        let rows: Vec<_> = ids.iter().map(|id| (f.project().bin().unwrap().get(id).unwrap().state, f.project().bin().unwrap().jj_get(id).unwrap())).collect();
        assert!(std::time::Instant::now() < deadline, "not every agent recorded as a jj change: {rows:#?}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    for (i, id) in ids.iter().enumerate() {
        f.cairn(&[if i % 2 == 0 { "accept" } else { "reject" }, id]).ok();
    }
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let (loops, problems) = user.join().unwrap();
    drop(up);
    assert!(loops > 3, "the user's loop ran {loops} times");
    assert!(problems.is_empty(), "{problems:#?}");
    assert!(user_jj(&f.root, &["log", "--no-graph", "-r", "divergent()", "-T", "change_id ++ \"\\n\""]).is_empty(), "a divergent change");
    assert_eq!(visible_with(&f, "Cairn-Agent: "), 0, "{}", user_jj(&f.root, &["log"]));
    let st = user_jj(&f.root, &["st"]);
    assert!(!st.contains("stale"), "{st}");
    for (i, id) in ids.iter().enumerate() {
        let want = if i % 2 == 0 { format!("agent {i}\n") } else { format!("{i}\n") };
        assert_eq!(f.read_str(&format!("m{i}.txt")).unwrap(), want, "{id}");
        assert_eq!(user_jj(&f.root, &["file", "show", "-r", "@", &format!("m{i}.txt")]), want, "@ holds it");
        assert_eq!(change_of(&f, id).1, if i % 2 == 0 { "squashed" } else { "abandoned" });
    }
}

#[test]
fn a_change_whose_record_was_lost_is_found_again_not_duplicated() {
    let f = repo(true, BASE);
    let a = f.run_ok(AGENT_A);
    let (change, _) = change_of(&f, &a.id);
    // As if the process was killed after jj made the change and before bin.db knew it.
    let conn = rusqlite::Connection::open(f.root.join(".agentfs/bin.db")).unwrap();
    conn.execute("DELETE FROM jj_changes WHERE agent = ?1", [&a.id]).unwrap();
    drop(conn);
    f.cairn(&["list-agents"]).ok();
    assert_eq!(change_of(&f, &a.id), (change, "proposed".to_string()), "the same change, found by its trailer");
    assert_eq!(visible_with(&f, &format!("Cairn-Agent: {}", a.id)), 1);
}

#[test]
fn the_change_holds_the_proposal_byte_for_byte_whatever_the_users_jj_config() {
    let f = repo(false, BASE);
    // A user whose jj converts line endings and tracks nothing new by itself.
    let config = f.dir.path().join("jj-user.toml");
    std::fs::write(&config, "[working-copy]\neol-conversion = \"input-output\"\n[snapshot]\nauto-track = \"none()\"\nmax-new-file-size = 10\n[ui]\npaginate = \"auto\"\npager = \"false\"\neditor = \"false\"\n").unwrap();
    let out = f.cmd().env("JJ_CONFIG", &config).args(["run", "--provider", "inline", "write_file('crlf.txt', 'one\\r\\ntwo\\r\\n' * 20)\nwrite_file('keep.txt', 'k\\r\\n')\n"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let id = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let (change, status) = change_of(&f, &id);
    assert_eq!(status, "proposed");
    for (path, want) in [("crlf.txt", "one\r\ntwo\r\n".repeat(20)), ("keep.txt", "k\r\n".to_string())] {
        let shown = Command::new(jj()).current_dir(&f.root).env("JJ_CONFIG", "/dev/null").args(["file", "show", "-r", &change, path]).output().unwrap();
        assert_eq!(String::from_utf8_lossy(&shown.stdout), want, "{path}");
    }
}
