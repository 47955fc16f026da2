//! Hashline edits through a real run: a tagged read, `edit_lines` by tag, and the refusals
//! (stale or missing tags change nothing; protected paths hold as for `write_file`).

use crate::support::*;

#[test]
fn edit_lines_by_tag_and_fail_closed() {
    let f = Fixture::with_files(&[("src/app.py", "def f():\n    return 1\n\nprint(f())\n")]);
    f.init();
    let code = r##"
tagged = read_file("src/app.py", tagged=True)
tags = [line.split("|", 1)[0] for line in tagged.splitlines()]
assert tagged.splitlines()[0].endswith("|def f():"), tagged
out = edit_lines("src/app.py", [
    {"op": "replace", "tag": tags[1], "lines": ["    return 2"]},
    {"op": "insert_after", "tag": "0:", "lines": ["# header"]},
    {"op": "delete", "tag": tags[2]},
])
# The tags are stale now: line 2 changed. The whole edit is refused.
try:
    edit_lines("src/app.py", [{"op": "delete", "tag": tags[3]}, {"op": "replace", "tag": tags[1], "lines": ["x"]}])
    stale = "applied"
except ValueError as e:
    stale = str(e)
try:
    edit_lines("src/app.py", [{"op": "delete", "tag": "99:abcdef"}])
    missing = "applied"
except ValueError as e:
    missing = str(e)
try:
    edit_lines(".git/config", [{"op": "insert_after", "tag": "0:", "lines": ["x"]}])
    protected = "applied"
except BaseException as e:
    protected = type(e).__name__ + ": " + str(e)
[out, stale, missing, protected, tags[1]]
"##;
    f.write(".git/config", "[core]\n");
    let s = f.run_ok(code);
    let r = s.result.unwrap();
    assert_eq!(r[0]["lines"], 4, "{r}");
    let stale = r[1].as_str().unwrap();
    assert!(stale.starts_with("stale tag 2:") && stale.contains("line 2 is now \"def f():\""), "{stale}");
    assert!(r[2].as_str().unwrap().contains("tag \"99:abcdef\" names no line"), "{r}");
    assert!(r[3].as_str().unwrap().starts_with("PermissionError"), "{r}");
    // The proposal holds exactly the first edit.
    let diff = f.cairn(&["diff", &s.id]).ok().stdout;
    assert!(diff.contains("+# header") && diff.contains("-    return 1") && diff.contains("+    return 2"), "{diff}");
    assert!(diff.contains("-\n") || diff.contains("-\r\n") || diff.lines().any(|l| l == "-"), "{diff}");
    assert!(!diff.contains(".git"));
}
