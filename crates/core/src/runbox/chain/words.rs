//! Words as the programs of a command line read them, for [`super`]: options as
//! `getopt_long` reads them (the wrappers'), `env -S`'s splitting, the commands of a shell's
//! `-c` script, and the script an interpreter is given. Pure; best effort where a word's
//! value is known only when it runs (such a word is kept as written, `$` and all).

use std::path::Path;

/// A program's options as `getopt_long` with a leading `+` reads them: `short` as getopt's
/// string (`"n:"`: `-n` takes a value, attached or the next word; `"e::"`: an optional,
/// attached one), `long` as (name, the letter it stands for, takes a value). Reading stops
/// at the first word that is no option, and after `--`.
pub(super) struct Syntax {
    pub short: &'static str,
    pub long: &'static [(&'static str, char, bool)],
}

impl Syntax {
    /// 0: no value, 1: a value, 2: an optional attached value.
    fn arity(&self, c: char) -> usize {
        let s = self.short;
        match s.find(c) {
            Some(i) if c != ':' => s[i + c.len_utf8()..].chars().take(2).take_while(|x| *x == ':').count(),
            _ => 0,
        }
    }
}

/// Every option of `args`, and where the operands begin.
pub(super) fn getopt(syntax: &Syntax, args: &[String]) -> (Vec<(char, Option<String>)>, usize) {
    let mut i = 0;
    let mut out = Vec::new();
    while let Some(opts) = token(syntax, args, &mut i) {
        out.extend(opts);
    }
    (out, i)
}

/// The options of the word at `*i` (a cluster `-abc`, or one long option), moving past it
/// and past a value taken from the next word; None at the first operand (`*i` on it) or
/// after `--` (`*i` past it).
pub(super) fn token(syntax: &Syntax, args: &[String], i: &mut usize) -> Option<Vec<(char, Option<String>)>> {
    let a = args.get(*i)?;
    if a == "--" {
        *i += 1;
        return None;
    }
    if let Some(long) = a.strip_prefix("--") {
        let (name, value) = long.split_once('=').map_or((long, None), |(n, v)| (n, Some(v.to_string())));
        // An unambiguous prefix names a long option, as getopt_long has it.
        let exact = syntax.long.iter().find(|(n, ..)| *n == name);
        let mut prefixed = syntax.long.iter().filter(|(n, ..)| n.starts_with(name));
        let found = exact.or_else(|| prefixed.next().filter(|_| prefixed.next().is_none()));
        *i += 1;
        let Some((_, c, valued)) = found else { return Some(Vec::new()) };
        let value = match (valued, value) {
            (true, None) => args.get(*i).inspect(|_| *i += 1).cloned(),
            (_, v) => v,
        };
        return Some(vec![(*c, value)]);
    }
    if a.len() < 2 || !a.starts_with('-') {
        return None;
    }
    *i += 1;
    let mut out = Vec::new();
    for (at, c) in a.char_indices().skip(1) {
        let rest = &a[at + c.len_utf8()..];
        match syntax.arity(c) {
            0 => out.push((c, None)),
            1 if rest.is_empty() => {
                out.push((c, args.get(*i).cloned()));
                *i += 1;
                break;
            }
            _ => {
                out.push((c, Some(rest.to_string()).filter(|r| !r.is_empty())));
                break;
            }
        }
    }
    Some(out)
}

/// A number, as a priority or a nice value is written.
pub(super) fn numeric(s: &str) -> bool {
    !s.is_empty() && s.trim_start_matches(['-', '+']).chars().all(|c| c.is_ascii_digit()) && s.chars().any(|c| c.is_ascii_digit())
}

