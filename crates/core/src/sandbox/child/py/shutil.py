"""Cairn's `shutil` inside the sandbox: the file operations scripts use, over the project's
proposal (`os` and `open`, so through the externals)."""

import os
import fnmatch

Error = OSError


class SameFileError(OSError):
    pass


def copyfileobj(fsrc, fdst, length=0):
    fdst.write(fsrc.read())


def copyfile(src, dst, *, follow_symlinks=True):
    if os.path.abspath(os.fspath(src)) == os.path.abspath(os.fspath(dst)):
        raise SameFileError("{!r} and {!r} are the same file".format(src, dst))
    with open(src, "rb") as f:
        data = f.read()
    with open(dst, "wb") as f:
        f.write(data)
    return dst


def copy(src, dst, *, follow_symlinks=True):
    if os.path.isdir(dst):
        dst = os.path.join(dst, os.path.basename(os.fspath(src)))
    return copyfile(src, dst)


copy2 = copy


def copymode(src, dst, *, follow_symlinks=True):
    pass


copystat = copymode


def ignore_patterns(*patterns):
    def _ignore(path, names):
        return {n for n in names for p in patterns if fnmatch.fnmatch(n, p)}
    return _ignore


def copytree(src, dst, symlinks=False, ignore=None, copy_function=copy2, ignore_dangling_symlinks=False, dirs_exist_ok=False):
    names = os.listdir(src)
    ignored = ignore(os.fspath(src), names) if ignore else set()
    os.makedirs(dst, exist_ok=dirs_exist_ok)
    for n in names:
        if n in ignored:
            continue
        s, d = os.path.join(src, n), os.path.join(dst, n)
        if os.path.isdir(s):
            copytree(s, d, symlinks, ignore, copy_function, ignore_dangling_symlinks, dirs_exist_ok)
        else:
            copy_function(s, d)
    return dst


def rmtree(path, ignore_errors=False, onerror=None, *, onexc=None, dir_fd=None):
    try:
        for top, dirs, files in os.walk(path, topdown=False):
            for f in files:
                os.remove(os.path.join(top, f))
            os.rmdir(top)
    except OSError:
        if not ignore_errors:
            raise


def move(src, dst, copy_function=copy2):
    if os.path.isdir(dst):
        dst = os.path.join(dst, os.path.basename(os.fspath(src).rstrip("/")))
    if os.path.isdir(src):
        copytree(src, dst)
        rmtree(src)
    else:
        os.rename(src, dst)
    return dst


def which(cmd, mode=None, path=None):
    return None


class terminal_size(tuple):
    """`os.terminal_size`'s shape: (columns, lines)."""

    columns = property(lambda self: self[0])
    lines = property(lambda self: self[1])


def get_terminal_size(fallback=(80, 24)):
    """The sandbox has no terminal: the fallback, as CPython answers without one."""
    return terminal_size(fallback)


def disk_usage(path):
    raise OSError(38, "Function not implemented: the sandbox has no disks")
