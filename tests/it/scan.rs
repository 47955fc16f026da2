//! The pruned scan (`sync::catch_up`: what a command without a live watcher runs) against the
//! full one: after every kind of change the index holds exactly what a fresh full index of the
//! same tree holds, while reading only the directories that changed.

use crate::support::*;
use cairn::sync;
use std::time::{Duration, SystemTime};

/// (path, kind) of every indexed entry.
fn shape(f: &Fixture) -> Vec<(String, i64)> {
    f.stable_rows().into_iter().map(|r| (r.0, r.1)).collect()
}

/// What a full index of the tree as it is now holds (in a fresh `stable.db`, then put back,
/// with the record of which files are Cairn's own: the fresh index re-records it, and the
/// database put back would otherwise read as replaced by someone else).
fn fresh_shape(f: &Fixture) -> Vec<(String, i64)> {
    let db = f.root.join(".agentfs/stable.db");
    let keep = f.root.join(".agentfs/stable.keep");
    let origin = f.root.join(".agentfs/origin");
    let record = std::fs::read(&origin).expect("the origin record");
    for s in ["", "-wal", "-shm"] {
        let _ = std::fs::rename(format!("{}{s}", db.display()), format!("{}{s}", keep.display()));
    }
    sync::init(&f.project()).expect("a full index");
    let out = shape(f);
    for s in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{s}", db.display()));
        let _ = std::fs::rename(format!("{}{s}", keep.display()), format!("{}{s}", db.display()));
    }
    std::fs::write(&origin, record).expect("the origin record put back");
    out
}

/// Sets every directory's mtime to one fixed time in the past, so none is "racy" for the
/// next scan and the stamps stay the same from one call to the next.
fn age_dirs(f: &Fixture) {
    let then = SystemTime::UNIX_EPOCH + Duration::from_secs(1_600_000_000);
    for e in walk(&f.root) {
        if e.is_dir() && !e.starts_with(f.root.join(".agentfs")) {
            std::fs::File::open(&e).and_then(|d| d.set_modified(then)).expect("set a directory's mtime");
        }
    }
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = vec![dir.to_path_buf()];
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let ft = e.file_type().unwrap();
        if ft.is_dir() {
            out.extend(walk(&e.path()));
        }
    }
    out
}

#[test]
fn a_pruned_scan_sees_every_structural_change_and_reads_only_changed_directories() {
    let mut files: Vec<(String, String)> = Vec::new();
    for d in 0..20 {
        for i in 0..5 {
            files.push((format!("pkg/d{d:02}/f{i}.py"), format!("x = {d}{i}\n")));
        }
    }
    files.extend([("a/b/c/deep.txt".into(), "deep".into()), ("swap/file".into(), "f".into()), ("was_file".into(), "w".into()), ("sub/.gitignore".into(), "*.tmp\n".into()), ("sub/keep.tmp".into(), "t".into()), ("sub/ok.txt".into(), "o".into()), ("pkg/d11/extra.py".into(), "e".into())]);
    let refs: Vec<(&str, &str)> = files.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    let f = Fixture::with_files(&refs);
    f.init();
    age_dirs(&f);
    let p = f.project();
    // Nothing changed: only the root is read (its stamps recorded before the ageing moved).
    sync::catch_up(&p).expect("catch up");
    age_dirs(&f);
    let idle = sync::catch_up(&p).expect("catch up");
    assert_eq!(idle.read_dirs, 1, "an unchanged tree reads the root only: {idle:?}");
    assert_eq!(shape(&f), fresh_shape(&f));

    // Each change, then a pruned scan, then the same as a fresh full index.
    let changes: Vec<(&str, Box<dyn Fn()>)> = vec![
        ("create in a deep directory", Box::new(|| f.write("pkg/d07/new.py", "n"))),
        ("delete", Box::new(|| std::fs::remove_file(f.root.join("pkg/d03/f1.py")).unwrap())),
        ("rename a directory", Box::new(|| std::fs::rename(f.root.join("pkg/d05"), f.root.join("pkg/moved")).unwrap())),
        ("a directory replaced by a file", Box::new(|| {
            std::fs::remove_dir_all(f.root.join("swap")).unwrap();
            f.write("swap", "now a file");
        })),
        ("a file replaced by a directory", Box::new(|| {
            std::fs::remove_file(f.root.join("was_file")).unwrap();
            f.write("was_file/inside.txt", "i");
        })),
        ("a new tree of directories", Box::new(|| f.write("new/x/y/z.txt", "z"))),
        ("a .gitignore edited in place (no directory stamp moves)", Box::new(|| {
            let gi = f.root.join("sub/.gitignore");
            let dir_mtime = std::fs::metadata(f.root.join("sub")).unwrap().modified().unwrap();
            std::fs::write(&gi, "*.txt\n").unwrap();
            std::fs::File::open(f.root.join("sub")).unwrap().set_modified(dir_mtime).unwrap();
        })),
        ("two directories swapped (their mtimes the same)", Box::new(|| {
            let r = |a: &str, b: &str| std::fs::rename(f.root.join(a), f.root.join(b)).unwrap();
            r("pkg/d10", "pkg/tmp");
            r("pkg/d11", "pkg/d10");
            r("pkg/tmp", "pkg/d11");
        })),
        ("a directory removed whole", Box::new(|| std::fs::remove_dir_all(f.root.join("a")).unwrap())),
    ];
    for (what, change) in &changes {
        change();
        let done = sync::catch_up(&p).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert!(done.read_dirs < 12, "{what}: a pruned scan read {} directories", done.read_dirs);
        assert_eq!(shape(&f), fresh_shape(&f), "{what}");
        age_dirs(&f);
        sync::catch_up(&p).expect("catch up");
    }
    let rows = shape(&f);
    assert!(rows.iter().any(|r| r.0 == "sub/keep.tmp") && !rows.iter().any(|r| r.0 == "sub/ok.txt"), "the edited .gitignore rules apply: {rows:?}");
}

/// A change in the same clock tick as the scan that recorded a directory leaves the same
/// stamp; a directory whose stamp was that recent is read again by the next scan.
#[test]
fn a_change_that_leaves_the_same_stamp_is_seen_after_a_recent_scan() {
    let f = Fixture::with_files(&[("d/a.txt", "a")]);
    f.init();
    let p = f.project();
    sync::catch_up(&p).expect("catch up");
    let stamp = std::fs::metadata(f.root.join("d")).unwrap().modified().unwrap();
    f.write("d/b.txt", "b");
    std::fs::File::open(f.root.join("d")).unwrap().set_modified(stamp).unwrap();
    sync::catch_up(&p).expect("catch up");
    assert!(shape(&f).iter().any(|r| r.0 == "d/b.txt"), "the file created within the stamp's tick is indexed: {:?}", shape(&f));
}

/// A command without a live watcher finds what changed since the last index: an agent run
/// from the CLI lists a directory with a file created and one deleted behind Cairn's back.
#[test]
fn a_cold_command_sees_a_created_and_a_deleted_file() {
    let f = Fixture::with_files(&[("src/old.py", "o"), ("src/keep.py", "k")]);
    f.init();
    f.write("src/fresh.py", "f");
    std::fs::remove_file(f.root.join("src/old.py")).unwrap();
    let st = f.run_ok("write_file('listing.txt', str(list_dir('src')))\n");
    let diff = f.cairn(&["diff", &st.id]).stdout;
    assert!(diff.contains("fresh.py") && diff.contains("keep.py"), "the created file is listed: {diff}");
    assert!(!diff.contains("old.py"), "the deleted file is not listed: {diff}");
}