/// `env -S STRING` split into arguments as `env` splits it: white space separates, `'…'`
/// and `"…"` quote, `\_` is a separator outside quotes and a space in them, `\c` ends the
/// string, `#` at a word's start comments out the rest; `${NAME}` is kept as written.
pub(super) fn split_string(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = s.chars().peekable();
    let mut quote: Option<char> = None;
    while let Some(c) = chars.next() {
        match (quote, c) {
            (None, c) if c.is_whitespace() => out.extend(word.take()),
            (None, '#') if word.is_none() => break,
            (None, '\'' | '"') => {
                quote = Some(c);
                word.get_or_insert_with(String::new);
            }
            (Some(q), c) if c == q => quote = None,
            (Some('\''), '\\') if matches!(chars.peek(), Some('\\' | '\'')) => word.get_or_insert_with(String::new).extend(chars.next()),
            (Some('\''), c) => word.get_or_insert_with(String::new).push(c),
            (_, '\\') => match chars.next() {
                Some('c') => break,
                Some('_') if quote.is_none() => out.extend(word.take()),
                Some('_') => word.get_or_insert_with(String::new).push(' '),
                Some(e) => word.get_or_insert_with(String::new).push(match e {
                    'n' => '\n',
                    't' => '\t',
                    'r' => '\r',
                    'f' => '\x0c',
                    'v' => '\x0b',
                    other => other,
                }),
                None => {}
            },
            (_, c) => word.get_or_insert_with(String::new).push(c),
        }
    }
    out.extend(word);
    out
}

/// Words that start a command but are the shell's own; the command is what follows.
const PREFIXES: &[&str] = &["if", "then", "elif", "else", "do", "while", "until", "!", "{", "(", "exec", "command", "builtin", "time", "-p", "--"];
/// Words that end a construct or start one Cairn does not read.
const SKIPPED: &[&str] = &["fi", "done", "esac", "}", ")", ";;", "for", "case", "select", "function", "[["];

/// The simple commands of a shell script, each as its words, quotes removed, redirections
/// and the shell's own words (`if`, `exec`, assignments) left out; a leading `~/` is `home`.
/// A word with an expansion keeps its `$`, `` ` `` or glob as written.
pub(super) fn shell_commands(script: &str, home: &Path) -> Vec<Vec<String>> {
    let mut commands: Vec<Vec<String>> = Vec::new();
    for raw in lex(script, home) {
        let mut words: &[String] = &raw;
        let mut looks = false;
        while let Some(w) = words.first() {
            // `command -v x` only looks: nothing runs.
            if w == "command" && words.get(1).is_some_and(|n| n == "-v" || n == "-V") {
                looks = true;
                break;
            }
            if !PREFIXES.contains(&w.as_str()) && !assignment(w) {
                break;
            }
            words = &words[1..];
        }
        match words.first() {
            Some(w) if !looks && !SKIPPED.contains(&w.as_str()) && !w.ends_with("()") => commands.push(words.to_vec()),
            _ => {}
        }
    }
    commands
}

