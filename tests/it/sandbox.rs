//! SPEC §1.5 and §4 against a determined attacker: the shared escape suite and our own
//! hostile variants fail harmlessly; every limit ends the run with its kind near its bound;
//! the real language still works; the child is confined (seccomp, Landlock, empty env).

use crate::support::*;
use cairn::lifecycle::State;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const SECRET: &str = "/tmp/cairn-secret.txt";
const PWNED: &str = "/tmp/cairn-pwned";
static ESCAPES: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// `[sandbox]` settings named in a script's header comments (`[sandbox] key = N`).
fn header_limits(source: &str) -> Vec<(String, u64)> {
    let re = regex::Regex::new(r"\[sandbox\]\s+(\w+)\s*=\s*(\d+)").unwrap();
    source.lines().take_while(|l| l.starts_with('#')).flat_map(|l| re.captures_iter(l).map(|c| (c[1].to_string(), c[2].parse().unwrap())).collect::<Vec<_>>()).collect()
}

pub(crate) fn scripts_in(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir).map(|rd| rd.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|e| e == "pym")).collect()).unwrap_or_default();
    v.sort();
    v
}

/// Runs one hostile script as SPEC's escapes/README.md defines and checks every condition.
/// `syntax_layer: false` runs it with the policy check and the runtime guards switched off.
fn run_hostile(script: &Path, syntax_layer: bool) -> String {
    run_hostile_with(script, syntax_layer, "")
}

/// [`run_hostile`] with more `[sandbox]` settings (`interpreter = "cpython"`: tests/it/cpython.rs).
pub(crate) fn run_hostile_with(script: &Path, syntax_layer: bool, sandbox: &str) -> String {
    // The suites share SECRET and PWNED: one hostile run at a time, across tests.
    let _one = ESCAPES.lock().unwrap_or_else(|e| e.into_inner());
    let name = script.file_name().unwrap().to_string_lossy().to_string();
    let source = std::fs::read_to_string(script).unwrap();
    let f = Fixture::with_files(&[("src/app.py", "x = 1\n")]);
    std::os::unix::fs::symlink("/tmp", f.root.join("outside")).unwrap();
    let limits = header_limits(&source);
    let mut toml = format!("[sandbox]\n{sandbox}\n");
    for (k, v) in &limits {
        toml.push_str(&format!("{k} = {v}\n"));
    }
    f.home_config(&toml);
    f.init();
    let token = format!("secret-{:016x}", rand::random::<u64>());
    std::fs::write(SECRET, &token).unwrap();
    let _ = std::fs::remove_file(PWNED);
    let tree = f.tree();
    let stable = f.stable_rows();
    let timeout = limits.iter().find(|(k, _)| k == "timeout_seconds").map_or(60, |l| l.1);

    let t = Instant::now();
    let mut cmd = f.cmd();
    if !syntax_layer {
        cmd.env("CAIRN_TEST_NO_SYNTAX_LAYER", "1");
    }
    let r = Run::from(cmd.args(["run", script.to_str().unwrap()]).output().unwrap());
    let elapsed = t.elapsed();
    let id = r.stdout.trim().to_string();
    assert_eq!(id.len(), 6, "{name}: no agent id: {r:?}");

    assert!(!Path::new(PWNED).exists(), "{name}: created {PWNED}");
    assert_eq!(f.tree(), tree, "{name}: the working tree changed");
    assert_eq!(f.stable_rows(), stable, "{name}: stable.db changed");
    let st = f.cairn(&["status", &id, "--json"]).ok().json();
    let state = st["state"].as_str().unwrap().to_string();
    // The run ended (the command returned); no wall-clock bound here (a loaded machine may
    // take longer to start and clean up), but a run that outlived its budget by its own clock
    // must have been ended by it.
    if run_time_if_ran(&f.project(), &id).is_some_and(|t| t > Duration::from_secs(timeout)) {
        assert_eq!(st["error_kind"], "timeout", "{name}: ran past its timeout without the timeout's verdict ({elapsed:?}): {st}");
    }
    assert!(state == "errored" || state == "reviewing", "{name}: state {state}");
    if state == "errored" {
        assert!(!st["error_kind"].as_str().unwrap_or("").is_empty(), "{name}: errored without a kind");
    }
    // The secret is nowhere: result, error, submission, log, overlay (database and WAL).
    let mut haystacks = vec![st.to_string()];
    if let Ok(log) = std::fs::read(f.root.join(format!(".grail/agents/{id}/run.log"))) {
        haystacks.push(String::from_utf8_lossy(&log).into_owned());
    }
    for p in [format!(".agentfs/agent-{id}.db"), format!(".agentfs/agent-{id}.db-wal")] {
        if let Ok(bytes) = std::fs::read(f.root.join(p)) {
            haystacks.push(String::from_utf8_lossy(&bytes).into_owned());
        }
    }
    for h in &haystacks {
        assert!(!h.contains(&token), "{name}: the secret leaked");
    }
    if state == "reviewing" {
        // Accepting must not write through the symlink or .. either.
        let _ = f.cairn(&["accept", &id]);
        assert!(!Path::new(PWNED).exists(), "{name}: accept created {PWNED}");
        assert!(!f.root.join("../cairn-pwned").exists());
    }
    format!("{name}: {state} {}", st["error_kind"].as_str().unwrap_or(""))
}

