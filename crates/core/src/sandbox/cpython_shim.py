# Cairn's shim for agent scripts on CPython (`[sandbox] interpreter = "cpython"`), run as
# `python3 -c` inside a confined run workspace. It speaks the sandbox child's protocol
# (sandbox/protocol.rs: JSON lines) on its stdout, a unix socket to the parent: reads Start,
# sends one Call per external call and reads its Reply, ends with Done. The script arrives
# transformed as RustPython's is (script/awaits.rs: no `async`; `await x` is
# `__cairn_await__(x)`), so it means the same on both interpreters: externals are builtins
# (and the `grail` module) returning plain values, the script's `asyncio` is the sandbox's
# (child/py/asyncio.py), values cross as the child's do (child/value.rs). print() and
# sys.stdout/sys.stderr go to the run log. The script's own file I/O is plain CPython on the
# workspace: the parent captures it after the run. A CPython that would die where RustPython
# raises gets the Python error instead: the recursion limit is capped as the child caps it,
# and a hand-made code object runs only when its bytecode is what CPython compiled.
import sys

if sys.version_info < (3, 10):
    sys.stderr.write("cairn-python-too-old: %s at %s\n" % (sys.version.split()[0], sys.executable))
    sys.exit(3)

import _thread, builtins, faulthandler, io, json, math, os, site, types

# Started with -S (the host's .pth files can cost tens of milliseconds): the site-packages
# directories are put on the path as site would, without running .pth files.
sys.path.extend(p for p in site.getsitepackages() + [site.getusersitepackages()] if os.path.isdir(p) and p not in sys.path)

_NAMES = __NAMES__
_ASYNCIO = __ASYNCIO__
_WRITING = ("write_file", "edit_file", "edit_lines", "delete_file", "move_file")
_sock = os.dup(1)
_null = os.open(os.devnull, os.O_RDWR)
os.dup2(_null, 0)
os.dup2(2, 1)
os.close(_null)
# A crash the interpreter cannot turn into an exception still says where it was.
faulthandler.enable(file=2, all_threads=False)
_r = os.fdopen(_sock, "rb")
_w = os.fdopen(os.dup(_sock), "wb")
_lock = _thread.allocate_lock()
_EXC = {n: getattr(builtins, n) for n in ("ValueError", "FileNotFoundError", "IsADirectoryError", "NotADirectoryError", "FileExistsError", "TypeError", "TimeoutError", "NameError", "PermissionError", "OSError")}


def _line(obj):
    # Lone surrogates become "?" (the parent reads UTF-8 JSON, which cannot hold them).
    return json.dumps(obj, ensure_ascii=False, allow_nan=False).encode("utf-8", "replace") + b"\n"


def _send(obj):
    _w.write(_line(obj))
    _w.flush()


def _plain(v):
    return os.fspath(v) if isinstance(v, os.PathLike) and not isinstance(v, str) else v


class _NotPlain(Exception):
    pass


def _value(v, depth=0):
    """`v` as JSON, as the child's value.rs sends it: None, bool, int, float (not finite:
    None), str, list, tuple and dict with str keys, 64 levels deep."""
    if depth > 64:
        raise _NotPlain("nested deeper than 64 levels")
    if v is None or type(v) is bool:
        return v
    if isinstance(v, str):
        return str(v)
    if isinstance(v, int):
        if -(1 << 63) <= v < (1 << 64):
            return int(v)
        raise _NotPlain("an int too large for JSON")
    if isinstance(v, float):
        return float(v) if math.isfinite(v) else None
    if isinstance(v, (list, tuple)):
        return [_value(x, depth + 1) for x in v]
    if isinstance(v, dict):
        out = {}
        for k, x in list(v.items()):
            if not isinstance(k, str):
                raise _NotPlain("a dict key that is not a str")
            out[str(k)] = _value(x, depth + 1)
        return out
    raise _NotPlain("an object of type '%s'" % type(v).__name__)


