//! SPEC §1 invariants: nothing changes before accept; agents are isolated; reads fall
//! through; deletes, binary files and the executable bit round-trip; stale bases refuse;
//! accept never writes outside the project.

use crate::support::*;
use cairn::command::{self, Command, Output};
use std::os::unix::fs::PermissionsExt;

#[test]
fn tree_and_stable_untouched_until_accept() {
    let f = Fixture::with_files(&[("a.txt", "one\n"), ("dir/b.txt", "two\n")]);
    let tree = f.tree();
    let stable = f.stable_rows();
    let s = f.run_ok("write_file('a.txt', 'changed\\n')\ndelete_file('dir/b.txt')\nwrite_file('new/c.txt', 'c')\n");
    assert_eq!(f.tree(), tree, "working tree changed before accept");
    assert_eq!(f.stable_rows(), stable, "stable.db changed before accept");
    f.cairn(&["accept", &s.id]).ok();
    assert_eq!(f.read_str("a.txt").unwrap(), "changed\n");
    assert!(f.read("dir/b.txt").is_none());
    assert_eq!(f.read_str("new/c.txt").unwrap(), "c");
    let paths: Vec<String> = f.stable_rows().into_iter().map(|r| r.0).collect();
    assert!(paths.contains(&"new/c.txt".to_string()) && !paths.contains(&"dir/b.txt".to_string()), "{paths:?}");
}

#[test]
fn agents_never_see_each_others_writes() {
    let f = Fixture::with_files(&[("shared.txt", "base")]);
    let a = f.run_ok("write_file('shared.txt', 'from a')\nwrite_file('only_a.txt', 'a')\nread_file('shared.txt')");
    let b = f.run_ok("[read_file('shared.txt'), file_exists('only_a.txt'), list_dir('.')]");
    assert_eq!(a.result.unwrap(), "from a");
    assert_eq!(b.result.unwrap(), serde_json::json!(["base", false, ["shared.txt"]]));
    let b2 = f.run_ok("write_file('shared.txt', 'from b')\nread_file('shared.txt')");
    assert_eq!(b2.result.unwrap(), "from b");
    // Each overlay keeps its own version.
    let diff_a = f.cairn(&["diff", &a.id]).ok().stdout;
    let diff_b = f.cairn(&["diff", &b2.id]).ok().stdout;
    assert!(diff_a.contains("+from a") && !diff_a.contains("from b"), "{diff_a}");
    assert!(diff_b.contains("+from b") && !diff_b.contains("from a"), "{diff_b}");
}

#[test]
fn reads_fall_through_to_stable_and_whiteouts_hide() {
    let f = Fixture::with_files(&[("x/one.txt", "1"), ("x/two.txt", "2")]);
    let s = f.run_ok(
        "before = read_file('x/one.txt')\nwrite_file('x/one.txt', 'new')\ndelete_file('x/two.txt')\n\
         try:\n    read_file('x/two.txt')\n    gone = False\nexcept FileNotFoundError:\n    gone = True\n\
         [before, read_file('x/one.txt'), gone, list_dir('x'), file_exists('x/two.txt')]",
    );
    assert_eq!(s.result.unwrap(), serde_json::json!(["1", "new", true, ["one.txt"], false]));
}

