//! The watcher of `cairn up` keeps stable.db in step with the disk; ignored paths stay out.

use crate::support::*;

fn indexed(f: &Fixture) -> Vec<String> {
    f.stable_rows().into_iter().map(|r| r.0).collect()
}

fn hash_of(f: &Fixture, path: &str) -> Option<Vec<u8>> {
    f.stable_rows().into_iter().find(|r| r.0 == path).and_then(|r| r.3)
}

#[test]
fn create_modify_delete_rename_reach_stable_db() {
    let f = Fixture::with_files(&[(".gitignore", "*.log\nbuild/\n"), ("keep.txt", "k"), ("dir/old.txt", "o")]);
    let _up = Up::start(&f);
    // The watcher is up once a change is seen; keep touching a file until then.
    wait_until(30, "watcher to start", || {
        f.write("probe.txt", "p");
        indexed(&f).contains(&"probe.txt".to_string())
    });

    f.write("new.txt", "created");
    wait_until(10, "create", || indexed(&f).contains(&"new.txt".to_string()));

    let before = hash_of(&f, "keep.txt");
    f.write("keep.txt", "modified");
    wait_until(10, "modify", || hash_of(&f, "keep.txt") != before);
    assert_eq!(hash_of(&f, "keep.txt").unwrap(), blake3::hash(b"modified").as_bytes().to_vec());

    std::fs::remove_file(f.root.join("new.txt")).unwrap();
    wait_until(10, "delete", || !indexed(&f).contains(&"new.txt".to_string()));

    std::fs::rename(f.root.join("dir"), f.root.join("moved")).unwrap();
    wait_until(10, "rename", || {
        let i = indexed(&f);
        i.contains(&"moved/old.txt".to_string()) && !i.contains(&"dir/old.txt".to_string()) && !i.contains(&"dir".to_string())
    });

    // Ignored paths stay out: write them, then a marker, and wait for the marker.
    f.write("debug.log", "x");
    f.write("build/out.o", "x");
    f.write("node_modules/m/index.js", "x");
    f.write("marker.txt", "m");
    wait_until(10, "marker", || indexed(&f).contains(&"marker.txt".to_string()));
    let i = indexed(&f);
    for ignored in ["debug.log", "build", "build/out.o", "node_modules", "node_modules/m/index.js"] {
        assert!(!i.contains(&ignored.to_string()), "{ignored} was indexed: {i:?}");
    }
}

#[test]
fn init_honours_gitignore_and_fixed_skips() {
    let f = Fixture::new();
    for p in ["src/a.py", ".git/config", "target/x", "node_modules/y", "__pycache__/z.pyc", "logs/app.log", "sub/.gitignore", "sub/secret.key", "sub/ok.txt", ".env"] {
        f.write(p, "x");
    }
    f.write(".gitignore", "logs/\n");
    f.write("sub/.gitignore", "*.key\n");
    f.init();
    let files: Vec<String> = f.stable_rows().into_iter().filter(|r| r.1 == 0).map(|r| r.0).collect();
    assert_eq!(files, [".env", ".gitignore", "src/a.py", "sub/.gitignore", "sub/ok.txt"]);
}
