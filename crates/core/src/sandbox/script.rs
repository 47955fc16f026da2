//! Agent scripts before they run: the pre-flight check of SPEC §4 (`cairn check`) and the
//! transform that lets `await f()` and `f()` both work (externals are synchronous calls, so
//! every `async`/`await` keyword is removed from the token stream; CPython's form: [`awaits`]).
//!
//! The check works on the parsed AST and reports `line:col: message` diagnostics; [`calls`]
//! judges the arguments of each call to an external. Both refuse a source that nests deeper
//! than CPython accepts before parsing it ([`depth`]), and parse on a thread of their own with
//! room for the nesting they accept: a hostile script never overflows the caller's stack.

mod awaits;
mod calls;
mod cpython;
pub mod depth;

pub use {awaits::transform as transform_cpython, cpython::check as check_cpython};

use super::policy::{self, ALLOWED_IMPORTS, FORBIDDEN_BUILTINS, SAFE_BUILTINS};
use crate::externals;
use rustpython_vm::compiler::ast::{self, token::TokenKind, visitor::Visitor, Expr, Stmt};
use rustpython_vm::compiler::parser;
use serde::Serialize;
use std::collections::HashSet;
use ruff_text_size::Ranged;

/// One finding of the pre-flight check.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Diagnostic {
    pub line: usize,
    pub col: usize,
    pub message: String,
}

/// Converts a byte offset into 1-based line and column (columns count characters).
pub fn line_col(source: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(source.len());
    let before = &source[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, source[line_start..offset].chars().count() + 1)
}

fn syntax_error(source: &str, e: &parser::ParseError) -> Diagnostic {
    let (line, col) = line_col(source, e.location.start().to_usize());
    Diagnostic { line, col, message: format!("syntax error: {}", e.error) }
}

/// Name the transformed script stores its last expression's value in.
pub const RESULT_NAME: &str = "__cairn_result__";

/// Rewrites the script for the sandbox: every `async` and `await` keyword (and the blanks
/// after it) is removed, so externals are plain calls with or without `await`; a final
/// expression statement becomes `__cairn_result__ = (...)`, the run's result. Lines are kept.
pub fn transform(source: &str) -> Result<String, Diagnostic> {
    depth::on_parse_stack(|| transform_parsed(source))
}

fn transform_parsed(source: &str) -> Result<String, Diagnostic> {
    if let Some(d) = depth::diagnostic(source) {
        return Err(d);
    }
    let parsed = parser::parse_module(source).map_err(|e| syntax_error(source, &e))?;
    // (start, end, replacement); insertions sort before deletions at the same offset.
    let mut edits: Vec<(usize, usize, &str)> = Vec::new();
    if let Some(Stmt::Expr(last)) = parsed.syntax().body.last() {
        let r = last.range();
        edits.push((r.start().to_usize(), r.start().to_usize(), "__cairn_result__ = ("));
        edits.push((r.end().to_usize(), r.end().to_usize(), ")"));
    }
    for tok in parsed.tokens().iter() {
        if matches!(tok.kind(), TokenKind::Async | TokenKind::Await) {
            let start = tok.range().start().to_usize();
            let mut end = tok.range().end().to_usize();
            while source[end..].starts_with([' ', '\t']) {
                end += 1;
            }
            edits.push((start, end, ""));
        }
    }
    edits.sort_by_key(|e| (e.0, e.1));
    let mut out = String::with_capacity(source.len() + 32);
    let mut last = 0usize;
    for (start, end, text) in edits {
        out.push_str(&source[last..start.max(last)]);
        out.push_str(text);
        last = end.max(last);
    }
    out.push_str(&source[last..]);
    Ok(out)
}

/// The pre-flight check: syntax, imports, unknown or forbidden calls, externals' arguments.
pub fn check(source: &str) -> Vec<Diagnostic> {
    checked(source, |body, bound| {
        let bound = bound.iter().map(|n| policy::normalize(n)).collect();
        let mut checker = Checker { source, bound, diags: Vec::new() };
        checker.visit_body(body);
        checker.diags
    })
}

