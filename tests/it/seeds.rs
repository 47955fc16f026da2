//! The seeds' contract (issue 36): what a user of the original design writes works as they
//! wrote it. Seed 000's example script, its paths with a leading `/`.

use crate::support::*;

/// Seed 000's example `.pym`, verbatim but for the processing its comment leaves out.
fn seed_example(process: &str) -> String {
    format!(
        r#"from grail import external, Input

# Inputs
task_description: str = Input("task_description")

# External function stubs
@external
async def read_file(path: str) -> str: ...

@external
async def write_file(path: str, content: str) -> bool: ...

@external
async def submit_result(summary: str, changed_files: list[str]) -> bool: ...

# Task code
content = await read_file("/src/main.py")
{process}
await submit_result(summary="Done", changed_files=["/src/main.py"])

# Return value
{{"status": "complete"}}
"#
    )
}

#[test]
fn seed_000s_example_script_reaches_reviewing_with_its_diff() {
    let f = Fixture::with_files(&[("src/main.py", "print('hi')\n")]);
    f.write("agents/example.pym", seed_example("# ... process ..."));
    let s = f.cairn(&["run", "agents/example.pym", "--json"]).ok().json();
    assert_eq!((s["state"].as_str(), s["submission"]["summary"].as_str()), (Some("reviewing"), Some("Done")), "{s}");
    f.write("agents/edit.pym", seed_example("await write_file(\"/src/main.py\", content.replace(\"hi\", \"hello\"))"));
    let s = f.cairn(&["run", "agents/edit.pym", "--json"]).ok().json();
    assert_eq!(s["state"], "reviewing", "{s}");
    assert_eq!(s["submission"]["changed_files"], serde_json::json!(["src/main.py"]), "the seed's `/src/main.py` is the project's src/main.py: {s}");
    let diff = f.cairn(&["diff", s["id"].as_str().unwrap()]).ok().stdout;
    assert!(diff.contains("-print('hi')") && diff.contains("+print('hello')") && diff.contains("b/src/main.py"), "{diff}");
    assert_eq!(f.read_str("src/main.py").unwrap(), "print('hi')\n", "nothing lands before accept");
}
