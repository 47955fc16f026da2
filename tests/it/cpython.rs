//! Agent scripts on CPython (`[sandbox] interpreter = "cpython"`, issue 38): the externals
//! through the same protocol and host, sync and awaited; plain file I/O captured into the
//! proposal; subprocesses confined by the run workspace; the budgets; the interpreter chosen
//! by config, header and `--interpreter`; the pre-flight check; the escape suite.

use crate::support::*;
use cairn::lifecycle::State;
use std::path::Path;

const CPYTHON: &str = "interpreter = \"cpython\"";

fn fixture(sandbox: &str) -> Fixture {
    let f = Fixture::with_files(&[("a.txt", "alpha\n"), ("b.txt", "beta\n"), ("c.txt", "gamma\n"), ("gone.txt", "x\n"), ("d/e.txt", "deep\n")]);
    f.home_config(&format!("[sandbox]\n{sandbox}\n"));
    f.init();
    f
}

#[test]
fn externals_sync_and_awaited_and_plain_io_land_in_the_proposal() {
    let f = fixture(CPYTHON);
    let code = r#"
import asyncio, os, pathlib, shutil, sys
a = read_file("a.txt")
b = await read_file("b.txt")
write_file("ext.txt", a + b)
async def both():
    x, y = await asyncio.gather(read_file("a.txt"), read_file("c.txt"))
    return x + y
pathlib.Path("plain.txt").write_text(asyncio.run(both()) if False else "from pathlib\n")
with open("c.txt", "a") as fh:
    fh.write("appended\n")
shutil.copytree("d", "d2")
os.remove("gone.txt")
print("on", sys.implementation.name)
log("logged")
{"impl": sys.implementation.name, "entries": sorted(list_dir("."))[:2], "sub": await search_files("*.txt")}
"#;
    let s = f.run_ok(code);
    let result = s.result.clone().unwrap();
    assert_eq!(result["impl"], "cpython", "{result}");
    assert!(result["sub"].to_string().contains("a.txt"), "{result}");
    let log = std::fs::read_to_string(f.project().agent_dir(&s.id).join("run.log")).unwrap();
    assert!(log.contains("on cpython") && log.contains("logged"), "{log}");
    f.cairn(&["accept", &s.id]).ok();
    assert_eq!(f.read_str("ext.txt").as_deref(), Some("alpha\nbeta\n"));
    assert_eq!(f.read_str("plain.txt").as_deref(), Some("from pathlib\n"));
    assert_eq!(f.read_str("c.txt").as_deref(), Some("gamma\nappended\n"));
    assert_eq!(f.read_str("d2/e.txt").as_deref(), Some("deep\n"));
    assert_eq!(f.read_str("gone.txt"), None);
}

#[test]
fn awaited_externals_inside_coroutines_and_gather() {
    let f = fixture(CPYTHON);
    let code = "import asyncio\nasync def main():\n    x, y = await asyncio.gather(read_file('a.txt'), read_file('b.txt'))\n    zs = await asyncio.gather(*[read_file(p) for p in ['c.txt']])\n    return x + y + zs[0] + await read_file('a.txt')\nasyncio.run(main())\n";
    let s = f.run_ok(code);
    assert_eq!(s.result.clone().unwrap(), "alpha\nbeta\ngamma\nalpha\n");
}

#[test]
fn a_subprocess_is_confined() {
    let f = fixture(CPYTHON);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let code = format!(
        r#"
import subprocess, sys
probe = "import socket\ntry:\n    socket.create_connection(('127.0.0.1', {port}), timeout=2)\n    print('connected')\nexcept OSError as e:\n    print('refused', e)\n"
net = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True).stdout
ssh = subprocess.run(["sh", "-c", "ls -A ~/.ssh 2>/dev/null; cat /etc/shadow"], capture_output=True, text=True).stdout
[net, ssh]
"#
    );
    let s = f.run_ok(&code);
    let result = s.result.clone().unwrap();
    assert!(result[0].as_str().unwrap().starts_with("refused"), "{result}");
    assert_eq!(result[1], "", "{result}");
    assert!(listener.accept().is_err(), "the host's listener was reached");
}

