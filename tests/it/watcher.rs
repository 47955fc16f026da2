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

    // A write is a truncate then the bytes: the index may see the empty file on the way, and
    // must end with the content.
    f.write("keep.txt", "modified");
    let want = blake3::hash(b"modified").as_bytes().to_vec();
    wait_until(10, "modify", || hash_of(&f, "keep.txt").as_ref() == Some(&want));

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

/// The index is right whatever the events: after a directory swap, a rename followed by
/// re-creation, and a seeded soak of random operations with nested directory moves,
/// stable.db comes to equal the tree (by the stat-based reconcile of `cairn up`).
#[test]
fn the_index_converges_after_swaps_recreations_and_a_soak() {
    let f = Fixture::with_files(&[("W/w.txt", "w"), ("X/x.txt", "x"), ("u/a.txt", "a")]);
    let p = f.project();
    let _up = Up::start(&f);
    wait_until(30, "watcher to start", || {
        f.write("probe.txt", "p");
        indexed(&f).contains(&"probe.txt".to_string())
    });
    let settled = |what: &str| {
        let t = std::time::Instant::now();
        wait_until(60, what, || cairn::sync::drift(&p).map(|(a, b, c)| a.is_empty() && b.is_empty() && c.is_empty()).unwrap_or(false));
        eprintln!("{what}: index equal to the tree after {:?}", t.elapsed());
    };
    let r = |a: &str, b: &str| std::fs::rename(f.root.join(a), f.root.join(b)).unwrap();
    r("W", "T");
    r("X", "W");
    r("T", "X");
    settled("directory swap");
    r("u", "v");
    std::fs::create_dir(f.root.join("u")).unwrap();
    f.write("u/z.txt", "z");
    settled("rename then re-create");

    // A seeded soak: files and nested directories created, modified, deleted and moved.
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    for i in 0..5000 {
        let d = format!("s{}/t{}", next(6), next(4));
        match next(5) {
            0 | 1 => f.write(&format!("{d}/f{}.txt", next(20)), format!("{i}")),
            2 => {
                let _ = std::fs::remove_file(f.root.join(format!("{d}/f{}.txt", next(20))));
            }
            3 => {
                let (from, to) = (format!("s{}", next(6)), format!("s{}", next(6)));
                if from != to && f.root.join(&from).exists() {
                    let _ = std::fs::remove_dir_all(f.root.join(format!("moved-{i}")));
                    let _ = std::fs::rename(f.root.join(&to), f.root.join(format!("moved-{i}")));
                    let _ = std::fs::rename(f.root.join(&from), f.root.join(&to));
                }
            }
            _ => {
                let _ = std::fs::rename(f.root.join(&d), f.root.join(format!("{d}-r{i}")));
            }
        }
    }
    settled("soak of 5,000 operations");
}

/// A bounded soak of 20,000 operations with nested directory moves: `cairn up` stays small
/// (the figure is printed; the bound is loose).
#[test]
fn up_memory_stays_bounded_under_nested_directory_moves() {
    let f = Fixture::with_files(&[("a.txt", "a")]);
    let up = Up::start(&f);
    wait_until(30, "watcher to start", || {
        f.write("probe.txt", "p");
        indexed(&f).contains(&"probe.txt".to_string())
    });
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    for i in 0..20_000 {
        let d = format!("n{}/m{}/o{}", next(5), next(5), next(3));
        if next(3) == 0 {
            let (a, b) = (format!("n{}", next(5)), format!("n{}", next(5)));
            if a != b && f.root.join(&a).exists() {
                let _ = std::fs::rename(f.root.join(&b), f.root.join(format!("tmp{i}")));
                let _ = std::fs::rename(f.root.join(&a), f.root.join(&b));
                let _ = std::fs::rename(f.root.join(format!("tmp{i}")), f.root.join(&a));
            }
        } else {
            f.write(&format!("{d}/f{}.txt", next(10)), format!("{i}"));
        }
    }
    let p = f.project();
    wait_until(30, "index settles", || cairn::sync::drift(&p).map(|(a, b, c)| a.is_empty() && b.is_empty() && c.is_empty()).unwrap_or(false));
    let status = std::fs::read_to_string(format!("/proc/{}/status", up.child.id())).unwrap();
    let rss: u64 = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap().split_whitespace().nth(1).unwrap().parse().unwrap();
    eprintln!("cairn up RSS after 20,000 operations: {} MiB", rss / 1024);
    assert!(rss < 100 * 1024, "cairn up holds {rss} KiB");
}

