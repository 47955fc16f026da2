"""Cairn's stand-in for `os` inside the sandbox: names and pure path helpers that the
standard library needs, and no file system, environment or process. Agent code reaches
the project through the externals (read_file, write_file, ...), never through `os`."""

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

error = OSError


class stat_result(tuple):
    """The shape of os.stat's result (the sandbox never produces one)."""
    n_fields = n_sequence_fields = 10
    st_mode = property(lambda self: self[0])
    st_size = property(lambda self: self[6])
    st_mtime = property(lambda self: self[8])


def _no_host(*args, **kwargs):
    raise PermissionError("the sandbox has no file system or processes; use the externals (read_file, write_file, ...)")


stat = lstat = fstat = scandir = listdir = open = close = read = write = unlink = remove = _no_host
mkdir = makedirs = rmdir = rename = replace = chmod = symlink = readlink = link = utime = access = _no_host
walk = getpid = getuid = system = kill = _no_host


def getenv(key, default=None):
    return environ.get(key, default)


def getcwd():
    return "/"


def getcwdb():
    return b"/"


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