#[test]
fn budgets_end_as_errors() {
    for (config, code, kind) in [
        ("max_memory_mb = 64", "x = bytearray(1 << 30)\nx[-1] = 1\n", "memory"),
        ("max_memory_mb = 64", "xs = []\nwhile True:\n    xs.append(bytearray(1 << 20))\n", "memory"),
        ("timeout_seconds = 2", "while True:\n    pass\n", "timeout"),
    ] {
        let f = fixture(&format!("{CPYTHON}\n{config}"));
        let s = f.run_inline(code);
        assert_eq!(s.state, State::Errored, "{code}: {:?}", s.result);
        assert_eq!(s.error_kind.map(|k| k.as_str()), Some(kind), "{code}: {:?}", s.error);
    }
}

#[test]
fn the_interpreter_is_chosen_by_run_then_header_then_config() {
    let f = fixture("");
    let which = "import sys\nsys.implementation.name\n";
    assert_eq!(f.run_ok(which).result.unwrap(), "rustpython");
    assert_eq!(f.run_ok(&format!("# cairn: interpreter=cpython\n{which}")).result.unwrap(), "cpython");
    let file = f.root.join("which.pym");
    std::fs::write(&file, format!("# cairn: interpreter=cpython\n{which}")).unwrap();
    let id = f.cairn(&["run", "--interpreter", "rustpython", file.to_str().unwrap()]).ok().stdout.trim().to_string();
    assert_eq!(f.status(&id).result.unwrap(), "rustpython");
    std::fs::write(&file, which).unwrap();
    let id = f.cairn(&["run", "--interpreter", "cpython", file.to_str().unwrap()]).ok().stdout.trim().to_string();
    assert_eq!(f.status(&id).result.unwrap(), "cpython");
    let g = fixture(CPYTHON);
    assert_eq!(g.run_ok(which).result.unwrap(), "cpython");
    assert_eq!(g.run_ok(&format!("# cairn: interpreter=rustpython\n{which}")).result.unwrap(), "rustpython");
}

#[test]
fn the_check_knows_both_interpreters_and_a_missing_python_is_named() {
    let f = fixture("");
    let file = f.root.join("s.pym");
    std::fs::write(&file, "import socket\nread_file()\n").unwrap();
    let rust = f.cairn(&["check", "--json", file.to_str().unwrap()]).json().to_string();
    assert!(rust.contains("socket") && rust.contains("read_file"), "{rust}");
    let cpy = f.cairn(&["check", "--json", "--interpreter", "cpython", file.to_str().unwrap()]).json().to_string();
    assert!(!cpy.contains("socket") && cpy.contains("read_file"), "{cpy}");
    std::fs::write(&file, "# cairn: interpreter=cpython\nimport socket\nx = (\n").unwrap();
    let header = f.cairn(&["check", "--json", file.to_str().unwrap()]).json().to_string();
    assert!(!header.contains("socket") && header.contains("syntax error"), "{header}");

    let g = fixture(&format!("{CPYTHON}\npython = \"/nonexistent/python3\""));
    let s = g.run_inline("x = 1\n");
    assert_eq!(s.state, State::Errored);
    assert!(s.error.as_deref().unwrap_or("").contains("/nonexistent/python3"), "{:?}", s.error);
}

/// The project's escape suite (and the shared one when present) on CPython: only the OS
/// boundary stands, as no policy check applies to CPython.
#[test]
fn escape_suite_on_cpython() {
    let shared = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/escapes");
    let ours = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hostile");
    let mut scripts = crate::sandbox::scripts_in(&shared);
    scripts.extend(crate::sandbox::scripts_in(&ours));
    let report: Vec<String> = scripts.iter().map(|s| crate::sandbox::run_hostile_with(s, true, CPYTHON)).collect();
    eprintln!("{}", report.join("\n"));
    let _ = std::fs::remove_file("/tmp/cairn-secret.txt");
}

#[test]
fn cpython_behaves_as_cpython_where_rustpython_differs() {
    let f = fixture(CPYTHON);
    // The issue's silent difference: a method's col_offset is its indentation.
    let code = "import ast, sys\ntree = ast.parse('class A:\\n    def m(self):\\n        pass\\n')\n[tree.body[0].body[0].col_offset, sys.argv, format(1234.5, ',.1f')]\n";
    let s = f.run_ok(code);
    assert_eq!(s.result.clone().unwrap(), serde_json::json!([4, ["task.pym"], "1,234.5"]));
    assert_eq!(f.run_ok("x = 1\nexit()\n").state, State::Reviewing);
    let s = f.run_inline("quit(3)\n");
    assert_eq!(s.error_kind.map(|k| k.as_str()), Some("exception"), "{:?}", s.error);
}

