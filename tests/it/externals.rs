//! Every external of SPEC §4 from real scripts through the real sandbox child, including the
//! error cases. Data-driven: each case is a script whose last expression is compared.

use crate::support::*;
use serde_json::{json, Value};

/// Defined in each script: runs a call and names the exception it raised.
const ERR: &str = "def err(f, *a):\n    try:\n        f(*a)\n        return 'ok'\n    except Exception as e:\n        return type(e).__name__ + ': ' + str(e)\n";

fn fixture() -> Fixture {
    let f = Fixture::new();
    f.write("src/main.py", "def foo():\n    return 1\n");
    f.write("src/util/helpers.py", "# helper\nTODO = 1\n");
    f.write("README.md", "# title\nTODO: write\n");
    f.write("data.bin", [0u8, 159, 146, 150, 0, 1]);
    f.write("empty.txt", "");
    f.init();
    f
}

fn check(f: &Fixture, cases: &[(&str, Value)]) {
    for (code, want) in cases {
        let s = f.run_inline(&format!("{ERR}{code}"));
        assert_eq!(s.state.as_str(), "reviewing", "{code}: {:?}", s.error);
        assert_eq!(s.result.as_ref().unwrap(), want, "script: {code}");
    }
}

#[test]
fn read_file_semantics() {
    let f = fixture();
    // The project's absolute path means that file; a leading `/` is the project root (the
    // seed's scripts); a path climbing out is refused, saying how paths are read.
    let inside = format!("await read_file('{}/src/main.py')", f.root.display());
    check(&f, &[(inside.as_str(), json!("def foo():\n    return 1\n")), ("await read_file('/src/main.py')", json!("def foo():\n    return 1\n"))]);
    let s = f.run_inline(&format!("{ERR}err(read_file, '/../src/main.py')"));
    let got = s.result.as_ref().and_then(|r| r.as_str()).unwrap_or_default().to_string();
    assert!(got.starts_with("ValueError: Invalid path: /../src/main.py (paths are relative to the project root)"), "{got}");
    check(
        &f,
        &[
            ("read_file('src/main.py')", json!("def foo():\n    return 1\n")),
            ("read_file(path='empty.txt')", json!("")),
            ("err(read_file, 'nope.txt')", json!("FileNotFoundError: no such file: nope.txt")),
            ("err(read_file, 'data.bin')", json!("ValueError: binary file: data.bin")),
            ("err(read_file, 'src')", json!("IsADirectoryError: is a directory: src")),
            ("err(read_file, '../outside.txt')", json!("ValueError: Invalid path: ../outside.txt (paths are relative to the project root)")),
            ("err(read_file, 'src/../../x')", json!("ValueError: Invalid path: src/../../x (paths are relative to the project root)")),
            ("err(read_file, 'a\\x00b')", json!("ValueError: Invalid path: a\0b (paths are relative to the project root)")),
            ("err(read_file, 'C:/windows')", json!("ValueError: Invalid path: C:/windows (paths are relative to the project root)")),
            ("err(read_file, 3)", json!("TypeError: path must be str, not int")),
        ],
    );
}

#[test]
fn write_and_delete_semantics() {
    let f = fixture();
    check(
        &f,
        &[
            ("write_file('deep/new/dir/f.txt', 'x')\n[read_file('deep/new/dir/f.txt'), list_dir('deep'), file_exists('deep/new')]", json!(["x", ["new/"], true])),
            ("err(write_file, 'big.txt', 'x' * (10 * 1024 * 1024 + 1))", json!("ValueError: content is 10485761 bytes; write_file takes at most 10485760")),
            ("err(write_file, 'x.txt', 5)", json!("TypeError: content must be str, not int")),
            ("err(write_file, '../x.txt', 'a')", json!("ValueError: Invalid path: ../x.txt (paths are relative to the project root)")),
            ("err(write_file, 'src', 'a')", json!("IsADirectoryError: is a directory: src")),
            ("err(write_file, 'src/main.py/x', 'a')", json!("NotADirectoryError: not a directory: src/main.py")),
            ("err(write_file, '.agentfs/stable.db', 'a')", json!("PermissionError: \".agentfs/stable.db\" is protected: repository and cairn machinery (.git, .jj, .agentfs, .grail) is off limits to agents")),
            ("[delete_file('README.md'), file_exists('README.md'), err(read_file, 'README.md')]", json!([true, false, "FileNotFoundError: no such file: README.md"])),
            ("err(delete_file, 'missing.txt')", json!("FileNotFoundError: no such file: missing.txt")),
            ("err(delete_file, 'src')", json!("IsADirectoryError: is a directory: src")),
            ("write_file('tmp.txt', 'a')\ndelete_file('tmp.txt')\nfile_exists('tmp.txt')", json!(false)),
        ],
    );
}