/// Both checks' frame: nesting limits, the parse on its own stack, the bound names, `visit`,
/// one finding per position (a call to a forbidden builtin is not also a "use" of it).
pub(crate) fn checked(source: &str, visit: impl FnOnce(&[ast::Stmt], HashSet<String>) -> Vec<Diagnostic> + Send) -> Vec<Diagnostic> {
    depth::on_parse_stack(|| {
        if let Some(d) = depth::diagnostic(source) {
            return vec![d];
        }
        let parsed = match parser::parse_module(source) {
            Ok(p) => p,
            Err(e) => return vec![syntax_error(source, &e)],
        };
        let (module, mut binder) = (parsed.syntax(), Binder::default());
        binder.visit_body(&module.body);
        let mut diags = visit(&module.body, binder.names);
        diags.sort_by_key(|d| (d.line, d.col));
        diags.dedup_by(|a, b| a.line == b.line && a.col == b.col);
        diags
    })
}

/// Collects every name the script binds anywhere (a deliberate over-approximation of scopes).
#[derive(Default)]
struct Binder {
    names: HashSet<String>,
}

impl Binder {
    fn bind_target(&mut self, e: &Expr) {
        match e {
            Expr::Name(n) => {
                self.names.insert(n.id.to_string());
            }
            Expr::Tuple(t) => t.elts.iter().for_each(|x| self.bind_target(x)),
            Expr::List(l) => l.elts.iter().for_each(|x| self.bind_target(x)),
            Expr::Starred(s) => self.bind_target(&s.value),
            _ => {}
        }
    }
}

impl<'a> Visitor<'a> for Binder {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match stmt {
            Stmt::FunctionDef(f) => {
                // An `@external` stub is the external itself: its calls are checked as such.
                if !(is_external_stub(f) && f.name.parse::<externals::External>().is_ok()) {
                    self.names.insert(f.name.to_string());
                }
                for p in f.parameters.iter() {
                    self.names.insert(p.name().to_string());
                }
            }
            Stmt::ClassDef(c) => {
                self.names.insert(c.name.to_string());
            }
            Stmt::Assign(a) => a.targets.iter().for_each(|t| self.bind_target(t)),
            Stmt::AnnAssign(a) => self.bind_target(&a.target),
            Stmt::AugAssign(a) => self.bind_target(&a.target),
            Stmt::For(f) => self.bind_target(&f.target),
            Stmt::With(w) => w.items.iter().filter_map(|i| i.optional_vars.as_deref()).for_each(|t| self.bind_target(t)),
            Stmt::Import(i) => {
                for a in &i.names {
                    let n = a.asname.as_ref().map_or_else(|| a.name.split('.').next().unwrap_or("").to_string(), |n| n.to_string());
                    self.names.insert(n);
                }
            }
            Stmt::ImportFrom(i) => {
                let grail = i.level == 0 && i.module.as_ref().is_some_and(|m| m.as_str() == "grail");
                for a in &i.names {
                    // `from grail import read_file` names the external itself.
                    if grail && a.asname.is_none() && a.name.parse::<externals::External>().is_ok() {
                        continue;
                    }
                    self.names.insert(a.asname.as_ref().unwrap_or(&a.name).to_string());
                }
            }
            Stmt::Try(t) => {
                for h in &t.handlers {
                    let ast::ExceptHandler::ExceptHandler(h) = h;
                    if let Some(n) = &h.name {
                        self.names.insert(n.to_string());
                    }
                }
            }
            Stmt::Global(g) => g.names.iter().for_each(|n| {
                self.names.insert(n.to_string());
            }),
            Stmt::Nonlocal(g) => g.names.iter().for_each(|n| {
                self.names.insert(n.to_string());
            }),
            _ => {}
        }
        ast::visitor::walk_stmt(self, stmt);
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        match expr {
            Expr::Named(n) => self.bind_target(&n.target),
            Expr::Lambda(l) => {
                if let Some(params) = &l.parameters {
                    for p in params.iter() {
                        self.names.insert(p.name().to_string());
                    }
                }
            }
            _ => {}
        }
        ast::visitor::walk_expr(self, expr);
    }

    fn visit_comprehension(&mut self, c: &'a ast::Comprehension) {
        self.bind_target(&c.target);
        ast::visitor::walk_comprehension(self, c);
    }

    fn visit_pattern(&mut self, p: &'a ast::Pattern) {
        match p {
            ast::Pattern::MatchAs(m) => {
                if let Some(n) = &m.name {
                    self.names.insert(n.to_string());
                }
            }
            ast::Pattern::MatchStar(m) => {
                if let Some(n) = &m.name {
                    self.names.insert(n.to_string());
                }
            }
            ast::Pattern::MatchMapping(m) => {
                if let Some(n) = &m.rest {
                    self.names.insert(n.to_string());
                }
            }
            _ => {}
        }
        ast::visitor::walk_pattern(self, p);
    }
}

