//! Every proposal is a jj change (`cairn_core::jj`), against the real `jj` the test command
//! installs into `.venv/jj`: recorded on reviewing, rewritten by hunk decisions, abandoned on
//! accept and reject, back on undo, a jj workspace as preview; `@` and the user's files never
//! touched; what users do in jj noticed, never overwritten.

use crate::support::*;
use std::path::{Path, PathBuf};
use std::process::Command;

fn jj() -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv/jj/bin/jj");
    assert!(p.exists(), "jj is missing: run `bash scripts/test.sh` (it installs .venv/jj)");
    p
}

/// The user's jj: their identity, no config of their own.
fn user_jj(dir: &Path, args: &[&str]) -> String {
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
fn repo(colocate: bool, files: &[(&str, &[u8])]) -> Fixture {
    let f = Fixture::new();
    for (p, c) in files {
        f.write(p, c);
        if p.ends_with(".sh") {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(f.root.join(p), std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    }
    user_jj(&f.root, if colocate { &["git", "init", "--colocate"] } else { &["git", "init"] });
    user_jj(&f.root, &["commit", "-m", "base"]);
    f.home_config(&format!("[jj]\nprogram = \"{}\"\n", jj().display()));
    f.init();
    f
}

/// The agent's change as `status --json` shows it: (change id, status).
fn change_of(f: &Fixture, id: &str) -> (String, String) {
    let s = f.cairn(&["status", id, "--json"]).ok().json();
    let j = &s["jj"];
    assert!(j.is_object(), "no jj change on {id}: {s}");
    (j["change"].as_str().unwrap().to_string(), j["status"].as_str().unwrap().to_string())
}

/// A git-style diff with the parts jj and Cairn print differently made alike: no `index`
/// lines, hunk headers with explicit counts.
fn normalized(diff: &str) -> String {
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
fn user_files(f: &Fixture) -> Vec<(String, Vec<u8>)> {
    f.tree().into_iter().filter(|(p, _)| !p.starts_with(".jj") && !p.starts_with(".git")).collect()
}

fn visible_with(f: &Fixture, text: &str) -> usize {
    user_jj(&f.root, &["log", "--no-graph", "-r", &format!("description(substring:{text:?})"), "-T", "change_id ++ \"\\n\""]).lines().count()
}

const BASE: &[(&str, &[u8])] = &[
    ("f.txt", b"a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl\nm\nn\no\np\n"),
    ("old.txt", b"old\n"),
    ("b.bin", b"\xff\xfebin\x00x"),
    ("keep.txt", b"keep\n"),
    ("run.sh", b"#!/bin/sh\necho run\n"),
];

const AGENT_A: &str = "s = read_file('f.txt').replace('b\\n', 'B\\n').replace('h\\n', 'H\\n').replace('o\\n', 'O\\n')\nwrite_file('f.txt', s)\nwrite_file('run.sh', '#!/bin/sh\\necho changed\\n')\ndelete_file('old.txt')\nopen('b.bin', 'wb').write(b'\\xff\\xfebin\\x00y')\n";
const AGENT_B: &str = "write_file('sub/new.txt', 'new\\n')\nwrite_file('keep.txt', 'kept and changed\\n')\n";

#[test]
fn two_proposals_are_two_changes_with_the_exact_diff_and_the_user_is_untouched() {
    for colocate in [true, false] {
        let f = repo(colocate, BASE);
        let at_before = user_jj(&f.root, &["log", "--no-graph", "-r", "@", "-T", "commit_id"]);
        let files_before = user_files(&f);
        let a = f.run_ok(AGENT_A);
        // run.sh is executable: the change keeps the bit (jj would show a mode change).
        let b = f.run_ok(AGENT_B);
        for (agent, words) in [(&a, "changed 4 files"), (&b, "changed 2 files")] {
            let (change, status) = change_of(&f, &agent.id);
            assert_eq!(status, "proposed");
            let desc = user_jj(&f.root, &["log", "--no-graph", "-r", &change, "-T", "description"]);
            assert!(desc.starts_with(&format!("cairn: {} {words}", agent.id)), "colocate={colocate}: {desc:?}");
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
