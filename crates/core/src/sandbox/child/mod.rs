//! The interpreter side of the sandbox, running in the child process (`cairn __sandbox`).
//!
//! Order of events: confine early (parent-death signal, Landlock); build the interpreter
//! without the standard library or host access and install the externals, modules and guards
//! (this is what a pre-started pool child has done while it waits); read the [`Start`] line;
//! lock down (rlimits, heap cap, seccomp); run the script; answer [`ChildMsg::Done`].
//! A [`zygote`] does the same up to the `Start` line, then forks there once per run.

pub mod alloc;
pub mod confine;
mod modules;
pub mod probe;
pub(crate) mod stack;
pub mod value;
pub mod zygote;

use crate::externals::External;
use crate::lifecycle::ErrorKind;
use crate::sandbox::protocol::{ChildMsg, Reply, ScriptError, Start};
use crate::sandbox::script::RESULT_NAME;
use rustpython_vm::builtins::{PyBaseExceptionRef, PyDictRef, PyTypeRef};
use rustpython_vm::scope::Scope;
use rustpython_vm::compiler::Mode as CompileMode;
use rustpython_vm::function::FuncArgs;
use rustpython_vm::{AsObject, PyObjectRef, PyResult, Settings, VirtualMachine};
use serde_json::{Map, Value};
use std::io::{BufRead, BufReader, Write};
use std::sync::{Mutex, OnceLock};

/// Values for `Input(name)`.
static INPUTS: OnceLock<Map<String, Value>> = OnceLock::new();
/// Where a panic inside the interpreter happened (file:line of the Rust source).
static PANICKED_AT: OnceLock<String> = OnceLock::new();
/// The parent's side of the pipe (stdin of the child).
static REPLIES: Mutex<Option<BufReader<std::io::Stdin>>> = Mutex::new(None);

fn send(msg: &ChildMsg) {
    let Ok(mut line) = serde_json::to_string(msg) else { std::process::exit(3) };
    line.push('\n');
    let mut out = std::io::stdout().lock();
    if out.write_all(line.as_bytes()).and_then(|_| out.flush()).is_err() {
        // The parent is gone; nothing left to do.
        std::process::exit(3);
    }
}

fn read_line() -> Option<String> {
    let mut guard = REPLIES.lock().ok()?;
    let reader = guard.as_mut()?;
    let mut line = String::new();
    match reader.read_line(&mut line) {
        Ok(n) if n > 0 => Some(line),
        _ => None,
    }
}

fn recv() -> Reply {
    match read_line().and_then(|l| serde_json::from_str(&l).ok()) {
        Some(r) => r,
        None => std::process::exit(3),
    }
}

/// How `cairn __sandbox` was started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// One run: read `Start`, run, answer `Done`.
    Run,
    /// Confine, probe, report (see [`probe`]).
    SelfTest,
    /// Build the interpreter once, then fork a child per run (see [`zygote`]).
    Zygote,
}

/// Entry point of `cairn __sandbox`. Returns the process exit code.
/// `guards` is false only under the test switch of the syntax layer.
pub fn main(mode: Mode, guards: bool) -> i32 {
    if mode == Mode::SelfTest {
        let report = probe::selftest();
        let _ = writeln!(std::io::stdout().lock(), "{}", serde_json::to_string(&report).unwrap_or_default());
        return 0;
    }
    let applied = confine::early();
    // Touch stdout once now, so that later protocol writes never allocate its buffer.
    let _ = std::io::stdout().lock().flush();
    // The interpreter thread ends the process itself once it has answered: in a child forked
    // by the zygote it is the only thread there is.
    // Where the interpreter panicked: the operation the report names.
    std::panic::set_hook(Box::new(|info| {
        if let Some(l) = info.location() {
            let _ = PANICKED_AT.set(format!("{}:{}", l.file().rsplit("/src/").next().unwrap_or(l.file()), l.line()));
        }
    }));
    let worker = std::thread::Builder::new().stack_size(stack::INTERPRETER_STACK).spawn(move || {
        let done = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| interpret(mode == Mode::Zygote, guards, applied))).unwrap_or_else(|payload| {
            let what = payload.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| payload.downcast_ref::<String>().cloned()).unwrap_or_default();
            let at = PANICKED_AT.get().map(|a| format!(" in {a}")).unwrap_or_default();
            let what: String = what.chars().take(300).collect();
            done_err(ErrorKind::Internal, format!("the interpreter failed{at}: {what} (a gap in the sandbox's Python, not in the script; write it another way)"))
        });
        send(&done);
        std::process::exit(0)
    });
    if worker.map(|h| h.join()).is_err() {
        send(&done_err(ErrorKind::Crash, "the interpreter could not start".into()));
    }
    0
}

