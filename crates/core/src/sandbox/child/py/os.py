"""Cairn's stand-in for `os` inside the sandbox: names, pure path helpers, and the file calls
(stat, listdir, scandir, walk, remove, rename, mkdir, ...) over the project's proposal through
the externals (`_cairnfs`); no environment, descriptors or processes."""

import sys
import abc
import posixpath as path

name = "posix"
sep = "/"
altsep = None
extsep = "."
pathsep = ":"
curdir = "."
pardir = ".."
defpath = "/bin:/usr/bin"
linesep = "\n"
devnull = "/dev/null"
supports_follow_symlinks = set()
supports_fd = set()
supports_dir_fd = set()
environ = {}
environb = {}
F_OK, X_OK, W_OK, R_OK = 0, 1, 2, 4
O_RDONLY, O_WRONLY, O_RDWR = 0, 1, 2
SEEK_SET, SEEK_CUR, SEEK_END = 0, 1, 2
sys.modules["os.path"] = path


def _is(want):
    """`os.path.exists`/`isfile`/`isdir` by kind alone (no size: a stat lists the directory)."""
    def check(p):
        import _cairnfs
        try:
            k = _cairnfs.kind(p)
        except (OSError, ValueError, TypeError):
            return False
        return k is not None if want is None else k == want
    return check


path.exists = path.lexists = _is(None)
path.isfile = _is("file")
path.isdir = _is("dir")

error = OSError


class stat_result(tuple):
    """The shape of os.stat's result (the sandbox never produces one)."""
    n_fields = n_sequence_fields = 10
    st_mode = property(lambda self: self[0])
    st_size = property(lambda self: self[6])
    st_mtime = property(lambda self: self[8])


def _no_host(*args, **kwargs):
    raise PermissionError("the sandbox has no processes, descriptors or links; files are the project's (open, pathlib, os.listdir, ...)")


fstat = read = write = chmod = symlink = readlink = link = utime = _no_host
getuid = system = kill = _no_host


def getpid():
    """The script's process, as it sees itself (logging records it)."""
    return 1
O_CREAT, O_EXCL, O_TRUNC, O_APPEND = 0o100, 0o200, 0o1000, 0o2000


def stat(path, *, dir_fd=None, follow_symlinks=True):
    import _cairnfs
    k = _cairnfs.kind(path)
    if k is None:
        raise FileNotFoundError(2, "No such file or directory", fspath(path))
    if k == "dir":
        return stat_result((_cairnfs._S_IFDIR | 0o755, 0, 0, 1, 0, 0, 4096, 0, 0, 0))
    return stat_result((_cairnfs._S_IFREG | 0o644, 0, 0, 1, 0, 0, _cairnfs.size(path), 0, 0, 0))


lstat = stat


def listdir(path="."):
    import _cairnfs
    return _cairnfs.listdir(path)


class DirEntry:
    """An entry of `scandir`."""

    def __init__(self, parent, name, is_dir, size):
        self.name = name
        self.path = name if parent in (".", "") else path.join(parent, name)
        self._is_dir, self._size = is_dir, size

    def is_dir(self, *, follow_symlinks=True):
        return self._is_dir

    def is_file(self, *, follow_symlinks=True):
        return not self._is_dir

    def is_symlink(self):
        return False

    def is_junction(self):
        return False

    def inode(self):
        return 0

    def stat(self, *, follow_symlinks=True):
        return stat_result(((0o040755 if self._is_dir else 0o100644), 0, 0, 1, 0, 0, 4096 if self._is_dir else self._size, 0, 0, 0))

    def __fspath__(self):
        return self.path

    def __repr__(self):
        return "<DirEntry %r>" % self.name


class _Scandir:
    def __init__(self, items):
        self._it = iter(items)

    def __iter__(self):
        return self

    def __next__(self):
        return next(self._it)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        self._it = iter(())


