"""Cairn's `xml.parsers.expat`: the interpreter's `pyexpat`, with `ordered_attributes` doing
what CPython's does (RustPython's records the flag but still passes a dict), which
`xml.etree.ElementTree` relies on: without it every element with attributes was lost."""

import pyexpat as _native
from pyexpat import *  # noqa: F401,F403 (the module's constants and error)
from pyexpat import errors, model  # noqa: F401

__all__ = [n for n in dir(_native) if not n.startswith("_")]


def _flat(attrs):
    if isinstance(attrs, dict):
        out = []
        for k, v in attrs.items():
            out.append(k)
            out.append(v)
        return out
    return attrs


class _Parser:
    """A native parser whose start-element handler sees attributes as CPython's would."""

    __slots__ = ("_p", "_start")

    def __init__(self, native):
        object.__setattr__(self, "_p", native)
        object.__setattr__(self, "_start", None)

    def __getattr__(self, name):
        if name == "StartElementHandler":
            return self._start
        return getattr(self._p, name)

    def __setattr__(self, name, value):
        if name == "StartElementHandler":
            object.__setattr__(self, "_start", value)
            if value is None:
                setattr(self._p, name, None)
            else:
                p = self._p
                setattr(self._p, name, lambda tag, attrs: value(tag, _flat(attrs) if p.ordered_attributes else attrs))
            return
        setattr(self._p, name, value)

    def __dir__(self):
        return dir(self._p)


def ParserCreate(encoding=None, namespace_separator=None, intern=None):
    if namespace_separator is None:
        return _Parser(_native.ParserCreate(encoding))
    return _Parser(_native.ParserCreate(encoding, namespace_separator))
