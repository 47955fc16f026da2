"""Files inside the sandbox, over the externals: `open`, and the `os` calls `pathlib`, `glob`
and `shutil` stand on. The project is the file system a script sees: the working directory is
the project root, a relative path is under it, an absolute path inside it is that file, and
anything else raises PermissionError naming the rule. Every read and write is an external call
(read_file, write_file, delete_file, move_file, list_dir), so the run's limits, protected paths,
audit log and three-way bases hold as for any other call."""

import io as _io_mod
import _io

# The externals are builtins of the child (read_file, write_file, ...), as is Input.
ROOT = Input("project_root", "/") or "/"
# Directories a script made: the proposal holds files only, so an empty one lives here until
# a file is written under it.
_made = set()
_PROTECTED = Input("protected", None) or {"dirs": [], "files": []}
_S_IFDIR = 0o040000
_S_IFREG = 0o100000


def _fspath(p):
    if isinstance(p, int):
        raise OSError(9, "Bad file descriptor: the sandbox has no file descriptors")
    if hasattr(p, "__fspath__") and not isinstance(p, (str, bytes)):
        p = p.__fspath__()
    if isinstance(p, bytes):
        p = p.decode("utf-8", "surrogateescape")
    if not isinstance(p, str):
        raise TypeError("expected str, bytes or os.PathLike object, not " + type(p).__name__)
    return p


def rel(p):
    """The project-relative path of `p` ('' for the root); PermissionError outside."""
    p = _fspath(p)
    if p.startswith("/"):
        root = ROOT.rstrip("/")
        if p == root or p == root + "/":
            return ""
        if not p.startswith(root + "/"):
            raise PermissionError(13, "Permission denied: %r is outside the project %s (scripts reach only the project's files)" % (p, ROOT))
        p = p[len(root) + 1:]
    parts = []
    for c in p.split("/"):
        if c in ("", "."):
            continue
        if c == "..":
            if not parts:
                raise PermissionError(13, "Permission denied: %r leaves the project %s" % (p, ROOT))
            parts.pop()
        else:
            parts.append(c)
    return "/".join(parts)


def refuse_protected(p):
    """PermissionError for Cairn's and the repository's own files (the externals' rule): not
    read, listed, written or deleted."""
    parts = rel(p).lower().split("/")
    if any(c in _PROTECTED["dirs"] for c in parts) or parts[-1] in _PROTECTED["files"]:
        raise PermissionError(13, "Permission denied: %r is off limits to agents (repository and cairn machinery)" % _fspath(p))


_ERRNO = {FileNotFoundError: (2, "No such file or directory"), IsADirectoryError: (21, "Is a directory"),
          NotADirectoryError: (20, "Not a directory"), FileExistsError: (17, "File exists")}


def _call(f, *args, **kwargs):
    """An external call whose errors read as CPython's OSErrors: a ValueError about a path is a
    PermissionError, a missing file `[Errno 2] No such file or directory: 'path'`."""
    try:
        return f(*args, **kwargs)
    except ValueError as e:
        if "Invalid path" in str(e):
            raise PermissionError(13, str(e)) from None
        raise
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError, FileExistsError) as e:
        if e.errno is not None or not args or not isinstance(args[0], str):
            raise
        err = e
    # Raised outside the handler: the interpreter's traceback would print the first one too.
    errno, text = _ERRNO[type(err)]
    raise type(err)(errno, text, args[0])


def kind(p):
    """'file', 'dir' or None."""
    r = rel(p)
    if r == "" or r in _made:
        return "dir"
    # Two calls whatever the size of the directory around it (a loop of `os.path.isfile`
    # over a large directory stays linear): does it exist, and does it list as a directory.
    if not _call(file_exists, r):
        return None
    try:
        _call(list_dir, r)
    except NotADirectoryError:
        return "file"
    except FileNotFoundError:
        return None
    return "dir"


def size(p):
    r = rel(p)
    parent, _, name = r.rpartition("/")
    for e in _call(list_dir, parent or ".", 1, True):
        if e["path"] == name and e["type"] == "file":
            return e.get("size", 0)
    return 0


def entries(p):
    """(name, is_dir, size) of each entry of directory `p`, made directories included."""
    r = rel(p)
    out = [(e["path"], e["type"] == "dir", e.get("size", 0)) for e in _call(list_dir, r or ".", 1, True)]
    seen = {n for n, _, _ in out}
    prefix = r + "/" if r else ""
    for m in sorted(_made):
        if m.startswith(prefix) and "/" not in m[len(prefix):] and m[len(prefix):] not in seen:
            out.append((m[len(prefix):], True, 0))
    return sorted(out)


def read_bytes(p):
    refuse_protected(p)
    r = rel(p)
    k = kind(p)
    if k == "dir":
        raise IsADirectoryError(21, "Is a directory", _fspath(p))
    if k is None:
        raise FileNotFoundError(2, "No such file or directory", _fspath(p))
    return _call(read_file, r).encode("utf-8", "surrogateescape")


