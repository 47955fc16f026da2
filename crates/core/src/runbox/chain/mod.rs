//! What a command line runs, read as the programs on it read their own arguments: a
//! *wrapper* (`env`, `nice`, `timeout`, `stdbuf`, `nohup`, `setsid`, `time`, `chrt`,
//! `ionice`, `taskset`, `xargs`) starts the program it is given, nested to any depth (`env
//! A=1 nice -n 5 timeout 10 prog`), `env` perhaps on another `PATH` or in another directory;
//! an *interpreter* reads the script it is given (`python3 tool.py`, `sh run.sh`; a shell's
//! `-c` script runs the programs at the head of its commands); a *package runner* (`npx`,
//! `bunx`, `pnpm dlx`, `uv run`, `uvx`, `poetry run`, `pipx run`, ...) runs a command it
//! finds in the project, on `PATH`, in its cache or on its registry ([`Runner`]).
//!
//! Pure: words in, [`Named`] out. [`super::install`] finds each one on the host and makes it
//! visible in a wrap session's view, or says why it cannot be.

mod words;
#[cfg(test)]
mod tests;

/// A shell word list (`'…'`, `"…"` and `\` quote) split as `env -S` splits it.
pub(crate) fn split_words(s: &str) -> Vec<String> {
    words::split_string(s)
}

use std::path::Path;

/// One program, script or directory a command line names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Named {
    /// As written: a name to look up on `PATH`, or a path (relative to [`Named::dir`]).
    pub word: String,
    pub kind: Kind,
    /// The `PATH` it is looked up on, where a wrapper changed it (`env PATH=…`); empty when
    /// `env -i` or `env -u PATH` removed it (the C library's default then).
    pub path: Option<String>,
    /// The directory it runs in, relative to the command line's (`env -C DIR`).
    pub dir: Option<String>,
    /// Named by the command line itself (or by a shell script that is one command): refused
    /// when it cannot be seen. A program further inside a script is made visible when found,
    /// never refused (the script may test for it).
    pub strict: bool,
}

/// What a [`Named`] word is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A program: looked up on `PATH` unless the word holds a `/`.
    Program,
    /// A file an interpreter reads (`python3 tool.py`): a path, never looked up.
    Script,
    /// A directory a wrapper moves into (`env -C DIR`).
    Dir,
    /// A command a package runner finds in the project, on `PATH` or fetches.
    Package(&'static Runner),
}

/// A package runner: where the command it is given comes from.
#[derive(Debug, PartialEq, Eq)]
pub struct Runner {
    /// The words that start it (`["pnpm", "dlx"]`).
    pub words: &'static [&'static str],
    /// Its own options that take a value (`--opt=value` needs no listing).
    valued: &'static [&'static str],
    /// The options whose value names the package, the command being the next word then.
    package: &'static [&'static str],
    /// The options after which no command is named (`npx -c 'script'`, `uv run -m module`).
    no_command: &'static [&'static str],
    /// Where in the project it looks first, in the working directory and each one above it up
    /// to the project's root (`node_modules/.bin`); empty: nowhere.
    pub local: &'static str,
    /// Does it look on `PATH` too?
    pub on_path: bool,
    /// What it needs of the home besides its program: its cache, the toolchains it manages
    /// (relative to the home; shown as `[wrap] home` is, writes thrown away).
    pub home: &'static [&'static str],
    /// Where it fetches a package it does not have.
    pub hosts: &'static [&'static str],
}

const NPM: &[&str] = &["registry.npmjs.org"];
const PYPI: &[&str] = &["pypi.org", "files.pythonhosted.org"];
const NPX_VALUED: &[&str] = &["-p", "--package", "-c", "--call", "-w", "--workspace", "--prefix", "--registry", "--cache", "--userconfig", "--loglevel"];
const UV_VALUED: &[&str] = &[
    "--with", "--with-editable", "--with-requirements", "--from", "--python", "-p", "--project", "--directory", "--package", "--extra", "--group", "--no-group", "--only-group",
    "--env-file", "--index", "--default-index", "--index-url", "-i", "--extra-index-url", "--find-links", "-f", "--index-strategy", "--keyring-provider", "--resolution",
    "--prerelease", "--exclude-newer", "--link-mode", "--config-setting", "-C", "--cache-dir", "--config-file", "--color", "--python-preference", "--allow-insecure-host",
    "--refresh-package", "--reinstall-package", "--upgrade-package", "-P", "--no-binary-package", "--no-build-package",
];
const UV_HOME: &[&str] = &[".cache/uv", ".local/share/uv/python", ".local/share/uv/tools"];

