//! How deep a source nests, measured on its tokens before anything parses it: the parser, the
//! AST visitors and the compiler recurse once per level of nesting, on the Rust stack, with no
//! guard of their own. A source nested deeper than CPython accepts is refused with CPython's
//! error instead (`too many nested parentheses` past 200 brackets, `too many levels of
//! indentation` past 100, a `RecursionError` during compilation past [`MAX_DEPTH`]), in the
//! parent's pre-flight check and in the child's `compile`, `exec`, `eval` and `ast.parse`.
//!
//! The depth is an upper bound of the AST's, from tokens alone: every operator, keyword, dot,
//! call, subscript and bracket adds a level to the group it is in; a comma, `=`, `;` or the
//! end of a statement starts a sibling (level 0 again); a bracket's group sits on the level its
//! opening reached; a `lambda` adds a level for its body, whatever its parameters are.

use rustpython_vm::compiler::ast::token::TokenKind;
use rustpython_vm::compiler::parser::{lexer, Mode};
use super::{line_col, Diagnostic};

/// Nested brackets CPython's tokenizer accepts (`MAXLEVEL`).
pub const MAX_BRACKETS: usize = 200;
/// Indentation levels CPython's tokenizer accepts (`MAXINDENT`).
pub const MAX_INDENT: usize = 100;
/// Levels of nesting accepted (CPython's compiler gives up near 3,000).
pub const MAX_DEPTH: usize = 2_500;

/// Why a source nests too deeply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TooDeep {
    Brackets,
    Indentation,
    Expression,
}

impl TooDeep {
    /// CPython's exception name and message for it.
    pub fn python(self) -> (&'static str, String) {
        match self {
            TooDeep::Brackets => ("SyntaxError", "too many nested parentheses".into()),
            TooDeep::Indentation => ("IndentationError", "too many levels of indentation".into()),
            TooDeep::Expression => ("RecursionError", format!("maximum recursion depth exceeded during compilation (nested more than {MAX_DEPTH} levels deep)")),
        }
    }

    /// The pre-flight check's wording.
    pub fn message(self) -> String {
        match self.python() {
            ("RecursionError", m) => format!("RecursionError: {m}"),
            (_, m) => format!("syntax error: {m}"),
        }
    }
}

/// A group on the stack: a bracket (or an f-string) or a lambda's parameters.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Group {
    Bracket,
    Lambda,
}

/// The first way `source` nests too deeply, if any. Linear in the source.
pub fn scan(source: &str) -> Option<TooDeep> {
    let mut lex = lexer::lex(source, Mode::Module);
    // (group, its level); `base` is the sum of the levels, `cur` the open group's own.
    let mut stack: Vec<(Group, usize)> = Vec::new();
    let (mut base, mut cur, mut indent, mut brackets) = (0usize, 0usize, 0usize, 0usize);
    loop {
        let kind = lex.next_token();
        match kind {
            TokenKind::EndOfFile => return None,
            TokenKind::Lpar | TokenKind::Lsqb | TokenKind::Lbrace | TokenKind::FStringStart | TokenKind::TStringStart => {
                stack.push((Group::Bracket, cur + 1));
                base += cur + 1;
                cur = 0;
                brackets += 1;
                if brackets > MAX_BRACKETS {
                    return Some(TooDeep::Brackets);
                }
            }
            TokenKind::Rpar | TokenKind::Rsqb | TokenKind::Rbrace | TokenKind::FStringEnd | TokenKind::TStringEnd => {
                // A lambda's parameters end with its group at the latest.
                while let Some((Group::Lambda, level)) = stack.last().copied() {
                    stack.pop();
                    base -= level;
                }
                if let Some((_, level)) = stack.pop() {
                    base -= level;
                    cur = level;
                    brackets -= 1;
                }
            }
            TokenKind::Lambda => {
                stack.push((Group::Lambda, cur + 1));
                base += cur + 1;
                cur = 0;
            }
            TokenKind::Colon if matches!(stack.last(), Some((Group::Lambda, _))) => {
                // The body nests one level below what came before the lambda.
                if let Some((_, level)) = stack.pop() {
                    base -= level;
                    cur = level;
                }
            }
            TokenKind::Comma | TokenKind::Equal | TokenKind::Semi => cur = 0,
            TokenKind::Newline => {
                // A statement ends every lambda still open (brackets cannot be: no newline then).
                while let Some((Group::Lambda, level)) = stack.last().copied() {
                    stack.pop();
                    base -= level;
                }
                cur = 0;
            }
            TokenKind::Indent => indent += 1,
            TokenKind::Dedent => indent = indent.saturating_sub(1),
            k if k.is_operator() || k.is_keyword() => cur += 1,
            _ => {}
        }
        if indent > MAX_INDENT {
            return Some(TooDeep::Indentation);
        }
        if base + cur + indent > MAX_DEPTH {
            return Some(TooDeep::Expression);
        }
    }
}