#[test]
fn listing_and_search_semantics() {
    let f = fixture();
    check(
        &f,
        &[
            ("list_dir()", json!(["README.md", "data.bin", "empty.txt", "src/"])),
            ("list_dir('.')", json!(["README.md", "data.bin", "empty.txt", "src/"])),
            ("list_dir('src')", json!(["main.py", "util/"])),
            ("write_file('src/z.py', '')\ndelete_file('src/main.py')\nlist_dir('src')", json!(["util/", "z.py"])),
            ("err(list_dir, 'nope')", json!("FileNotFoundError: no such directory: nope")),
            ("err(list_dir, 'README.md')", json!("NotADirectoryError: not a directory: README.md")),
            ("[file_exists('src'), file_exists('src/main.py'), file_exists('nope')]", json!([true, true, false])),
            ("search_files('*.py')", json!([])),
            ("search_files('src/*.py')", json!(["src/main.py"])),
            ("search_files('**/*.py')", json!(["src/main.py", "src/util/helpers.py"])),
            ("write_file('src/new.py', '')\nsearch_files('src/**')", json!(["src/main.py", "src/new.py", "src/util/helpers.py"])),
            (
                "search_content('TODO')",
                json!([
                    {"file": "README.md", "line": 2, "text": "TODO: write"},
                    {"file": "src/util/helpers.py", "line": 2, "text": "TODO = 1"}
                ]),
            ),
            ("search_content('TODO', 'src')", json!([{"file": "src/util/helpers.py", "line": 2, "text": "TODO = 1"}])),
            ("write_file('src/main.py', 'x\\nTODO again\\n')\n[r['line'] for r in search_content('TODO', path='src/main.py')]", json!([2])),
            ("err(search_content, '(unclosed')", json!("ValueError: bad regex: regex parse error:\n    (unclosed\n    ^\nerror: unclosed group")),
        ],
    );
}

#[test]
fn ask_llm_without_a_model_raises_clearly() {
    let f = fixture();
    let s = f.run_ok(&format!("{ERR}err(ask_llm, 'hi')"));
    let msg = s.result.unwrap();
    assert!(msg.as_str().unwrap().starts_with("RuntimeError: no LLM is configured"), "{msg}");
}

#[test]
fn submit_result_log_and_audit() {
    let f = fixture();
    let s = f.run_ok("log('step one')\nprint('printed', 2)\nwrite_file('a.txt', 'a')\nsubmit_result('did a', ['a.txt'])\n'done'");
    let sub = s.submission.unwrap();
    assert_eq!(sub["summary"], "did a");
    assert_eq!(sub["changed_files"], json!(["a.txt"]));
    let log = std::fs::read_to_string(f.root.join(format!(".grail/agents/{}/run.log", s.id))).unwrap();
    let (agent_lines, ended) = log.rsplit_once("run ended after ").expect("the run time closes the log");
    assert_eq!(agent_lines, "step one\nprinted 2\n");
    assert!(ended.trim_end().ends_with(" ms"), "{log}");
    // Without submit_result, a submission is derived from the changes.
    let d = f.run_ok("write_file('b.txt', 'b')\nwrite_file('c.txt', 'c')");
    let sub = d.submission.unwrap();
    assert_eq!(sub["summary"], "changed 2 files");
    assert_eq!(sub["changed_files"], json!(["b.txt", "c.txt"]));
    // Every call is in the audit log, errors included.
    let e = f.run_ok(&format!("{ERR}read_file('README.md')\nerr(read_file, 'nope')\nfile_exists('x')"));
    let overlay = f.project().existing_overlay(&e.id).unwrap().unwrap();
    let audit = overlay.audit_log().unwrap();
    let names: Vec<&str> = audit.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["read_file", "read_file", "file_exists"]);
    assert_eq!(audit[0].args, "[\"README.md\"]");
    assert!(audit[1].error.as_deref().unwrap().starts_with("FileNotFoundError"));
    assert_eq!(audit[2].result.as_deref(), Some("false"));
}

