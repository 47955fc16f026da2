//! One script, two interpreters (issue 47): every agent script of `tests/scripts/` runs on
//! RustPython and on CPython against the same project and must end the same way (state, error
//! kind and last line, result, submission, the proposal's diff, the run log), or better on
//! CPython where RustPython falls short of the script's expectation; every snippet of the
//! Python corpus (`tests/corpus/`) passes through a real run on CPython too.

use crate::support::*;
use cairn::command::{self, Command, Output};
use cairn::sandbox::interpreter::Interpreter;
use std::path::Path;

/// The project every script runs against: a small Python application.
const PROJECT: &[(&str, &str)] = &[
    ("README.md", "# App\n\nA small application. See docs/guide.md.\n"),
    ("config.json", "{\n  \"version\": \"1.2.3\",\n  \"debug\": true,\n  \"features\": [\"a\", \"b\"]\n}\n"),
    ("src/app/__init__.py", "\"\"\"The app package.\"\"\"\n"),
    (
        "src/app/main.py",
        "import os\nfrom app.utils import slugify\n\n\ndef main():\n    print(\"starting\")\n    name = os.environ.get(\"NAME\", \"world\")\n    print(f\"hello {name}\")  # TODO: use logging\n    return slugify(name)\n\n\nif __name__ == \"__main__\":\n    main()\n",
    ),
    ("src/app/utils.py", "def slugify(text):\n    # TODO: handle unicode\n    return text.lower().replace(\" \", \"-\")\n\n\ndef old_helper(x):\n    return x * 2\n"),
    ("src/app/models.py", "from dataclasses import dataclass\n\n\n@dataclass\nclass User:\n    name: str\n    email: str\n"),
    ("tests/test_utils.py", "from app.utils import old_helper, slugify\n\n\ndef test_slugify():\n    assert slugify(\"A B\") == \"a-b\"\n\n\ndef test_old_helper():\n    assert old_helper(2) == 4\n"),
    ("docs/guide.md", "# Guide\n\nInstall, then run `python -m app`.\n"),
    ("data/users.csv", "name,email,age\nada,ada@example.org,36\nbob,bob@example.com,41\ncy,cy@example.org,29\n"),
];

/// A deterministic model for `ask_llm`: a command that answers with the prompt's word count.
const LLM: &str = "#!/bin/sh\necho \"reviewed: $(wc -w | tr -d ' ') words\"\n";

/// What a run left, as far as a user can see it.
#[derive(Debug, PartialEq)]
struct Seen {
    state: String,
    error_kind: Option<String>,
    error_last_line: Option<String>,
    result: Option<serde_json::Value>,
    submission: Option<serde_json::Value>,
    diff: String,
    log: Vec<String>,
}

fn fixture() -> Fixture {
    let f = Fixture::new();
    for (p, c) in PROJECT {
        f.write(p, c);
    }
    let llm = f.dir.path().join("llm.sh");
    std::fs::write(&llm, LLM).unwrap();
    std::fs::set_permissions(&llm, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    f.home_config(&format!("[llm]\ncommand = [\"{}\"]\ntimeout_seconds = 20\n", llm.display()));
    f.init();
    f
}

/// Runs `source` on `interp` and reads back what it left.
fn run_on(f: &Fixture, source: &str, interp: Interpreter) -> Seen {
    let project = f.project();
    let s = match command::execute(&project, Command::Run { reference: source.to_string(), provider: Some(cairn::lifecycle::Provider::Inline), interpreter: Some(interp) }) {
        Ok(Output::Agent(s)) => s,
        other => panic!("run failed: {other:?}"),
    };
    let diff = match command::execute(&project, Command::Diff { id: s.id.clone(), stat: false, since_review: false }) {
        Ok(Output::Diff(d)) => d.text,
        other => panic!("diff failed: {other:?}"),
    };
    let log = std::fs::read_to_string(project.agent_dir(&s.id).join("run.log")).unwrap_or_default();
    let error_last_line = s.error.as_deref().map(|e| e.trim_end().lines().last().unwrap_or("").to_string());
    let mut submission = s.submission.clone();
    if let Some(obj) = submission.as_mut().and_then(|v| v.as_object_mut()) {
        // When it was made, and how long the run took, are not the script's doing.
        obj.retain(|k, _| !k.contains("_at") && !k.contains("elapsed") && !k.contains("duration"));
    }
    Seen {
        state: s.state.as_str().to_string(),
        error_kind: s.error_kind.map(|k| k.as_str().to_string()),
        error_last_line,
        result: s.result.clone(),
        submission,
        diff,
        // The last line says how long the run took.
        log: log.lines().filter(|l| !l.starts_with("run ended after")).map(str::to_string).collect(),
    }
}

fn scripts() -> Vec<(String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scripts");
    let mut out: Vec<(String, String)> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "pym"))
        .map(|p| (p.file_name().unwrap().to_string_lossy().to_string(), std::fs::read_to_string(&p).unwrap()))
        .collect();
    out.sort();
    out
}