/// The package runners Cairn reads.
pub const RUNNERS: &[Runner] = &[
    Runner { words: &["npx"], valued: NPX_VALUED, package: &["-p", "--package"], no_command: &["-c", "--call"], local: "node_modules/.bin", on_path: true, home: &[".npm"], hosts: NPM },
    Runner { words: &["npm", "exec"], valued: NPX_VALUED, package: &["-p", "--package"], no_command: &["-c", "--call"], local: "node_modules/.bin", on_path: true, home: &[".npm"], hosts: NPM },
    Runner { words: &["npm", "x"], valued: NPX_VALUED, package: &["-p", "--package"], no_command: &["-c", "--call"], local: "node_modules/.bin", on_path: true, home: &[".npm"], hosts: NPM },
    Runner { words: &["bunx"], valued: &["-p", "--package"], package: &["-p", "--package"], no_command: &[], local: "node_modules/.bin", on_path: true, home: &[".bun"], hosts: NPM },
    Runner { words: &["bun", "x"], valued: &["-p", "--package"], package: &["-p", "--package"], no_command: &[], local: "node_modules/.bin", on_path: true, home: &[".bun"], hosts: NPM },
    Runner { words: &["pnpm", "exec"], valued: &["--filter", "-F"], package: &[], no_command: &[], local: "node_modules/.bin", on_path: true, home: &[], hosts: &[] },
    Runner { words: &["pnpm", "dlx"], valued: &["--package"], package: &["--package"], no_command: &[], local: "", on_path: false, home: &[".local/share/pnpm", ".cache/pnpm"], hosts: NPM },
    Runner { words: &["pnpx"], valued: &["--package"], package: &["--package"], no_command: &[], local: "", on_path: false, home: &[".local/share/pnpm", ".cache/pnpm"], hosts: NPM },
    Runner { words: &["yarn", "dlx"], valued: &["-p", "--package"], package: &["-p", "--package"], no_command: &[], local: "", on_path: false, home: &[".yarn/berry"], hosts: &["registry.yarnpkg.com"] },
    Runner { words: &["uv", "run"], valued: UV_VALUED, package: &[], no_command: &["-m", "--module"], local: ".venv/bin", on_path: true, home: UV_HOME, hosts: PYPI },
    Runner { words: &["uv", "tool", "run"], valued: UV_VALUED, package: &["--from"], no_command: &[], local: "", on_path: false, home: UV_HOME, hosts: PYPI },
    Runner { words: &["uvx"], valued: UV_VALUED, package: &["--from"], no_command: &[], local: "", on_path: false, home: UV_HOME, hosts: PYPI },
    Runner { words: &["poetry", "run"], valued: &["-C", "--directory", "-P", "--project"], package: &[], no_command: &[], local: ".venv/bin", on_path: true, home: &[".cache/pypoetry/virtualenvs", ".config/pypoetry/config.toml"], hosts: &[] },
    Runner { words: &["pipx", "run"], valued: &["--spec", "--python", "--index-url", "-i", "--pip-args"], package: &["--spec"], no_command: &[], local: "", on_path: false, home: &[".local/share/pipx", ".cache/pipx"], hosts: PYPI },
];

/// The wrappers' names: each starts the program it is given.
pub const WRAPPERS: &[&str] = &["env", "nice", "timeout", "stdbuf", "nohup", "setsid", "time", "chrt", "ionice", "taskset", "xargs"];

/// The shells whose `-c SCRIPT` a command line may be.
pub const SHELLS: &[&str] = &["sh", "bash", "dash", "zsh", "ksh", "mksh", "fish"];

/// How deep wrappers nest before Cairn stops reading (`env env env …`).
const DEPTH: usize = 16;