#[test]
fn deletes_binary_and_exec_bit_round_trip_through_accept() {
    let f = Fixture::new();
    let binary: Vec<u8> = (0..=255u8).cycle().take(4096).collect();
    f.write("blob.bin", &binary);
    f.write("run.sh", "#!/bin/sh\necho old\n");
    std::fs::set_permissions(f.root.join("run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    f.write("gone.txt", "bye");
    f.init();
    let s = f.run_ok(
        "try:\n    read_file('blob.bin')\n    r = 'read'\nexcept ValueError:\n    r = 'binary'\n\
         write_file('run.sh', '#!/bin/sh\\necho new\\n')\ndelete_file('gone.txt')\nr",
    );
    assert_eq!(s.result.unwrap(), "binary");
    let diff = f.cairn(&["diff", &s.id]).ok().stdout;
    assert!(diff.contains("deleted file mode") && diff.contains("+echo new"), "{diff}");
    f.cairn(&["accept", &s.id]).ok();
    assert_eq!(f.read("blob.bin").unwrap(), binary, "binary file changed");
    assert_eq!(f.read_str("run.sh").unwrap(), "#!/bin/sh\necho new\n");
    let mode = std::fs::metadata(f.root.join("run.sh")).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o755, "executable bit lost");
    assert!(f.read("gone.txt").is_none());
    // Undo restores all of it byte-exact.
    f.cairn(&["undo", &s.id]).ok();
    assert_eq!(f.read_str("run.sh").unwrap(), "#!/bin/sh\necho old\n");
    assert_eq!(f.read_str("gone.txt").unwrap(), "bye");
    assert_eq!(std::fs::metadata(f.root.join("run.sh")).unwrap().permissions().mode() & 0o777, 0o755);
}

#[test]
fn stale_base_refuses_naming_the_path_and_force_overrides() {
    let f = Fixture::with_files(&[("a.txt", "v1"), ("b.txt", "b")]);
    let s = f.run_ok("write_file('a.txt', read_file('a.txt') + ' agent')\nwrite_file('b.txt', 'agent b')");
    f.write("a.txt", "human edit");
    let r = f.cairn(&["accept", &s.id]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("a.txt") && !r.stderr.contains("b.txt"), "{}", r.stderr);
    assert!(r.stderr.contains("hint:") && r.stderr.contains("--force"), "{}", r.stderr);
    assert_eq!(f.read_str("a.txt").unwrap(), "human edit", "refused accept wrote anyway");
    assert_eq!(f.read_str("b.txt").unwrap(), "b");
    assert_eq!(f.status(&s.id).state.as_str(), "reviewing");
    f.cairn(&["accept", "--force", &s.id]).ok();
    assert_eq!(f.read_str("a.txt").unwrap(), "v1 agent");
}

#[test]
fn file_created_in_project_after_agent_created_it_is_stale() {
    let f = Fixture::with_files(&[("keep.txt", "k")]);
    let s = f.run_ok("write_file('new.txt', 'agent')");
    f.write("new.txt", "human");
    let r = f.cairn(&["accept", &s.id]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("new.txt"));
    assert_eq!(f.read_str("new.txt").unwrap(), "human");
}

#[test]
fn accept_never_writes_through_symlinks_or_dotdot() {
    let outside = tempfile::tempdir().unwrap();
    let f = Fixture::with_files(&[("sub/file.txt", "x")]);
    std::os::unix::fs::symlink(outside.path(), f.root.join("outside")).unwrap();
    f.init();
    let s = f.run_inline(
        "res = []\nfor p in ['../pwned', 'outside/pwned', 'a/../../pwned', 'sub/../../pwned']:\n    try:\n        write_file(p, 'x')\n        res.append('wrote')\n    except ValueError:\n        res.append('refused')\n    except OSError:\n        res.append('oserror')\nres",
    );
    assert_eq!(s.state.as_str(), "reviewing", "{:?}", s.error);
    let res = s.result.clone().unwrap();
    assert_eq!(res[0], "refused");
    assert_eq!(res[2], "refused");
    assert_eq!(res[3], "refused");
    // 'outside/pwned' is a path inside the project namespace; whatever the agent could
    // write there, accept must not follow the symlink out of the project.
    let r = f.cairn(&["accept", &s.id]);
    assert!(!outside.path().join("pwned").exists(), "accept wrote through a symlink");
    assert!(!f.dir.path().join("pwned").exists(), "accept escaped with ..");
    if res[1] == "wrote" {
        assert_eq!(r.code, 1, "accept through a symlink must be refused: {r:?}");
        assert!(r.stderr.contains("outside/pwned"), "{}", r.stderr);
    }
}

#[test]
fn reject_discards_and_changes_nothing() {
    let f = Fixture::with_files(&[("a.txt", "a")]);
    let tree = f.tree();
    let s = f.run_ok("write_file('a.txt', 'b')");
    let out = command::execute(&f.project(), Command::Reject { id: s.id.clone(), reason: None }).unwrap();
    assert!(matches!(out, Output::Agent(ref st) if st.state.as_str() == "rejected"));
    assert_eq!(f.tree(), tree);
    assert!(!f.root.join(format!(".agentfs/agent-{}.db", s.id)).exists(), "overlay not discarded");
    let r = f.cairn(&["accept", &s.id]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("rejected"), "{}", r.stderr);
}

#[test]
fn files_created_after_init_are_visible_to_the_next_run() {
    let f = Fixture::with_files(&[("a.txt", "a")]);
    f.write("later.txt", "created after init");
    let r = f.cairn(&["run", "--provider", "inline", "[read_file('later.txt'), list_dir('.')]"]).ok();
    let st = f.cairn(&["status", r.stdout.trim(), "--json"]).ok().json();
    assert_eq!(st["result"], serde_json::json!(["created after init", ["a.txt", "later.txt"]]));
}

/// A directory the agent wrote into, replaced before accept by a symlink (to outside the
/// project) or by a file: review calls the file deleted (a conflict), and even `--force`
/// refuses, says which ancestor is in the way and how, and writes nothing, in the project or
/// outside it.
#[test]
fn accept_refuses_a_parent_replaced_by_a_symlink_or_a_file() {
    for (how, want) in [("symlink", "is a symbolic link"), ("file", "is a file now")] {
        let outside = tempfile::tempdir().unwrap();
        let f = Fixture::with_files(&[("a.txt", "a\n"), ("sub/deep/x.txt", "x\n")]);
        let s = f.run_ok("write_file('a.txt', 'A\\n')\nwrite_file('sub/deep/x.txt', 'X\\n')");
        std::fs::rename(f.root.join("sub"), f.dir.path().join("moved-sub")).unwrap();
        match how {
            "symlink" => {
                std::fs::create_dir(outside.path().join("deep")).unwrap();
                std::os::unix::fs::symlink(outside.path(), f.root.join("sub")).unwrap();
            }
            _ => std::fs::write(f.root.join("sub"), "a file\n").unwrap(),
        }
        assert_eq!(f.cairn(&["accept", &s.id]).code, 1, "{how}: a conflict without --force");
        let r = f.cairn(&["accept", &s.id, "--force"]);
        assert_eq!(r.code, 1, "{how}: {r:?}");
        assert!(r.stderr.contains("sub/deep/x.txt") && r.stderr.contains(&format!("its parent sub {want}")), "{how}: {}", r.stderr);
        assert_eq!(f.read_str("a.txt").unwrap(), "a\n", "{how}: a write happened before the refusal");
        assert!(!outside.path().join("deep/x.txt").exists(), "{how}: accept wrote through the symlink");
        assert_eq!(f.cairn(&["status", &s.id, "--json"]).ok().json()["state"], "reviewing", "{how}");
    }
}