#[test]
fn plain_io_sees_what_the_externals_wrote_and_keeps_it() {
    let f = fixture(CPYTHON);
    let code = r#"
write_file("a.txt", "one\n")
with open("a.txt", "a") as fh:
    fh.write("two\n")
edit_file("b.txt", [{"old_text": "beta", "new_text": "BETA"}])
b = open("b.txt").read()
delete_file("c.txt")
import os
[b, os.path.exists("c.txt")]
"#;
    let s = f.run_ok(code);
    assert_eq!(s.result.clone().unwrap(), serde_json::json!(["BETA\n", false]));
    f.cairn(&["accept", &s.id]).ok();
    assert_eq!(f.read_str("a.txt").as_deref(), Some("one\ntwo\n"));
    assert_eq!(f.read_str("b.txt").as_deref(), Some("BETA\n"));
    assert_eq!(f.read_str("c.txt"), None);
}

/// What would kill CPython (issue 47) ends as the Python error CPython has for it: every shape
/// of deep recursion past a limit set sky-high (and past a configured limit the stack cannot
/// hold), code objects made by hand, and, where no error exists (`ctypes`), a crash named with
/// the signal and the script's line. Never a hang; the next run works.
#[test]
fn a_dying_cpython_ends_as_a_python_error_or_a_named_crash() {
    let f = fixture(&format!("{CPYTHON}\nmax_recursion = 10000000\ntimeout_seconds = 30"));
    for (name, script, _) in crate::recursion::shapes() {
        let s = f.run_inline(&format!("import sys\nsys.setrecursionlimit(10**9)\n{script}"));
        let (kind, error) = (s.error_kind.map(|k| k.as_str().to_string()).unwrap_or_default(), s.error.clone().unwrap_or_default());
        assert_eq!(s.state, State::Errored, "{name}: {:?}", s.result);
        assert!(matches!(kind.as_str(), "recursion" | "exception" | "syntax" | "check" | "memory"), "{name}: ended as {kind}: {error}");
        let last = error.trim_end().lines().last().unwrap_or("");
        assert!(last.to_lowercase().contains("error"), "{name}: no Python error: {error}");
    }
    let limit = f.run_ok("import sys\nsys.setrecursionlimit(10**9)\nsys.getrecursionlimit()\n").result.unwrap();
    assert!(limit.as_u64().is_some_and(|l| (1000..10_000_000).contains(&l)), "capped by the stack: {limit}");

    let made = r#"
import marshal, types
c = (lambda: 0).__code__
renamed = types.FunctionType(c.replace(co_name="renamed"), {})
clone = types.FunctionType(marshal.loads(marshal.dumps(c)), {})
caught = []
for bad in (dict(co_code=bytes([255, 0, 83, 0])), dict(co_consts=()), dict(co_stacksize=0), dict(co_code=c.co_code[::-1])):
    try:
        types.FunctionType(c.replace(**bad), {})()
        caught.append("ran")
    except ValueError:
        caught.append("ValueError")
[renamed(), renamed.__code__.co_name, clone(), caught]
"#;
    assert_eq!(f.run_ok(made).result.unwrap(), serde_json::json!([0, "renamed", 0, ["ValueError", "ValueError", "ValueError", "ValueError"]]));
    let s = f.run_inline("import types\nc = (lambda: 0).__code__.replace(co_consts=())\nexec(c)\n");
    assert_eq!(s.error_kind.map(|k| k.as_str()), Some("exception"), "{:?}", s.error);
    assert!(s.error.as_deref().unwrap_or("").contains("ValueError: code object '<lambda>' was made by hand"), "{:?}", s.error);

    let s = f.run_inline("import ctypes\nctypes.string_at(0)\n");
    assert_eq!(s.error_kind.map(|k| k.as_str()), Some("crash"), "{:?}", s.error);
    let e = s.error.unwrap_or_default();
    assert!(e.contains("the interpreter crashed (signal 11: SIGSEGV") && e.contains("task.pym, line 2 in <module>"), "{e}");
    assert_eq!(f.run_ok("write_file('after.txt', 'ok')\n1 + 1\n").result, Some(serde_json::json!(2)));
}
