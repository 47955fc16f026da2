"""Cairn's `importlib` inside the sandbox: the little library code asks of it, over the
sandbox's import gate. There is no file system to find modules in."""

import sys


def import_module(name, package=None):
    level = len(name) - len(name.lstrip("."))
    if level:
        if not package:
            raise TypeError("the 'package' argument is required to perform a relative import for %r" % name)
        base = package.rsplit(".", level - 1)[0] if level > 1 else package
        name = base + "." + name[level:] if name[level:] else base
    __import__(name)
    return sys.modules[name]


def invalidate_caches():
    pass
