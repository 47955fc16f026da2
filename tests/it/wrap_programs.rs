//! `cairn wrap -- env|nice|timeout|… PROG`: what the command line runs through wrappers,
//! interpreters and package runners is found and made visible in the view (its installation,
//! its `#!` interpreter's); what cannot be is refused before anything starts, naming the
//! path and the `[wrap]` setting that would show it; a command that exits 127 inside is
//! pointed at the same.

use crate::runs::is_root;
use crate::support::*;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A directory outside the project that every user may read.
fn outside() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    d
}

/// An executable file at `p`.
fn script(p: &Path, text: &str) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A program outside the project that writes `$GREETING` (or `none`) into project file `$1`.
fn greeter(dir: &Path) -> PathBuf {
    let prog = dir.join("tools/prog");
    script(&prog, "#!/bin/sh\nprintf '%s\\n' \"${GREETING:-none}\" > \"$1\"\n");
    prog
}

/// The agent id `cairn wrap` announced on stderr.
fn agent_of(stderr: &str) -> String {
    let rest = stderr.split("wrap session ").nth(1).unwrap_or_else(|| panic!("no session line: {stderr}"));
    rest.split(':').next().unwrap().to_string()
}

/// `cairn wrap -- ARGV` in `f`, as this user or (`nobody`, when the tests run as root) as
/// uid 65534, with `home` as `$HOME`.
fn wrap(f: &Fixture, argv: &[&str], home: &Path, nobody: bool) -> Run {
    let mut c = if nobody {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"]).arg(exe());
        c
    } else {
        Command::new(exe())
    };
    c.arg("--project-root").arg(&f.root).arg("--cairn-home").arg(&f.home).arg("wrap").arg("--").args(argv);
    c.env("HOME", home).env_remove("CAIRN_HOME").current_dir(&f.root).stdin(Stdio::null());
    Run::from(c.output().unwrap())
}

