//! The pre-flight check of a script that runs on CPython (`[sandbox] interpreter =
//! "cpython"`): syntax (the same parser and nesting limits as RustPython's check) and each
//! call to an external against its signature. No import policy and no name rules: CPython runs
//! inside the run workspace's OS boundary, which is what confines it.

use super::{calls, depth, syntax_error, Binder, Diagnostic};
use crate::externals;
use rustpython_vm::compiler::ast::{self, visitor::Visitor, Expr};
use rustpython_vm::compiler::parser;
use std::collections::HashSet;

/// Syntax and the externals' arguments.
pub fn check(source: &str) -> Vec<Diagnostic> {
    depth::on_parse_stack(|| check_parsed(source))
}

fn check_parsed(source: &str) -> Vec<Diagnostic> {
    if let Some(d) = depth::diagnostic(source) {
        return vec![d];
    }
    let parsed = match parser::parse_module(source) {
        Ok(p) => p,
        Err(e) => return vec![syntax_error(source, &e)],
    };
    let module = parsed.syntax();
    let mut binder = Binder::default();
    binder.visit_body(&module.body);
    let mut calls = Calls { source, bound: binder.names, diags: Vec::new() };
    calls.visit_body(&module.body);
    calls.diags.sort_by_key(|d| (d.line, d.col));
    calls.diags.dedup_by(|a, b| a.line == b.line && a.col == b.col);
    calls.diags
}

/// Visits every call to a name that is an external the script did not rebind.
struct Calls<'s> {
    source: &'s str,
    bound: HashSet<String>,
    diags: Vec<Diagnostic>,
}

impl<'a> Visitor<'a> for Calls<'_> {
    fn visit_expr(&mut self, expr: &'a Expr) {
        if let Expr::Call(call) = expr {
            if let Expr::Name(n) = call.func.as_ref() {
                if let (false, Ok(external)) = (self.bound.contains(n.id.as_str()), n.id.as_str().parse::<externals::External>()) {
                    let found = calls::check(external, call);
                    self.diags.extend(calls::diagnostics(self.source, found));
                }
            }
        }
        ast::visitor::walk_expr(self, expr);
    }
}