/// One test for the whole suite, run twice: as shipped, and with the syntax layer (policy check
/// and runtime guards) switched off, where only the OS boundary stands. The escapes share
/// /tmp/cairn-secret.txt and /tmp/cairn-pwned, so they run one after another.
#[test]
fn escape_suite_and_hostile_variants_fail_harmlessly() {
    let shared = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/escapes");
    let ours = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hostile");
    let mut scripts = scripts_in(&shared);
    if scripts.is_empty() {
        eprintln!("note: ../shared/escapes not present; running the project's own hostile scripts only");
    }
    scripts.extend(scripts_in(&ours));
    assert!(scripts.len() >= 37, "{} scripts", scripts.len());
    let mut report = Vec::new();
    for syntax_layer in [true, false] {
        for s in &scripts {
            report.push(format!("{}{}", if syntax_layer { "" } else { "[no syntax layer] " }, run_hostile(s, syntax_layer)));
        }
    }
    eprintln!("{}", report.join("\n"));
    let _ = std::fs::remove_file(SECRET);
}

fn limit_case(config: &str, code: &str, kind: &str, bound: Duration) {
    let f = Fixture::with_files(&[("a.txt", "a")]);
    f.home_config(&format!("[sandbox]\n{config}\n"));
    let s = f.run_inline(code);
    let elapsed = run_time(&f.project(), &s.id);
    assert_eq!(s.state, State::Errored, "{code}: {:?}", s.result);
    assert_eq!(s.error_kind.map(|k| k.as_str()), Some(kind), "{code}: {:?}", s.error);
    // The verdict is the budget's own: never before the bound (no upper wall-clock bound: a
    // loaded machine may take longer to stop and clean up).
    if kind == "timeout" {
        assert!(elapsed >= bound, "{code}: timed out after {elapsed:?}, before its bound {bound:?}");
    }
    let status = f.cairn(&["status", &s.id]).ok();
    assert!(status.stdout.contains(kind));
}

#[test]
fn limit_timeout_even_when_caught() {
    limit_case("timeout_seconds = 2", "while True:\n    try:\n        pass\n    except BaseException:\n        pass\n", "timeout", Duration::from_secs(2));
}

#[test]
fn limit_timeout_in_a_long_builtin() {
    // Modular exponentiation with a huge exponent: one builtin call, CPU-bound, little memory.
    limit_case("timeout_seconds = 2", "x = pow(7, 10 ** 100000, 10 ** 20000 + 1)\n", "timeout", Duration::from_secs(2));
}

#[test]
fn limit_memory_even_when_caught() {
    limit_case(
        "max_memory_mb = 64",
        "chunks = []\nwhile True:\n    try:\n        chunks.append('x' * (8 * 1024 * 1024))\n    except BaseException:\n        pass\n",
        "memory",
        Duration::from_secs(2),
    );
}

#[test]
fn limit_recursion() {
    limit_case("max_recursion = 200", "def down(n):\n    return down(n + 1) + 1\ndown(0)\n", "recursion", Duration::from_secs(2));
}

#[test]
fn limit_log_bytes() {
    limit_case("max_log_bytes = 4096", "while True:\n    log('y' * 1000)\n", "limit", Duration::from_secs(2));
}

