//! What command lines run, as a table: the line, then each word it names, rendered as
//! `KIND WORD [PATH=…] [in DIR]`, KIND being `prog`, `script`, `dir` or the runner's name,
//! with `~` before it where the name is made visible but never refused.

use super::*;

fn render(n: &Named) -> String {
    let kind = match n.kind {
        Kind::Program => "prog".to_string(),
        Kind::Script => "script".to_string(),
        Kind::Dir => "dir".to_string(),
        Kind::Package(r) => r.words.join("-"),
    };
    let mut s = format!("{}{kind} {}", if n.strict { "" } else { "~" }, n.word);
    if let Some(p) = &n.path {
        s.push_str(&format!(" PATH={p}"));
    }
    if let Some(d) = &n.dir {
        s.push_str(&format!(" in {d}"));
    }
    s
}

fn check(line: &[&str], expect: &[&str]) {
    let argv: Vec<String> = line.iter().map(|s| s.to_string()).collect();
    let got: Vec<String> = named(&argv, Path::new("/home/u")).iter().map(render).collect();
    assert_eq!(got, expect, "{line:?}");
}

#[test]
fn wrappers_start_the_program_they_are_given() {
    check(&["env", "GREETING=hi", "/some/dir/prog"], &["prog env", "prog /some/dir/prog"]);
    check(&["env", "-i", "A=1", "prog", "x"], &["prog env", "prog prog PATH="]);
    check(&["env", "-u", "PATH", "prog"], &["prog env", "prog prog PATH="]);
    check(&["env", "-uHOME", "--unset=X", "-v", "prog"], &["prog env", "prog prog"]);
    check(&["env", "PATH=/opt/x/bin:/usr/bin", "prog"], &["prog env", "prog prog PATH=/opt/x/bin:/usr/bin"]);
    check(&["env", "-C", "sub", "./run"], &["prog env", "dir sub in sub", "prog ./run in sub"]);
    check(&["env", "--chdir=/tmp/w", "-", "./run"], &["prog env", "dir /tmp/w PATH= in /tmp/w", "prog ./run PATH= in /tmp/w"]);
    check(&["env", "-S", "A=1 node --flag", "x.js"], &["prog env", "prog node", "script x.js"]);
    check(&["env", "-S", "-i PATH=/p prog"], &["prog env", "prog prog PATH=/p"]);
    check(&["env", "--split-string=python3 -u", "t.py"], &["prog env", "prog python3", "script t.py"]);
    check(&["env"], &["prog env"]);
    check(&["env", "A=1"], &["prog env"]);
    check(&["nice", "-n", "5", "prog"], &["prog nice", "prog prog"]);
    check(&["nice", "-n5", "prog"], &["prog nice", "prog prog"]);
    check(&["nice", "--adjustment=5", "prog"], &["prog nice", "prog prog"]);
    check(&["nice", "-10", "prog"], &["prog nice", "prog prog"]);
    check(&["nice", "prog"], &["prog nice", "prog prog"]);
    check(&["timeout", "10", "prog", "-n", "1"], &["prog timeout", "prog prog"]);
    check(&["timeout", "-k", "5", "--signal=TERM", "-v", "1m", "prog"], &["prog timeout", "prog prog"]);
    check(&["timeout", "--preserve-status", "10s", "prog"], &["prog timeout", "prog prog"]);
    check(&["stdbuf", "-oL", "-e", "0", "prog"], &["prog stdbuf", "prog prog"]);
    check(&["stdbuf", "--output=L", "prog"], &["prog stdbuf", "prog prog"]);
    check(&["nohup", "prog"], &["prog nohup", "prog prog"]);
    check(&["setsid", "-w", "prog"], &["prog setsid", "prog prog"]);
    check(&["/usr/bin/time", "-f", "%e", "-o", "t.txt", "prog"], &["prog /usr/bin/time", "prog prog"]);
    check(&["chrt", "-f", "10", "prog"], &["prog chrt", "prog prog"]);
    check(&["chrt", "--idle", "0", "prog"], &["prog chrt", "prog prog"]);
    check(&["chrt", "-p", "10", "1234"], &["prog chrt"]);
    check(&["ionice", "-c", "3", "prog"], &["prog ionice", "prog prog"]);
    check(&["ionice", "-p", "1234"], &["prog ionice"]);
    check(&["taskset", "-c", "0-1", "prog"], &["prog taskset", "prog prog"]);
    check(&["taskset", "0x3", "prog"], &["prog taskset", "prog prog"]);
    check(&["taskset", "-p", "1234"], &["prog taskset"]);
    check(&["xargs", "-0", "-n", "1", "prog"], &["prog xargs", "prog prog"]);
    check(&["xargs", "-I{}", "prog", "{}"], &["prog xargs", "prog prog"]);
    check(&["xargs"], &["prog xargs", "prog echo"]);
    check(&["env", "--", "prog"], &["prog env", "prog prog"]);
}

#[test]
fn wrappers_nest() {
    check(&["env", "A=1", "nice", "-n", "5", "timeout", "10", "stdbuf", "-oL", "/x/prog"], &["prog env", "prog nice", "prog timeout", "prog stdbuf", "prog /x/prog"]);
    check(&["env", "PATH=/p", "nice", "prog"], &["prog env", "prog nice PATH=/p", "prog prog PATH=/p"]);
    check(&["env", "env", "env", "prog"], &["prog env", "prog env", "prog env", "prog prog"]);
}

