"""Cairn's `platform`: what a script may learn about where it runs, a sandbox on Linux. The
host's name, kernel release and processor stay outside (empty strings, as CPython answers
when it cannot tell)."""

import sys
from collections import namedtuple

uname_result = namedtuple("uname_result", "system node release version machine")


def system():
    return "Linux"


def node():
    return ""


def release():
    return ""


def version():
    return ""


def machine():
    return ""


def processor():
    return ""


def uname():
    return uname_result(system(), node(), release(), version(), machine())


def platform(aliased=False, terse=False):
    return "Linux"


def architecture(executable=None, bits="", linkage=""):
    return ("64bit" if sys.maxsize > 2 ** 32 else "32bit", "ELF")


def python_version():
    return "%d.%d.%d" % sys.version_info[:3]


def python_version_tuple():
    return tuple(str(v) for v in sys.version_info[:3])


def python_implementation():
    return "RustPython"


def python_compiler():
    return ""


def python_build():
    return ("", "")


def libc_ver(executable=None, lib="", version="", chunksize=16384):
    return (lib, version)


def mac_ver(release="", versioninfo=("", "", ""), machine=""):
    return (release, versioninfo, machine)


def win32_ver(release="", version="", csd="", ptype=""):
    return (release, version, csd, ptype)


def freedesktop_os_release():
    raise OSError("no os-release file in the sandbox")
