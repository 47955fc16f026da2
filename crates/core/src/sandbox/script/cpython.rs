//! The pre-flight check of a script that runs on CPython (`[sandbox] interpreter =
//! "cpython"`): syntax (the same parser and nesting limits as RustPython's check) and each
//! call to an external against its signature. No import policy and no name rules: CPython runs
//! inside the run workspace's OS boundary, which is what confines it.

use super::{calls, Diagnostic};
use crate::externals;
use rustpython_vm::compiler::ast::{self, visitor::Visitor, Expr};
use std::collections::HashSet;

/// Syntax and the externals' arguments.
pub fn check(source: &str) -> Vec<Diagnostic> {
    super::checked(source, |body, bound| {
        let mut calls = Calls { source, bound, diags: Vec::new() };
        calls.visit_body(body);
        calls.diags
    })
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