#[test]
fn limit_write_bytes() {
    limit_case("max_write_bytes = 1000000", "i = 0\nwhile True:\n    write_file('junk/%d.txt' % i, 'z' * 100000)\n    i += 1\n", "limit", Duration::from_secs(2));
}

#[test]
fn limit_files_written() {
    limit_case("max_files_written = 5", "for i in range(100):\n    write_file('f%d.txt' % i, 'x')\n", "limit", Duration::from_secs(2));
}

#[test]
fn python_that_agents_need_works() {
    let f = Fixture::with_files(&[("data.json", "{\"items\": [3, 1, 2], \"name\": \"cairn\"}")]);
    let code = r#"
import json
import re
from typing import List, Optional

class Shape:
    count = 0
    def __init__(self, name):
        self.name = name
        Shape.count += 1
    @property
    def label(self):
        return self.name.upper()
    @staticmethod
    def kind():
        return "shape"
    @classmethod
    def make(cls, name):
        return cls(name)
    def area(self):
        raise NotImplementedError
    def __repr__(self):
        return "Shape(%s)" % self.name

class Square(Shape):
    def __init__(self, side):
        super().__init__("square")
        self.side = side
    def area(self):
        return self.side ** 2

def gen(n):
    for i in range(n):
        if i % 2 == 0:
            yield i

class Ctx:
    def __init__(self):
        self.events = []
    def __enter__(self):
        self.events.append("enter")
        return self
    def __exit__(self, *exc):
        self.events.append("exit")
        return False

def classify(v):
    match v:
        case {"kind": "point", "x": x, "y": y}:
            return f"point {x},{y}"
        case [first, *rest]:
            return f"list of {1 + len(rest)} starting {first}"
        case int(n) if n > 10:
            return "big"
        case _:
            return "other"

finally_ran = []
try:
    try:
        1 / 0
    finally:
        finally_ran.append(True)
except ZeroDivisionError as e:
    caught = type(e).__name__

with Ctx() as c:
    pass

data = json.loads(await read_file("data.json"))
words = "the quick brown fox jumps".split()
result = {
    "area": Square(3).area(),
    "label": Square.make("sq").label,
    "kind": Shape.kind(),
    "count": Shape.count,
    "repr": repr(Shape("t")),
    "gen": list(gen(7)),
    "comp": {w: len(w) for w in words if len(w) > 3},
    "setcomp": sorted({len(w) for w in words}),
    "sorted": sorted(words, key=lambda w: (-len(w), w)),
    "fstring": f"{3.14159:.2f}|{'x':>3}|{42:05d}",
    "percent": "%s has %d items (%.1f%%)" % (data["name"], len(data["items"]), 50.0),
    "str": ["a,b".split(","), "  pad ".strip(), "abc".replace("b", "B"), "x".join("ab"), "Hello".lower(), "a b".title(), "abc".startswith("ab"), "abc".find("c")],
    "list": [sorted(data["items"]), data["items"][::-1], [1, 2] + [3], [0] * 3],
    "dict": [sorted({"b": 1, "a": 2}.items()), {"a": 1}.get("z", "dflt"), list({"a": 1, **{"b": 2}}.keys())],
    "set": sorted({1, 2} | {3}), 
    "match": [classify({"kind": "point", "x": 1, "y": 2}), classify([5, 6, 7]), classify(11), classify("s")],
    "exc": [caught, finally_ran],
    "with": c.events,
    "json": json.dumps({"k": [1, None, True]}),
    "re": [re.findall(r"\b\w{5}\b", "the quick brown fox jumps"), re.sub(r"(\w+)@(\w+)", r"\2 at \1", "me@home"), bool(re.match(r"\d+$", "123"))],
    "any_all": [any(x > 2 for x in data["items"]), all(isinstance(x, int) for x in data["items"])],
    "enumerate_zip": list(zip(range(3), "abc")) + list(enumerate("xy", 1)),
    "divmod": [divmod(17, 5), 2 ** 100 % 7, round(3.14159, 2), abs(-3), min(4, 2, 8), max("ab", "b")],
}
result
"#;
    let s = f.run_ok(code);
    let r = s.result.unwrap();
    let want = serde_json::json!({
        "area": 9, "label": "SQUARE", "kind": "shape", "count": 2, "repr": "Shape(t)",
        "gen": [0, 2, 4, 6],
        "comp": {"quick": 5, "brown": 5, "jumps": 5},
        "setcomp": [3, 5],
        "sorted": ["brown", "jumps", "quick", "fox", "the"],
        "fstring": "3.14|  x|00042",
        "percent": "cairn has 3 items (50.0%)",
        "str": [["a", "b"], "pad", "aBc", "axb", "hello", "A B", true, 2],
        "list": [[1, 2, 3], [2, 1, 3], [1, 2, 3], [0, 0, 0]],
        "dict": [[["a", 2], ["b", 1]], "dflt", ["a", "b"]],
        "set": [1, 2, 3],
        "match": ["point 1,2", "list of 3 starting 5", "big", "other"],
        "exc": ["ZeroDivisionError", [true]],
        "with": ["enter", "exit"],
        "json": "{\"k\": [1, null, true]}",
        "re": [["quick", "brown", "jumps"], "home at me", true],
        "any_all": [true, true],
        "enumerate_zip": [[0, "a"], [1, "b"], [2, "c"], [1, "x"], [2, "y"]],
        "divmod": [[3, 2], 2, 3.14, 3, 2, "b"],
    });
    for (k, v) in want.as_object().unwrap() {
        assert_eq!(&r[k], v, "feature {k}");
    }
}