/// A shell script's words, cut into simple commands at `;`, `&`, `|`, parentheses and new
/// lines; redirections (`2>&1`, `> file`, `<in`) dropped.
fn lex(script: &str, home: &Path) -> Vec<Vec<String>> {
    let mut commands = vec![Vec::new()];
    let mut word: Option<String> = None;
    let mut redirect = false;
    let mut chars = script.chars().peekable();
    let end_word = |word: &mut Option<String>, redirect: &mut bool, commands: &mut Vec<Vec<String>>| {
        if let Some(w) = word.take() {
            let w = match w.strip_prefix("~/") {
                Some(rest) => format!("{}/{rest}", home.display()),
                None => w,
            };
            if !std::mem::take(redirect) {
                commands.last_mut().map(|c| c.push(w));
            }
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                w.extend(chars.by_ref().take_while(|c| *c != '\''));
            }
            '"' => double_quoted(&mut chars, word.get_or_insert_with(String::new)),
            '\\' => match chars.next() {
                Some('\n') | None => {}
                Some(e) => word.get_or_insert_with(String::new).push(e),
            },
            '#' if word.is_none() => {
                chars.by_ref().take_while(|c| *c != '\n').for_each(drop);
                end_word(&mut word, &mut redirect, &mut commands);
                commands.push(Vec::new());
            }
            '`' | '$' if c == '`' || chars.peek() == Some(&'(') => substitution(c, &mut chars, word.get_or_insert_with(String::new)),
            '<' | '>' => {
                // `2>`: the digits were the descriptor, not a word.
                if word.as_deref().is_some_and(|w| w.chars().all(|c| c.is_ascii_digit())) {
                    word = None;
                }
                end_word(&mut word, &mut redirect, &mut commands);
                while chars.next_if(|c| matches!(c, '<' | '>' | '&' | '|')).is_some() {}
                redirect = true;
            }
            ';' | '&' | '|' | '(' | ')' | '\n' => {
                end_word(&mut word, &mut redirect, &mut commands);
                commands.push(Vec::new());
            }
            c if c.is_whitespace() => end_word(&mut word, &mut redirect, &mut commands),
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    end_word(&mut word, &mut redirect, &mut commands);
    commands.retain(|c| !c.is_empty());
    commands
}

/// The rest of a `"…"` word into `w`: `\` escapes `"`, `\`, `$` and `` ` ``.
fn double_quoted(chars: &mut std::iter::Peekable<std::str::Chars>, w: &mut String) {
    while let Some(c) = chars.next() {
        match c {
            '"' => break,
            '\\' if matches!(chars.peek(), Some('"' | '\\' | '$' | '`')) => w.extend(chars.next()),
            c => w.push(c),
        }
    }
}

/// A command substitution (`` `…` `` or `$(…)`, `open` its first character) kept whole in
/// `w`: a word whose value is known only when it runs.
fn substitution(open: char, chars: &mut std::iter::Peekable<std::str::Chars>, w: &mut String) {
    w.push(open);
    let mut depth = 0;
    for c in chars.by_ref() {
        w.push(c);
        match open {
            '`' if c == '`' => break,
            '`' => {}
            _ => {
                depth += i32::from(c == '(') - i32::from(c == ')');
                if depth == 0 {
                    break;
                }
            }
        }
    }
}

/// `NAME=VALUE`, NAME a shell variable's name.
pub(super) fn assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| !name.is_empty() && !name.starts_with(|c: char| c.is_ascii_digit()) && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
}

/// The script file interpreter `name` (`python3`, `node`, `perl`, `ruby`) is given in
/// `args`; none when it runs code given inline (`-c`, `-e`, `-m`) or from stdin.
pub(super) fn script_of<'a>(name: &str, args: &'a [String]) -> Option<&'a String> {
    // Letters that take a value (attached, or the next word), letters that run inline code,
    // long options with a value, long options that run inline code.
    let (valued, inline, long, long_inline): (&str, &str, &[&str], &[&str]) = match name {
        n if python(n) => ("WXQ", "cm", &["--check-hash-based-pycs"], &[]),
        "node" | "nodejs" => ("rC", "epi", &["--require", "--import", "--loader", "--experimental-loader", "--input-type", "--conditions", "--title"], &["--eval", "--print", "--test", "--interactive"]),
        "perl" => ("", "eE", &[], &[]),
        "ruby" => ("IrC", "e", &[], &[]),
        _ => return None,
    };
    let mut i = 0;
    while let Some(a) = args.get(i) {
        if a == "--" {
            i += 1;
            break;
        }
        if a == "-" || !a.starts_with('-') {
            break;
        }
        let mut next = false;
        if let Some(long_opt) = a.strip_prefix("--") {
            let head = long_opt.split_once('=').map_or(long_opt, |(h, _)| h);
            let head = format!("--{head}");
            if long_inline.contains(&head.as_str()) {
                return None;
            }
            next = long.contains(&head.as_str()) && !a.contains('=');
        } else {
            for (at, c) in a.char_indices().skip(1) {
                if inline.contains(c) {
                    return None;
                }
                if valued.contains(c) {
                    next = a[at + c.len_utf8()..].is_empty();
                    break;
                }
            }
        }
        i += 1 + usize::from(next);
    }
    args.get(i).filter(|a| a.as_str() != "-")
}

fn python(name: &str) -> bool {
    let v = name.strip_prefix("python").or_else(|| name.strip_prefix("pypy")).unwrap_or("x");
    v.chars().all(|c| c.is_ascii_digit() || c == '.')
}