#[test]
fn every_agent_script_ends_the_same_on_both_interpreters() {
    let all = scripts();
    assert!(all.len() >= 40, "{} scripts", all.len());
    let chunks: Vec<&[(String, String)]> = all.chunks(all.len().div_ceil(2)).collect();
    let results: Vec<(String, bool, Seen, Seen)> = std::thread::scope(|scope| {
        let handles: Vec<_> = chunks
            .into_iter()
            .map(|chunk| {
                scope.spawn(move || {
                    let f = fixture();
                    chunk
                        .iter()
                        .map(|(name, code)| {
                            let errs = code.starts_with("# expect: errored");
                            (name.clone(), errs, run_on(&f, code, Interpreter::Rustpython), run_on(&f, code, Interpreter::Cpython))
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    let want = |errs: bool, s: &Seen| s.state == if errs { "errored" } else { "reviewing" };
    let (rust_ok, cpy_ok) = (results.iter().filter(|r| want(r.1, &r.2)).count(), results.iter().filter(|r| want(r.1, &r.3)).count());
    let same = results.iter().filter(|r| r.2 == r.3).count();
    eprintln!("scripts: {rust_ok}/{n} as expected on RustPython, {cpy_ok}/{n} on CPython, {same}/{n} the same on both", n = results.len());
    let mut failures = Vec::new();
    for (name, errs, rust, cpy) in &results {
        if !want(*errs, cpy) {
            failures.push(format!("{name}: CPython ended {} ({:?}: {:?})", cpy.state, cpy.error_kind, cpy.error_last_line));
        } else if !want(*errs, rust) {
            // Better on CPython: RustPython's own gap, named here so it is seen.
            eprintln!("{name}: RustPython ended {} ({:?}: {:?}), CPython as expected", rust.state, rust.error_kind, rust.error_last_line);
        } else if rust != cpy {
            failures.push(format!("{name}: the interpreters differ\n  RustPython: {rust:?}\n  CPython:    {cpy:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Every corpus snippet through a real run on CPython (the shim, the transform, the run
/// workspace), as `corpus.rs` runs them in the sandbox child.
#[test]
fn every_corpus_snippet_passes_through_a_cpython_run() {
    let all = crate::corpus::snippets();
    let f = Fixture::new();
    f.home_config("[sandbox]\ninterpreter = \"cpython\"\n");
    f.init();
    let mut failed = Vec::new();
    for s in &all {
        let st = f.run_inline(&s.code);
        if st.state.as_str() != "reviewing" {
            let last = st.error.as_deref().unwrap_or("").lines().last().unwrap_or("").to_string();
            failed.push(format!("{} / {}: {:?} {last}", s.file, s.name, st.error_kind));
        }
    }
    eprintln!("corpus: {}/{} pass through a CPython run", all.len() - failed.len(), all.len());
    assert!(failed.is_empty(), "snippets a CPython run fails:\n{}", failed.join("\n"));
}
