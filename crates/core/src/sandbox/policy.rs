//! The rules of what agent code may name, shared by the static pre-flight check
//! ([`super::script`]) and the runtime guards of the child ([`super::child`]): one definition,
//! so the two can never disagree.
//!
//! Attributes starting with `_` are refused except a short allow-list of harmless dunders;
//! frame, code and generator internals are refused by name; a bare name may start with one
//! `_` (a script's own variable) but not with `__` (`__builtins__`, `__import__`, ...).

use unicode_normalization::UnicodeNormalization;

/// Modules a script may import.
pub const ALLOWED_IMPORTS: &[&str] = &["grail", "typing", "json", "re"];

/// Builtins removed from the sandbox; calling one is a check error.
pub const FORBIDDEN_BUILTINS: &[&str] = &[
    "open", "eval", "exec", "compile", "input", "breakpoint", "help", "vars", "globals", "locals", "memoryview",
    "exit", "quit", "__import__", "copyright", "credits", "license",
];

/// Builtins a script may call.
pub const SAFE_BUILTINS: &[&str] = &[
    "abs", "all", "any", "ascii", "bin", "bool", "bytearray", "bytes", "callable", "chr", "classmethod", "complex",
    "delattr", "dict", "dir", "divmod", "enumerate", "filter", "float", "format", "frozenset", "getattr", "hasattr",
    "hash", "hex", "id", "int", "isinstance", "issubclass", "iter", "len", "list", "map", "max", "min", "next",
    "object", "oct", "ord", "pow", "print", "property", "range", "repr", "reversed", "round", "set", "setattr",
    "slice", "sorted", "staticmethod", "str", "sum", "super", "tuple", "type", "zip", "aiter", "anext",
    // exceptions
    "BaseException", "Exception", "ArithmeticError", "AssertionError", "AttributeError", "EOFError",
    "FileNotFoundError", "FileExistsError", "ImportError", "IndexError", "IsADirectoryError", "KeyError",
    "LookupError", "MemoryError", "NameError", "NotADirectoryError", "NotImplementedError", "OSError",
    "OverflowError", "PermissionError", "RecursionError", "RuntimeError", "StopIteration", "TimeoutError",
    "TypeError", "UnicodeDecodeError", "UnicodeEncodeError", "UnicodeError", "ValueError", "ZeroDivisionError",
    "StopAsyncIteration", "GeneratorExit", "KeyboardInterrupt", "SystemExit", "Warning", "UserWarning",
    // names provided by cairn
    "external", "Input",
];


/// Dunder attributes a script may use (calling `super().__init__()`, `type(x).__name__`, ...).
pub const ALLOWED_DUNDERS: &[&str] = &[
    "__init__", "__name__", "__qualname__", "__doc__", "__str__", "__repr__", "__len__", "__iter__", "__next__",
    "__contains__", "__getitem__", "__setitem__", "__delitem__", "__eq__", "__ne__", "__lt__", "__le__", "__gt__",
    "__ge__", "__hash__", "__bool__", "__enter__", "__exit__", "__call__", "__add__", "__sub__", "__mul__",
    "__truediv__", "__floordiv__", "__mod__", "__neg__", "__abs__", "__format__",
];

/// Attributes that reach frames, code objects or interpreter internals.
pub const FORBIDDEN_ATTRS: &[&str] = &[
    "gi_frame", "gi_code", "gi_yieldfrom", "cr_frame", "cr_code", "cr_await", "ag_frame", "ag_code", "ag_await",
    "tb_frame", "tb_next", "f_back", "f_globals", "f_locals", "f_builtins", "f_code", "f_trace",
];

/// Identifiers compare after NFKC normalization, as Python itself does (PEP 3131):
/// `ｏｐｅｎ` is `open`.
pub fn normalize(ident: &str) -> String {
    if ident.is_ascii() {
        ident.to_string()
    } else {
        ident.nfkc().collect()
    }
}

/// Why an attribute name is refused, if it is.
pub fn attribute_refusal(name: &str) -> Option<String> {
    let name = normalize(name);
    if name.starts_with('_') && !ALLOWED_DUNDERS.contains(&name.as_str()) {
        Some(format!("attribute '{name}' is not allowed (names starting with '_' are reserved)"))
    } else if FORBIDDEN_ATTRS.contains(&name.as_str()) || name.starts_with("co_") {
        Some(format!("attribute '{name}' is not allowed (frame and code internals)"))
    } else {
        None
    }
}

/// Why a bare name (a variable) is refused, if it is.
pub fn name_refusal(name: &str) -> Option<String> {
    let name = normalize(name);
    (name.starts_with("__") && name != "__name__").then(|| format!("name '{name}' is not allowed (names starting with '__' are reserved)"))
}

/// Checks a `str.format` template: a replacement field may not reach a refused attribute
/// (`"{0.__class__}"`). Returns the refusal for the first offending field.
pub fn format_refusal(template: &str) -> Option<String> {
    let mut depth = 0usize;
    let mut field = String::new();
    let mut chars = template.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' if depth == 0 && chars.peek() == Some(&'{') => {
                chars.next();
            }
            '}' if depth == 0 && chars.peek() == Some(&'}') => {
                chars.next();
            }
            '{' => {
                depth += 1;
                field.push(c);
            }
            '}' if depth > 0 => {
                depth -= 1;
                field.push(c);
                if depth == 0 {
                    if let Some(r) = field_refusal(&field) {
                        return Some(r);
                    }
                    field.clear();
                }
            }
            _ if depth > 0 => field.push(c),
            _ => {}
        }
    }
    None
}

/// Looks at every `.name` in a replacement field (nested fields included).
fn field_refusal(field: &str) -> Option<String> {
    for part in field.split('.').skip(1) {
        let attr: String = part.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        if let Some(r) = attribute_refusal(&attr) {
            return Some(format!("format string: {r}"));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attribute_rules() {
        for bad in ["__class__", "__globals__", "__subclasses__", "_private", "gi_frame", "f_back", "co_code", "__ｃｌａｓｓ__"] {
            assert!(attribute_refusal(bad).is_some(), "{bad} allowed");
        }
        for ok in ["__init__", "__name__", "append", "frame", "format", "code"] {
            assert!(attribute_refusal(ok).is_none(), "{ok} refused");
        }
        assert!(name_refusal("__builtins__").is_some() && name_refusal("__import__").is_some());
        assert!(name_refusal("_tmp").is_none() && name_refusal("_").is_none() && name_refusal("__name__").is_none());
    }

    #[test]
    fn format_rules() {
        assert!(format_refusal("{0.__class__.__base__}").is_some());
        assert!(format_refusal("{x:{y.__class__}}").is_some());
        assert!(format_refusal("{0.gi_frame}").is_some());
        assert!(format_refusal("{{0.__class__}}").is_none(), "escaped braces are text");
        assert!(format_refusal("{0} and {name!r:>10} {0[key]} {p.x}").is_none());
    }
}
