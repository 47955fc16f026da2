//! The pre-flight check of a call to an external: its arguments against the external's
//! signature ([`External::params`], the one definition). Arity, unknown or repeated keyword
//! arguments, missing required ones, and the type of each literal argument; anything else
//! (a variable, an expression, `*args`, `**kwargs`) is left to the run.

use super::Diagnostic;
use crate::externals::{External, Param};
use rustpython_vm::compiler::ast::{self, Expr, Number, UnaryOp};
use ruff_text_size::Ranged;

/// The Python type of a literal argument (`None` for anything else: not judged).
fn literal_kind(e: &Expr) -> Option<&'static str> {
    Some(match e {
        Expr::StringLiteral(_) | Expr::FString(_) => "str",
        Expr::BytesLiteral(_) => "bytes",
        Expr::NumberLiteral(n) => match n.value {
            Number::Int(_) => "int",
            Number::Float(_) => "float",
            Number::Complex { .. } => "complex",
        },
        Expr::UnaryOp(u) if matches!(u.op, UnaryOp::USub | UnaryOp::UAdd) && matches!(u.operand.as_ref(), Expr::NumberLiteral(_)) => return literal_kind(&u.operand),
        Expr::BooleanLiteral(_) => "bool",
        Expr::NoneLiteral(_) => "NoneType",
        Expr::List(_) | Expr::ListComp(_) => "list",
        Expr::Tuple(_) => "tuple",
        Expr::Dict(_) | Expr::DictComp(_) => "dict",
        Expr::Set(_) | Expr::SetComp(_) => "set",
        _ => return None,
    })
}

/// Findings on `call`, a call of `external`, as (byte offset, message).
pub(super) fn check(external: External, call: &ast::ExprCall) -> Vec<(usize, String)> {
    let name = external.as_str();
    let params = external.params();
    let at_call = call.func.range().start().to_usize();
    let args = &call.arguments.args;
    let keywords = &call.arguments.keywords;
    let mut out = Vec::new();
    let type_of = |out: &mut Vec<(usize, String)>, p: &Param, value: &Expr| {
        if let Some(kind) = literal_kind(value).filter(|k| !p.accepts(k)) {
            out.push((value.range().start().to_usize(), format!("{name}(): argument '{}' must be {}, not {kind} (signature: {})", p.name, p.ty, external.signature())));
        }
    };
    // Positional arguments up to the first `*args`: their parameter is known.
    let starred = args.iter().position(|a| matches!(a, Expr::Starred(_)));
    let positional = &args[..starred.unwrap_or(args.len())];
    if positional.len() > params.len() {
        out.push((at_call, format!("{name}() takes at most {} positional argument{} ({} given): {}", params.len(), if params.len() == 1 { "" } else { "s" }, positional.len(), external.signature())));
    }
    for (p, value) in params.iter().zip(positional) {
        type_of(&mut out, p, value);
    }
    let mut named = Vec::new();
    for kw in keywords.iter() {
        let Some(arg) = &kw.arg else { continue };
        let at = arg.range().start().to_usize();
        match external.param(arg.as_str()) {
            None => out.push((at, format!("{name}() got an unexpected keyword argument '{arg}': {}", external.signature()))),
            Some((i, _)) if i < positional.len() => out.push((at, format!("{name}() got multiple values for argument '{arg}'"))),
            Some((_, p)) => {
                type_of(&mut out, &p, &kw.value);
                named.push(p.name);
            }
        }
    }
    // Missing arguments can be told only without `*args` or `**kwargs`.
    if starred.is_none() && keywords.iter().all(|k| k.arg.is_some()) {
        let missing: Vec<String> = params.iter().skip(positional.len()).filter(|p| p.required() && !named.contains(&p.name)).map(|p| format!("'{}'", p.name)).collect();
        if !missing.is_empty() {
            let s = if missing.len() == 1 { "" } else { "s" };
            out.push((at_call, format!("{name}() missing required argument{s} {}: {}", missing.join(" and "), external.signature())));
        }
    }
    out
}