/// Idioms LLM-written code uses all the time, which the old syntax policy refused: they pass
/// the check and run in the real child.
#[test]
fn relaxed_idioms_run_in_the_real_child() {
    let f = Fixture::with_files(&[("a.txt", "a")]);
    let code = r#"
from __future__ import annotations
from collections import namedtuple

__all__ = ["Cache"]

class Cache:
    """A cache."""
    __slots__ = ("_cache", "__secret")
    def __init__(self):
        self._cache = {}
        self.__secret = 42
    def secret(self):
        return self.__secret

class Singleton:
    _instance = None
    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

class Plain:
    x: int = 1
    def __init__(self):
        self.a = 1
        self.b = "two"

def annotated(x: int) -> str:
    return str(x)

try:
    try:
        raise KeyError("inner")
    except KeyError as inner:
        raise ValueError("outer") from inner
except ValueError as e:
    chain = [type(e.__cause__).__name__, type(e.__context__).__name__]

Point = namedtuple("Point", "x y")
p = Point(1, 2)
c = Cache()
result = {
    "private": c._cache,
    "mangled": c.secret(),
    "class_name": c.__class__.__name__,
    "slots": list(Cache.__slots__),
    "all": __all__,
    "doc": Cache.__doc__,
    "singleton": Singleton() is Singleton(),
    "chain": chain,
    "annotations": sorted(annotated.__annotations__),
    "class_annotations": list(Plain.__annotations__),
    "dict": Plain().__dict__,
    "vars": vars(Plain()),
    "asdict": p._asdict(),
    "replace": list(p._replace(y=5)),
    "repr": repr(p),
}
result
"#;
    let s = f.run_ok(code);
    let r = s.result.unwrap();
    let want = serde_json::json!({
        "private": {}, "mangled": 42, "class_name": "Cache", "slots": ["_cache", "__secret"], "all": ["Cache"], "doc": "A cache.",
        "singleton": true, "chain": ["KeyError", "KeyError"], "annotations": ["return", "x"], "class_annotations": ["x"],
        "dict": {"a": 1, "b": "two"}, "vars": {"a": 1, "b": "two"}, "asdict": {"x": 1, "y": 2}, "replace": [1, 5], "repr": "Point(x=1, y=2)",
    });
    for (k, v) in want.as_object().unwrap() {
        assert_eq!(&r[k], v, "idiom {k}");
    }
}

/// The boundary under Python: a child confined by the run's own code path tries each
/// dangerous syscall against a bystander process and a file outside; the filter must deny
/// every one (EPERM from seccomp), the bystander must live, the file must be unchanged.
///
/// Both ways a child starts: a process of its own (`cairn run` when no zygote can run) and a
/// fork of the zygote (every run of `cairn run`, `cairn up` and the Neovim host).
#[test]
fn child_syscall_probe_is_denied() {
    syscall_probe_is_denied(cairn::sandbox::spawn::selftest);
}

