//! The rules of what agent code may name, shared by the static pre-flight check
//! ([`super::script`]) and the runtime guards of the child ([`super::child`]): one definition,
//! so the two can never disagree.
//!
//! These rules are a convenience, not the boundary: they give a clear error before a run for
//! what cannot work (a module the sandbox lacks) and for what is plainly an escape attempt
//! (object internals, frames, code objects, the builtins). What keeps the host safe is the
//! confined child process ([`super::child::confine`]), which holds without them: the escape
//! suites run once more with this layer switched off. Everything else of Python is allowed:
//! private and name-mangled attributes, `__class__`, `__dict__`, `__slots__`, `__new__`,
//! `__cause__`, `__annotations__`, `vars(obj)`, namedtuple's `_asdict` and `_replace`.

use unicode_normalization::UnicodeNormalization;

/// Modules a script may import: the sandbox's standard library ([`super::stdlib::PUBLIC`]).
pub const ALLOWED_IMPORTS: &[&str] = super::stdlib::PUBLIC;

/// Builtins removed from the sandbox; calling one is a check error.
pub const FORBIDDEN_BUILTINS: &[&str] = &["input", "breakpoint", "help", "__import__", "copyright", "credits", "license"];

/// Builtins a script may call.
pub const SAFE_BUILTINS: &[&str] = &[
    "abs", "all", "any", "open", "eval", "exec", "compile", "globals", "locals", "memoryview", "exit", "quit", "ascii", "bin", "bool", "bytearray", "bytes", "callable", "chr", "classmethod", "complex",
    "delattr", "dict", "dir", "divmod", "enumerate", "filter", "float", "format", "frozenset", "getattr", "hasattr",
    "hash", "hex", "id", "int", "isinstance", "issubclass", "iter", "len", "list", "map", "max", "min", "next",
    "object", "oct", "ord", "pow", "print", "property", "range", "repr", "reversed", "round", "set", "setattr",
    "slice", "sorted", "staticmethod", "str", "sum", "super", "tuple", "type", "vars", "zip", "aiter", "anext",
    "NotImplemented", "Ellipsis",
    // exceptions
    "BaseException", "Exception", "ArithmeticError", "AssertionError", "AttributeError", "EOFError",
    "FileNotFoundError", "FileExistsError", "ImportError", "IndexError", "IsADirectoryError", "KeyError",
    "LookupError", "MemoryError", "NameError", "NotADirectoryError", "NotImplementedError", "OSError",
    "OverflowError", "PermissionError", "RecursionError", "RuntimeError", "StopIteration", "TimeoutError",
    "TypeError", "UnicodeDecodeError", "UnicodeEncodeError", "UnicodeError", "ValueError", "ZeroDivisionError",
    "StopAsyncIteration", "GeneratorExit", "KeyboardInterrupt", "SystemExit", "Warning", "UserWarning",
    "DeprecationWarning", "ModuleNotFoundError", "LookupError", "ExceptionGroup", "BaseExceptionGroup",
    "EnvironmentError", "IOError", "BufferError", "ConnectionError", "BrokenPipeError", "ConnectionAbortedError",
    "ConnectionRefusedError", "ConnectionResetError", "BlockingIOError", "ChildProcessError", "InterruptedError",
    "ProcessLookupError", "ReferenceError", "SyntaxError", "IndentationError", "TabError", "SystemError",
    "UnboundLocalError", "UnicodeTranslateError", "FloatingPointError", "EncodingWarning", "FutureWarning",
    "ImportWarning", "PendingDeprecationWarning", "ResourceWarning", "RuntimeWarning", "SyntaxWarning",
    "UnicodeWarning", "BytesWarning",
    // names provided by cairn
    "external", "Input",
];

/// Attributes that reach around Cairn's own machinery: a function's globals and the builtins
/// (past the import gate and the stand-in modules), code objects, the import machinery. Class
/// introspection (`__mro__`, `__bases__`, `__subclasses__`), `eval`/`exec` and the like are
/// ordinary Python inside the OS boundary and allowed.
pub const HOSTILE_DUNDERS: &[&str] = &["__globals__", "__builtins__", "__code__", "__closure__", "__loader__", "__spec__", "__import__"];

/// Attributes that reach frames, code objects or interpreter internals.
pub const FORBIDDEN_ATTRS: &[&str] = &[
    "gi_frame", "gi_code", "gi_yieldfrom", "cr_frame", "cr_code", "cr_await", "ag_frame", "ag_code", "ag_await",
    "tb_frame", "tb_next", "f_back", "f_globals", "f_locals", "f_builtins", "f_code", "f_trace",
];

/// Bare names that only reach the interpreter's machinery.
pub const HOSTILE_NAMES: &[&str] = &["__builtins__", "__import__", "__loader__", "__spec__", "__build_class__"];

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
    if HOSTILE_DUNDERS.contains(&name.as_str()) {
        Some(format!("attribute '{name}' is not allowed (it reaches interpreter internals)"))
    } else if FORBIDDEN_ATTRS.contains(&name.as_str()) || name.starts_with("co_") {
        Some(format!("attribute '{name}' is not allowed (frame and code internals)"))
    } else {
        None
    }
}

/// Why a bare name (a variable) is refused, if it is.
pub fn name_refusal(name: &str) -> Option<String> {
    let name = normalize(name);
    HOSTILE_NAMES.contains(&name.as_str()).then(|| format!("name '{name}' is not allowed (it reaches interpreter internals)"))
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
        for bad in ["__globals__", "__builtins__", "gi_frame", "f_back", "co_code", "__ｇｌｏｂａｌｓ__", "__code__"] {
            assert!(attribute_refusal(bad).is_some(), "{bad} allowed");
        }
        for ok in ["__init__", "__name__", "append", "frame", "format", "code", "_cache", "__class__", "__dict__", "__slots__", "_asdict", "__cause__", "__mro__", "__bases__", "__subclasses__", "__getattribute__", "__reduce__"] {
            assert!(attribute_refusal(ok).is_none(), "{ok} refused");
        }
        assert!(name_refusal("__builtins__").is_some() && name_refusal("__import__").is_some());
        assert!(name_refusal("_tmp").is_none() && name_refusal("__all__").is_none() && name_refusal("__slots__").is_none());
    }

    #[test]
    fn format_rules() {
        assert!(format_refusal("{0.__init__.__globals__}").is_some());
        assert!(format_refusal("{x:{y.__globals__}}").is_some());
        assert!(format_refusal("{0.gi_frame}").is_some());
        assert!(format_refusal("{{0.__class__}}").is_none(), "escaped braces are text");
        assert!(format_refusal("{0} and {name!r:>10} {0[key]} {p.x}").is_none());
    }
}
