//! The architecture invariants of ARCHITECTURE.md, checked against the source tree (a tidy
//! test in the manner of rust-analyzer's): what the core may depend on and call, the module
//! graph without cycles, and the size limits. `cargo test --release --test it architecture --
//! --nocapture` also prints the module graph.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.rs` file under `dir`, as (path relative to `dir`, text), sorted.
fn sources(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let rel = p.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
                out.push((rel, std::fs::read_to_string(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// The code of a file without comments and string contents (so a doc comment naming
/// `std::env` is not a use of it).
fn code_only(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i] == b'"' && (i == 0 || b[i - 1] != b'\'') {
            out.push('"');
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' {
                    i += 1;
                } else if b[i] == b'\n' {
                    out.push('\n');
                }
                i += 1;
            }
            out.push('"');
            i += 1;
        } else if b[i] == b'r' && b.get(i + 1) == Some(&b'#') && b.get(i + 2) == Some(&b'"') {
            let end = text[i + 3..].find("\"#").map_or(b.len(), |e| i + 3 + e + 2);
            out.push_str("\"\"");
            out.extend(std::iter::repeat_n('\n', text[i..end].matches('\n').count()));
            i = end;
        } else {
            out.push(b[i] as char);
            i += 1;
        }
    }
    out
}

/// What the core may not do, and the only modules allowed to, with the reason.
const CORE_RULES: &[(&str, &[&str], &str)] = &[
    (r"\bstd::env\b|\buse std::\{[^}]*\benv\b|\benv::(var|vars|var_os|vars_os|args|current_dir|current_exe|temp_dir|home_dir|set_var|remove_var)\b", &["sandbox/child/probe.rs"], "reads the environment (the self-test probe reports the child's own, which must be empty)"),
    (r"\b(println|print|eprintln|eprint|dbg)!", &[], "prints"),
    (r"\bio::(stdout|stderr|stdin)\(", &["sandbox/child/mod.rs", "sandbox/child/probe.rs", "runbox/enter.rs"], "uses the standard streams (the sandbox child's are its protocol pipe; a run's confined side reports a bad spec there)"),
    (r"\bprocess::Command\b|\bCommand::new\(", &["sandbox/spawn.rs", "llm.rs", "runbox/launch.rs", "runbox/unconfined.rs", "jj/cli.rs", "wrap/gitconfig.rs"], "starts a process (the sandbox child; the LLM command provider; the confined side of a run or a wrap session; the opt-in unconfined fallback; the user's jj; the user's git, listing its configuration for a wrapped agent's)"),
    (r"\bprocess::exit\(", &["sandbox/child/mod.rs"], "exits the process (only the sandbox child ends itself)"),
    (r"\b(clap|nvim_rs|rmcp|tokio|tracing_subscriber)::", &[], "uses a frontend crate"),
];

#[test]
fn the_core_reads_no_environment_prints_nothing_and_knows_no_frontend() {
    let core = repo().join("crates/core/src");
    let mut violations = Vec::new();
    for (rel, text) in sources(&core) {
        let code = code_only(&text);
        for (pattern, allowed, what) in CORE_RULES {
            if allowed.contains(&rel.as_str()) {
                continue;
            }
            let re = regex::Regex::new(pattern).unwrap();
            for m in re.find_iter(&code) {
                let line = code[..m.start()].matches('\n').count() + 1;
                violations.push(format!("crates/core/src/{rel}:{line}: `{}` {what}", m.as_str()));
            }
        }
    }
    assert!(violations.is_empty(), "the core must stay free of edges:\n{}", violations.join("\n"));
}

#[test]
fn the_core_depends_on_no_frontend_crate() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = std::process::Command::new(cargo)
        .args(["tree", "--offline", "-p", "cairn-core", "-e", "normal", "--prefix", "none"])
        .current_dir(repo())
        .output()
        .expect("cargo tree");
    assert!(out.status.success(), "cargo tree: {}", String::from_utf8_lossy(&out.stderr));
    let tree = String::from_utf8_lossy(&out.stdout);
    let crates: BTreeSet<&str> = tree.lines().filter_map(|l| l.split_whitespace().next()).collect();
    assert!(crates.contains("rusqlite"), "cargo tree printed no dependencies: {tree}");
    for frontend in ["clap", "nvim-rs", "rmcp", "tracing-subscriber", "tokio", "rmpv", "signal-hook"] {
        assert!(!crates.contains(frontend), "cairn-core depends on {frontend}");
    }
}

/// The modules a file refers to through `crate::` paths (first component only).
fn crate_refs(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let single = regex::Regex::new(r"\bcrate::([a-z_]+)").unwrap();
    for c in single.captures_iter(code) {
        out.insert(c[1].to_string());
    }
    let group = regex::Regex::new(r"\bcrate::\{([^}]*)\}").unwrap();
    for c in group.captures_iter(code) {
        for item in c[1].split(',') {
            let first = item.trim().split("::").next().unwrap_or("").trim();
            if !first.is_empty() && first != "self" {
                out.insert(first.to_string());
            }
        }
    }
    out
}

/// The module a file belongs to at depth `depth` below `base` (`review/accept.rs` → `review`
/// at depth 0, `accept` at depth 1).
fn module_of(rel: &str, depth: usize) -> Option<String> {
    let parts: Vec<&str> = rel.trim_end_matches(".rs").split('/').collect();
    let name = parts.get(depth)?;
    (*name != "mod" && *name != "lib" && *name != "main").then(|| name.to_string())
}