/// Everything command line `argv` names (see the module docs); `home` expands a shell
/// script's `~/`.
pub fn named(argv: &[String], home: &Path) -> Vec<Named> {
    let mut out = Vec::new();
    walk(argv, Ctx { strict: true, ..Ctx::default() }, home, &mut out, 0);
    out
}

/// The program the line finally runs, through wrappers (`env A=1 nice claude` → `claude`;
/// a shell's `-c` script that is one command, its program): what names an agent CLI, for its
/// state and keys. Interpreters and package runners are programs of their own.
pub fn program(argv: &[String], home: &Path) -> String {
    let head = argv.first().cloned().unwrap_or_default();
    let inner = |n: &Named| n.strict && n.kind == Kind::Program && !WRAPPERS.contains(&base(&n.word)) && !SHELLS.contains(&base(&n.word));
    named(argv, home).into_iter().find(inner).map_or(head, |n| n.word)
}

/// What the package runners on the line need of the home (their caches and toolchains).
pub fn home_needs(argv: &[String], home: &Path) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for n in named(argv, home) {
        if let Kind::Package(r) = n.kind {
            for h in r.home {
                if !out.contains(h) {
                    out.push(h);
                }
            }
        }
    }
    out
}

/// Where the words being read stand.
#[derive(Debug, Clone, Default)]
struct Ctx {
    path: Option<String>,
    dir: Option<String>,
    strict: bool,
}

