"""Cairn's `io` inside the sandbox: in-memory streams (StringIO, BytesIO), the stream
classes and their abstract bases, and `open` over the project's proposal (`_cairnfs`)."""

import _io
import abc

from _io import (DEFAULT_BUFFER_SIZE, BlockingIOError, UnsupportedOperation, BytesIO, StringIO,
                 BufferedReader, BufferedWriter, BufferedRWPair, BufferedRandom,
                 IncrementalNewlineDecoder, TextIOWrapper)

__all__ = ["BlockingIOError", "open", "open_code", "IOBase", "RawIOBase", "FileIO", "BytesIO", "StringIO",
           "BufferedIOBase", "BufferedReader", "BufferedWriter", "BufferedRWPair", "BufferedRandom",
           "TextIOBase", "TextIOWrapper", "UnsupportedOperation", "SEEK_SET", "SEEK_CUR", "SEEK_END",
           "DEFAULT_BUFFER_SIZE", "text_encoding", "IncrementalNewlineDecoder"]

SEEK_SET, SEEK_CUR, SEEK_END = 0, 1, 2


def text_encoding(encoding, stacklevel=2):
    return "utf-8" if encoding is None else encoding


def open(file, mode="r", buffering=-1, encoding=None, errors=None, newline=None, closefd=True, opener=None):
    import _cairnfs
    return _cairnfs.open(file, mode, buffering, encoding, errors, newline, closefd, opener)


open_code = open


class IOBase(_io._IOBase, metaclass=abc.ABCMeta):
    __doc__ = _io._IOBase.__doc__


class RawIOBase(_io._RawIOBase, IOBase):
    __doc__ = _io._RawIOBase.__doc__


class BufferedIOBase(_io._BufferedIOBase, IOBase):
    __doc__ = _io._BufferedIOBase.__doc__


class TextIOBase(_io._TextIOBase, IOBase):
    __doc__ = _io._TextIOBase.__doc__


class FileIO(RawIOBase):
    """Files do not exist in the sandbox; constructing one raises PermissionError."""

    def __init__(self, file, *args, **kwargs):
        open(file)


for _klass in (BytesIO, BufferedReader, BufferedWriter, BufferedRandom, BufferedRWPair):
    BufferedIOBase.register(_klass)
for _klass in (StringIO, TextIOWrapper):
    TextIOBase.register(_klass)
del _klass