/// A cycle in `graph`, if there is one.
fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(n: &str, g: &BTreeMap<String, BTreeSet<String>>, state: &mut BTreeMap<String, u8>, path: &mut Vec<String>) -> Option<Vec<String>> {
        match state.get(n) {
            Some(2) => return None,
            Some(1) => {
                let from = path.iter().position(|p| p == n).unwrap_or(0);
                let mut cycle = path[from..].to_vec();
                cycle.push(n.to_string());
                return Some(cycle);
            }
            _ => {}
        }
        state.insert(n.to_string(), 1);
        path.push(n.to_string());
        for m in g.get(n).into_iter().flatten() {
            if let Some(c) = visit(m, g, state, path) {
                return Some(c);
            }
        }
        path.pop();
        state.insert(n.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    graph.keys().find_map(|n| visit(n, graph, &mut state, &mut Vec::new()))
}

/// The graph between the top-level modules of a crate, and within each directory module
/// between its files (`super::` siblings), ignoring the parent `mod.rs` that declares them.
fn module_graphs(src: &Path) -> Vec<(String, BTreeMap<String, BTreeSet<String>>)> {
    let files = sources(src);
    let mut top: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut inner: BTreeMap<String, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    let sibling = regex::Regex::new(r"\bsuper::([a-z_]+)").unwrap();
    for (rel, text) in &files {
        let code = code_only(text);
        let Some(me) = module_of(rel, 0) else { continue };
        let deps = top.entry(me.clone()).or_default();
        deps.extend(crate_refs(&code).into_iter().filter(|m| *m != me && !matches!(m.as_str(), "Error" | "Result")));
        // Sibling files of a directory module (`review/undo.rs` using `super::accept`).
        if let Some(child) = module_of(rel, 1).filter(|_| rel.matches('/').count() == 1) {
            let g = inner.entry(me.clone()).or_default();
            let own = g.entry(child.clone()).or_default();
            let dir = src.join(&me);
            for c in sibling.captures_iter(&code) {
                let m = c[1].to_string();
                if m != child && (dir.join(format!("{m}.rs")).exists() || dir.join(&m).is_dir()) {
                    own.insert(m);
                }
            }
        }
    }
    top.retain(|k, _| src.join(format!("{k}.rs")).exists() || src.join(k).is_dir());
    let known: BTreeSet<String> = top.keys().cloned().collect();
    for deps in top.values_mut() {
        deps.retain(|d| known.contains(d));
    }
    let mut out = vec![("crate".to_string(), top)];
    out.extend(inner);
    out
}

#[test]
fn no_module_import_cycles() {
    for (krate, src) in [("cairn-core", repo().join("crates/core/src")), ("cairn", repo().join("src"))] {
        for (scope, graph) in module_graphs(&src) {
            println!("{krate} {scope}:");
            for (m, deps) in &graph {
                println!("  {m} -> {}", deps.iter().cloned().collect::<Vec<_>>().join(", "));
            }
            if let Some(cycle) = find_cycle(&graph) {
                panic!("{krate}: import cycle in {scope}: {}", cycle.join(" -> "));
            }
        }
    }
}

#[test]
fn the_cycle_finder_finds_cycles() {
    let g = |edges: &[(&str, &str)]| {
        let mut m: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (a, b) in edges {
            m.entry(a.to_string()).or_default().insert(b.to_string());
            m.entry(b.to_string()).or_default();
        }
        m
    };
    assert_eq!(find_cycle(&g(&[("a", "b"), ("b", "c")])), None);
    assert!(find_cycle(&g(&[("project", "sandbox"), ("sandbox", "externals"), ("externals", "view"), ("view", "project")])).is_some());
    let refs = crate_refs("use crate::{gc, orchestrator::queue, self};\nuse crate::store::bin::Bin;");
    assert_eq!(refs.into_iter().collect::<Vec<_>>(), ["gc", "orchestrator", "store"]);
}

/// Functions allowed over the limit: long `match`es that only map variants.
const LONG_FUNCTIONS_ALLOWED: &[&str] = &[];

/// The length in lines of every `fn` in `code` (brace matching on comment- and string-free
/// code), as (name, first line, lines).
fn function_lengths(code: &str) -> Vec<(String, usize, usize)> {
    let fn_re = regex::Regex::new(r"^\s*(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?fn\s+(\w+)").unwrap();
    let lines: Vec<&str> = code.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(c) = fn_re.captures(line) else { continue };
        let (mut depth, mut started) = (0i32, false);
        for (j, l) in lines.iter().enumerate().skip(i) {
            if !started && l.contains(';') && !l.contains('{') {
                break;
            }
            for ch in l.chars() {
                match ch {
                    '{' => {
                        depth += 1;
                        started = true;
                    }
                    '}' => depth -= 1,
                    _ => {}
                }
            }
            if started && depth <= 0 {
                out.push((c[6].to_string(), i + 1, j - i + 1));
                break;
            }
        }
    }
    out
}

#[test]
fn files_and_functions_stay_small() {
    let mut over = Vec::new();
    for dir in ["crates/core/src", "src"] {
        for (rel, text) in sources(&repo().join(dir)) {
            let n = text.lines().count();
            if n > 400 {
                over.push(format!("{dir}/{rel}: {n} lines (at most 400)"));
            }
            for (name, at, len) in function_lengths(&code_only(&text)) {
                if len > 80 && !LONG_FUNCTIONS_ALLOWED.contains(&name.as_str()) {
                    over.push(format!("{dir}/{rel}:{at}: fn {name} is {len} lines (at most 80)"));
                }
            }
        }
    }
    assert!(over.is_empty(), "{}", over.join("\n"));
}