#[test]
fn grail_stubs_inputs_and_both_call_styles() {
    let f = fixture();
    let code = "from grail import external, Input\nfrom typing import Optional, List\n\
        task: str = Input('task_description')\nmissing: Optional[str] = Input('nope', 'dflt')\n\
        @external\nasync def read_file(path: str) -> str: ...\n\
        async def helper(p: str) -> List[str]:\n    return [await read_file(p), read_file(p)]\n\
        {'task_is_code': task.startswith('from grail'), 'missing': missing, 'both': await helper('empty.txt')}";
    let s = f.run_ok(code);
    assert_eq!(s.result.unwrap(), json!({"task_is_code": true, "missing": "dflt", "both": ["", ""]}));
    let bad = f.run_inline("from grail import external\n@external\ndef not_an_external(): ...\n");
    assert_eq!(bad.state.as_str(), "errored");
    assert!(bad.error.unwrap().contains("'not_an_external' is not an external function"));
}

#[test]
fn every_external_is_documented() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/cairn.txt")).unwrap();
    let section = &doc[doc.find("*cairn-externals*").expect("externals section")..];
    for external in cairn::externals::External::ALL {
        let name = external.as_str();
        assert!(section.lines().any(|l| l.starts_with(&format!("{name}("))), "doc/cairn.txt documents no {name}(...) under *cairn-externals*");
    }
}

/// `cairn search` is `search_content` from the command line: the same engine over the project
/// as indexed, or over an agent's view with `--agent`. Binary and non-UTF-8 files are skipped,
/// `$` matches before CRLF, results come in path then line order, agent text is escaped.
#[test]
fn cairn_search_sees_what_an_agent_sees() {
    let f = Fixture::with_files(&[("a/one.txt", "needle 1\r\nhay\nneedle 2\n"), ("b/two.txt", "hay\nthe needle\n"), ("c.txt", "needle\x1b[31m red\n")]);
    f.write("bin.dat", b"needle\0binary");
    f.write("latin.txt", b"needle \xe9\n");
    f.init();
    let r = f.cairn(&["search", "needle"]).ok();
    assert_eq!(r.stdout, "a/one.txt:1:needle 1\na/one.txt:3:needle 2\nb/two.txt:2:the needle\nc.txt:1:needle\\x1b[31m red\n");
    assert_eq!(f.cairn(&["search", r"\d$", "a"]).ok().stdout, "a/one.txt:1:needle 1\na/one.txt:3:needle 2\n");
    let none = f.cairn(&["search", "absent"]);
    assert_eq!((none.code, none.stdout.as_str()), (1, ""));
    let bad = f.cairn(&["search", "(unclosed"]);
    assert_eq!(bad.code, 2);
    assert!(bad.stderr.contains("bad regex"), "{}", bad.stderr);
    // With an agent: its writes and deletes are what the search sees.
    let s = f.run_ok("write_file('b/two.txt', 'no more\\n')\nwrite_file('d.txt', 'a needle here\\n')\ndelete_file('c.txt')");
    let hits = f.cairn(&["search", "needle", "--agent", &s.id, "--json"]).ok().json();
    let files: Vec<&str> = hits["hits"].as_array().unwrap().iter().map(|h| h["file"].as_str().unwrap()).collect();
    assert_eq!(files, ["a/one.txt", "a/one.txt", "d.txt"]);
    // The project itself is unchanged by that.
    assert_eq!(f.cairn(&["search", "needle"]).ok().stdout.lines().count(), 4);
}
