//! Deep recursion in a script ends as Python's `RecursionError`, never as a stack overflow
//! of the child. Three layers, the first that applies wins:
//!
//! 1. The interpreter's own count: the recursion limit is `[sandbox] max_recursion`, at most
//!    [`MAX_FRAMES`], which the interpreter thread's stack ([`INTERPRETER_STACK`]) holds four
//!    times over in the deepest kind of level measured (a property calling itself: 3.7 KB of
//!    Rust stack per level; a plain function 1 KB). Functions, methods, `__repr__`, `__eq__`,
//!    `__hash__`, `__getattr__`, properties, generators, key functions and the native walks
//!    of nested lists, tuples and dicts all count against it; the script can catch it.
//! 2. Sources nested deeper than CPython compiles are refused before anything parses them
//!    ([`crate::sandbox::script::depth`]): `compile`, `exec`, `eval` and `ast.parse` raise
//!    CPython's `SyntaxError`, `IndentationError` or `RecursionError` instead.
//! 3. A backstop for native recursion nothing counts: if the interpreter thread still reaches
//!    its stack's guard page, a signal handler on a stack of its own answers the parent with a
//!    `recursion` error (uncatchable then: the script cannot go on) and ends the process,
//!    instead of the runtime's abort. Any other fault keeps the signal's default action.

use crate::lifecycle::ErrorKind;
use crate::sandbox::protocol::{ChildMsg, ScriptError};
use crate::sandbox::script::depth;
use rustpython_vm::builtins::{PyBaseExceptionRef, PyBytes, PyDictRef, PyStr};
use rustpython_vm::function::FuncArgs;
use rustpython_vm::{PyObjectRef, PyResult, VirtualMachine};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

/// Stack of the interpreter thread. Reserved address space (counted in the address-space
/// limit's overhead), touched only as deep as a script recurses.
pub const INTERPRETER_STACK: usize = 256 * 1024 * 1024;

/// The highest recursion limit in effect, whatever `[sandbox] max_recursion` says.
pub const MAX_FRAMES: usize = 16_000;

/// Stack for the backstop's handler (it only writes one line and exits).
const HANDLER_STACK: usize = 64 * 1024;

/// The recursion limit a run gets for a configured `max_recursion`.
pub fn recursion_limit(configured: u64) -> usize {
    usize::try_from(configured).unwrap_or(MAX_FRAMES).clamp(1, MAX_FRAMES)
}

/// The `Done` line the backstop writes, made before it could be needed.
static OVERFLOW_LINE: OnceLock<Vec<u8>> = OnceLock::new();
/// Lowest usable address of the interpreter thread's stack (0: unknown, no backstop).
static STACK_LOW: AtomicUsize = AtomicUsize::new(0);

/// Installs the backstop (layer 3) for the calling thread, the interpreter's: the stack it
/// watches, the handler's own stack and the handlers of `SIGSEGV` and `SIGBUS`. Before the
/// zygote forks and before seccomp; a forked child keeps all of it (same thread, same memory).
#[allow(unsafe_code)]
pub fn install_backstop() {
    let message = format!(
        "RecursionError: maximum recursion depth exceeded (the interpreter's stack ran out in native code before its recursion check; at most {MAX_FRAMES} levels fit: nest less deeply)"
    );
    let done = ChildMsg::Done { result: None, error: Some(ScriptError { kind: ErrorKind::Recursion, message }) };
    let Ok(mut line) = serde_json::to_vec(&done) else { return };
    line.push(b'\n');
    let _ = OVERFLOW_LINE.set(line);
    // SAFETY: plain libc calls on this thread's own attributes, a leaked buffer that lives as
    // long as the process for the alternate stack, and a handler that is async-signal-safe.
    unsafe {
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        if libc::pthread_getattr_np(libc::pthread_self(), &mut attr) != 0 {
            return;
        }
        let mut addr: *mut libc::c_void = std::ptr::null_mut();
        let mut size: libc::size_t = 0;
        let got = libc::pthread_attr_getstack(&attr, &mut addr, &mut size);
        libc::pthread_attr_destroy(&mut attr);
        if got != 0 {
            return;
        }
        let alt: &'static mut [u8] = Box::leak(vec![0u8; HANDLER_STACK].into_boxed_slice());
        let ss = libc::stack_t { ss_sp: alt.as_mut_ptr().cast(), ss_flags: 0, ss_size: alt.len() };
        if libc::sigaltstack(&ss, std::ptr::null_mut()) != 0 {
            return;
        }
        STACK_LOW.store(addr as usize, Ordering::Relaxed);
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_fault as *const () as usize;
        action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(libc::SIGSEGV, &action, std::ptr::null_mut());
        libc::sigaction(libc::SIGBUS, &action, std::ptr::null_mut());
    }
}

/// The fault handler: a fault at the bottom of the interpreter's stack (its guard page, or a
/// frame that skipped past it) is a stack overflow; anything else dies of its signal.
#[allow(unsafe_code)]
extern "C" fn on_fault(sig: libc::c_int, info: *mut libc::siginfo_t, _context: *mut libc::c_void) {
    const BELOW: usize = 1024 * 1024;
    const ABOVE: usize = 64 * 1024;
    let low = STACK_LOW.load(Ordering::Relaxed);
    // SAFETY: the kernel hands a valid siginfo to an SA_SIGINFO handler.
    let addr = unsafe { (*info).si_addr() } as usize;
    if low != 0 && addr < low.saturating_add(ABOVE) && addr >= low.saturating_sub(BELOW) {
        if let Some(line) = OVERFLOW_LINE.get() {
            // SAFETY: write(2) and _exit(2) are async-signal-safe; the line is immutable.
            unsafe {
                libc::write(1, line.as_ptr().cast(), line.len());
                libc::_exit(0);
            }
        }
    }
    // SAFETY: restores the default action; returning re-runs the faulting access under it.
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
    }
}

