//! `sys` for scripts, `print`, and the standard streams, all of which end in the run's log.
//!
//! A script's `import sys` gets a small module: version and number facts, `intern`,
//! `getsizeof`, the recursion limit (capped at the configured limit), the integer
//! string-digit limit, `exit` (raises `SystemExit`), and `stdout`/`stderr` writing to the
//! run log. It has no `modules`, `path` or frames. The interpreter's own `sys`, which library
//! code imports, is hardened the same way: its streams are the log, its path is empty.
//!
//! Output is line-buffered: `print(..., end="")` continues the line, a log line is written
//! when a newline completes it, and what is pending is written when the script ends.

use super::module_from_source;
use rustpython_vm::function::FuncArgs;
use rustpython_vm::{PyObjectRef, PyResult, VirtualMachine};
use std::cell::RefCell;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The configured recursion limit; `sys.setrecursionlimit` cannot go above it.
pub static RECURSION_CAP: AtomicUsize = AtomicUsize::new(1000);

thread_local! {
    /// Output of the current line not yet written to the log.
    static PENDING: RefCell<String> = const { RefCell::new(String::new()) };
}

/// Attributes of the interpreter's `sys` a script's `sys` keeps.
const KEPT: &[&str] = &[
    "version_info", "version", "hexversion", "implementation", "maxsize", "maxunicode", "float_info", "int_info",
    "hash_info", "byteorder", "platform", "float_repr_style", "getsizeof", "intern", "get_int_max_str_digits",
    "set_int_max_str_digits", "getrecursionlimit", "exc_info", "exception", "getdefaultencoding",
    "getfilesystemencoding", "flags", "api_version", "copyright",
];

/// The stream class behind `sys.stdout` and `sys.stderr`.
const STREAM: &str = r#"
class LogStream:
    """A text stream whose lines go to the run log."""
    encoding = "utf-8"
    errors = "strict"
    def __init__(self, name):
        self.name = name
    def write(self, s):
        if not isinstance(s, str):
            raise TypeError("write() argument must be str, not " + type(s).__name__)
        _write(s)
        return len(s)
    def writelines(self, lines):
        for line in lines:
            self.write(line)
    def flush(self):
        pass
    def isatty(self):
        return False
    def writable(self):
        return True
    def readable(self):
        return False
    def __repr__(self):
        return "<%s (the run log)>" % self.name
"#;

/// Appends text to the pending output and writes every completed line to the log.
pub fn write(vm: &VirtualMachine, text: &str) -> PyResult<()> {
    let complete = PENDING.with_borrow_mut(|pending| {
        pending.push_str(text);
        let cut = pending.rfind('\n')?;
        let line = pending[..cut].to_string();
        pending.replace_range(..=cut, "");
        Some(line)
    });
    match complete {
        Some(line) => log(vm, line),
        None => Ok(()),
    }
}

/// Writes what is left of the last line (called when the script ends).
pub fn flush(vm: &VirtualMachine) {
    let rest = PENDING.with_borrow_mut(std::mem::take);
    if !rest.is_empty() {
        let _ = log(vm, rest);
    }
}

fn log(vm: &VirtualMachine, line: String) -> PyResult<()> {
    crate::sandbox::child::call_host(vm, "log", FuncArgs::from(vec![vm.ctx.new_str(line).into()])).map(drop)
}

fn text_arg(vm: &VirtualMachine, args: &FuncArgs, name: &str, default: &str) -> PyResult<String> {
    match super::given(vm, args.kwargs.get(name)) {
        None => Ok(default.to_string()),
        Some(v) => match v.downcast_ref::<rustpython_vm::builtins::PyStr>() {
            Some(s) => Ok(s.to_string_lossy().into_owned()),
            None => Err(vm.new_type_error(format!("{name} must be None or a string, not {}", v.class().name()))),
        },
    }
}

/// `print(*objects, sep=' ', end='\n', file=None, flush=False)`.
fn print(args: FuncArgs, vm: &VirtualMachine) -> PyResult {
    let sep = text_arg(vm, &args, "sep", " ")?;
    let end = text_arg(vm, &args, "end", "\n")?;
    let mut parts = Vec::with_capacity(args.args.len());
    for a in &args.args {
        super::fidelity::check_digits(a, vm)?;
        parts.push(a.str(vm)?.to_string_lossy().into_owned());
    }
    let text = parts.join(&sep) + &end;
    match super::given(vm, args.kwargs.get("file")) {
        Some(file) => {
            vm.call_method(&file, "write", (vm.ctx.new_str(text),))?;
        }
        None => write(vm, &text)?,
    }
    Ok(vm.ctx.none())
}

/// `sys.setrecursionlimit`, capped at the configured limit.
fn set_recursion_limit(limit: i64, vm: &VirtualMachine) -> PyResult<()> {
    if limit < 1 {
        return Err(vm.new_value_error("recursion limit must be greater or equal than 1"));
    }
    let cap = RECURSION_CAP.load(Ordering::Relaxed);
    vm.recursion_limit.set((limit as usize).min(cap));
    Ok(())
}

/// Installs `print` and hardens the interpreter's `sys`; returns the script's `sys`.
pub fn install(vm: &VirtualMachine) -> PyResult<PyObjectRef> {
    vm.builtins.set_attr("print", vm.new_function("print", print), vm)?;
    let writer = vm.new_function("_write", |s: String, vm: &VirtualMachine| write(vm, &s));
    let streams = module_from_source(vm, "_cairn_streams", STREAM, &[("_write", writer.into())])?;
    let class = streams.get_attr("LogStream", vm)?;
    let stdout = class.call((vm.ctx.new_str("<stdout>"),), vm)?;
    let stderr = class.call((vm.ctx.new_str("<stderr>"),), vm)?;
    let setlimit: PyObjectRef = vm.new_function("setrecursionlimit", set_recursion_limit).into();
    let real = &vm.sys_module;
    for (name, value) in [
        ("stdout", stdout.clone()),
        ("__stdout__", stdout.clone()),
        ("stderr", stderr.clone()),
        ("__stderr__", stderr.clone()),
        ("stdin", vm.ctx.none()),
        ("__stdin__", vm.ctx.none()),
        ("path", vm.ctx.new_list(vec![]).into()),
        ("argv", vm.ctx.new_list(vec![vm.ctx.new_str("").into()]).into()),
        ("executable", vm.ctx.new_str("").into()),
        ("setrecursionlimit", setlimit.clone()),
    ] {
        real.set_attr(name, value, vm)?;
    }
    let dict = vm.ctx.new_dict();
    for name in KEPT {
        if let Ok(v) = real.get_attr(*name, vm) {
            dict.set_item(*name, v, vm)?;
        }
    }
    let exit = vm.new_function("exit", |args: FuncArgs, vm: &VirtualMachine| -> PyResult {
        Err(vm.invoke_exception(vm.ctx.exceptions.system_exit.to_owned(), args.args)?)
    });
    // `argv` as a script run by name sees it; `stdin` at end of input.
    let argv = vm.ctx.new_list(vec![vm.ctx.new_str("task.pym").into()]).into();
    for (name, value) in [("stdout", stdout), ("stderr", stderr), ("setrecursionlimit", setlimit), ("exit", exit.into()), ("argv", argv), ("stdin", vm.ctx.none())] {
        dict.set_item(name, value, vm)?;
    }
    dict.set_item("__doc__", vm.ctx.new_str("The sandbox's sys: facts about the interpreter; no modules, path or host streams.").into(), vm)?;
    Ok(vm.new_module("sys", dict, None).into())
}
