//! Protected paths and modes: an agent cannot write or delete what configures Cairn or the
//! repository machinery, by any spelling, and no accept lands such a path or a setuid,
//! setgid or sticky bit.

use crate::support::*;
use cairn::command::{self, Command};
use cairn::store::overlay::Overlay;
use std::os::unix::fs::PermissionsExt;

/// Every spelling the rules must catch (Python string literals).
const PROTECTED: &[&str] = &[
    "'.cairn.toml'", "'sub/.cairn.toml'", "'.git/hooks/pre-commit'", "'.GIT/x'", "'.git./x'", "'\\uff0egit/x'", "'a/.git/x'",
    "'.jj/x'", "'.agentfs/x'", "'.grail/x'", "'a\\nb.txt'", "'a\\x1b[31mb.txt'",
];

#[test]
fn writes_and_deletes_of_protected_paths_are_refused_naming_path_and_rule() {
    let f = Fixture::with_files(&[(".cairn.toml", "[llm]\n"), ("sub/.cairn.toml", "[llm]\n"), ("src/a.py", "x = 1\n")]);
    let err = "def err(f, *a):\n    try:\n        f(*a)\n        return 'ok'\n    except Exception as e:\n        return type(e).__name__ + ': ' + str(e)\n";
    for p in PROTECTED {
        let s = f.run_ok(&format!("{err}[err(write_file, {p}, 'x'), err(delete_file, {p})]"));
        let results = s.result.as_ref().and_then(|r| r.as_array()).expect("two results");
        for r in results {
            let text = r.as_str().unwrap_or_default();
            assert!(text.starts_with("PermissionError: ") && text.contains("is protected: "), "{p}: {text}");
            assert!(!text.contains('\n') && !text.contains('\u{1b}'), "{p}: the message must escape the path: {text:?}");
        }
        assert!(s.changes.is_empty(), "{p}: a protected path reached the proposal");
    }
    // An ordinary path next to them still works.
    let s = f.run_ok("write_file('src/.gitignore', 'x')\nwrite_file('.github/ci.yml', 'y')");
    assert_eq!(s.changes.len(), 2);
}

#[test]
fn no_accept_lands_a_protected_path_even_from_a_tampered_overlay() {
    let f = Fixture::with_files(&[("src/a.py", "x = 1\n")]);
    let s = f.run_ok("write_file('src/a.py', 'x = 2\\n')");
    // Plant protected paths straight into the overlay, as a tampered or older overlay might.
    let overlay = Overlay::open(&f.root.join(format!(".agentfs/agent-{}.db", s.id))).unwrap();
    for (i, p) in [".cairn.toml", "sub/.cairn.toml", ".git/hooks/pre-commit", ".GIT/x", ".git./x", "\u{ff0e}git/x", "a/.git/x", ".jj/x", ".agentfs/x", ".grail/x", "a\nb", "a\u{1b}[31mb"].iter().enumerate() {
        overlay.write(p, b"[llm]\ncommand = ['sh', '-c', 'touch /tmp/cairn-pwned']\n", 0o755).unwrap();
        let r = f.cairn(&["accept", &s.id]);
        assert_eq!(r.code, 1, "{p:?}: {}", r.stderr);
        assert!(r.stderr.contains("protected path"), "{p:?}: {}", r.stderr);
        assert!(!f.root.join(p).exists(), "{p:?} landed");
        assert_eq!(f.read_str("src/a.py").unwrap(), "x = 1\n", "nothing lands when one path is refused ({i})");
        overlay.forget(p).unwrap();
    }
    drop(overlay);
    f.cairn(&["accept", &s.id]).ok();
    assert_eq!(f.read_str("src/a.py").unwrap(), "x = 2\n");
}

#[test]
fn accept_never_writes_setuid_setgid_or_sticky_bits() {
    let f = Fixture::new();
    f.write("bin/tool", "#!/bin/sh\necho old\n");
    std::fs::set_permissions(f.root.join("bin/tool"), std::fs::Permissions::from_mode(0o6755)).unwrap();
    f.write("bin/other", "#!/bin/sh\n");
    std::fs::set_permissions(f.root.join("bin/other"), std::fs::Permissions::from_mode(0o1777)).unwrap();
    f.init();
    let s = f.run_ok("write_file('bin/tool', '#!/bin/sh\\necho new\\n')\nwrite_file('bin/other', '#!/bin/sh\\n# changed\\n')");
    command::execute(&f.project(), Command::Accept { id: s.id.clone(), force: false }).expect("accept");
    for (p, want) in [("bin/tool", 0o755), ("bin/other", 0o777)] {
        let mode = std::fs::metadata(f.root.join(p)).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode, want, "{p}: accept wrote mode {mode:o}");
    }
    assert_eq!(f.read_str("bin/tool").unwrap(), "#!/bin/sh\necho new\n");
}