#[test]
fn zygote_child_syscall_probe_is_denied() {
    syscall_probe_is_denied(cairn::sandbox::zygote::selftest);
}

type SelfTestFn = fn(&Path, &cairn::sandbox::child::probe::Target) -> cairn::error::Result<cairn::sandbox::child::probe::SelfTest>;

fn syscall_probe_is_denied(selftest: SelfTestFn) {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("outside.txt");
    std::fs::write(&file, "untouched").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let before = std::fs::metadata(&file).unwrap();
    let mut bystander = std::process::Command::new("sleep").arg("600").spawn().unwrap();
    let target = cairn::sandbox::child::probe::Target { pid: bystander.id() as i32, path: file.to_string_lossy().into_owned() };
    let report = selftest(&exe(), &target).unwrap();
    let alive = bystander.try_wait().unwrap().is_none();
    let _ = bystander.kill();
    let _ = bystander.wait();
    eprintln!("{report:#?}");

    assert!(alive, "the bystander process was killed from the sandbox");
    let after = std::fs::metadata(&file).unwrap();
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "untouched");
    assert_eq!((after.mode(), after.uid(), after.mtime(), after.mtime_nsec()), (before.mode(), before.uid(), before.mtime(), before.mtime_nsec()), "the outside file changed");
    assert!(report.applied.seccomp, "seccomp filter not installed");
    assert!(!report.applied.landlock.starts_with("failed"), "{}", report.applied.landlock);
    let mut required = vec![
        "kill", "tgkill", "pidfd_send_signal", "fchmodat", "fchmodat2", "utimensat", "setxattr", "prlimit64", "setpriority", "sethostname", "shmget",
        "msgget", "semget", "ptrace", "mount", "bpf", "perf_event_open", "io_uring_setup", "userfaultfd", "keyctl", "personality", "openat", "socket",
        "execve", "clone", "clone3", "write to fd 3", "read from fd 3",
    ];
    if cfg!(target_arch = "x86_64") {
        required.extend(["open", "chmod", "fork"]);
    }
    for name in required {
        assert_eq!(report.outcome(name), Some("EPERM"), "{name} was not denied by the filter");
    }
    assert!(report.env.is_empty(), "the child saw environment variables: {:?}", report.env);
    assert!(report.fds.iter().all(|&fd| fd <= 3), "unexpected inherited descriptors: {:?}", report.fds);
    if std::fs::metadata("/proc/self").unwrap().uid() == 0 {
        assert_ne!(report.applied.uid, 0, "the child kept uid 0: {}", report.applied.identity);
        assert_ne!(report.applied.gid, 0);
        assert_eq!(report.applied.groups, 0, "supplementary groups kept");
    }
    eprintln!("namespaces: {:?}; missing: {}", report.applied.namespaces, report.applied.namespaces_missing);
}

#[test]
fn orchestrator_and_other_agents_keep_working_during_a_runaway() {
    let f = Fixture::with_files(&[("a.txt", "a")]);
    f.home_config("[orchestrator]\nmax_concurrent_agents = 2\npoll_interval_ms = 20\n[sandbox]\ntimeout_seconds = 8\n");
    let p = f.project();
    let runaway = cairn::orchestrator::queue(&p, "while True:\n    pass\n", Some(cairn::lifecycle::Provider::Inline), cairn::lifecycle::Priority::High).unwrap().id;
    let hog = cairn::orchestrator::queue(&p, "chunks = []\nwhile True:\n    chunks.append('x' * 1000000)\n", Some(cairn::lifecycle::Provider::Inline), cairn::lifecycle::Priority::High).unwrap().id;
    let _up = Up::start(&f);
    let state = |id: &str| p.bin().unwrap().get(id).unwrap().state;
    wait_until(30, "runaway executing", || state(&runaway) == State::Executing);
    let normal = cairn::orchestrator::queue(&p, "write_file('ok.txt', 'ok')", Some(cairn::lifecycle::Provider::Inline), cairn::lifecycle::Priority::Normal).unwrap().id;
    wait_until(30, "normal agent reviewing", || state(&normal) == State::Reviewing);
    assert_eq!(state(&runaway), State::Executing, "the runaway should still be running");
    // The CLI answers meanwhile.
    assert!(f.cairn(&["status", &runaway]).ok().stdout.contains("executing"));
    wait_until(30, "runaway stopped", || state(&runaway) == State::Errored);
    assert_eq!(p.bin().unwrap().get(&runaway).unwrap().error_kind.map(|k| k.as_str()), Some("timeout"));
    wait_until(30, "memory hog stopped", || state(&hog) == State::Errored);
    assert_eq!(p.bin().unwrap().get(&hog).unwrap().error_kind.map(|k| k.as_str()), Some("memory"));
}

