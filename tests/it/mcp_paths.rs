//! Absolute paths at the MCP door: an MCP client sends host paths, so an absolute path names a
//! file only inside the project (by the root's own spelling, or through a symbolic link to it)
//! and is refused anywhere else, naming the project root, with nothing written; scripts keep
//! the seeds' convention (a leading `/` is the project root). The rules first
//! (`paths::normalize_as`, `paths::glob_as`), then every tool through the official Python SDK.

use crate::support::*;
use cairn::error::Error;
use cairn::paths::{glob_as, normalize_as, Rooted};

#[test]
fn host_paths_name_files_only_inside_the_project() {
    let f = Fixture::with_files(&[("src/a.py", "a\n")]);
    let link = f.dir.path().join("link");
    std::os::unix::fs::symlink(&f.root, &link).unwrap();
    let (r, l) = (f.root.display().to_string(), link.display().to_string());
    let host = |raw: &str| normalize_as(raw, &f.root, Rooted::Host);
    for (raw, want) in [(format!("{r}/src/a.py"), "src/a.py"), (r.clone(), ""), (format!("{l}/src/new/b.py"), "src/new/b.py"), (l.clone(), ""), ("src/a.py".into(), "src/a.py"), (format!("{r}/src/../x"), "x")] {
        assert_eq!(host(&raw).unwrap(), want, "{raw}");
    }
    let beside = format!("{}/other/a", f.dir.path().display());
    for raw in ["/tmp/x/abs.txt", "/", "/etc/passwd", &format!("{r}x/a"), &beside] {
        match host(raw) {
            Err(e @ Error::OutsideProject { .. }) => assert!(e.to_string().contains(&r), "{raw}: {e}"),
            other => panic!("{raw}: {other:?}"),
        }
    }
    assert!(matches!(host(&format!("{r}/../proj/x")), Err(Error::InvalidPath(_))), "`..` out of the root stays refused");
    assert!(matches!(host("/a\0b"), Err(Error::InvalidPath(_))));
    assert_eq!(normalize_as("/tmp/x/abs.txt", &f.root, Rooted::Project).unwrap(), "tmp/x/abs.txt", "scripts keep `/` as the root");

    assert_eq!(glob_as(&format!("{r}/src/**/*.py"), &f.root, Rooted::Host).unwrap(), "src/**/*.py");
    assert_eq!(glob_as(&format!("{l}/*.py"), &f.root, Rooted::Host).unwrap(), "*.py");
    assert_eq!(glob_as("src/*.py", &f.root, Rooted::Host).unwrap(), "src/*.py");
    for outside in ["/tmp/**", "/**/*.py", "/*"] {
        assert!(matches!(glob_as(outside, &f.root, Rooted::Host), Err(Error::OutsideProject { .. })), "{outside}");
    }
    assert_eq!(glob_as("/src/*.py", &f.root, Rooted::Project).unwrap(), "src/*.py");
}

#[test]
fn mcp_tools_refuse_absolute_paths_outside_the_project_and_take_those_inside() {
    let f = Fixture::with_files(&[("a.txt", "a\n")]);
    let outside = f.dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.txt"), "secret\n").unwrap();
    let link = f.dir.path().join("link");
    std::os::unix::fs::symlink(&f.root, &link).unwrap();
    let before = f.tree();

    let r = crate::mcp_identity::python(&f, "paths.py", &[outside.to_str().unwrap(), link.to_str().unwrap()]);
    assert_eq!(r["refused"].as_object().unwrap().len(), 15, "{r}");

    // The proposal: the files named inside the project, and the script's `/tmp/...` under the
    // root; nothing the refused calls named.
    let agent = r["agent"].as_str().unwrap();
    let diff = f.cairn(&["diff", agent]).ok().stdout;
    let files: Vec<&str> = diff.lines().filter_map(|l| l.strip_prefix("diff --git a/")).map(|l| l.split(' ').next().unwrap_or("")).collect();
    assert_eq!(files, ["a.txt", "in/link.txt", "in/root.txt", "tmp/script.txt"], "{diff}");
    // No proposal holds the refused writes (the connection's own session, empty, was cancelled).
    for a in f.cairn(&["list-agents", "--all", "--json"]).ok().json().as_array().unwrap() {
        let id = a["id"].as_str().unwrap();
        if a["state"] == "reviewing" {
            let d = f.cairn(&["diff", id]).ok().stdout;
            assert!(!d.contains("abs.txt") && !d.contains("moved.txt") && !d.contains("secret"), "{id}: {d}");
        }
    }
    assert_eq!(f.tree(), before, "the working tree changed");
    let left: Vec<String> = std::fs::read_dir(&outside).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(left, ["secret.txt"], "nothing written outside the project");
    assert_eq!(std::fs::read_to_string(outside.join("secret.txt")).unwrap(), "secret\n");
}