/// The acceptance line: `env GREETING=hi /some/dir/prog` runs prog from a directory outside
/// the project, and what it writes is the proposal.
fn env_runs_a_program_outside_the_project(nobody: bool) {
    let f = Fixture::with_files(&[("a.txt", "a\n")]);
    let dir = outside();
    let prog = greeter(dir.path());
    let home = outside();
    if nobody {
        assert!(Command::new("chown").arg("-R").arg("65534:65534").arg(&f.root).arg(&f.home).status().unwrap().success());
        std::fs::set_permissions(f.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let before = f.tree();
    let r = wrap(&f, &["env", "GREETING=hi", prog.to_str().unwrap(), "greeting.txt"], home.path(), nobody);
    assert_eq!(r.code, 0, "{r:?}");
    let id = agent_of(&r.stderr);
    assert_eq!(f.tree(), before, "the working tree changed");
    let diff = f.cairn(&["diff", &id]).ok().stdout;
    assert!(diff.contains("+++ b/greeting.txt") && diff.contains("+hi"), "{diff}");
}

#[test]
fn env_runs_a_program_from_outside_the_project() {
    env_runs_a_program_outside_the_project(false);
}

#[test]
fn env_runs_a_program_from_outside_the_project_as_an_ordinary_user() {
    env_runs_a_program_outside_the_project(is_root());
}

/// `nice`, `timeout`, nested wrappers, and a program whose `#!` interpreter lives outside
/// the project and the system too: each runs, and its write is the proposal.
#[test]
fn wrappers_nested_and_a_foreign_interpreter_run_the_program() {
    let f = Fixture::with_files(&[("a.txt", "a\n")]);
    let dir = outside();
    let prog = greeter(dir.path());
    // An interpreter of its own, elsewhere: a copy of the system's shell.
    let other = outside();
    let shell = other.path().join("bin/tsh");
    std::fs::create_dir_all(shell.parent().unwrap()).unwrap();
    std::fs::copy("/bin/sh", &shell).unwrap();
    std::fs::set_permissions(&shell, std::fs::Permissions::from_mode(0o755)).unwrap();
    let foreign = dir.path().join("more/foreign");
    script(&foreign, &format!("#!{}\nprintf 'foreign\\n' > \"$1\"\n", shell.display()));
    let home = outside();
    let p = prog.to_str().unwrap();
    let fo = foreign.to_str().unwrap();
    let lines: [(&[&str], &str, &str); 5] = [
        (&["nice", "-n", "5", p, "nice.txt"], "nice.txt", "+none"),
        (&["timeout", "10", p, "timeout.txt"], "timeout.txt", "+none"),
        (&["env", "GREETING=deep", "nice", "-n", "1", "timeout", "-k", "5", "30", "stdbuf", "-oL", "setsid", "-w", p, "nested.txt"], "nested.txt", "+deep"),
        (&["sh", "-c", &format!("GREETING=sh exec nohup {p} shell.txt")], "shell.txt", "+sh"),
        (&["timeout", "10", fo, "foreign.txt"], "foreign.txt", "+foreign"),
    ];
    for (argv, file, line) in lines {
        let r = wrap(&f, argv, home.path(), false);
        assert_eq!(r.code, 0, "{argv:?}: {r:?}");
        let diff = f.cairn(&["diff", &agent_of(&r.stderr)]).ok().stdout;
        assert!(diff.contains(&format!("+++ b/{file}")) && diff.contains(line), "{argv:?}:\n{diff}");
    }
}

/// What cannot be shown is refused before anything starts (no session, no agent), naming the
/// path and the setting: a program under a `[wrap] hide` path, one that does not exist, the
/// `#!` interpreter of a project script outside everything the view shows, which `[wrap]
/// read_paths` then makes run.
#[test]
fn what_the_view_cannot_show_is_refused_naming_the_setting() {
    let f = Fixture::with_files(&[("a.txt", "a\n")]);
    let home = outside();
    let hidden = home.path().join(".ssh/prog");
    script(&hidden, "#!/bin/sh\necho ran > ran.txt\n");
    let r = wrap(&f, &["env", "A=1", hidden.to_str().unwrap()], home.path(), false);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains(&hidden.display().to_string()) && r.stderr.contains("[wrap] hide"), "{r:?}");
    let missing = home.path().join("nowhere/prog");
    let r = wrap(&f, &["nice", missing.to_str().unwrap()], home.path(), false);
    assert!(r.code == 1 && r.stderr.contains(&missing.display().to_string()) && r.stderr.contains("does not exist"), "{r:?}");
    let r = wrap(&f, &["timeout", "5", "no-such-program-anywhere"], home.path(), false);
    assert!(r.code == 1 && r.stderr.contains("no-such-program-anywhere") && r.stderr.contains("not found on PATH"), "{r:?}");
    // A project script whose interpreter is outside the view: not followed from a project
    // file, refused with the setting that shows it.
    let other = outside();
    let shell = other.path().join("bin/tsh");
    std::fs::create_dir_all(shell.parent().unwrap()).unwrap();
    std::fs::copy("/bin/sh", &shell).unwrap();
    script(&f.root.join("tool.sh"), &format!("#!{}\necho ran > ran.txt\n", shell.display()));
    let r = wrap(&f, &["env", "A=1", "./tool.sh"], home.path(), false);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains(&shell.display().to_string()) && r.stderr.contains(&format!("add \"{}\" to [wrap] read_paths", other.path().display())), "{r:?}");
    assert_eq!(f.cairn(&["list-agents", "--all", "--json"]).ok().json(), serde_json::json!([]), "a refused command made an agent");
    f.home_config(&format!("[wrap]\nread_paths = [\"{}\"]\n", other.path().display()));
    let r = wrap(&f, &["env", "A=1", "./tool.sh"], home.path(), false);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(f.cairn(&["diff", &agent_of(&r.stderr)]).ok().stdout.contains("+++ b/ran.txt"));
}

/// A command that exits 127 inside (a program its script starts is not there) is pointed
/// at what the view shows and the setting.
#[test]
fn exit_127_inside_points_at_the_view() {
    let f = Fixture::with_files(&[("a.txt", "a\n")]);
    let home = outside();
    let r = wrap(&f, &["sh", "-c", "echo x > x.txt; no-such-program-xyz"], home.path(), false);
    assert_eq!(r.code, 127, "{r:?}");
    assert!(r.stderr.contains("127") && r.stderr.contains("[wrap] read_paths"), "{r:?}");
}

/// A package runner's command in the project runs; one it would fetch from a registry the
/// session does not reach is said before it starts.
#[test]
fn npx_runs_the_projects_command_and_says_what_it_cannot_fetch() {
    let f = Fixture::with_files(&[("package.json", "{\"name\": \"p\", \"version\": \"1.0.0\"}\n")]);
    script(&f.root.join("node_modules/.bin/hello"), "#!/bin/sh\necho hello > hello.txt\n");
    let home = outside();
    let r = wrap(&f, &["timeout", "60", "npx", "--no", "hello"], home.path(), false);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(f.cairn(&["diff", &agent_of(&r.stderr)]).ok().stdout.contains("+++ b/hello.txt"));
    let r = wrap(&f, &["npx", "--no", "cairn-no-such-package-xyz"], home.path(), false);
    assert!(r.stderr.contains("registry.npmjs.org") && r.stderr.contains("[wrap] allow_hosts"), "{r:?}");
}
