//! The Python corpus (`tests/corpus/`): every snippet passes in the real sandbox child,
//! through a real run, and on CPython (the machine's `python3`) when there is one. A snippet
//! CPython fails is a wrong snippet; one only the child fails is a Cairn bug.

use crate::support::*;
use std::path::Path;
use std::process::Command;

/// One self-checking snippet: `file` and `name` say where it is.
pub(crate) struct Snippet {
    pub file: String,
    pub name: String,
    pub code: String,
}

/// Splits every `tests/corpus/*.py` at its `# --- name` lines.
pub(crate) fn snippets() -> Vec<Snippet> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let mut files: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|e| e == "py")).collect();
    files.sort();
    let mut out = Vec::new();
    for path in files {
        let file = path.file_name().unwrap().to_string_lossy().to_string();
        let text = std::fs::read_to_string(&path).unwrap();
        for chunk in text.split("\n# --- ").map(|c| c.trim_start_matches("# --- ")).filter(|c| !c.trim().is_empty()) {
            let (name, code) = chunk.split_once('\n').unwrap_or((chunk, ""));
            out.push(Snippet { file: file.clone(), name: name.trim().to_string(), code: code.to_string() });
        }
    }
    out
}

/// Runs the snippets in the child, on `threads` fixtures at once; returns the failures.
fn failures_in_child(all: &[Snippet], threads: usize) -> Vec<String> {
    let chunks: Vec<&[Snippet]> = all.chunks(all.len().div_ceil(threads)).collect();
    std::thread::scope(|scope| {
        let handles: Vec<_> = chunks
            .into_iter()
            .map(|chunk| {
                scope.spawn(move || {
                    let f = Fixture::new();
                    f.init();
                    let mut failed = Vec::new();
                    for s in chunk {
                        let st = f.run_inline(&s.code);
                        if st.state.as_str() != "reviewing" {
                            let last = st.error.as_deref().unwrap_or("").lines().last().unwrap_or("").to_string();
                            failed.push(format!("{} / {}: {:?} {last}", s.file, s.name, st.error_kind));
                        }
                    }
                    failed
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
    })
}

fn python3() -> Option<String> {
    let out = Command::new("python3").arg("--version").output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

#[test]
fn corpus_passes_in_the_child_and_on_cpython() {
    let all = snippets();
    assert!(all.len() >= 150, "{} snippets", all.len());
    let child = failures_in_child(&all, 3);
    let mut cpython = Vec::new();
    let version = python3();
    if version.is_some() {
        for s in &all {
            let out = Command::new("python3").args(["-I", "-c", &s.code]).output().unwrap();
            if !out.status.success() {
                let err = String::from_utf8_lossy(&out.stderr);
                cpython.push(format!("{} / {}: {}", s.file, s.name, err.lines().last().unwrap_or("")));
            }
        }
    }
    eprintln!(
        "corpus: {}/{} pass in the sandbox child; {}",
        all.len() - child.len(),
        all.len(),
        match &version {
            Some(v) => format!("{}/{} on {v}", all.len() - cpython.len(), all.len()),
            None => "no python3 on this machine".to_string(),
        }
    );
    assert!(cpython.is_empty(), "snippets CPython fails (fix the snippet):\n{}", cpython.join("\n"));
    assert!(child.is_empty(), "snippets the sandbox fails:\n{}", child.join("\n"));
}

/// The idioms a refactoring agent writes (the list) each run through a real run,
/// from one file of the corpus, so a missing one is named.
#[test]
fn agent_idioms_run() {
    let idioms: Vec<Snippet> = snippets().into_iter().filter(|s| s.file == "idioms.py").collect();
    assert!(idioms.len() >= 30, "{} idioms", idioms.len());
    for needed in ["dataclass", "counter", "defaultdict", "groupby", "dedent", "fill", "suffix", "re.sub", "look-ahead", "json dumps", "custom exception", "property", "classmethod", "namedtuple", "enum", "lru_cache", "unified_diff", "str.lower"] {
        assert!(idioms.iter().any(|s| s.name.contains(needed)), "no idiom for {needed}");
    }
    let failed = failures_in_child(&idioms, 2);
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}
