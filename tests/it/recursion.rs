//! Deep recursion never crashes the sandbox child (issue 38, item 3): every shape of it ends
//! the run as a Python error (`RecursionError`, or CPython's `SyntaxError` for sources nested
//! too deeply), never as `crash` (the child killed by a signal: a stack overflow's abort), and
//! the next run in the same project works. The script can catch the `RecursionError`.

use crate::support::*;

/// A list nested `n` deep, built without recursion.
fn nested(n: u32) -> String {
    format!("x = []\nfor _ in range({n}):\n    x = [x]\ny = []\nfor _ in range({n}):\n    y = [y]\n")
}

/// (name, script, what the error must name).
pub(crate) fn shapes() -> Vec<(&'static str, String, &'static str)> {
    let deep = nested(100_000);
    let parens = format!("x = {}1{}\n", "(".repeat(10_000), ")".repeat(10_000));
    vec![
        ("function", "def f(n):\n    return f(n + 1)\nf(0)\n".into(), "RecursionError"),
        ("mutual", "def a(n):\n    return b(n)\ndef b(n):\n    return a(n)\na(0)\n".into(), "RecursionError"),
        ("__repr__", "class A:\n    def __repr__(self):\n        return repr(self)\nrepr(A())\n".into(), "RecursionError"),
        ("__str__", "class A:\n    def __str__(self):\n        return str(self)\nprint(A())\n".into(), "RecursionError"),
        ("__eq__", "class A:\n    def __eq__(self, o):\n        return self == o\nA() == A()\n".into(), "RecursionError"),
        ("__hash__", "class A:\n    def __hash__(self):\n        return hash(self)\n{A()}\n".into(), "RecursionError"),
        ("__getattr__", "class A:\n    def __getattr__(self, n):\n        return self.other\nA().x\n".into(), "RecursionError"),
        ("property", "class A:\n    @property\n    def p(self):\n        return self.p\nA().p\n".into(), "RecursionError"),
        ("generator", "def g():\n    yield from g()\nlist(g())\n".into(), "RecursionError"),
        ("sorted key", "def k(v):\n    return sorted([1, 2], key=k)\nk(0)\n".into(), "RecursionError"),
        ("nested repr", format!("{deep}repr(x)\n"), "RecursionError"),
        ("nested ==", format!("{deep}x == y\n"), "RecursionError"),
        ("nested json", format!("import json\n{deep}json.dumps(x)\n"), "RecursionError"),
        ("nested deepcopy", format!("import copy\n{deep}copy.deepcopy(x)\n"), "RecursionError"),
        ("nested pickle", format!("import pickle\n{deep}pickle.dumps(x)\n"), "RecursionError"),
        ("nested source", parens, "too many nested parentheses"),
        ("eval parens", "eval('(' * 10000 + '1' + ')' * 10000)\n".into(), "SyntaxError: too many nested parentheses"),
        ("eval unary", "eval('-' * 1000000 + '1')\n".into(), "RecursionError"),
        ("exec blocks", "exec(''.join(' ' * i + 'if 1:\\n' for i in range(150)) + ' ' * 150 + 'pass\\n')\n".into(), "IndentationError"),
        ("ast.parse", "import ast\nast.parse('1' + ' + 1' * 100000)\n".into(), "RecursionError"),
        ("compile lambda", "compile('lambda: ' * 100000 + '1', 'x', 'eval')\n".into(), "RecursionError"),
    ]
}

/// Runs `script`: it must end with an error naming `names`, not a crash; then a plain run works.
fn ends_as_python_error(f: &Fixture, name: &str, script: &str, names: &str) {
    let s = f.run_inline(script);
    let kind = s.error_kind.map(|k| k.as_str().to_string()).unwrap_or_default();
    let error = s.error.clone().unwrap_or_default();
    assert_ne!(kind, "crash", "{name}: the child crashed: {error}");
    assert_eq!(s.state.as_str(), "errored", "{name}: expected an error, got {:?} {:?}", s.state, s.result);
    assert!(matches!(kind.as_str(), "recursion" | "exception" | "syntax" | "check"), "{name}: ended as {kind}: {error}");
    let tail: String = error.chars().rev().take(400).collect::<Vec<_>>().into_iter().rev().collect();
    assert!(tail.contains(names), "{name}: the error does not name {names}: …{tail}");
    let next = f.run_ok("write_file('after.txt', 'ok')\n1 + 1\n");
    assert_eq!(next.result, Some(serde_json::json!(2)), "{name}: the next run");
}

#[test]
fn every_shape_of_deep_recursion_ends_as_a_python_error() {
    let f = Fixture::new();
    f.init();
    f.home_config("[sandbox]\ntimeout_seconds = 30\n");
    for (name, script, names) in shapes() {
        ends_as_python_error(&f, name, &script, names);
    }
}

#[test]
fn recursion_error_is_catchable_and_the_limit_is_capped() {
    let f = Fixture::new();
    f.init();
    // Far more frames than the stack holds: the interpreter's count still fires first.
    f.home_config("[sandbox]\nmax_recursion = 10000000\n");
    let s = f.run_ok(
        "import sys\nclass A:\n    def __repr__(self):\n        return repr(self)\ntry:\n    repr(A())\n    r = 'no'\nexcept RecursionError as e:\n    r = str(e)\n[r, sys.getrecursionlimit()]\n",
    );
    let r = s.result.unwrap();
    assert!(r[0].as_str().unwrap().contains("maximum recursion depth exceeded"), "{r}");
    assert!(r[1].as_u64().unwrap() < 10_000_000, "{r}");
    ends_as_python_error(&f, "capped function", "def f(n):\n    return f(n + 1)\nf(0)\n", "RecursionError");
}

#[test]
fn native_recursion_past_the_stack_ends_as_recursion_not_a_signal() {
    let f = Fixture::new();
    f.init();
    // A tuple nested 4 million deep: hashing it recurses natively, uncounted, past the
    // interpreter thread's stack; the backstop reports it.
    f.home_config("[sandbox]\nmax_memory_mb = 3000\ntimeout_seconds = 60\n");
    let s = f.run_inline("x = ()\nfor _ in range(4000000):\n    x = (x,)\nhash(x)\n");
    assert_eq!(s.error_kind.map(|k| k.as_str().to_string()).as_deref(), Some("recursion"), "{:?}", s.error);
    assert!(s.error.unwrap_or_default().contains("RecursionError"));
    f.run_ok("1\n");
}