def _call(name, args, kwargs):
    try:
        jargs = [_value(_plain(a)) for a in args]
    except _NotPlain as e:
        raise TypeError("%s(): arguments must be str, int, float, bool, None, list or dict, not %s" % (name, e)) from None
    jkwargs = {}
    for k, v in kwargs.items():
        try:
            jkwargs[k] = _value(_plain(v))
        except _NotPlain as e:
            raise TypeError("%s(): argument '%s' is not a plain value: %s" % (name, k, e)) from None
    line = _line({"t": "call", "name": name, "args": jargs, "kwargs": jkwargs})
    with _lock:
        _w.write(line)
        _w.flush()
        reply = _r.readline()
    if not reply:
        os._exit(70)
    rep = json.loads(reply)
    if "ok" in rep:
        return rep["ok"]
    raise _EXC.get(rep.get("exc"), RuntimeError)(rep.get("message", ""))


_ROOT = [""]


def _arg(args, kwargs, i, key):
    return _plain(args[i]) if len(args) > i else _plain(kwargs.get(key))


def _mirror(name, args, kwargs):
    """What a writing external did to the proposal, done to the workspace's files too, so
    that plain reads see it and the capture does not undo it. Best effort."""
    local = lambda p: os.path.join(_ROOT[0], p)
    try:
        if name == "write_file" or (name in ("edit_file", "edit_lines") and not _arg(args, kwargs, 2, "dry_run")):
            path = _arg(args, kwargs, 0, "path")
            text = _arg(args, kwargs, 1, "content") if name == "write_file" else _call("read_file", [path], {})
            os.makedirs(os.path.dirname(local(path)) or ".", exist_ok=True)
            with open(local(path), "w", encoding="utf-8", newline="") as fh:
                fh.write(text)
        elif name == "delete_file":
            os.remove(local(_arg(args, kwargs, 0, "path")))
        elif name == "move_file":
            dst = local(_arg(args, kwargs, 1, "dst"))
            os.makedirs(os.path.dirname(dst) or ".", exist_ok=True)
            os.replace(local(_arg(args, kwargs, 0, "src")), dst)
    except Exception:
        pass


def _external(name):
    def f(*args, **kwargs):
        value = _call(name, args, kwargs)
        if name in _WRITING:
            _mirror(name, args, kwargs)
        return value
    f.__name__ = f.__qualname__ = name
    return f


# --- await, async for, async with (the transform's calls) ---------------------------------

_LOOP = [None]


def _awaitable(x):
    t = type(x)
    return t is types.CoroutineType or hasattr(t, "__await__") or (t is types.GeneratorType and bool(x.gi_code.co_flags & 0x100))


def _await(x):
    """`await x`: a real awaitable (a library's coroutine or future; the script's own
    coroutines are plain calls) is run to its end on a loop of the script's; anything else
    is its own value, as on RustPython."""
    if not _awaitable(x):
        return x
    import asyncio
    if _LOOP[0] is None:
        _LOOP[0] = asyncio.new_event_loop()
        asyncio.set_event_loop(_LOOP[0])
    return _LOOP[0].run_until_complete(x)


def _aiter(x):
    """The iterable of `async for`: an asynchronous iterator is stepped with `_await`."""
    if not hasattr(type(x), "__aiter__"):
        return x
    it = type(x).__aiter__(x)

    def steps():
        while True:
            try:
                v = _await(type(it).__anext__(it))
            except StopAsyncIteration:
                return
            yield v
    return steps()


class _ACtx:
    """An asynchronous context manager used by `with`."""
    __slots__ = ("cm",)

    def __init__(self, cm):
        self.cm = cm

    def __enter__(self):
        return _await(type(self.cm).__aenter__(self.cm))

    def __exit__(self, *exc):
        return _await(type(self.cm).__aexit__(self.cm, *exc))


def _actx(x):
    return _ACtx(x) if hasattr(type(x), "__aenter__") else x


def _asyncio():
    """The script's `asyncio`: the sandbox's module, with real awaitables run to their end
    and the rest of the real module behind it."""
    m = types.ModuleType("asyncio")
    exec(compile(_ASYNCIO, "<cairn asyncio>", "exec"), m.__dict__)
    m._ready = _await

    def __getattr__(name):
        import asyncio
        return getattr(asyncio, name)
    m.__getattr__ = __getattr__
    return m