/// The pipe is hostile: a child that sends garbage, an endless line, forged error kinds or a
/// flood of arguments ends its run with a bounded, clear outcome. The "child" here is a shell
/// script standing in for a child taken over by native code.
#[test]
fn the_parent_trusts_no_claim_from_the_child() {
    use cairn::lifecycle::ErrorKind;
    use std::os::unix::fs::PermissionsExt;
    let f = Fixture::with_files(&[("a.txt", "a")]);
    f.init();
    let p = f.project();
    let overlay = p.overlay("pipe01").unwrap();
    let ask = |_: &str, _: &str, _: Duration| -> Result<String, String> { Err("none".into()) };
    let on_log = |_: &cairn::events::EventKind| {};
    let big_message = "m".repeat(1 << 20);
    let many_args = format!("{{\"t\":\"call\",\"name\":\"log\",\"args\":[{}],\"kwargs\":{{}}}}", vec!["\"x\""; 100].join(","));
    let cases: Vec<(String, Option<ErrorKind>)> = vec![
        ("echo 'not json at all'".into(), Some(ErrorKind::Crash)),
        ("head -c 70000000 /dev/zero | tr '\\\\0' x".into(), Some(ErrorKind::Limit)),
        (format!("echo '{{\"t\":\"done\",\"result\":null,\"error\":{{\"kind\":\"timeout\",\"message\":\"{big_message}\"}}}}'"), Some(ErrorKind::Crash)),
        (format!("echo '{many_args}'; read reply; echo \"{{\\\"t\\\":\\\"done\\\",\\\"result\\\":$reply,\\\"error\\\":null}}\""), None),
        ("exit 0".into(), Some(ErrorKind::Crash)),
    ];
    for (i, (body, want)) in cases.into_iter().enumerate() {
        let exe = f.home.join(format!("fake-child-{i}"));
        std::fs::write(&exe, format!("#!/bin/sh\nread start\n{body}\n")).unwrap();
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        let view = cairn::view::View::new(&p, &overlay).unwrap();
        let mut host = cairn::externals::Host::new(view, p.config.sandbox.clone(), &ask, None, &on_log);
        let out = cairn::sandbox::runner::run(&exe, None, "x = 1", "t.pym", Default::default(), &mut host).unwrap();
        let kind = out.error.as_ref().map(|e| e.0);
        assert_eq!(kind, want, "case {i}: {:?}", out.error.as_ref().map(|e| e.1.chars().take(200).collect::<String>()));
        if i == 3 {
            assert_eq!(out.result.as_ref().and_then(|r| r["exc"].as_str()), Some("TypeError"), "{:?}", out.result);
        }
        if let Some((_, message)) = &out.error {
            assert!(message.len() < 20_000, "case {i}: a {} byte error message was kept", message.len());
        }
    }
}

/// `json.dumps` escapes non-ASCII by default, as CPython does (`ensure_ascii=True`), and keeps
/// it with `ensure_ascii=False`; a character beyond the BMP becomes a surrogate pair.
#[test]
fn json_dumps_ensures_ascii_by_default() {
    let f = Fixture::with_files(&[("a.txt", "a")]);
    let s = f.run_ok("import json\n[json.dumps(['\\u00e9']), json.dumps(['\\u00e9'], ensure_ascii=False), json.dumps({'k': '\\U0001F600'}), json.loads(json.dumps('\\u00e9\\U0001F600'))]\n");
    assert_eq!(s.result.unwrap(), serde_json::json!(["[\"\\u00e9\"]", "[\"é\"]", "{\"k\": \"\\ud83d\\ude00\"}", "é😀"]));
}