/// Builds the interpreter, installs the externals and guards, (as a zygote: forks here, once
/// per run), reads the run's [`Start`], locks down and runs the script.
fn interpret(zygote: bool, guards: bool, mut applied: confine::Applied) -> ChildMsg {
    stack::install_backstop();
    let mut settings = Settings::default();
    settings.import_site = false;
    settings.install_signal_handlers = false;
    let interp = modules::imports::interpreter(settings);
    interp.enter(|vm| {
        let installed = install(vm, guards);
        if zygote && zygote::serve() == zygote::SELFTEST {
            let report = probe::forked(applied.clone());
            let _ = writeln!(std::io::stdout().lock(), "{}", serde_json::to_string(&report).unwrap_or_default());
            std::process::exit(0);
        }
        if let Ok(mut g) = REPLIES.lock() {
            *g = Some(BufReader::new(std::io::stdin()));
        }
        let start: Start = match read_line().and_then(|l| serde_json::from_str(&l).ok()) {
            Some(s) => s,
            None => std::process::exit(2),
        };
        let _ = INPUTS.set(start.inputs.clone());
        modules::clock::configure(&start);
        modules::sys::RECURSION_CAP.store(stack::recursion_limit(start.max_recursion), std::sync::atomic::Ordering::Relaxed);
        confine::lock(&start, &mut applied);
        match installed {
            Ok(globals) => run(vm, &start, globals),
            Err(e) => done_err(ErrorKind::Exception, format!("sandbox setup failed: {}", exception_text(vm, &e))),
        }
    })
}

fn done_err(kind: ErrorKind, message: String) -> ChildMsg {
    ChildMsg::Done { result: None, error: Some(ScriptError { kind, message }) }
}

fn run(vm: &VirtualMachine, start: &Start, globals: PyDictRef) -> ChildMsg {
    let mut done = execute(vm, start, globals);
    // Files the script left open reach the proposal, as CPython flushes them at exit.
    if let Ok(Some(fs)) = modules::imports::loaded(vm, "_cairnfs") {
        if let Err(e) = fs.get_attr("flush_all", vm).and_then(|f| f.call((), vm)) {
            done = done_err(ErrorKind::Exception, format!("writing the files the script left open failed: {}", exception_text(vm, &e)));
        }
    }
    modules::sys::flush(vm);
    done
}

fn execute(vm: &VirtualMachine, start: &Start, globals: PyDictRef) -> ChildMsg {
    vm.recursion_limit.set(stack::recursion_limit(start.max_recursion));
    if let Some(why) = crate::sandbox::script::depth::scan(&start.source) {
        let (kind, message) = why.python();
        return done_err(if kind == "RecursionError" { ErrorKind::Recursion } else { ErrorKind::Syntax }, format!("{}: {kind}: {message}", start.filename));
    }
    let code = match vm.compile(&start.source, CompileMode::Exec, start.filename.clone()) {
        Ok(code) => code,
        Err(e) => return done_err(ErrorKind::Syntax, format!("{}: {e}", start.filename)),
    };
    let scope = Scope::with_builtins(None, globals, vm);
    let done = |scope: &Scope| {
        let result = match scope.globals.get_item_opt(RESULT_NAME, vm) {
            Ok(Some(obj)) => to_json(vm, &obj).unwrap_or_else(|| repr(vm, &obj)),
            _ => Value::Null,
        };
        ChildMsg::Done { result: Some(result), error: None }
    };
    match vm.run_code_obj(code, scope.clone()) {
        Ok(_) => done(&scope),
        // `sys.exit()` and `sys.exit(0)` end a script successfully, as in Python.
        Err(exc) if exc.class().is(vm.ctx.exceptions.system_exit) && clean_exit(vm, &exc) => done(&scope),
        Err(exc) => {
            let kind = if exc.class().is(vm.ctx.exceptions.recursion_error) {
                ErrorKind::Recursion
            } else if exc.class().is(vm.ctx.exceptions.memory_error) {
                ErrorKind::Memory
            } else {
                ErrorKind::Exception
            };
            done_err(kind, exception_text(vm, &exc))
        }
    }
}

