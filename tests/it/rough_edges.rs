//! Small things a user meets (issue 35's rough edges): git's `--stat` wording, a hunk
//! conflict's hint naming the hunk command, "N left" counting every file, summaries and
//! banners showing the command as the user wrote it.

use crate::support::*;

#[test]
fn diff_stat_reads_like_gits() {
    let f = Fixture::with_files(&[("a.txt", "a\nb\n")]);
    let s = f.run_ok("write_file('a.txt', 'A\\nb\\n')\n");
    let stat = f.cairn(&["diff", &s.id, "--stat"]).ok().stdout;
    assert!(stat.contains("1 file changed, 1 insertion(+), 1 deletion(-)"), "{stat}");
    let s2 = f.run_ok("write_file('a.txt', 'A\\nB\\n')\nwrite_file('c.txt', 'c\\n')\n");
    let stat = f.cairn(&["diff", &s2.id, "--stat"]).ok().stdout;
    assert!(stat.contains("2 files changed, 3 insertions(+), 2 deletions(-)"), "{stat}");
}

#[test]
fn a_conflicting_hunk_names_the_hunk_commands_and_left_counts_every_file() {
    let f = Fixture::with_files(&[("a.txt", "a\nb\n"), ("b.txt", "x\n")]);
    let s = f.run_ok("write_file('a.txt', 'A\\nb\\n')\nwrite_file('b.txt', 'X\\n')\n");
    f.write("a.txt", "mine\nb\n");
    let refused = f.cairn(&["accept-hunk", &s.id, "a.txt", "1"]);
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(refused.stderr.contains(":CairnAcceptHunk!") && refused.stderr.contains("accept-hunk") && !refused.stderr.contains(&format!("cairn accept {} --force", s.id)), "{}", refused.stderr);
    let out = f.cairn(&["accept-hunk", &s.id, "b.txt", "1"]).ok().stdout;
    assert!(out.contains("0 hunk(s) left in it, 1 in all"), "{out}");
}

#[test]
fn summaries_and_banners_show_the_users_command() {
    let f = Fixture::with_files(&[("a.txt", "a\n")]);
    let out = f.cairn(&["wrap", "--", "sh", "-c", "echo \"a b\" > b.txt"]);
    assert!(out.stderr.contains("what `echo \"a b\" > b.txt` writes"), "{}", out.stderr);
    let agents = f.cairn(&["list-agents", "--json"]).ok().json();
    let summary = agents[0]["submission"]["summary"].as_str().unwrap_or("").to_string();
    assert!(summary.contains("`echo \"a b\" > b.txt` exited with 0") && !summary.contains("sh -c"), "{summary}");
    let quoted = f.cairn(&["wrap", "--", "printf", "%s\\n", "two words"]);
    assert!(quoted.stderr.contains("what `printf '%s\\n' 'two words'` writes"), "{}", quoted.stderr);
}

/// `cairn mcp` stopped with SIGTERM or SIGHUP (as `claude -p` stops its servers; a closed
/// terminal) finishes its connection's own session as a disconnect does: a proposal, never an
/// agent `executing` for ever.
#[test]
fn a_signal_to_the_mcp_server_finishes_its_implicit_session() {
    use std::io::{BufRead, BufReader, Write};
    for sig in ["TERM", "HUP"] {
        let f = Fixture::with_files(&[("a.txt", "a\n")]);
        f.init();
        let mut server = f.cmd().arg("mcp").stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::null()).spawn().unwrap();
        let mut stdin = server.stdin.take().unwrap();
        let mut lines = BufReader::new(server.stdout.take().unwrap()).lines();
        let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"sig-client","version":"1"}}}"#;
        writeln!(stdin, "{init}").unwrap();
        assert!(lines.next().unwrap().unwrap().contains("\"id\":1"));
        writeln!(stdin, r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#).unwrap();
        writeln!(stdin, r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"write_file","arguments":{{"path":"b.txt","content":"b\n"}}}}}}"#).unwrap();
        let reply = lines.next().unwrap().unwrap();
        assert!(reply.contains("\"id\":2") && !reply.contains("\"isError\":true"), "{reply}");
        let executing = f.cairn(&["list-agents", "--json"]).ok().json();
        assert_eq!(executing[0]["state"], "executing", "{executing}");
        assert!(std::process::Command::new("kill").arg(format!("-{sig}")).arg(server.id().to_string()).status().unwrap().success());
        let status = server.wait().unwrap();
        assert!(status.success(), "the server ends cleanly on signal {sig}: {status:?}");
        let agents = f.cairn(&["list-agents", "--json"]).ok().json();
        assert_eq!(agents[0]["state"], "reviewing", "signal {sig}: {agents}");
        assert!(f.cairn(&["diff", agents[0]["id"].as_str().unwrap()]).ok().stdout.contains("+b"));
    }
}

/// A wrapped command that changes nothing (or cannot start) leaves no empty proposal to be
/// the default target of an accept: the session ends "finished (nothing proposed)"; a
/// command that is nowhere is refused before any session starts.
#[test]
fn a_wrap_session_that_changes_nothing_proposes_nothing() {
    let f = Fixture::with_files(&[("a.txt", "a\n")]);
    for cmd in [vec!["true"], vec!["sh", "-c", "true; no-such-agent-cli"]] {
        let out = f.cairn(&[&["wrap", "--"][..], &cmd[..]].concat());
        assert!(out.stderr.contains("nothing proposed"), "{}", out.stderr);
    }
    let refused = f.cairn(&["wrap", "--", "no-such-agent-cli"]);
    assert!(refused.code == 1 && refused.stderr.contains("no-such-agent-cli is not found on PATH"), "{refused:?}");
    assert_eq!(f.cairn(&["list-agents", "--json"]).ok().json(), serde_json::json!([]), "no active proposal");
    let all = f.cairn(&["list-agents", "--all", "--json"]).ok().json();
    assert_eq!(all.as_array().unwrap().len(), 2, "{all}");
    assert!(all.as_array().unwrap().iter().all(|a| a["state"] == "rejected"), "{all}");
    let events = f.cairn(&["events", "--json"]).ok().stdout;
    assert_eq!(events.lines().filter(|l| l.contains("finished (nothing proposed)")).count(), 2, "{events}");
    // Nor any overlay: a session makes one when it has something to propose.
    let dbs: Vec<_> = walk(&f.root.join(".agentfs")).into_iter().filter(|p| p.contains("agent-")).collect();
    assert!(dbs.is_empty(), "{dbs:?}");
    assert!(std::fs::read_dir(f.home.join("runs")).map_or(true, |mut d| d.next().is_none()), "a session directory was left");
}

/// Every file under `dir`, as a path string.
fn walk(dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if e.path().is_dir() {
            out.extend(walk(&e.path()));
        } else {
            out.push(e.path().display().to_string());
        }
    }
    out
}