def scandir(path="."):
    import _cairnfs
    parent = fspath(path)
    k = _cairnfs.kind(parent)
    if k is None:
        raise FileNotFoundError(2, "No such file or directory", parent)
    if k == "file":
        raise NotADirectoryError(20, "Not a directory", parent)
    try:
        found = _cairnfs.entries(parent)
    except FileNotFoundError:
        found = []
    return _Scandir([DirEntry(parent, n, d, s) for n, d, s in found])


def walk(top, topdown=True, onerror=None, followlinks=False):
    try:
        found = list(scandir(top))
    except OSError as e:
        if onerror is not None:
            onerror(e)
        return
    dirs = [e.name for e in found if e.is_dir()]
    files = [e.name for e in found if not e.is_dir()]
    if topdown:
        yield top, dirs, files
    for d in dirs:
        yield from walk(path.join(top, d), topdown, onerror, followlinks)
    if not topdown:
        yield top, dirs, files


def remove(path, *, dir_fd=None):
    import _cairnfs
    _cairnfs.remove(path)


unlink = remove


def rename(src, dst, *, src_dir_fd=None, dst_dir_fd=None):
    import _cairnfs
    _cairnfs.rename(src, dst)


replace = rename


def mkdir(path, mode=0o777, *, dir_fd=None):
    import _cairnfs
    _cairnfs.mkdir(path)


def makedirs(name, mode=0o777, exist_ok=False):
    import _cairnfs
    _cairnfs.mkdir(name, exist_ok=exist_ok, parents=True)


def rmdir(path, *, dir_fd=None):
    import _cairnfs
    _cairnfs.rmdir(path)


def removedirs(name):
    rmdir(name)


def access(path, mode, *, dir_fd=None, effective_ids=False, follow_symlinks=True):
    import _cairnfs
    return _cairnfs.kind(path) is not None


def open(file, flags, mode=0o777, *, dir_fd=None):
    """Only what `pathlib.Path.touch` needs: create the file if it is missing."""
    import _cairnfs
    if _cairnfs.kind(file) is None and flags & O_CREAT:
        _cairnfs.write_bytes(file, b"")
    elif flags & O_EXCL:
        raise FileExistsError(17, "File exists", fspath(file))
    return 3


def close(fd):
    pass


def isatty(fd):
    """No descriptor of a script is a terminal."""
    return False


def get_terminal_size(fd=1):
    raise OSError(25, "Inappropriate ioctl for device: the sandbox has no terminal")


def getenv(key, default=None):
    return environ.get(key, default)


def getcwd():
    import _cairnfs
    return _cairnfs.ROOT


def getcwdb():
    return getcwd().encode()


def chdir(p):
    import _cairnfs
    if _cairnfs.rel(p) != "":
        raise PermissionError(13, "the working directory stays the project root", fspath(p))


def strerror(code):
    return "error %d" % code


def urandom(n):
    import random
    return random.randbytes(n)


def fspath(p):
    if isinstance(p, (str, bytes)):
        return p
    t = type(p)
    try:
        result = t.__fspath__(p)
    except AttributeError:
        if hasattr(t, "__fspath__"):
            raise
        raise TypeError("expected str, bytes or os.PathLike object, not " + t.__name__) from None
    if isinstance(result, (str, bytes)):
        return result
    raise TypeError("expected {}.__fspath__() to return str or bytes, not {}".format(t.__name__, type(result).__name__))


def fsencode(filename):
    filename = fspath(filename)
    return filename.encode("utf-8", "surrogateescape") if isinstance(filename, str) else filename


def fsdecode(filename):
    filename = fspath(filename)
    return filename.decode("utf-8", "surrogateescape") if isinstance(filename, bytes) else filename


class PathLike(abc.ABC):
    """Abstract base class for objects with a file system path (`__fspath__`)."""

    @abc.abstractmethod
    def __fspath__(self):
        raise NotImplementedError

    @classmethod
    def __subclasshook__(cls, subclass):
        if cls is PathLike:
            return hasattr(subclass, "__fspath__")
        return NotImplemented


def register_at_fork(**kwargs):
    pass