/// True for a `SystemExit` without a code or with code 0.
fn clean_exit(vm: &VirtualMachine, exc: &PyBaseExceptionRef) -> bool {
    match exc.as_object().get_attr("code", vm) {
        Ok(code) => vm.is_none(&code) || code.try_to_value::<i64>(vm).is_ok_and(|c| c == 0),
        Err(_) => false,
    }
}

/// The traceback text of `exc` as CPython prints it: the chain of causes, and of contexts
/// unless suppressed (`raise ... from None`), each ending with `Name: str(exception)`
/// (`KeyError: 'k'`, `[Errno 2] ...: 'path'`, C type names in OverflowErrors).
fn exception_text(vm: &VirtualMachine, exc: &PyBaseExceptionRef) -> String {
    const CAUSE: &str = "\nThe above exception was the direct cause of the following exception:\n\n";
    const CONTEXT: &str = "\nDuring handling of the above exception, another exception occurred:\n\n";
    let mut chain: Vec<(PyBaseExceptionRef, &str)> = vec![(exc.clone(), "")];
    while chain.len() < 32 {
        let (last, _) = &chain[chain.len() - 1];
        let suppressed = last.as_object().get_attr("__suppress_context__", vm).is_ok_and(|v| v.is(&vm.ctx.true_value));
        let next = match (last.__cause__(), suppressed) {
            (Some(cause), _) => (cause, CAUSE),
            (None, false) => match last.__context__() {
                Some(context) => (context, CONTEXT),
                None => break,
            },
            (None, true) => break,
        };
        if chain.iter().any(|(e, _)| e.is(&next.0)) {
            break;
        }
        chain.push(next);
    }
    let mut text = String::new();
    for (e, separator) in chain.iter().rev() {
        text.push_str(&one_exception(vm, e));
        text.push('\n');
        text.push_str(separator);
    }
    stack::compact_traceback(text.trim_end())
}

/// One exception's traceback and its last line, `Name: str(exception)`.
fn one_exception(vm: &VirtualMachine, exc: &PyBaseExceptionRef) -> String {
    let mut text = String::new();
    if vm.write_exception_inner(&mut text, exc).is_err() || text.is_empty() {
        return exc.class().name().to_string();
    }
    let trimmed = text.trim_end();
    let (head, last) = match trimmed.rfind('\n') {
        Some(i) => (&trimmed[..=i], &trimmed[i + 1..]),
        None => ("", trimmed),
    };
    let name = last.split(':').next().unwrap_or(last);
    let message = exc.as_object().str(vm).map(|m| m.to_string_lossy().into_owned()).unwrap_or_default();
    let message = modules::fidelity::c_names(&message);
    if message.is_empty() {
        format!("{head}{name}")
    } else {
        format!("{head}{name}: {message}")
    }
}

fn to_json(vm: &VirtualMachine, obj: &PyObjectRef) -> Option<Value> {
    value::to_json(vm, obj).ok()
}

fn repr(vm: &VirtualMachine, obj: &PyObjectRef) -> Value {
    obj.repr(vm).map(|s| Value::String(s.to_string())).unwrap_or(Value::Null)
}

