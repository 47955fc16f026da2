//! Which standard library the sandbox child has: the modules a script may import
//! ([`PUBLIC`]), and the Python sources frozen into the binary at build time ([`FROZEN`]).
//! `build.rs` includes this file, so the list the build compiles and the list the policy
//! checks are one definition.
//!
//! Python modules come from CPython's library as shipped by the `rustpython-pylib` crate,
//! compiled to bytecode by `build.rs`; native ones from `rustpython-vm` and
//! `rustpython-stdlib` ([`NATIVE`]). Nothing here touches the host: a module that would
//! (`os`, `time`'s clock, `random`'s seed) is replaced or patched by the child
//! (`child/py/`, `child/modules`).

/// Modules a script may import (top-level names; their submodules come along).
pub const PUBLIC: &[&str] = &[
    "grail", "__future__", "abc", "array", "ast", "asyncio", "base64", "binascii", "bisect", "calendar", "cmath", "codecs",
    "collections", "colorsys", "contextlib", "contextvars", "copy", "copyreg", "csv", "dataclasses", "datetime",
    "decimal", "difflib", "dis", "enum", "fnmatch", "fractions", "functools", "glob", "graphlib",
    "hashlib", "heapq", "hmac", "inspect", "io", "ipaddress", "itertools", "json", "keyword", "logging", "math", "numbers", "operator",
    "os", "pathlib", "platform", "gc", "pprint", "queue", "random", "re", "reprlib", "secrets", "shlex", "shutil", "stat",
    "statistics", "string", "struct", "sys", "textwrap", "threading", "time", "token", "tokenize", "tomllib",
    "traceback", "types", "typing", "unicodedata", "uuid", "warnings", "weakref", "xml", "zlib", "configparser",
    "argparse", "gettext", "locale", "html", "urllib", "pickle", "getopt", "optparse", "fileinput", "filecmp", "sched",
    "timeit", "quopri", "unittest",
];

/// Native modules the child registers, from `rustpython-stdlib` (those of `rustpython-vm`
/// are always there and are gated by the importer like every other name).
pub const NATIVE: &[&str] = &[
    "math", "cmath", "_random", "binascii", "unicodedata", "_struct", "_bisect", "_heapq", "_json",
    "_statistics", "_contextvars", "array", "_opcode", "_tokenize", "_sha2", "_md5", "_sha1", "_sha3",
    "_blake2", "_hashlib", "_sha256", "_sha512", "zlib", "pyexpat",
];

/// Python modules frozen from CPython's library: the public ones and what they import.
pub const FROZEN: &[&str] = &[
    "__future__", "_collections_abc", "_colorize", "_compat_pickle", "_markupbase", "_opcode_metadata",
    "_py_abc", "_py_warnings", "_pycodecs", "_pydatetime", "_pydecimal", "_pylong", "_strptime", "_threading_local",
    "_weakrefset", "abc", "annotationlib", "ast", "base64", "bisect", "calendar", "codecs", "collections",
    "collections._defaultdict", "colorsys", "contextlib", "contextvars", "copy", "copyreg", "csv", "dataclasses",
    "datetime", "decimal", "difflib", "dis", "enum", "fnmatch", "fractions", "functools", "genericpath", "glob",
    "graphlib", "hashlib", "heapq", "hmac", "inspect", "ipaddress", "json", "json.decoder", "json.encoder",
    "json.scanner", "keyword", "linecache", "locale", "ntpath", "numbers", "opcode", "operator", "pathlib", "pathlib._os",
    "posixpath", "pprint", "random", "re", "re._casefix", "re._compiler", "re._constants", "re._parser",
    "reprlib", "shlex", "stat", "statistics", "string", "string.templatelib", "stringprep", "struct",
    "textwrap", "token", "tokenize", "traceback", "codeop", "tomllib", "tomllib._parser", "tomllib._re", "tomllib._types", "types",
    "typing", "warnings", "weakref", "encodings", "encodings.aliases", "encodings.ascii", "encodings.base64_codec",
    "encodings.cp1252", "encodings.cp437", "encodings.hex_codec", "encodings.idna", "encodings.latin_1",
    "encodings.mac_roman", "encodings.punycode", "encodings.raw_unicode_escape", "encodings.rot_13",
    "encodings.unicode_escape", "encodings.utf_16", "encodings.utf_16_be", "encodings.utf_16_le",
    "encodings.utf_32", "encodings.utf_32_be", "encodings.utf_32_le", "encodings.utf_7", "encodings.utf_8",
    "encodings.utf_8_sig", "encodings.iso8859_1", "encodings.iso8859_15", "encodings.charmap",
    "logging", "threading", "queue", "configparser", "secrets", "uuid", "xml", "xml.etree", "_ast_unparse",
    "xml.etree.ElementTree", "xml.etree.ElementPath", "xml.parsers",
    "argparse", "gettext", "locale", "html", "html.entities", "html.parser", "urllib", "urllib.parse", "pickle", "getopt",
    "optparse", "fileinput", "filecmp", "sched", "timeit", "quopri", "xml.dom", "xml.dom.minidom", "xml.dom.minicompat",
    "xml.dom.xmlbuilder", "xml.dom.domreg", "xml.dom.NodeFilter", "xml.dom.expatbuilder",
    "unittest", "unittest.case", "unittest.loader", "unittest.main", "unittest.result", "unittest.runner",
    "unittest.signals", "unittest.suite", "unittest.util", "unittest._log",
];

/// Cairn's own modules, frozen from `child/py/`: stand-ins for modules that would reach
/// the host.
pub const OWN: &[&str] = &["importlib", "importlib.machinery", "io", "os", "_cairnfs", "shutil", "atexit", "asyncio", "_csv", "platform", "xml.parsers.expat", "signal"];
