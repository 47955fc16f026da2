//! The CPython form of [`super::transform`]: the same script, the same meaning. RustPython's
//! transform removes every `async` and `await`, so coroutine functions are plain functions and
//! an awaited value is the value itself. CPython gets the same source with one difference:
//! where RustPython drops a keyword that takes a value, CPython's shim gets a call that gives
//! the same value for anything RustPython could see, and runs a library's real awaitable to
//! its end (`cpython_shim.py`): `await x` becomes `__cairn_await__(x)`, the iterable of an
//! `async for` `__cairn_aiter__(...)`, the context manager of an `async with`
//! `__cairn_actx__(...)`. `async` goes as on RustPython; the last expression is the result.
//! Lines are kept (tracebacks name the script's lines).

use super::{depth, syntax_error, Diagnostic, RESULT_NAME};
use ruff_text_size::{Ranged, TextRange};
use rustpython_vm::compiler::ast::token::TokenKind;
use rustpython_vm::compiler::ast::{self, visitor::Visitor, Expr, Stmt};
use rustpython_vm::compiler::parser;

/// The CPython source of `source` (see the module docs).
pub fn transform(source: &str) -> Result<String, Diagnostic> {
    depth::on_parse_stack(|| {
        if let Some(d) = depth::diagnostic(source) {
            return Err(d);
        }
        let parsed = parser::parse_module(source).map_err(|e| syntax_error(source, &e))?;
        let mut edits = Edits { source, list: Vec::new() };
        if let Some(Stmt::Expr(last)) = parsed.syntax().body.last() {
            edits.wrap(last.range(), 0, &format!("{RESULT_NAME} = ("), ")");
        }
        for tok in parsed.tokens().iter().filter(|t| t.kind() == TokenKind::Async) {
            let at = tok.range().start().to_usize();
            let to = at + edits.keyword_len(at);
            edits.list.push(Edit { at, to, text: String::new(), rank: (1, -(at as isize)) });
        }
        edits.visit_body(&parsed.syntax().body);
        Ok(edits.apply())
    })
}

/// One change to the source: `[at, to)` replaced by `text`. At one offset, closing texts go
/// first (the innermost span's first), then opening texts (the outermost span's first).
struct Edit {
    at: usize,
    to: usize,
    text: String,
    /// Sort key among edits at the same offset.
    rank: (u8, isize),
}

struct Edits<'s> {
    source: &'s str,
    list: Vec<Edit>,
}

impl Edits<'_> {
    /// `open` before `range` (`skip` bytes of it replaced) and `close` after it.
    fn wrap(&mut self, range: TextRange, skip: usize, open: &str, close: &str) {
        let (start, end) = (range.start().to_usize(), range.end().to_usize());
        self.list.push(Edit { at: start, to: start + skip, text: open.to_string(), rank: (1, -(end as isize)) });
        self.list.push(Edit { at: end, to: end, text: close.to_string(), rank: (0, -(start as isize)) });
    }

    /// The length of the keyword at `at` and the blanks after it.
    fn keyword_len(&self, at: usize) -> usize {
        let rest = &self.source[at..];
        let word = rest.find(|c: char| !c.is_ascii_alphabetic()).unwrap_or(rest.len());
        word + rest[word..].find(|c: char| c != ' ' && c != '\t').unwrap_or(rest.len() - word)
    }

    fn apply(mut self) -> String {
        self.list.sort_by_key(|e| (e.at, e.rank));
        let mut out = String::with_capacity(self.source.len() + 16 * self.list.len());
        let mut last = 0usize;
        for e in &self.list {
            if e.at > last {
                out.push_str(&self.source[last..e.at]);
            }
            out.push_str(&e.text);
            last = last.max(e.to);
        }
        out.push_str(&self.source[last..]);
        out
    }
}

impl<'a> Visitor<'a> for Edits<'_> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match stmt {
            Stmt::For(f) if f.is_async => self.wrap(f.iter.range(), 0, "__cairn_aiter__((", "))"),
            Stmt::With(w) if w.is_async => {
                for item in &w.items {
                    self.wrap(item.context_expr.range(), 0, "__cairn_actx__((", "))");
                }
            }
            _ => {}
        }
        ast::visitor::walk_stmt(self, stmt);
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        if let Expr::Await(a) = expr {
            let skip = self.keyword_len(a.range().start().to_usize());
            self.wrap(a.range(), skip, "__cairn_await__(", ")");
        }
        ast::visitor::walk_expr(self, expr);
    }

    fn visit_comprehension(&mut self, c: &'a ast::Comprehension) {
        if c.is_async {
            self.wrap(c.iter.range(), 0, "__cairn_aiter__((", "))");
        }
        ast::visitor::walk_comprehension(self, c);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn awaits_become_calls_and_async_goes() {
        let cases = [
            ("x = await f(1)\n", "x = __cairn_await__(f(1))\n"),
            ("async def f(x):\n    return await g(x)\n", "def f(x):\n    return __cairn_await__(g(x))\n"),
            ("await f(\n  2)", "__cairn_result__ = (__cairn_await__(f(\n  2)))"),
            ("y = await (await a)\n", "y = __cairn_await__((__cairn_await__(a)))\n"),
            ("z = [await r(p) for p in ps]\n", "z = [__cairn_await__(r(p)) for p in ps]\n"),
            ("async for a in b, c:\n    pass\n", "for a in __cairn_aiter__((b, c)):\n    pass\n"),
            ("async for a in await g():\n    pass\n", "for a in __cairn_aiter__((__cairn_await__(g()))):\n    pass\n"),
            ("async with l as x, m:\n    pass\n", "with __cairn_actx__((l)) as x, __cairn_actx__((m)):\n    pass\n"),
            ("w = [x async for x in g()]\n", "w = [x for x in __cairn_aiter__((g()))]\n"),
            ("v = f'{await r(1)}'\n", "v = f'{__cairn_await__(r(1))}'\n"),
            ("f = lambda p: await r(p)\n", "f = lambda p: __cairn_await__(r(p))\n"),
            ("x = 1\n{'a': await x}", "x = 1\n__cairn_result__ = ({'a': __cairn_await__(x)})"),
            ("await\tf()", "__cairn_result__ = (__cairn_await__(f()))"),
        ];
        for (src, want) in cases {
            assert_eq!(transform(src).unwrap(), want, "{src:?}");
        }
        assert!(transform("await (\n").is_err());
    }
}
