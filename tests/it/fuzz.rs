//! No crash ever reaches the user: 10,000 snippets generated from a small Python grammar
//! (builtins, operators, methods, slices, comprehensions, f-strings over edge values: huge
//! and negative ints, NaN, surrogate-free non-ASCII text, bytes, empty containers) run in the
//! real sandbox child, 250 per script through `exec`. A script that does not end `reviewing`
//! is split in halves until the snippet is found; a snippet may end its run with a Python
//! error, `memory`, `timeout`, `recursion` or `internal` (a caught interpreter panic), never
//! with `crash` (the child killed by a signal: an abort or a stack overflow).

use crate::support::*;

/// xorshift64*: the same snippets on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[(self.next() % xs.len() as u64) as usize]
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const ATOMS: &[&str] = &[
    "0", "1", "-1", "7", "255", "2**31", "2**63", "-2**63", "10**20", "0.0", "-0.0", "-0.5", "1.5", "1e308", "float('nan')",
    "float('inf')", "''", "'a'", "'abc'", "'\\u00e4\\u20ac\\U0001d11e'", "'\\x00'", "' x '", "b''", "b'ab\\xff'", "None", "True",
    "[]", "[1, 2]", "[[1], 'x']", "()", "(1,)", "{}", "{'a': 1}", "{1, 2}", "range(5)", "3+4j", "bytearray(b'xy')",
];
/// Sizes, widths, exponents and shifts: small, so a snippet cannot ask for gigabytes or
/// hours (those are the run's limits' business, tested elsewhere).
const SMALL: &[&str] = &["0", "1", "2", "3", "-1", "5", "-3"];
const BUILTINS1: &[&str] = &[
    "len", "str", "repr", "int", "float", "abs", "bool", "list", "tuple", "set", "sorted", "reversed", "min", "max", "sum",
    "hash", "chr", "ord", "hex", "bin", "oct", "round", "iter", "enumerate", "type", "dict", "bytes", "frozenset", "ascii",
    "callable", "memoryview", "complex", "any", "all", "vars", "dir",
];
const BUILTINS2: &[&str] = &["divmod", "isinstance", "zip", "min", "max", "round", "getattr", "hasattr", "issubclass", "map", "filter", "format"];
const METHODS: &[&str] = &[
    "upper()", "split()", "split(',')", "strip()", "encode()", "decode()", "copy()", "pop()", "keys()", "items()", "bit_length()",
    "hex()", "conjugate()", "is_integer()", "title()", "swapcase()", "casefold()", "isdigit()", "splitlines()", "sort()",
    "reverse()", "clear()", "__len__()", "__neg__()", "__index__()", "__bool__()", "real", "imag", "__class__", "__doc__",
];
const METHODS_ARG: &[&str] = &[
    "join", "replace", "find", "index", "count", "startswith", "endswith", "partition", "rpartition", "center", "zfill", "ljust",
    "expandtabs", "append", "insert", "remove", "get", "setdefault", "update", "union", "difference", "__getitem__",
    "__contains__", "__add__", "__mul__", "__mod__", "__eq__", "__lt__", "to_bytes", "fromkeys", "extend", "rjust", "split",
];
const OPS: &[&str] = &["+", "-", "*", "/", "//", "%", "&", "|", "^", "<", "<=", "==", "!=", ">", "in", "not in", "is", "and", "or", "@"];
const SPECS: &[&str] = &["", ">5", "<3", "^7", "+", ".2f", "x", "08.3", "e", "%", ",", "_", "c", "s", "r", "#o"];

fn expr(r: &mut Rng, depth: u32) -> String {
    if depth == 0 {
        return r.pick(ATOMS).to_string();
    }
    let d = depth - 1;
    match r.below(14) {
        0 | 1 => r.pick(ATOMS).to_string(),
        2 => format!("({} {} {})", expr(r, d), r.pick(OPS), expr(r, d)),
        3 => format!("({} ** {})", expr(r, d), r.pick(SMALL)),
        4 => format!("({} {} {})", expr(r, d), if r.below(2) == 0 { "<<" } else { ">>" }, r.pick(SMALL)),
        5 => format!("{}({})", r.pick(BUILTINS1), expr(r, d)),
        6 => format!("{}({}, {})", r.pick(BUILTINS2), expr(r, d), expr(r, d)),
        7 => format!("({}).{}", expr(r, d), r.pick(METHODS)),
        8 => {
            let m = r.pick(METHODS_ARG);
            let arg = if matches!(m, "center" | "zfill" | "ljust" | "rjust" | "expandtabs" | "to_bytes" | "__mul__") { r.pick(SMALL).to_string() } else { expr(r, d) };
            format!("({}).{m}({arg})", expr(r, d))
        }
        9 => format!("({})[{}]", expr(r, d), expr(r, d)),
        10 => format!("({})[{}:{}:{}]", expr(r, d), r.pick(SMALL), expr(r, d), r.pick(&["1", "-1", "2", "None", "-2"])),
        11 => format!("[x for x in {} if x]", r.pick(&["[1, 0, 2]", "'ab'", "range(4)", "{1: 2}", "b'xy'", "()"])),
        12 => format!("f'{{{}!r:{}}}'", expr(r, d), r.pick(&["", ">6", "^4"])),
        _ => format!("({} if {} else {})", expr(r, d), expr(r, d), expr(r, d)),
    }
}

fn snippet(r: &mut Rng) -> String {
    let depth = 1 + r.below(3) as u32;
    let e = expr(r, depth);
    match r.below(5) {
        0 => format!("v = {e}\nv = format(v, '{}')", r.pick(SPECS)),
        1 => format!("v = {e}\nh = hash(v) if v.__hash__ else 0\nr = repr(v)"),
        2 => format!("v = {e}\ns = sorted([v, {e}], key=repr)"),
        _ => format!("v = {e}"),
    }
}

fn script(batch: &[String]) -> String {
    let list = serde_json::to_string(batch).unwrap();
    format!("SN = {list}\nn = 0\nfor s in SN:\n    try:\n        exec(s, {{}})\n    except BaseException:\n        pass\n    n += 1\nn\n")
}

/// Runs `batch`; halves it until each snippet that ends a run is alone. Records the crashes
/// and returns how many snippets ran to their end (raising or not).
fn run(f: &Fixture, batch: &[String], crashes: &mut Vec<(String, String)>) -> u64 {
    let s = f.run_inline(&script(batch));
    let Some(kind) = s.error_kind.map(|k| k.as_str().to_string()) else {
        return s.result.and_then(|r| r.as_u64()).unwrap_or(0);
    };
    if batch.len() == 1 {
        if kind == "crash" {
            crashes.push((batch[0].clone(), s.error.unwrap_or_default()));
        }
        return 0;
    }
    let (a, b) = batch.split_at(batch.len() / 2);
    run(f, a, crashes) + run(f, b, crashes)
}

#[test]
fn ten_thousand_generated_snippets_never_crash_the_sandbox() {
    let f = Fixture::new();
    f.init();
    f.home_config("[sandbox]\ntimeout_seconds = 20\n");
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    let snippets: Vec<String> = (0..10_000).map(|_| snippet(&mut r)).collect();
    let mut crashes = Vec::new();
    let ran: u64 = snippets.chunks(250).map(|batch| run(&f, batch, &mut crashes)).sum();
    assert!(crashes.is_empty(), "{} snippet(s) crashed the sandbox child:\n{crashes:#?}", crashes.len());
    // Not vacuous: nearly every snippet ran in the child (a few end their run: memory, time).
    assert!(ran >= 9_900, "only {ran} of 10,000 snippets ran");
}
