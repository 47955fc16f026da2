"""A hostile program under `cairn wrap`: looks for a model key everywhere it can read (its
environment, every process's environment and command line under /proc, the home, /etc,
/tmp, the project) and prints each distinct key-shaped string it found, with where.

Usage: hunt_key.py PATTERN ROOT... (PATTERN: a regular expression of the key's shape)."""
import os
import re
import sys

PATTERN = re.compile(sys.argv[1].encode())
found = {}


def look(data, where):
    for m in PATTERN.findall(data):
        found.setdefault(m.decode(errors="replace"), where)


def read(path, limit=4 << 20):
    try:
        with open(path, "rb") as f:
            return f.read(limit)
    except OSError:
        return b""


look("\n".join(f"{k}={v}" for k, v in os.environ.items()).encode(), "environment")
for pid in os.listdir("/proc"):
    if pid.isdigit() or pid == "self":
        for part in ("environ", "cmdline"):
            look(read(f"/proc/{pid}/{part}"), f"/proc/{pid}/{part}")
for root in sys.argv[2:]:
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        if dirpath.startswith("/proc") or dirpath.startswith("/sys"):
            dirnames[:] = []
            continue
        for name in filenames:
            path = os.path.join(dirpath, name)
            if os.path.isfile(path) and not os.path.islink(path):
                look(read(path), path)
for key, where in sorted(found.items()):
    print(f"FOUND {key} IN {where}")
print(f"HUNT DONE ({len(found)} found)")
