//! Rows about the tree: init and re-index, the watcher, materializing a workspace, search.

use crate::fixture::{path_of, NEEDLE};
use crate::stats::{sample, time, Row, Stat};
use crate::{done, Ctx};
use cairn::command::{self, Command};
use std::path::Path;
use std::process::{Command as Proc, Output, Stdio};
use std::time::Duration;

/// A naive indexer: every file read into one SQLite table, in Python.
const NAIVE: &str = r#"
import os, sqlite3, sys
root, db = sys.argv[1], sys.argv[2]
con = sqlite3.connect(db)
con.execute("CREATE TABLE files(path TEXT PRIMARY KEY, content BLOB)")
for d, _, fs in os.walk(root):
    if ".agentfs" in d: continue
    for f in fs:
        p = os.path.join(d, f)
        with open(p, "rb") as fh:
            con.execute("INSERT INTO files VALUES (?, ?)", (os.path.relpath(p, root), fh.read()))
con.commit()
"#;

fn ran(out: std::io::Result<Output>, what: &str) -> Output {
    let out = out.unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(out.status.success(), "{what}: {}", String::from_utf8_lossy(&out.stderr));
    out
}

fn have(tool: &str) -> bool {
    Proc::new(tool).arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success())
}

/// `init` from nothing, against the naive script (up to 10,000 files: at 100,000 it takes
/// minutes a run), then a re-index with nothing changed (what `cairn run` does first when no
/// watcher keeps the index live).
pub fn index(c: &Ctx, rows: &mut Vec<Row>) {
    let agentfs = c.root.join(".agentfs");
    let init = sample(c.runs, || {
        let _ = std::fs::remove_dir_all(&agentfs);
        time(|| command::execute(&c.p, Command::Init).expect("init")).0
    });
    let mut row = Row::new("init", "init (index from nothing)", init, "< naive script; < 5 s at 100k");
    if c.files <= 10_000 && have("python3") {
        let db = c.work.join("naive.db");
        row = row.vs(
            "naive Python + SQLite",
            sample(c.runs, || {
                let _ = std::fs::remove_file(&db);
                time(|| ran(Proc::new("python3").arg("-c").arg(NAIVE).arg(&c.root).arg(&db).output(), "naive")).0
            }),
        );
    }
    done(rows, row);
    let again = sample(c.runs, || time(|| cairn::sync::init(&c.p).expect("re-index")).0);
    done(rows, Row::new("reindex", "re-index, nothing changed", again, "< 1 s at 100k"));
}

/// A file written on disk until `stable.db` has it, through the watcher (its start timed too).
pub fn watcher(c: &Ctx, rows: &mut Vec<Row>) {
    let (start, w) = time(|| cairn::watcher::Watcher::start(&c.p).expect("watcher"));
    let mut w = w;
    while w.pump(Duration::from_millis(50)).expect("pump") > 0 {}
    let mut i = 0;
    let latency = sample(c.runs * 2, || {
        i += 1;
        let rel = path_of(110 + i % 10);
        std::fs::write(c.root.join(&rel), format!("watch {i}")).expect("write");
        let (t, _) = time(|| while w.pump(Duration::from_secs(2)).expect("pump") == 0 {});
        t
    });
    assert_eq!(c.p.stable().expect("stable").get(&path_of(110 + i % 10)).expect("row").and_then(|e| e.hash), Some(cairn::store::hash_bytes(format!("watch {i}").as_bytes())));
    done(rows, Row::new("watch_start", "watcher start (a watch per directory)", Stat::ms(&[start]), ""));
    done(rows, Row::new("watch", "file change on disk → stable.db (watcher)", latency, "< 10 ms; < 20 ms at 100k"));
}

/// Times `make(dir)` into a fresh directory each run, removing it (untimed) after.
fn into_fresh(c: &Ctx, name: &str, mut make: impl FnMut(&Path), mut clean: impl FnMut(&Path)) -> Stat {
    let mut n = 0;
    sample(c.runs, || {
        n += 1;
        let dir = c.work.join(format!("{name}-{n}"));
        let (t, _) = time(|| make(&dir));
        clean(&dir);
        let _ = std::fs::remove_dir_all(&dir);
        t
    })
}