fn exception_type(vm: &VirtualMachine, name: &str) -> PyTypeRef {
    let e = &vm.ctx.exceptions;
    match name {
        "ValueError" => e.value_error,
        "FileNotFoundError" => e.file_not_found_error,
        "IsADirectoryError" => e.is_a_directory_error,
        "NotADirectoryError" => e.not_a_directory_error,
        "FileExistsError" => e.file_exists_error,
        "TypeError" => e.type_error,
        "TimeoutError" => e.timeout_error,
        "NameError" => e.name_error,
        "PermissionError" => e.permission_error,
        "OSError" => e.os_error,
        _ => e.runtime_error,
    }
    .to_owned()
}

/// A path object (`pathlib.Path`, anything `os.PathLike`) as its string; any other value as is.
fn fspath(vm: &VirtualMachine, a: &PyObjectRef) -> PyObjectRef {
    if a.downcast_ref::<rustpython_vm::builtins::PyStr>().is_none() {
        if let Some(p) = a.get_attr("__fspath__", vm).ok().and_then(|f| f.call((), vm).ok()) {
            return p;
        }
    }
    a.clone()
}

/// Forwards one external call to the parent and turns the reply into a value or an exception.
pub(crate) fn call_host(vm: &VirtualMachine, name: &str, args: FuncArgs) -> PyResult {
    let mut jargs = Vec::with_capacity(args.args.len());
    for a in &args.args {
        let a = &fspath(vm, a);
        jargs.push(value::to_json(vm, a).map_err(|e| vm.new_type_error(format!("{name}(): arguments must be str, int, float, bool, None, list or dict, not {}", e.0)))?);
    }
    let mut kwargs = Map::new();
    for (k, v) in &args.kwargs {
        kwargs.insert(k.clone(), value::to_json(vm, &fspath(vm, v)).map_err(|e| vm.new_type_error(format!("{name}(): argument '{k}' is not a plain value: {}", e.0)))?);
    }
    send(&ChildMsg::Call { name: name.to_string(), args: jargs, kwargs });
    match recv() {
        Reply::Ok { ok } => rustpython_vm::py_serde::deserialize(vm, ok).map_err(|e| vm.new_runtime_error(format!("bad reply: {e}"))),
        // Call the type rather than building the object: OSError subclasses need their own
        // initialisation (errno, strerror) or str() on them fails.
        Reply::Raise { exc, message } => Err(vm.invoke_exception(exception_type(vm, &exc), vec![vm.ctx.new_str(message).into()])?),
    }
}


/// Installs the externals and `grail`, then the modules, `print`, the import gate and the
/// script's guarded builtins; returns the script's globals.
fn install(vm: &VirtualMachine, guards: bool) -> PyResult<PyDictRef> {
    let dict = vm.builtins.dict();
    let grail_dict = vm.ctx.new_dict();
    for name in crate::externals::names() {
        let f: PyObjectRef = vm.new_function(name, move |args: FuncArgs, vm: &VirtualMachine| call_host(vm, name, args)).into();
        dict.set_item(name, f.clone(), vm)?;
        grail_dict.set_item(name, f, vm)?;
    }
    let external: PyObjectRef = vm
        .new_function("external", |f: PyObjectRef, vm: &VirtualMachine| -> PyResult {
            let name = f.get_attr("__name__", vm)?.str(vm)?.to_string();
            if name.parse::<External>().is_ok() {
                vm.builtins.dict().get_item(name.as_str(), vm)
            } else {
                Err(vm.new_name_error(format!("'{name}' is not an external function (known: {})", crate::externals::names().collect::<Vec<_>>().join(", ")), vm.ctx.new_str(name)))
            }
        })
        .into();
    let input = modules::input_fn(vm, &INPUTS);
    for (n, f) in [("external", &external), ("Input", &input)] {
        dict.set_item(n, f.clone(), vm)?;
        grail_dict.set_item(n, f.clone(), vm)?;
    }
    let grail: PyObjectRef = vm.new_module("grail", grail_dict, None).into();
    let globals = modules::install(vm, grail, guards)?;
    stack::guard_compilers(vm, &globals)?;
    Ok(globals)
}