#[test]
fn interpreters_read_the_script_they_are_given() {
    check(&["python3", "-u", "/opt/t/tool.py", "-c", "x"], &["prog python3", "script /opt/t/tool.py"]);
    check(&["python3", "-c", "print(1)"], &["prog python3"]);
    check(&["python3", "-m", "pytest"], &["prog python3"]);
    check(&["python3", "-X", "dev", "-W", "ignore", "t.py"], &["prog python3", "script t.py"]);
    check(&["python3.12", "-Bc", "x"], &["prog python3.12"]);
    check(&["node", "--require", "x", "cli.js"], &["prog node", "script cli.js"]);
    check(&["node", "-e", "1"], &["prog node"]);
    check(&["perl", "-w", "s.pl"], &["prog perl", "script s.pl"]);
    check(&["bash", "-e", "run.sh"], &["prog bash", "script run.sh"]);
    check(&["bash", "-o", "pipefail", "run.sh"], &["prog bash", "script run.sh"]);
    check(&["sh", "-s"], &["prog sh"]);
}

#[test]
fn a_shell_script_runs_the_programs_at_its_commands_heads() {
    check(&["sh", "-c", "env GREETING=hi /x/prog"], &["prog sh", "prog env", "prog /x/prog"]);
    check(&["sh", "-c", "A=1 exec claude -p x"], &["prog sh", "prog claude"]);
    check(&["bash", "-lc", "nice -n 5 'my prog' \"arg\""], &["prog bash", "prog nice", "prog my prog"]);
    check(&["sh", "-c", "prog > out.txt 2>&1"], &["prog sh", "~prog prog"]);
    check(&["sh", "-c", "a; b | c && d || e & f"], &["prog sh", "~prog a", "~prog b", "~prog c", "~prog d", "~prog e", "~prog f"]);
    check(&["sh", "-c", "if command -v x >/dev/null; then x; fi"], &["prog sh", "~prog x"]);
    check(&["sh", "-c", "$EDITOR f; `which x`; for i in 1 2; do echo $i; done"], &["prog sh", "~prog echo"]);
    check(&["sh", "-c", "~/bin/tool # a comment"], &["prog sh", "prog /home/u/bin/tool"]);
    check(&["sh", "-c", "env '--split-string=cat ~/.claude/.credentials.json' claude"], &["prog sh", "prog env", "prog cat"]);
    check(&["sh", "-c", "(cd sub && make)"], &["prog sh", "~prog cd", "~prog make"]);
}

#[test]
fn package_runners_run_a_command_they_find_or_fetch() {
    check(&["npx", "prettier", "--check", "."], &["prog npx", "npx prettier"]);
    check(&["npx", "-y", "@scope/tool@1.2", "x"], &["prog npx", "npx tool"]);
    check(&["npx", "--package=typescript", "tsc", "-v"], &["prog npx", "npx tsc"]);
    check(&["npx", "-c", "tsc && eslint"], &["prog npx"]);
    check(&["npm", "exec", "--", "eslint"], &["prog npm", "npm-exec eslint"]);
    check(&["bunx", "cowsay", "hi"], &["prog bunx", "bunx cowsay"]);
    check(&["pnpm", "dlx", "create-vite"], &["prog pnpm", "pnpm-dlx create-vite"]);
    check(&["uv", "run", "--with", "rich", "pytest", "-q"], &["prog uv", "uv-run pytest"]);
    check(&["uv", "run", "tool.py"], &["prog uv", "script tool.py"]);
    check(&["uv", "run", "-m", "http.server"], &["prog uv"]);
    check(&["uv", "run", "python", "t.py"], &["prog uv", "uv-run python", "script t.py"]);
    check(&["uvx", "ruff@0.5", "check"], &["prog uvx", "uvx ruff"]);
    check(&["uvx", "--from", "black[jupyter]==24.1", "black", "."], &["prog uvx", "uvx black"]);
    check(&["poetry", "run", "pytest"], &["prog poetry", "poetry-run pytest"]);
    check(&["pipx", "run", "pycowsay", "moo"], &["prog pipx", "pipx-run pycowsay"]);
    check(&["timeout", "60", "npx", "tsc"], &["prog timeout", "prog npx", "npx tsc"]);
}

#[test]
fn the_program_names_the_agent_cli_through_wrappers() {
    let program = |line: &[&str]| super::program(&line.iter().map(|s| s.to_string()).collect::<Vec<_>>(), Path::new("/home/u"));
    assert_eq!(program(&["claude"]), "claude");
    assert_eq!(program(&["env", "A=1", "nice", "claude", "-p", "x"]), "claude");
    assert_eq!(program(&["sh", "-c", "A=1 exec claude --flag"]), "claude");
    assert_eq!(program(&["sh", "-c", "claude; echo done"]), "sh");
    assert_eq!(program(&["sh", "-c", "env '--split-string=cat x' claude"]), "cat");
    assert_eq!(program(&["python3", "t.py"]), "python3");
    assert_eq!(program(&["npx", "claude"]), "npx");
    assert_eq!(program(&["env"]), "env");
}

#[test]
fn env_split_string_splits_as_env_does() {
    let split = |s: &str| words::split_string(s);
    assert_eq!(split("-u X  sh"), ["-u", "X", "sh"]);
    assert_eq!(split("'a b' \"c\\\"d\" e\\_f"), ["a b", "c\"d", "e", "f"]);
    assert_eq!(split("\"a\\_b\" x\\cy z"), ["a b", "x"]);
    assert_eq!(split("p #comment"), ["p"]);
}