/// Is `f` decorated `@external` (or `@grail.external`)?
fn is_external_stub(f: &ast::StmtFunctionDef) -> bool {
    f.decorator_list.iter().any(|d| match &d.expression {
        Expr::Name(n) => n.id.as_str() == "external",
        Expr::Attribute(a) => a.attr.as_str() == "external" && matches!(a.value.as_ref(), Expr::Name(n) if n.id.as_str() == "grail"),
        _ => false,
    })
}

struct Checker<'s> {
    source: &'s str,
    bound: HashSet<String>,
    diags: Vec<Diagnostic>,
}

impl Checker<'_> {
    fn check_alias(&mut self, a: &ast::Alias) {
        if let Some(name) = &a.asname {
            if let Some(why) = policy::name_refusal(name.as_str()) {
                self.report(name.range().start().to_usize(), why);
            }
        }
    }

    fn report(&mut self, offset: usize, message: String) {
        let (line, col) = line_col(self.source, offset);
        self.diags.push(Diagnostic { line, col, message });
    }
}

impl<'a> Visitor<'a> for Checker<'_> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match stmt {
            Stmt::Import(i) => {
                for a in &i.names {
                    let top = policy::normalize(a.name.split('.').next().unwrap_or(""));
                    if !ALLOWED_IMPORTS.contains(&top.as_str()) {
                        self.report(a.range().start().to_usize(), format!("import of '{}' is not allowed: the sandbox has no module '{top}' (it has {})", a.name, ALLOWED_IMPORTS.join(", ")));
                    }
                    self.check_alias(a);
                }
            }
            Stmt::ImportFrom(i) => {
                let module = i.module.as_ref().map(|m| policy::normalize(m.as_str())).unwrap_or_default();
                let top = module.split('.').next().unwrap_or("");
                if i.level > 0 || !ALLOWED_IMPORTS.contains(&top) {
                    self.report(i.range().start().to_usize(), format!("import from '{module}' is not allowed: the sandbox has no module '{top}' (it has {})", ALLOWED_IMPORTS.join(", ")));
                }
                for a in &i.names {
                    if let Some(why) = policy::name_refusal(a.name.as_str()) {
                        self.report(a.range().start().to_usize(), why);
                    }
                    self.check_alias(a);
                }
            }
            Stmt::Global(g) => {
                for n in &g.names {
                    if let Some(why) = policy::name_refusal(n.as_str()) {
                        self.report(n.range().start().to_usize(), why);
                    }
                }
            }
            Stmt::Nonlocal(g) => {
                for n in &g.names {
                    if let Some(why) = policy::name_refusal(n.as_str()) {
                        self.report(n.range().start().to_usize(), why);
                    }
                }
            }
            _ => {}
        }
        ast::visitor::walk_stmt(self, stmt);
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        match expr {
            Expr::Call(call) => {
                if let Expr::Name(n) = call.func.as_ref() {
                    let name = policy::normalize(n.id.as_str());
                    let name = name.as_str();
                    let at = n.range().start().to_usize();
                    if FORBIDDEN_BUILTINS.contains(&name) && !self.bound.contains(name) {
                        self.report(at, format!("call to forbidden builtin '{name}'"));
                    } else if let (false, Ok(external)) = (self.bound.contains(name), name.parse::<externals::External>()) {
                        let found = calls::check(external, call);
                        self.diags.extend(calls::diagnostics(self.source, found));
                    } else if !self.bound.contains(name) && !SAFE_BUILTINS.contains(&name) {
                        self.report(at, format!("call to unknown function '{name}'"));
                    }
                }
                // A literal template: "{0.__class__}".format(x).
                if let Expr::Attribute(attr) = call.func.as_ref() {
                    if let (Expr::StringLiteral(lit), "format" | "format_map") = (attr.value.as_ref(), attr.attr.as_str()) {
                        if let Some(why) = policy::format_refusal(lit.value.to_str()) {
                            self.report(lit.range().start().to_usize(), why);
                        }
                    }
                }
            }
            Expr::Name(n) => {
                let name = policy::normalize(n.id.as_str());
                let at = n.range().start().to_usize();
                if let Some(why) = policy::name_refusal(&name) {
                    self.report(at, why);
                } else if FORBIDDEN_BUILTINS.contains(&name.as_str()) && !self.bound.contains(&name) && !matches!(n.ctx, ast::ExprContext::Store) {
                    self.report(at, format!("use of forbidden builtin '{name}'"));
                }
            }
            Expr::Attribute(a) => {
                if let Some(why) = policy::attribute_refusal(a.attr.as_str()) {
                    self.report(a.attr.range().start().to_usize(), why);
                }
            }
            _ => {}
        }
        ast::visitor::walk_expr(self, expr);
    }

    fn visit_pattern_keyword(&mut self, kw: &'a ast::PatternKeyword) {
        // `case object(__globals__=g)` reads an attribute.
        if let Some(why) = policy::attribute_refusal(kw.attr.as_str()) {
            self.report(kw.attr.range().start().to_usize(), why);
        }
        ast::visitor::walk_pattern_keyword(self, kw);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transform_strips_async_and_captures_result() {
        let src = "async def f(x):\n    return await g(x)\nr = await f(1)\nasync for a in b:\n    pass\nawait f(\n  2)\n";
        let out = transform(src).unwrap();
        assert_eq!(out, "def f(x):\n    return g(x)\nr = f(1)\nfor a in b:\n    pass\n__cairn_result__ = (f(\n  2))\n");
        assert_eq!(transform("x = 1\n{'a': x}").unwrap(), "x = 1\n__cairn_result__ = ({'a': x})");
    }

    #[test]
    fn check_reports_line_col() {
        let cases: &[(&str, &[&str])] = &[
            ("x = read_file('a')\n", &[]),
            ("import socket\n", &["1:8: import of 'socket' is not allowed"]),
            ("import os\nwith open('a') as f:\n    f.read()\n", &[]),
            ("from subprocess import run\n", &["1:1: import from 'subprocess'"]),
            ("y = 1\nfoo(y)\n", &["2:1: call to unknown function 'foo'"]),
            ("breakpoint()\n", &["1:1: call to forbidden builtin 'breakpoint'"]),
            ("eval('1')\nexec('x = 1')\ntype(1).__mro__\n", &[]),
            ("def foo():\n    pass\nfoo()\n", &[]),
            ("x = (\n", &["syntax error"]),
            ("f = breakpoint\n", &["1:5: use of forbidden builtin 'breakpoint'"]),
        ];
        for (src, want) in cases {
            let got: Vec<String> = check(src).iter().map(|d| format!("{}:{}: {}", d.line, d.col, d.message)).collect();
            assert_eq!(got.len(), want.len(), "{src:?}: {got:?}");
            for (g, w) in got.iter().zip(want.iter()) {
                assert!(g.contains(w), "{src:?}: got {g:?}, want {w:?}");
            }
        }
    }
}