/// One unreadable file among 300 new ones never drops the batch: the 300 are indexed, the
/// unreadable one is left out, `up` keeps going. (Run as an unprivileged user when the tests
/// run as root, who can read anything.)
#[test]
fn an_unreadable_file_does_not_drop_the_batch() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let f = Fixture::with_files(&[("a.txt", "a")]);
    let root_user = std::fs::metadata("/proc/self").unwrap().uid() == 0;
    let mut cmd = if root_user {
        fn chown_tree(path: &std::path::Path) {
            std::os::unix::fs::lchown(path, Some(65534), Some(65534)).unwrap();
            if path.is_dir() && !path.is_symlink() {
                for e in std::fs::read_dir(path).unwrap().flatten() {
                    chown_tree(&e.path());
                }
            }
        }
        chown_tree(f.dir.path());
        let mut c = std::process::Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"]).arg(exe());
        c
    } else {
        std::process::Command::new(exe())
    };
    cmd.arg("--project-root").arg(&f.root).arg("--cairn-home").arg(&f.home).arg("up").env_remove("CAIRN_HOME");
    let _up = Up { child: cmd.stdin(std::process::Stdio::null()).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null()).spawn().unwrap() };
    wait_until(30, "watcher to start", || {
        f.write("probe.txt", "p");
        if root_user {
            let _ = std::os::unix::fs::lchown(f.root.join("probe.txt"), Some(65534), Some(65534));
        }
        indexed(&f).contains(&"probe.txt".to_string())
    });
    std::fs::create_dir(f.root.join("batch")).unwrap();
    // Created unreadable (mode 000 from the open on), so the watcher never sees a readable moment.
    {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let mut w = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o000).open(f.root.join("batch/noread.txt")).unwrap();
        w.write_all(b"secret").unwrap();
    }
    assert_eq!(std::fs::metadata(f.root.join("batch/noread.txt")).unwrap().permissions().mode() & 0o777, 0);
    for i in 0..300 {
        f.write(&format!("batch/f{i:03}.txt"), format!("{i}"));
    }
    wait_until(30, "the 300 readable files indexed", || indexed(&f).iter().filter(|p| p.starts_with("batch/f")).count() == 300);
    assert!(!indexed(&f).contains(&"batch/noread.txt".to_string()), "the unreadable file was indexed");
}

/// An exhausted inotify limit (injected: the limit is global to the machine) is reported,
/// on stderr and to `:checkhealth` through the host, and the index still converges by the
/// stat scan.
#[test]
fn an_exhausted_inotify_limit_is_reported_and_the_stat_scan_takes_over() {
    let f = Fixture::with_files(&[("a.txt", "a\n")]);
    f.init();
    let mut up = f
        .cmd()
        .arg("up")
        .env("CAIRN_TEST_INOTIFY_EXHAUSTED", "1")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = std::io::BufReader::new(up.stderr.take().unwrap());
    let said = said_until(&mut stderr, "file watcher unavailable");
    assert!(said.contains("inotify watch limit is exhausted") && said.contains("max_user_watches") && said.contains("stat scan"), "{said}");
    // The first write may still be caught by the start-up catch-up; the second can only be
    // found by the periodic stat scan.
    for name in ["b.txt", "c.txt"] {
        f.write(name, "new\n");
        wait_until(10, "the stat scan to index a new file", || indexed(&f).contains(&name.to_string()));
    }
    assert!(matches!(up.try_wait(), Ok(None)), "cairn up keeps serving");
    let _ = up.kill();
    let _ = up.wait();
}

/// The kernel's own limit, run out of for real: `cairn up` in a user namespace whose
/// `max_inotify_watches` (a per-namespace limit) is 2, on a project of 12 directories. It says
/// so once, naming the sysctl, and its stat scan still sees a file created and a file deleted.
#[test]
fn a_watcher_out_of_inotify_watches_still_sees_a_created_and_a_deleted_file() {
    let probe = std::process::Command::new("unshare").args(["-U", "-r", "sh", "-c", "echo 2 > /proc/sys/user/max_inotify_watches"]).status();
    if !probe.is_ok_and(|s| s.success()) {
        eprintln!("SKIP: this kernel gives no user namespace whose inotify limit can be set");
        return;
    }
    let mut files = vec![("keep.txt".to_string(), "k".to_string()), ("gone.txt".to_string(), "g".to_string())];
    for d in 0..10 {
        files.push((format!("d{d}/sub/f.txt"), "x".into()));
    }
    let refs: Vec<(&str, &str)> = files.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    let f = Fixture::with_files(&refs);
    f.init();
    let mut up = std::process::Command::new("unshare")
        .args(["-U", "-r", "sh", "-c", "echo 2 > /proc/sys/user/max_inotify_watches && exec \"$0\" \"$@\""])
        .arg(exe())
        .arg("--project-root")
        .arg(&f.root)
        .arg("--cairn-home")
        .arg(&f.home)
        .arg("up")
        .env_remove("CAIRN_HOME")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = std::io::BufReader::new(up.stderr.take().unwrap());
    let said = said_until(&mut stderr, "file watcher unavailable");
    assert!(said.contains("inotify watch limit is exhausted") && said.contains("sysctl fs.inotify.max_user_watches="), "{said}");
    // No watcher runs: whichever scan sees these (the start-up catch-up or a periodic one),
    // it is the stat scan; the third change comes after both.
    f.write("d7/sub/created.txt", "new\n");
    std::fs::remove_file(f.root.join("gone.txt")).unwrap();
    wait_until(20, "the stat scan to see a created and a deleted file", || {
        let i = indexed(&f);
        i.contains(&"d7/sub/created.txt".to_string()) && !i.contains(&"gone.txt".to_string())
    });
    f.write("d3/later.txt", "later\n");
    wait_until(20, "a second creation seen", || indexed(&f).contains(&"d3/later.txt".to_string()));
    assert!(matches!(up.try_wait(), Ok(None)), "cairn up keeps serving");
    let _ = up.kill();
    let _ = up.wait();
    let mut rest = String::new();
    let _ = std::io::Read::read_to_string(&mut stderr, &mut rest);
    let all = format!("{said}{rest}");
    assert_eq!(all.matches("file watcher unavailable").count(), 1, "said once: {all}");
}

/// What a process said on `stderr` up to the first line holding `needle` (or its end).
fn said_until(stderr: &mut impl std::io::BufRead, needle: &str) -> String {
    let mut said = String::new();
    while !said.contains(needle) {
        let mut line = String::new();
        if stderr.read_line(&mut line).unwrap_or(0) == 0 {
            break;
        }
        said.push_str(&line);
    }
    said
}