/// Layer 2 in the child: `compile`, `exec` and `eval` (the real builtins, which `ast.parse`
/// and library code call, and the script's own copy) refuse a source nested too deeply.
pub fn guard_compilers(vm: &VirtualMachine, script_globals: &PyDictRef) -> PyResult<()> {
    let script_builtins = script_globals.get_item("__builtins__", vm)?.downcast::<rustpython_vm::builtins::PyDict>().ok();
    for dict in std::iter::once(vm.builtins.dict()).chain(script_builtins) {
        for name in ["compile", "exec", "eval"] {
            let Some(original) = dict.get_item_opt(name, vm)? else { continue };
            let guarded = vm.new_function(name, move |args: FuncArgs, vm: &VirtualMachine| -> PyResult {
                let source = args.args.first().or_else(|| args.kwargs.get("source")).and_then(text);
                if let Some((why, source)) = source.and_then(|s| Some((depth::scan(&s)?, s))) {
                    let filename = (name == "compile").then(|| args.args.get(1).or_else(|| args.kwargs.get("filename"))).flatten();
                    let filename = filename.and_then(|f| f.str(vm).ok()).map_or("<string>".to_string(), |f| f.to_string_lossy().into_owned());
                    return Err(too_deep(vm, why, &source, &filename));
                }
                original.call(args, vm)
            });
            dict.set_item(name, guarded.into(), vm)?;
        }
    }
    Ok(())
}

/// A source argument as text (bytes decoded); code objects and ASTs have none.
fn text(source: &PyObjectRef) -> Option<String> {
    if let Some(s) = source.downcast_ref::<PyStr>() {
        return Some(s.to_string_lossy().into_owned());
    }
    source.downcast_ref::<PyBytes>().map(|b| String::from_utf8_lossy(b.as_bytes()).into_owned())
}

/// CPython's exception for a source nested too deeply: a `SyntaxError` or `IndentationError`
/// with the file, line, column and text where it first does; a `RecursionError`.
fn too_deep(vm: &VirtualMachine, why: depth::TooDeep, source: &str, filename: &str) -> PyBaseExceptionRef {
    let (kind, message) = why.python();
    let class = match kind {
        "RecursionError" => return vm.new_recursion_error(message),
        "IndentationError" => vm.ctx.exceptions.indentation_error,
        _ => vm.ctx.exceptions.syntax_error,
    };
    let offset = depth::locate(source).saturating_sub(1);
    let (line, col) = crate::sandbox::script::line_col(source, offset);
    let text: String = source.lines().nth(line - 1).unwrap_or_default().chars().take(200).collect();
    let location = vm.new_tuple((filename.to_string(), line, col, text)).into();
    let args = vec![vm.ctx.new_str(message).into(), location];
    vm.invoke_exception(class.to_owned(), args).unwrap_or_else(|e| e)
}

/// A traceback as CPython prints a deep one: a frame repeated more than three times in a
/// row becomes `[Previous line repeated N more times]`; what is still longer than the parent
/// keeps (16 KiB) loses lines in the middle, so that the last line, `RecursionError: ...`,
/// always arrives.
pub fn compact_traceback(text: &str) -> String {
    const KEEP: usize = 12 * 1024;
    // Frames: a `  File ...` line with the lines indented under it.
    let mut frames: Vec<String> = Vec::new();
    for line in text.lines() {
        match frames.last_mut() {
            Some(last) if line.starts_with("    ") && last.starts_with("  File ") => {
                last.push('\n');
                last.push_str(line);
            }
            _ => frames.push(line.to_string()),
        }
    }
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < frames.len() {
        let run = frames[i..].iter().take_while(|f| **f == frames[i]).count();
        let shown = if frames[i].starts_with("  File ") { run.min(3) } else { run };
        out.extend(std::iter::repeat_n(frames[i].clone(), shown));
        if run > shown {
            let more = run - shown;
            out.push(format!("  [Previous line repeated {more} more time{}]", if more == 1 { "" } else { "s" }));
        }
        i += run;
    }
    let joined = out.join("\n");
    if joined.len() <= KEEP {
        return joined;
    }
    let (mut head, mut tail) = (Vec::new(), Vec::new());
    let (mut head_len, mut tail_len) = (0, 0);
    for f in &out {
        if head_len + f.len() > KEEP / 3 {
            break;
        }
        head_len += f.len() + 1;
        head.push(f.as_str());
    }
    for f in out.iter().rev() {
        if tail_len + f.len() > KEEP - KEEP / 3 || head.len() + tail.len() >= out.len() {
            break;
        }
        tail_len += f.len() + 1;
        tail.push(f.as_str());
    }
    tail.reverse();
    let cut = out.len() - head.len() - tail.len();
    format!("{}\n  [... {cut} more lines of the traceback ...]\n{}", head.join("\n"), tail.join("\n"))
}