/// A preview workspace from nothing (since issue 37 a copy-on-write view: O(proposal)),
/// against what users reach for instead (whole-tree copies); then again after one change.
pub fn materialize(c: &Ctx, rows: &mut Vec<Row>) {
    // A fresh agent (and workspace) each run, all removed at the end: deleting 100,000 files
    // just before creating as many sends ext4's inode allocator into long scans of recently
    // deleted inodes, a cost of the bench's own clean-up, not of materializing.
    let ids: Vec<String> = (0..c.runs).map(|i| c.run_inline(&format!("write_file('{}', 'changed {i}')", path_of(1)))).collect();
    let mut next = ids.iter();
    let full = sample(c.runs, || {
        let id = next.next().expect("an agent per run");
        let (t, m) = time(|| cairn::workspace::materialize(&c.p, id).expect("materialize"));
        // The preview is a copy-on-write view: only the proposal (one file) is staged.
        assert_eq!(m.written, 1, "{} staged", m.written);
        t
    });
    let id = ids[0].clone();
    for other in &ids[1..] {
        cairn::workspace::remove(&c.p, other).expect("remove workspace");
    }
    let mut row = Row::new("materialize", "prepare a preview workspace (a copy-on-write view: the proposal's diff, nothing of the tree copied)", full, "< ½ git worktree add");
    // The references copy the whole tree seven times each: minutes a run at 100,000 files, and
    // the target is set at 10,000.
    if c.files > 10_000 {
        done(rows, row);
        return rematerialize(c, rows, &id);
    }
    if have("git") {
        let repo = c.work.join("gitrepo");
        crate::fixture::copy(&c.fixture, &repo);
        let git = |args: &[&str], dir: &Path| ran(Proc::new("git").args(["-c", "user.name=b", "-c", "user.email=b@b"]).args(args).current_dir(dir).output(), "git");
        git(&["init", "-q"], &repo);
        git(&["add", "-A"], &repo);
        git(&["commit", "-qm", "fixture"], &repo);
        let wt = into_fresh(c, "worktree", |d| drop(git(&["worktree", "add", "-q", "--detach", d.to_str().expect("utf-8")], &repo)), |d| drop(git(&["worktree", "remove", "--force", d.to_str().expect("utf-8")], &repo)));
        row = row.vs("git worktree add", wt);
        let _ = std::fs::remove_dir_all(&repo);
    }
    for (name, flag) in [("cp -al", "-al"), ("cp -r", "-r")] {
        row = row.vs(name, into_fresh(c, &name.replace(' ', ""), |d| drop(ran(Proc::new("cp").arg(flag).arg(&c.fixture).arg(d).output(), name)), |_| {}));
    }
    done(rows, row);
    rematerialize(c, rows, &id);
}

fn rematerialize(c: &Ctx, rows: &mut Vec<Row>, id: &str) {
    let mut i = 0;
    let again = sample(c.runs, || {
        i += 1;
        let rel = path_of(222);
        std::fs::write(c.root.join(&rel), format!("edit {i}")).expect("write");
        cairn::sync::refresh(&c.p, std::slice::from_ref(&rel)).expect("refresh");
        let (t, m) = time(|| cairn::workspace::materialize(&c.p, id).expect("materialize"));
        assert_eq!(m.written, 1);
        t
    });
    done(rows, Row::new("rematerialize", "re-materialize after one change", again, "< 20 ms"));
}

/// Content search of the whole project, process start included on every side.
pub fn search(c: &Ctx, rows: &mut Vec<Row>) {
    let expect = c.files.div_ceil(997);
    let count = |out: &Output| String::from_utf8_lossy(&out.stdout).lines().filter(|l| l.contains(NEEDLE)).count();
    let ours = sample(c.runs, || {
        let (t, out) = time(|| ran(c.cairn().args(["search", NEEDLE]).output(), "cairn search"));
        assert_eq!(count(&out), expect);
        t
    });
    let mut row = Row::new("search", "search the project (`cairn search`, process start included)", ours, "≤ 2× rg");
    let mut tools: Vec<(&str, Vec<String>)> = Vec::new();
    if have("rg") {
        tools.push(("rg", vec!["-n".into(), "--glob".into(), "!.agentfs".into(), "--glob".into(), "!.grail".into(), NEEDLE.into(), ".".into()]));
    }
    tools.push(("grep -r", vec!["-rn".into(), "--exclude-dir=.agentfs".into(), "--exclude-dir=.grail".into(), NEEDLE.into(), ".".into()]));
    for (name, args) in tools {
        let bin = name.split(' ').next().unwrap_or(name);
        let stat = sample(c.runs, || {
            let (t, out) = time(|| ran(Proc::new(bin).args(&args).current_dir(&c.root).output(), name));
            assert_eq!(count(&out), expect, "{name}");
            t
        });
        row = row.vs(name, stat);
    }
    done(rows, row);
}