/// Where `source` first nests too deeply: the shortest prefix that already does, as a byte
/// offset (a bisection of [`scan`]; only on the error path).
pub fn locate(source: &str) -> usize {
    let (mut ok, mut bad) = (0usize, source.len());
    while bad - ok > 1 {
        let mut mid = ok + (bad - ok) / 2;
        while !source.is_char_boundary(mid) {
            mid += 1;
        }
        if mid >= bad {
            break;
        }
        if scan(&source[..mid]).is_some() {
            bad = mid;
        } else {
            ok = mid;
        }
    }
    bad
}

/// Stack of the thread that parses, visits and drops a script's AST: [`MAX_DEPTH`]
/// levels of the deepest kind with room to spare (reserved, touched only as deep as it goes).
const PARSE_STACK: usize = 64 * 1024 * 1024;

/// Runs `f` on a thread with [`PARSE_STACK`] (callers run on worker threads of 2 MB);
/// inline if no thread can be started.
pub(super) fn on_parse_stack<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    let mut f = Some(f);
    let out = std::thread::scope(|s| {
        let own = std::thread::Builder::new().name("cairn-parse".into()).stack_size(PARSE_STACK);
        match own.spawn_scoped(s, || (f.take().expect("not yet run"))()) {
            Ok(h) => Some(h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))),
            Err(_) => None,
        }
    });
    match (out, f) {
        (Some(v), _) => v,
        (None, Some(f)) => f(),
        (None, None) => unreachable!("the closure ran on its thread"),
    }
}

/// The diagnostic for a source nested deeper than CPython accepts, at the first place it does.
pub fn diagnostic(source: &str) -> Option<Diagnostic> {
    let why = scan(source)?;
    let (line, col) = line_col(source, locate(source).saturating_sub(1));
    Some(Diagnostic { line, col, message: why.message() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinary_code_passes() {
        let long_list = format!("x = [{}]\n", (0..20_000).map(|i| format!("-{i}")).collect::<Vec<_>>().join(", "));
        let chain = format!("s = {}\n", vec!["'a'"; 1_000].join(" + "));
        for ok in ["def f(a, b=1):\n    return lambda x, y: x + y\n", "x = f(a)(b)[c].d\n", long_list.as_str(), chain.as_str(), "y = f'{a!r:>{w}}'\n"] {
            assert_eq!(scan(ok), None, "{ok:.60}");
        }
    }

    #[test]
    fn deep_nesting_is_refused() {
        let paren = format!("{}1{}", "(".repeat(201), ")".repeat(201));
        assert_eq!(scan(&paren), Some(TooDeep::Brackets));
        assert_eq!(scan(&"(".repeat(200)), None);
        let blocks: String = (0..101).map(|i| format!("{}if x:\n", " ".repeat(i))).collect::<String>() + &" ".repeat(101) + "pass\n";
        assert_eq!(scan(&blocks), Some(TooDeep::Indentation));
        for deep in [format!("{}1", "-".repeat(3_000)), format!("1{}", "+1".repeat(3_000)), format!("a{}", ".b".repeat(3_000)), format!("f{}", "()".repeat(3_000)), "lambda a, b=2: ".repeat(3_000) + "1", format!("{}1", "not ".repeat(3_000))] {
            assert_eq!(scan(&deep), Some(TooDeep::Expression), "{deep:.40}");
        }
        let at = locate(&format!("x = 1\ny = {}1{}\n", "[".repeat(300), "]".repeat(300)));
        assert_eq!(at, "x = 1\ny = ".len() + 201);
    }
}