# --- the script's globals and its imports -------------------------------------------------

_SCRIPT = [None]
_AIO = [None]
_import = builtins.__import__


def _script_import(name, globals=None, locals=None, fromlist=(), level=0):
    """`import asyncio` in the script (only there: libraries keep the real one)."""
    if level == 0 and globals is not None and globals is _SCRIPT[0] and (name == "asyncio" or (name.startswith("asyncio.") and not fromlist)):
        if name != "asyncio":
            _import(name, globals, locals, fromlist, level)
        if _AIO[0] is None:
            _AIO[0] = _asyncio()
        return _AIO[0]
    return _import(name, globals, locals, fromlist, level)


# --- the recursion limit ------------------------------------------------------------------

_real_setlimit, _real_getlimit = sys.setrecursionlimit, sys.getrecursionlimit
# [the configured limit, the shim's own frames under the script]
_LIMIT = [1000, 0]
# Bytes of C stack one level of recursion may take (CPython 3.11 takes up to about 2.5 KiB).
_LEVEL_BYTES = 4096


def _ceiling():
    """The deepest recursion the main thread's stack holds."""
    try:
        import resource
        soft = resource.getrlimit(resource.RLIMIT_STACK)[0]
    except Exception:
        soft = -1
    if soft <= 0 or soft > (1 << 30):
        soft = 8 << 20
    return max(50, soft // _LEVEL_BYTES)


def _setrecursionlimit(limit):
    """`sys.setrecursionlimit`, capped at the configured limit as the child caps it."""
    import operator
    limit = operator.index(limit)
    if limit < 1:
        raise ValueError("recursion limit must be greater or equal than 1")
    _real_setlimit(min(limit, _LIMIT[0]) + _LIMIT[1])


def _getrecursionlimit():
    return _real_getlimit() - _LIMIT[1]


# --- hand-made code objects ---------------------------------------------------------------
# A code object made by hand (`types.CodeType`, `code.replace`, `marshal.loads`) can crash
# CPython when it runs. The audit hook remembers each one made; one runs (a function made of
# it, a `__code__` set, `exec`) only if its bytecode and layout are those of a code object
# CPython compiled (reachable from a function, a generator or a frame), else ValueError.
# `marshal.load` of a file and crafted `.pyc` files are not covered: those crash as such
# (faulthandler names the line).

_MADE = set()
_SAME = ("co_argcount", "co_posonlyargcount", "co_kwonlyargcount", "co_nlocals", "co_varnames", "co_cellvars", "co_freevars", "co_linetable", "co_exceptiontable")
def _signature(c):
    return (c.co_code, c.co_filename, c.co_name)


def _clean(co_code):
    """Why bytes are not bytecode a code object stores and gives back unchanged, if so."""
    import opcode
    if not co_code or len(co_code) % 2:
        return "its length is %d" % len(co_code)
    base = {v for k, v in opcode.opmap.items() if v < 256 and not k.startswith("INSTRUMENTED") and k != "ENTER_EXECUTOR"}
    caches = getattr(opcode, "_inline_cache_entries", None)
    i = 0
    while i < len(co_code):
        op = co_code[i]
        if op not in base:
            return "opcode %d at offset %d" % (op, i)
        n = (caches.get(opcode.opname[op], 0) if isinstance(caches, dict) else caches[op]) if caches else 0
        if any(co_code[i + 2:i + 2 + 2 * n]):
            return "a filled cache after offset %d" % i
        i += 2 + 2 * n
    return None


def _shape(v):
    t = type(v)
    if t is tuple:
        return (t, tuple(_shape(x) for x in v))
    if t is frozenset:
        return (t, len(v))
    return t


# Flags a code object may change without changing how its bytecode runs: nested, iterable
# coroutine (`types.coroutine` sets it), the `__future__` ones.
_FREE_FLAGS = 0x10 | 0x100 | ~0xFFFF


def _like(c, m):
    return (m is not c and c.co_code == m.co_code and c.co_stacksize >= m.co_stacksize and len(c.co_names) == len(m.co_names)
            and not (c.co_flags ^ m.co_flags) & ~_FREE_FLAGS
            and all(getattr(c, a, None) == getattr(m, a, None) for a in _SAME) and _shape(c.co_consts) == _shape(m.co_consts))


def _codes_in(obj, out):
    """Every code object in `obj` (a code object's constants included)."""
    todo = [obj]
    while todo:
        o = todo.pop()
        t = type(o)
        if t is types.CodeType:
            if id(o) not in out:
                out[id(o)] = o
                todo.extend(o.co_consts)
        elif t in (tuple, list, set, frozenset):
            todo.extend(o)
        elif t is dict:
            todo.extend(o.keys())
            todo.extend(o.values())
    return out


def _compiled_codes():
    """Every code object reachable from functions, generators and frames."""
    import gc
    roots = []
    for o in gc.get_objects():
        t = type(o)
        if t is types.FunctionType:
            roots.append(o.__code__)
        elif t is types.GeneratorType:
            roots.append(o.gi_code)
        elif t is types.CoroutineType:
            roots.append(o.cr_code)
        elif t is types.AsyncGeneratorType:
            roots.append(o.ag_code)
    f = sys._getframe()
    while f is not None:
        roots.append(f.f_code)
        f = f.f_back
    return _codes_in(roots, {})


# [{id: code}, {co_code: [code]}] of the code objects reachable when last looked (held, so
# that an id stays theirs); code objects never change, so what was safe stays safe.
_KNOWN = [None, None]


def _safe(c, fresh):
    if fresh or _KNOWN[0] is None:
        codes = _compiled_codes()
        by = {}
        for k in codes.values():
            by.setdefault(k.co_code, []).append(k)
        _KNOWN[:] = [codes, by]
    codes, by = _KNOWN
    return codes.get(id(c)) is c or any(_like(c, m) for m in by.get(c.co_code, ()))


def _refusal(code):
    """Why `code` (or a code object in its constants) may not run, if so."""
    for c in _codes_in(code, {}).values():
        if _signature(c) in _MADE and not (_safe(c, False) or _safe(c, True)):
            return "code object %r was made by hand and its bytecode is not what CPython compiled (it could crash the interpreter)" % c.co_name
    return None


def _caller_is_importlib():
    f = sys._getframe(2)
    return f is not None and f.f_code.co_filename.startswith("<frozen importlib")


_DECODING = [False]


def _audit(event, args):
    if event == "code.__new__":
        why = _clean(args[0])
        if why:
            raise ValueError("code(): refused hand-made bytecode (%s)" % why)
        _MADE.add(tuple(args[:3]))
    elif event == "marshal.loads" and not _DECODING[0] and not _caller_is_importlib():
        # What it will give, decoded once more here: its code objects count as made by hand.
        import marshal
        _DECODING[0] = True
        try:
            _MADE.update(_signature(c) for c in _codes_in(marshal.loads(args[0]), {}).values())
        except Exception:
            pass
        finally:
            _DECODING[0] = False
    elif _MADE:
        if event == "function.__new__" or (event == "exec" and not _caller_is_importlib()):
            code = args[0]
        elif event == "object.__setattr__" and args[1] == "__code__":
            code = args[2]
        else:
            return
        if type(code) is types.CodeType:
            why = _refusal(code)
            if why:
                raise ValueError(why)


# --- the run ------------------------------------------------------------------------------

class _Log(io.TextIOBase):
    """A text stream whose lines go to the run log."""

    def __init__(self, name):
        self.name = name
        self._pending = ""

    def writable(self):
        return True

    def write(self, s):
        if not isinstance(s, str):
            raise TypeError("write() argument must be str, not %s" % type(s).__name__)
        self._pending += s
        while "\n" in self._pending:
            line, self._pending = self._pending.split("\n", 1)
            _call("log", [line], {})
        return len(s)

    def end(self):
        if self._pending:
            rest, self._pending = self._pending, ""
            _call("log", [rest], {})


def _install(inputs):
    grail = types.ModuleType("grail")
    for name in _NAMES:
        f = _external(name)
        setattr(builtins, name, f)
        setattr(grail, name, f)

    def external(f):
        if f.__name__ in _NAMES:
            return getattr(builtins, f.__name__)
        raise NameError("'%s' is not an external function (known: %s)" % (f.__name__, ", ".join(_NAMES)))

    def Input(name, default=None):
        return inputs.get(name, default)

    class Quitter:
        # What site would install (the shim runs with -S): exit() and quit().
        def __init__(self, name):
            self.name = name

        def __repr__(self):
            return "Use %s() or Ctrl-D (i.e. EOF) to exit" % self.name

        def __call__(self, code=None):
            raise SystemExit(code)

    builtins.exit, builtins.quit = Quitter("exit"), Quitter("quit")
    for n, f in (("external", external), ("Input", Input)):
        setattr(builtins, n, f)
        setattr(grail, n, f)
    sys.modules["grail"] = grail
    builtins.__cairn_await__, builtins.__cairn_aiter__, builtins.__cairn_actx__ = _await, _aiter, _actx
    builtins.__import__ = _script_import
    sys.setrecursionlimit, sys.getrecursionlimit = _setrecursionlimit, _getrecursionlimit
    sys.addaudithook(_audit)


def _text(e):
    """The traceback of `e` without the shim's frames (an external's call among them)."""
    import traceback
    te = traceback.TracebackException(type(e), e, e.__traceback__)
    todo, seen = [te], set()
    while todo:
        t = todo.pop()
        if t is None or id(t) in seen:
            continue
        seen.add(id(t))
        t.stack = traceback.StackSummary.from_list([f for f in t.stack if f.filename != "<string>"])
        todo += [t.__cause__, t.__context__] + list(getattr(t, "exceptions", None) or ())
    return "".join(te.format()).rstrip()


def _result(v):
    """The run's result as the child gives it: the value as JSON, else its repr."""
    try:
        return _value(v)
    except (_NotPlain, RecursionError):
        pass
    try:
        return repr(v)
    except BaseException:
        return None


def _depth():
    n, f = 0, sys._getframe()
    while f is not None:
        n, f = n + 1, f.f_back
    return n


def _run(start):
    fn = start["filename"]
    try:
        code = compile(start["source"], fn, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as e:
        import traceback
        return None, {"kind": "syntax", "message": "%s: %s" % (fn, "".join(traceback.format_exception_only(type(e), e)).strip())}
    g = {"__name__": "__main__", "__builtins__": builtins, "__file__": fn}
    _SCRIPT[0] = g
    # The script's own frames count from 1, as in the child.
    _LIMIT[1] = _depth() - 1
    _real_setlimit(_LIMIT[0] + _LIMIT[1])
    try:
        exec(code, g)
    except SystemExit as e:
        if e.code not in (None, 0):
            return None, {"kind": "exception", "message": _text(e)}
    except RecursionError as e:
        return None, {"kind": "recursion", "message": _text(e)}
    except MemoryError as e:
        # Room to report it: the reserve and the script's globals go first.
        global _reserve
        _reserve = None
        g.clear()
        try:
            return None, {"kind": "memory", "message": _text(e)}
        except MemoryError:
            return None, {"kind": "memory", "message": "MemoryError"}
    except BaseException as e:
        return None, {"kind": "exception", "message": _text(e)}
    return _result(g.get("__cairn_result__")), None


_reserve = bytearray(1 << 20)


def _main():
    start = json.loads(_r.readline())
    import random
    random.seed(start.get("seed", 0))
    _LIMIT[0] = min(max(1, int(start.get("max_recursion", 1000))), _ceiling())
    _ROOT[0] = start.get("inputs", {}).get("project_root", "")
    _install(start.get("inputs", {}))
    sys.argv = [start["filename"]]
    out, err = _Log("<stdout>"), _Log("<stderr>")
    sys.stdout, sys.stderr = out, err
    result, error = _run(start)
    try:
        out.end()
        err.end()
    except BaseException:
        pass
    sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
    _send({"t": "done", "result": result if error is None else None, "error": error})


_main()
