//! Agent scripts written with plain Python file I/O (`open`, `pathlib`, `os`, `glob`,
//! `shutil`) act on the proposal through the externals, and end with the same tree as CPython
//! running the same script on a copy of the project. Paths outside the project and protected
//! paths are refused as CPython refuses a permission error.

use crate::support::*;
use std::process::Command;

const SCRIPT: &str = r##"
import os, json, glob, shutil
from pathlib import Path
with open("src/app.py") as f:
    text = f.read()
with open("src/app.py", "w") as f:
    f.write(text.replace("a - b", "a + b"))
p = Path("conf.json")
data = json.loads(p.read_text())
data["b"] = 2
p.write_text(json.dumps(data, indent=2) + "\n")
for py in sorted(Path(".").rglob("*.py")):
    if py.read_text().startswith("# old"):
        py.unlink()
os.makedirs("build/out", exist_ok=True)
Path("build/out/report.txt").write_text("files: %d\n" % len(glob.glob("**/*.py", recursive=True)))
shutil.copy("conf.json", "conf.copy.json")
os.rename("notes.txt", "docs/notes.md")
with open("log.txt", "a") as f:
    f.write("one\n")
with open("log.txt", "a", newline="") as f:
    print("two", file=f)
left_open = open("unclosed.txt", "w")
left_open.write("flushed at exit\n")
listing = []
for top, dirs, files in os.walk("."):
    dirs.sort()
    for name in sorted(files):
        full = os.path.join(top, name)
        listing.append("%s %d %s" % (full, os.path.getsize(full), os.path.isfile(full)))
Path("listing.txt").write_text("\n".join(listing) + "\n")
"##;

fn project() -> Fixture {
    Fixture::with_files(&[
        ("src/app.py", "def add(a, b):\n    return a - b\n"),
        ("src/legacy.py", "# old code\n"),
        ("conf.json", "{\"a\": 1}\n"),
        ("notes.txt", "notes\n"),
        ("docs/index.md", "# docs\n"),
    ])
}

#[test]
fn plain_file_io_scripts_propose_what_cpython_would_write() {
    let f = project();
    f.init();
    // CPython on a copy of the same project.
    let copy = project();
    std::fs::remove_dir_all(copy.root.join(".agentfs")).ok();
    std::fs::remove_dir_all(copy.root.join(".grail")).ok();
    let out = Command::new("python3").arg("-c").arg(SCRIPT).current_dir(&copy.root).output().unwrap();
    assert!(out.status.success(), "CPython: {}", String::from_utf8_lossy(&out.stderr));
    let before = f.tree();
    let s = f.run_ok(SCRIPT);
    assert_eq!(f.tree(), before, "the working tree changed before accept");
    f.cairn(&["accept", &s.id]).ok();
    let (ours, theirs) = (f.tree(), copy.tree());
    assert_eq!(ours, theirs, "the accepted proposal differs from CPython's result\nours: {:?}\ncpython: {:?}", ours.iter().map(|x| &x.0).collect::<Vec<_>>(), theirs.iter().map(|x| &x.0).collect::<Vec<_>>());
    assert_eq!(f.read_str("build/out/report.txt").as_deref(), Some("files: 1\n"), "glob saw the deletion of legacy.py");
}

#[test]
fn paths_outside_the_project_and_protected_paths_are_permission_errors() {
    let f = project();
    f.init();
    let s = f.run_ok(
        "from pathlib import Path\nimport os\nout = []\n\
         for p in ['/etc/passwd', '../outside.txt', '.git/config', '.cairn.toml']:\n\
         \x20   try:\n\
         \x20       with open(p, 'w') as fh:\n\
         \x20           fh.write('x')\n\
         \x20       out.append(p + ' written')\n\
         \x20   except PermissionError as e:\n\
         \x20       out.append(p + ' refused')\n\
         try:\n\
         \x20   open('/etc/hostname').read()\n\
         except PermissionError:\n\
         \x20   out.append('read refused')\n\
         out.append(os.getcwd() == str(Path.cwd()))\n\
         out\n",
    );
    let st = f.cairn(&["status", &s.id, "--json"]).ok().json();
    assert_eq!(st["result"], serde_json::json!(["/etc/passwd refused", "../outside.txt refused", ".git/config refused", ".cairn.toml refused", "read refused", true]), "{st}");
    assert_eq!(f.cairn(&["diff", &s.id, "--stat"]).ok().stdout.lines().last().unwrap_or(""), " 0 files changed, 0 insertions(+), 0 deletions(-)");
}
