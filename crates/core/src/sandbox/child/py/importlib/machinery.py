"""Cairn's `importlib.machinery`: the suffix lists and the importers that exist (builtin
and frozen modules only)."""

from _frozen_importlib import ModuleSpec, BuiltinImporter, FrozenImporter

SOURCE_SUFFIXES = [".py"]
BYTECODE_SUFFIXES = [".pyc"]
DEBUG_BYTECODE_SUFFIXES = OPTIMIZED_BYTECODE_SUFFIXES = BYTECODE_SUFFIXES
EXTENSION_SUFFIXES = []


def all_suffixes():
    return SOURCE_SUFFIXES + BYTECODE_SUFFIXES + EXTENSION_SUFFIXES