fn base(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// Reads `words` (a program and its arguments) into `out`.
fn walk(words: &[String], ctx: Ctx, home: &Path, out: &mut Vec<Named>, depth: usize) {
    let Some(head) = words.first() else { return };
    if depth > DEPTH || unknown(head) {
        return;
    }
    let args = &words[1..];
    if let Some((runner, at)) = runner(words) {
        out.push(named_as(head, Kind::Program, &ctx));
        return package(runner, &words[at..], ctx, home, out, depth);
    }
    out.push(named_as(head, Kind::Program, &ctx));
    let name = base(head);
    if WRAPPERS.contains(&name) {
        if let Some((rest, next)) = wrapper(name, args, ctx.clone()) {
            // `env -C DIR`: the directory must be there too.
            if let Some(dir) = next.dir.as_deref().filter(|d| next.dir != ctx.dir && !unknown(d)) {
                out.push(named_as(dir, Kind::Dir, &next));
            }
            walk(&rest, next, home, out, depth + 1);
        }
    } else if SHELLS.contains(&name) {
        shell(args, ctx, home, out, depth);
    } else if let Some(script) = words::script_of(name, args) {
        if !unknown(script) {
            out.push(named_as(script, Kind::Script, &ctx));
        }
    }
}

fn named_as(word: &str, kind: Kind, ctx: &Ctx) -> Named {
    Named { word: word.to_string(), kind, path: ctx.path.clone(), dir: ctx.dir.clone(), strict: ctx.strict }
}

/// A word whose value is known only when it runs (an expansion, a glob).
fn unknown(word: &str) -> bool {
    word.is_empty() || word.contains(['$', '`', '*', '?', '['])
}

/// The runner `words` start with, and where its own arguments begin.
fn runner(words: &[String]) -> Option<(&'static Runner, usize)> {
    let name = base(words.first()?);
    RUNNERS.iter().find(|r| r.words[0] == name && r.words.len() <= words.len() && r.words[1..].iter().zip(&words[1..]).all(|(a, b)| a == b)).map(|r| (r, r.words.len()))
}

/// A package runner's arguments: its options, then the command (or the package) it runs.
fn package(r: &'static Runner, args: &[String], ctx: Ctx, home: &Path, out: &mut Vec<Named>, depth: usize) {
    let mut i = 0;
    let mut named_package = false;
    while let Some(a) = args.get(i) {
        if a == "--" {
            i += 1;
            break;
        }
        if !a.starts_with('-') || a == "-" {
            break;
        }
        let name = a.split_once('=').map_or(a.as_str(), |(n, _)| n);
        if r.no_command.contains(&name) {
            return;
        }
        named_package |= r.package.contains(&name);
        i += if r.valued.contains(&a.as_str()) { 2 } else { 1 };
    }
    let Some(command) = args.get(i) else { return };
    // `uv run tool.py`: a script the runner's Python reads.
    if r.words[0] == "uv" && command.ends_with(".py") {
        return out.push(named_as(command, Kind::Script, &ctx));
    }
    let word = if named_package { command.clone() } else { command_of(command) };
    if unknown(&word) {
        return;
    }
    let mut rest = vec![word.clone()];
    rest.extend(args[i + 1..].iter().cloned());
    out.push(named_as(&word, Kind::Package(r), &ctx));
    // What the command is may be read on (`uv run python tool.py`, `npx env …`).
    let before = out.len();
    walk(&rest, ctx, home, out, depth + 1);
    if out.len() > before {
        out.remove(before);
    }
}

/// The command a package spec runs: its name without scope, version or extras
/// (`@scope/pkg@1` → `pkg`, `ruff==0.5` → `ruff`, `black[jupyter]` → `black`).
fn command_of(spec: &str) -> String {
    let s = spec.strip_prefix('@').map_or(spec, |s| s.split_once('/').map_or(s, |(_, p)| p));
    let end = s.find(['@', '=', '<', '>', '~', '!', '[', ';', ' ']).unwrap_or(s.len());
    s[..end].to_string()
}

/// What a shell runs: a script file, or the commands of its `-c` script.
fn shell(args: &[String], ctx: Ctx, home: &Path, out: &mut Vec<Named>, depth: usize) {
    let mut i = 0;
    let (mut command, mut stdin) = (false, false);
    while let Some(a) = args.get(i) {
        match a.as_str() {
            "--" | "-" => {
                i += 1;
                break;
            }
            "--rcfile" | "--init-file" => i += 2,
            _ if a.starts_with("--") => i += 1,
            _ if (a.starts_with('-') || a.starts_with('+')) && a.len() > 1 => {
                command |= a.contains('c') && a.starts_with('-');
                stdin |= a.contains('s') && a.starts_with('-');
                i += 1 + usize::from(a.contains(['o', 'O']));
            }
            _ => break,
        }
    }
    let Some(first) = args.get(i) else { return };
    if !command {
        if !stdin && !unknown(first) {
            out.push(named_as(first, Kind::Script, &ctx));
        }
        return;
    }
    let commands = words::shell_commands(first, home);
    // A script of one command is read as strictly as a command line; in a longer one, a
    // program may be tested for (`command -v x || …`).
    let one = commands.len() == 1 && !first.contains(['$', '`', '<', '>', '\n', ';', '|', '&']);
    for words in commands {
        walk(&words, Ctx { strict: ctx.strict && one, ..ctx.clone() }, home, out, depth + 1);
    }
}

/// The command a wrapper starts, and where it then stands; none when it starts nothing (no
/// command, or `chrt -p PID`).
fn wrapper(name: &str, args: &[String], ctx: Ctx) -> Option<(Vec<String>, Ctx)> {
    use words::{getopt, numeric, Syntax};
    let (opts, at): (Vec<(char, Option<String>)>, usize) = match name {
        "env" => return env(args, ctx),
        "nice" => {
            // `nice -5 prog`, `nice --5`: an adjustment of the old syntax.
            let skip = args.iter().take_while(|a| a.strip_prefix('-').is_some_and(|n| numeric(n.trim_start_matches(['-', '+'])))).count();
            let (o, at) = getopt(&Syntax { short: "n:", long: &[("adjustment", 'n', true)] }, &args[skip..]);
            (o, at + skip)
        }
        "timeout" => {
            let (o, at) = getopt(&Syntax { short: "k:s:fpv", long: &[("kill-after", 'k', true), ("signal", 's', true), ("foreground", 'f', false), ("preserve-status", 'p', false), ("verbose", 'v', false)] }, args);
            (o, at + 1)
        }
        "stdbuf" => getopt(&Syntax { short: "i:o:e:", long: &[("input", 'i', true), ("output", 'o', true), ("error", 'e', true)] }, args),
        "setsid" => getopt(&Syntax { short: "cfw", long: &[("ctty", 'c', false), ("fork", 'f', false), ("wait", 'w', false)] }, args),
        "time" => getopt(&Syntax { short: "f:o:apqvV", long: &[("format", 'f', true), ("output", 'o', true), ("append", 'a', false), ("portability", 'p', false), ("quiet", 'q', false), ("verbose", 'v', false)] }, args),
        "chrt" => {
            let long = &[("sched-runtime", 'T', true), ("sched-period", 'P', true), ("sched-deadline", 'D', true), ("pid", 'p', false), ("max", 'm', false), ("all-tasks", 'a', false)];
            let (o, at) = getopt(&Syntax { short: "T:P:D:abdefimoprRv", long }, args);
            let priority = args.get(at).is_some_and(|a| numeric(a));
            (o, at + usize::from(priority))
        }
        "ionice" => getopt(&Syntax { short: "c:n:p:P:u:t", long: &[("class", 'c', true), ("classdata", 'n', true), ("pid", 'p', true), ("pgid", 'P', true), ("uid", 'u', true), ("ignore", 't', false)] }, args),
        "taskset" => {
            let (o, at) = getopt(&Syntax { short: "acp", long: &[("all-tasks", 'a', false), ("cpu-list", 'c', false), ("pid", 'p', false)] }, args);
            (o, at + 1)
        }
        "xargs" => {
            let long = &[("arg-file", 'a', true), ("delimiter", 'd', true), ("max-args", 'n', true), ("max-procs", 'P', true), ("max-chars", 's', true), ("process-slot-var", 'S', true), ("null", '0', false), ("verbose", 't', false)];
            let (o, at) = getopt(&Syntax { short: "a:E:d:I:L:n:P:s:e::i::l::0oprtx", long }, args);
            if at >= args.len() {
                // No command: `echo`.
                return Some((vec!["echo".to_string()], ctx));
            }
            (o, at)
        }
        // nohup
        _ => getopt(&Syntax { short: "", long: &[] }, args),
    };
    // A process id instead of a command (`chrt -p`, `ionice -p`, `taskset -p`).
    let pids = match name {
        "chrt" => "pm",
        "ionice" => "pPu",
        "taskset" => "p",
        _ => "",
    };
    if opts.iter().any(|(c, _)| pids.contains(*c)) {
        return None;
    }
    let rest = args.get(at..).filter(|r| !r.is_empty())?;
    Some((rest.to_vec(), ctx))
}

/// `env [OPTION]... [-] [NAME=VALUE]... [COMMAND [ARG]...]`: `-i`/`-u PATH` clear `PATH`,
/// `PATH=…` sets it, `-C DIR` moves, `-S STRING` splits STRING into arguments in place.
fn env(args: &[String], mut ctx: Ctx) -> Option<(Vec<String>, Ctx)> {
    use words::{split_string, token, Syntax};
    let syntax = Syntax {
        short: "u:C:S:i0v",
        long: &[("unset", 'u', true), ("chdir", 'C', true), ("split-string", 'S', true), ("ignore-environment", 'i', false), ("null", '0', false), ("debug", 'v', false), ("block-signal", 'B', false), ("default-signal", 'D', false), ("ignore-signal", 'I', false), ("list-signal-handling", 'L', false)],
    };
    let mut args = args.to_vec();
    let mut i = 0;
    let mut splits = 0;
    while let Some(opts) = token(&syntax, &args, &mut i) {
        for (c, v) in opts {
            match (c, v) {
                ('i', _) => ctx.path = Some(String::new()),
                ('u', Some(v)) if v == "PATH" => ctx.path = Some(String::new()),
                ('C', Some(d)) => ctx.dir = Some(match &ctx.dir {
                    Some(prev) if !d.starts_with('/') => format!("{prev}/{d}"),
                    _ => d,
                }),
                ('S', Some(s)) if splits < DEPTH => {
                    splits += 1;
                    let mut spliced = split_string(&s);
                    spliced.extend(args.drain(i..));
                    args = spliced;
                    i = 0;
                }
                _ => {}
            }
        }
    }
    if args.get(i).is_some_and(|a| a == "-") {
        ctx.path = Some(String::new());
        i += 1;
    }
    while let Some((name, value)) = args.get(i).and_then(|a| a.split_once('=')) {
        if name == "PATH" {
            ctx.path = Some(value.to_string());
        }
        i += 1;
    }
    let rest = args.get(i..).filter(|r| !r.is_empty())?;
    Some((rest.to_vec(), ctx))
}