def write_bytes(p, data):
    refuse_protected(p)
    r = rel(p)
    if kind(p) == "dir":
        raise IsADirectoryError(21, "Is a directory", _fspath(p))
    parent = r.rpartition("/")[0]
    if parent and kind(parent) != "dir":
        raise FileNotFoundError(2, "No such file or directory", _fspath(p))
    _call(write_file, r, bytes(data).decode("utf-8", "surrogateescape"))


# Files open for writing: those a script never closes are flushed when it ends (`flush_all`,
# called by the child), as CPython flushes them at exit.
_open_writers = []


def flush_all():
    for f in list(_open_writers):
        if not f.closed:
            f.flush()


class _Writer:
    """What a file opened for writing does when it is flushed or closed: the whole content
    goes to the proposal."""

    def _cairn_init(self, path):
        self._cairn_path = path
        _open_writers.append(self)

    def flush(self):
        super().flush()
        if not self.closed:
            write_bytes(self._cairn_path, self._cairn_bytes())

    def close(self):
        if not self.closed:
            self.flush()
            if self in _open_writers:
                _open_writers.remove(self)
        super().close()


class _BytesFile(_Writer, _io.BytesIO):
    def _cairn_bytes(self):
        return self.getvalue()


class _TextFile(_Writer, _io.StringIO):
    def _cairn_bytes(self):
        return self.getvalue().encode(self._cairn_encoding, self._cairn_errors)


class _ReadOnly:
    def writable(self):
        return False

    def write(self, *a):
        raise _io.UnsupportedOperation("not writable")


class _BytesReader(_ReadOnly, _io.BytesIO):
    pass


class _TextReader(_ReadOnly, _io.StringIO):
    pass


def open(file, mode="r", buffering=-1, encoding=None, errors=None, newline=None, closefd=True, opener=None):
    """The built-in `open`, over the proposal."""
    if not isinstance(mode, str):
        raise TypeError("open() argument 'mode' must be str, not " + type(mode).__name__)
    modes = set(mode)
    if modes - set("rwaxbt+") or len(mode) != len(modes) or sum(c in mode for c in "rwax") != 1:
        raise ValueError("invalid mode: '%s'" % mode)
    binary = "b" in mode
    if binary and (encoding is not None or errors is not None or newline is not None):
        raise ValueError("binary mode doesn't take an encoding, errors or newline argument")
    # The sandbox's locale is UTF-8 ("locale" is what io.text_encoding gives for None).
    encoding = "utf-8" if encoding in (None, "locale") else encoding
    errors = errors or "strict"
    refuse_protected(file)
    k = kind(file)
    if k == "dir":
        raise IsADirectoryError(21, "Is a directory", _fspath(file))
    if "x" in mode and k is not None:
        raise FileExistsError(17, "File exists", _fspath(file))
    if ("r" in mode or "a" in mode or "+" in mode) and k == "file" and "w" not in mode:
        old = read_bytes(file)
    else:
        if "r" in mode:
            raise FileNotFoundError(2, "No such file or directory", _fspath(file))
        old = b""
    if "r" in mode and "+" not in mode:
        if binary:
            return _BytesReader(old)
        text = old.decode(encoding, errors)
        if newline is None or newline == "":
            text = text.replace("\r\n", "\n").replace("\r", "\n") if newline is None else text
        return _TextReader(text)
    if binary:
        f = _BytesFile(old)
    else:
        f = _TextFile(old.decode(encoding, errors), newline="" if newline is None else newline)
        f._cairn_encoding, f._cairn_errors = encoding, errors
    f._cairn_init(file)
    if "a" in mode:
        f.seek(0, 2)
    elif "r" not in mode:
        f.truncate(0)
    if "w" in mode or "x" in mode:
        write_bytes(file, b"")
    return f


def listdir(p="."):
    refuse_protected(p)
    k = kind(p)
    if k is None:
        raise FileNotFoundError(2, "No such file or directory", _fspath(p))
    if k == "file":
        raise NotADirectoryError(20, "Not a directory", _fspath(p))
    try:
        return [n for n, _, _ in entries(p)]
    except FileNotFoundError:
        return []  # a directory the script made, with nothing in it yet


def remove(p):
    refuse_protected(p)
    if kind(p) == "dir":
        raise IsADirectoryError(21, "Is a directory", _fspath(p))
    _call(delete_file, rel(p))


def rename(src, dst):
    if kind(dst) == "file":
        remove(dst)
    _call(move_file, rel(src), rel(dst))


def mkdir(p, exist_ok=False, parents=False):
    refuse_protected(p)
    k = kind(p)
    if k == "file" or (k == "dir" and not exist_ok):
        raise FileExistsError(17, "File exists", _fspath(p))
    r = rel(p)
    parent = r.rpartition("/")[0]
    if parent and kind(parent) is None and not parents:
        raise FileNotFoundError(2, "No such file or directory", _fspath(p))
    while r and kind(r) != "file":
        _made.add(r)
        r = r.rpartition("/")[0]
        if not parents:
            break


def rmdir(p):
    if listdir(p):
        raise OSError(39, "Directory not empty", _fspath(p))
    _made.discard(rel(p))
