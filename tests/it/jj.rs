//! Cairn in a Jujutsu repository (the real `jj`, installed into `.venv/jj` by the test
//! command): jj never snapshots Cairn's state into the user's working-copy commit.

use crate::support::*;
use std::path::{Path, PathBuf};
use std::process::Command;

fn jj() -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv/jj/bin/jj");
    assert!(p.exists(), "jj is missing: run `bash scripts/test.sh` (it installs .venv/jj)");
    p
}

fn jj_in(root: &Path, args: &[&str]) -> String {
    let out = Command::new(jj()).current_dir(root).args(["--config", "user.name=t", "--config", "user.email=t@example.com"]).args(args).output().unwrap();
    assert!(out.status.success(), "jj {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn jj_never_snapshots_cairns_state() {
    for colocate in [true, false] {
        let f = Fixture::with_files(&[("a.txt", "a\n")]);
        jj_in(&f.root, if colocate { &["git", "init", "--colocate"] } else { &["git", "init", "--no-colocate"] });
        jj_in(&f.root, &["commit", "-m", "base"]);
        f.init();
        let s = f.run_ok("write_file('a.txt', 'b\\n')\n");
        let t = f.run_ok("write_file('n.txt', 'n\\n')\n");
        f.cairn(&["accept", &t.id]).ok();
        let up = Up::start(&f);
        wait_until(10, "cairn up to index", || f.root.join(".agentfs/stable.db").exists());
        let names = jj_in(&f.root, &["diff", "-r", "@", "--name-only"]);
        drop(up);
        assert_eq!(names.lines().collect::<Vec<_>>(), ["n.txt"], "colocate={colocate}: jj snapshot {names}");
        assert_eq!(f.status(&s.id).state.as_str(), "reviewing");
        let all = jj_in(&f.root, &["file", "list"]);
        assert!(!all.contains(".agentfs") && !all.contains(".grail"), "colocate={colocate}: {all}");
    }
}
