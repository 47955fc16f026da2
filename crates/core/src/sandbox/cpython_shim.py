# Cairn's shim for agent scripts on CPython (`[sandbox] interpreter = "cpython"`), run as
# `python3 -c` inside a confined run workspace. It speaks the sandbox child's protocol
# (sandbox/protocol.rs: JSON lines) on its stdout, a unix socket to the parent: reads Start,
# sends one Call per external call and reads its Reply, ends with Done. Externals are
# builtins (and the `grail` module), callable with or without `await`; print() and
# sys.stdout/sys.stderr go to the run log as rustpython's child does. The script's own file
# I/O is plain CPython on the workspace: the parent captures it after the run.
import sys

if sys.version_info < (3, 10):
    sys.stderr.write("cairn-python-too-old: %s at %s\n" % (sys.version.split()[0], sys.executable))
    sys.exit(3)

import _thread, ast, builtins, io, json, os, site, types

# Started with -S (the host's .pth files can cost tens of milliseconds): the site-packages
# directories are put on the path as site would, without running .pth files.
sys.path.extend(p for p in site.getsitepackages() + [site.getusersitepackages()] if os.path.isdir(p) and p not in sys.path)

_NAMES = __NAMES__
_WRITING = ("write_file", "edit_file", "edit_lines", "delete_file", "move_file")
_sock = os.dup(1)
_null = os.open(os.devnull, os.O_RDWR)
os.dup2(_null, 0)
os.dup2(2, 1)
os.close(_null)
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
    return os.fspath(v) if isinstance(v, os.PathLike) else v


def _call(name, args, kwargs):
    msg = {"t": "call", "name": name, "args": [_plain(a) for a in args], "kwargs": {k: _plain(v) for k, v in kwargs.items()}}
    try:
        line = _line(msg)
    except (TypeError, ValueError) as e:
        raise TypeError("%s(): arguments must be str, int, float, bool, None, list or dict (%s)" % (name, e)) from None
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


class _Ready:
    """The value of a call that is awaited."""
    __slots__ = ("v",)

    def __init__(self, v):
        self.v = v

    def __await__(self):
        return self.v
        yield


def _awaitable_type(base):
    def __await__(self):
        return base(self)
        yield
    return type(base.__name__, (base,), {"__await__": __await__})


_AWAITABLE = {str: _awaitable_type(str), list: _awaitable_type(list), dict: _awaitable_type(dict)}
_NEXT = {}
_CO_COROUTINE = 0x80


def _next_op(frame):
    code = frame.f_code
    table = _NEXT.get(code)
    if table is None:
        import dis
        ins = list(dis.get_instructions(code))
        table = {a.offset: b.opname for a, b in zip(ins, ins[1:])}
        _NEXT[code] = table
    return table.get(frame.f_lasti)


def _in_coroutine(frame):
    while frame is not None and frame.f_code.co_name in ("<listcomp>", "<genexpr>", "<dictcomp>", "<setcomp>"):
        frame = frame.f_back
    return frame is not None and bool(frame.f_code.co_flags & _CO_COROUTINE)


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
        caller = sys._getframe(1)
        if _next_op(caller) == "GET_AWAITABLE":
            return _Ready(value)
        kind = _AWAITABLE.get(type(value))
        if kind is not None and _in_coroutine(caller):
            return kind(value)
        return value
    f.__name__ = f.__qualname__ = name
    return f


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


def _compile(source, filename):
    tree = ast.parse(source, filename)
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = tree.body[-1]
        tree.body[-1] = ast.copy_location(ast.Assign(targets=[ast.Name("__cairn_result__", ast.Store())], value=last.value), last)
        ast.fix_missing_locations(tree)
    return compile(tree, filename, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)


def _text(e):
    import traceback
    tb = e.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename == "<string>":
        tb = tb.tb_next
    return "".join(traceback.format_exception(type(e), e, tb)).rstrip()


def _json(v):
    try:
        json.dumps(v, allow_nan=False)
        return v
    except (TypeError, ValueError, RecursionError):
        return repr(v)


def _run(start):
    fn = start["filename"]
    try:
        code = _compile(start["source"], fn)
    except (SyntaxError, ValueError) as e:
        import traceback
        return None, {"kind": "syntax", "message": "%s: %s" % (fn, "".join(traceback.format_exception_only(type(e), e)).strip())}
    g = {"__name__": "__main__", "__builtins__": builtins, "__file__": fn}
    try:
        r = eval(code, g)
        if code.co_flags & _CO_COROUTINE:
            import asyncio
            asyncio.run(r)
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
    return _json(g.get("__cairn_result__")), None


_reserve = bytearray(1 << 20)


def _main():
    start = json.loads(_r.readline())
    import random
    random.seed(start.get("seed", 0))
    sys.setrecursionlimit(max(50, int(start.get("max_recursion", 1000))) + 3)
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