/// Turns findings into diagnostics of `source`.
pub(super) fn diagnostics(source: &str, found: Vec<(usize, String)>) -> impl Iterator<Item = Diagnostic> + '_ {
    found.into_iter().map(move |(offset, message)| {
        let (line, col) = super::line_col(source, offset);
        Diagnostic { line, col, message }
    })
}

#[cfg(test)]
mod tests {
    use crate::sandbox::script::check;

    fn found(src: &str) -> Vec<String> {
        check(src).iter().map(|d| format!("{}:{}: {}", d.line, d.col, d.message)).collect()
    }

    #[test]
    fn wrong_calls_to_externals_are_found_where_they_are() {
        let cases: &[(&str, &str)] = &[
            ("read_file(1)\n", "1:11: read_file(): argument 'path' must be str, not int"),
            ("x = 1\nwrite_file('a')\n", "2:1: write_file() missing required argument 'content'"),
            ("read_file()\n", "1:1: read_file() missing required argument 'path'"),
            ("write_file()\n", "1:1: write_file() missing required arguments 'path' and 'content'"),
            ("submit_result('s', 'not a list')\n", "1:20: submit_result(): argument 'changed_files' must be list[str], not str"),
            ("read_file('a', encoding='utf-8')\n", "1:16: read_file() got an unexpected keyword argument 'encoding'"),
            ("read_file('a', True, 3)\n", "1:1: read_file() takes at most 2 positional arguments (3 given)"),
            ("read_file('a', path='b')\n", "1:16: read_file() got multiple values for argument 'path'"),
            ("await list_dir('.', depth='2')\n", "1:27: list_dir(): argument 'depth' must be int, not str"),
            ("read_file('a', tagged=1)\n", "1:23: read_file(): argument 'tagged' must be bool, not int"),
            ("edit_file('a', {'old_text': 'x', 'new_text': 'y'})\n", "1:16: edit_file(): argument 'edits' must be list[dict], not dict"),
            ("read_file(None)\n", "1:11: read_file(): argument 'path' must be str, not NoneType"),
            ("from grail import read_file\nread_file(b'a')\n", "2:11: read_file(): argument 'path' must be str, not bytes"),
            ("from grail import external\n@external\nasync def read_file(path: str) -> str: ...\nawait read_file(2.5)\n", "4:17: read_file(): argument 'path' must be str, not float"),
        ];
        for (src, want) in cases {
            let got = found(src);
            assert_eq!(got.len(), 1, "{src:?}: {got:?}");
            assert!(got[0].starts_with(want), "{src:?}: got {:?}, want {want:?}", got[0]);
        }
    }

    #[test]
    fn valid_or_unjudgeable_calls_pass() {
        for src in [
            "p = 1\nread_file(p)\n",
            "read_file(path='a', tagged=True)\n",
            "args = ['a', 'b']\nwrite_file(*args)\n",
            "kw = {'path': 'a'}\nread_file(**kw)\n",
            "list_dir()\nlist_dir('src', 2, True)\nlist_dir(depth=None)\n",
            "search_content('x', '.', None, False, 0, 10)\nsearch_content('x', glob='*.py', context=-1)\n",
            "submit_result('s')\nsubmit_result('s', ('a', 'b'))\nsubmit_result(summary=f'{1}', changed_files=[x for x in 'ab'])\n",
            "log(1)\nlog()\nlog(None)\nask_llm('q', context='c')\n",
            "def read_file(p, q, r): pass\nread_file(1, 2, 3)\n",
            "from grail import read_file as rf\nrf(1)\n",
            "edit_file('a', [{'old_text': 'x', 'new_text': 'y'}], dry_run=True)\nmove_file('a', dst='b')\n",
        ] {
            assert_eq!(found(src), Vec::<String>::new(), "{src:?}");
        }
    }
}
