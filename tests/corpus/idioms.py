# --- idiom dataclass with defaults and factory
from dataclasses import dataclass, field
@dataclass
class Change:
    path: str
    hunks: list = field(default_factory=list)
    applied: bool = False
c = Change("a.py")
c.hunks.append((1, 2))
assert Change("b.py").hunks == [] and c.hunks == [(1, 2)] and not c.applied

# --- idiom counter most_common
from collections import Counter
words = "the cat and the hat and the bat".split()
assert Counter(words).most_common(1) == [("the", 3)]
assert [w for w, _ in Counter(words).most_common(2)] == ["the", "and"]

# --- idiom defaultdict list
from collections import defaultdict
by_ext = defaultdict(list)
for path in ["a.py", "b.rs", "c.py"]:
    by_ext[path.rsplit(".", 1)[1]].append(path)
assert by_ext == {"py": ["a.py", "c.py"], "rs": ["b.rs"]}

# --- idiom itertools groupby
import itertools
lines = ["# a", "# b", "code", "# c"]
runs = [(k, len(list(g))) for k, g in itertools.groupby(lines, key=lambda l: l.startswith("#"))]
assert runs == [(True, 2), (False, 1), (True, 1)]

# --- idiom textwrap dedent
import textwrap
block = textwrap.dedent("""\
    if x:
        y()
""")
assert block == "if x:\n    y()\n"

# --- idiom textwrap fill
import textwrap
assert textwrap.fill("word " * 6, width=12) == "word word\nword word\nword word"

# --- idiom purepath suffix
import pathlib
assert pathlib.PurePosixPath("src/app/main.py").suffix == ".py"
assert [p for p in ["a.py", "b.txt", "c/d.py"] if pathlib.PurePosixPath(p).suffix == ".py"] == ["a.py", "c/d.py"]

# --- idiom re.sub with function
import re
def bump(m):
    return f"v{int(m.group(1)) + 1}"
assert re.sub(r"v(\d+)", bump, "v1 and v9") == "v2 and v10"

# --- idiom re look-ahead
import re
assert re.sub(r"print(?=\()", "log", "print(x); printer(y)") == "log(x); printer(y)"

# --- idiom json dumps indent sort_keys
import json
assert json.dumps({"z": 1, "a": {"c": 2, "b": 3}}, indent=2, sort_keys=True) == '{\n  "a": {\n    "b": 3,\n    "c": 2\n  },\n  "z": 1\n}'

# --- idiom custom exception
class RefactorError(Exception):
    def __init__(self, path, reason):
        super().__init__(path, reason)
        self.path = path
        self.reason = reason
    def __str__(self):
        return f"{self.path}: {self.reason}"
try:
    raise RefactorError("a.py", "no match")
except RefactorError as e:
    assert str(e) == "a.py: no match" and e.args == ("a.py", "no match")
try:
    try:
        raise KeyError("k")
    except KeyError as inner:
        raise RefactorError("b.py", "wrapped") from inner
except RefactorError as e:
    assert isinstance(e.__cause__, KeyError)

# --- idiom property
class Temp:
    def __init__(self):
        self._c = 0.0
    @property
    def f(self):
        return self._c * 9 / 5 + 32
    @f.setter
    def f(self, value):
        self._c = (value - 32) * 5 / 9
t = Temp()
t.f = 212
assert t.f == 212 and t._c == 100

# --- idiom classmethod and staticmethod
class Parser:
    registry = {}
    def __init__(self, text):
        self.text = text
    @classmethod
    def from_lines(cls, lines):
        return cls("\n".join(lines))
    @staticmethod
    def clean(s):
        return s.strip()
assert Parser.from_lines(["a", "b"]).text == "a\nb" and Parser.clean(" x ") == "x"
class Sub(Parser):
    pass
assert type(Sub.from_lines([])) is Sub

# --- idiom typing namedtuple replace
from typing import NamedTuple
class Span(NamedTuple):
    start: int
    end: int
s = Span(1, 4)
assert s._replace(end=9) == Span(1, 9) and s.end - s.start == 3

# --- idiom enum
import enum
class Status(enum.Enum):
    TODO = "todo"
    DONE = "done"
assert Status("done") is Status.DONE and [s.value for s in Status] == ["todo", "done"]

# --- idiom lru_cache
import functools
@functools.lru_cache(maxsize=128)
def parse(name):
    return name.split(".")
assert parse("a.b") == ["a", "b"] and parse("a.b") is parse("a.b")

# --- idiom difflib unified_diff
import difflib
before = "a\nb\nc\n".splitlines(keepends=True)
after = "a\nB\nc\n".splitlines(keepends=True)
patch = "".join(difflib.unified_diff(before, after, "a/x.py", "b/x.py"))
assert patch == "--- a/x.py\n+++ b/x.py\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"

# --- idiom sorted key str.lower
assert sorted(["b", "A", "c", "B"], key=str.lower) == ["A", "b", "B", "c"]
assert sorted(["bb", "a", "ccc"], key=len, reverse=True) == ["ccc", "bb", "a"]
assert sorted({"x": 2, "y": 1}.items(), key=lambda kv: kv[1]) == [("y", 1), ("x", 2)]

# --- idiom nested comprehensions
matrix = [[1, 2], [3, 4]]
assert [x for row in matrix for x in row] == [1, 2, 3, 4]
assert [[row[i] for row in matrix] for i in range(2)] == [[1, 3], [2, 4]]
assert {k: [v * n for n in range(2)] for k, v in {"a": 1}.items()} == {"a": [0, 1]}
assert [(lambda: i)() for i in range(3)] == [0, 1, 2]
assert [y for x in range(3) if (y := x * 2) > 0] == [2, 4]

# --- idiom comprehension scoping in class body
class Table:
    cols = ["a", "b"]
    upper = [c.upper() for c in cols]
    pairs = [(c, n) for c in cols for n in range(2)]
assert Table.upper == ["A", "B"] and len(Table.pairs) == 4

# --- idiom generators and yield from
def walk(tree):
    for k, v in tree.items():
        yield k
        if isinstance(v, dict):
            yield from walk(v)
assert list(walk({"a": {"b": {}, "c": 1}})) == ["a", "b", "c"]
gen = (x * x for x in range(4))
assert sum(gen) == 14 and any(x > 2 for x in [1, 3]) and all([])

# --- idiom match statement
def kind(node):
    match node:
        case {"type": "call", "name": str(name)}:
            return f"call {name}"
        case [first, *rest]:
            return f"list of {1 + len(rest)}"
        case int() | float() as n if n > 0:
            return "positive"
        case _:
            return "other"
assert kind({"type": "call", "name": "f"}) == "call f"
assert kind([1, 2, 3]) == "list of 3" and kind(2.5) == "positive" and kind(-1) == "other"

# --- idiom context manager class
class Recorder:
    def __init__(self):
        self.events = []
    def __enter__(self):
        self.events.append("enter")
        return self
    def __exit__(self, exc_type, exc, tb):
        self.events.append("exit:" + (exc_type.__name__ if exc_type else "ok"))
        return exc_type is ValueError
r = Recorder()
with r:
    raise ValueError("swallowed")
with r:
    pass
assert r.events == ["enter", "exit:ValueError", "enter", "exit:ok"]

# --- idiom star unpacking and swaps
first, *middle, last = range(5)
assert (first, middle, last) == (0, [1, 2, 3], 4)
a, b = 1, 2
a, b = b, a
assert (a, b) == (2, 1)
def f(*args, **kwargs):
    return args, kwargs
assert f(*[1, 2], **{"k": 3}) == ((1, 2), {"k": 3})

# --- idiom closures and nonlocal
def counter():
    n = 0
    def inc():
        nonlocal n
        n += 1
        return n
    return inc
c = counter()
c(); c()
assert c() == 3

# --- idiom string building
lines = []
for i, name in enumerate(["a", "b"], start=1):
    lines.append(f"{i:>2}. {name!r}")
assert "\n".join(lines) == " 1. 'a'\n 2. 'b'"
assert f"{'x' * 3}{{literal}}" == "xxx{literal}"
width = 6
assert f"{'ab':>{width}}" == "    ab" and f"{3.14159=:.2f}".endswith("3.14")

# --- idiom slicing
s = "abcdefgh"
assert s[::2] == "aceg" and s[::-1] == "hgfedcba" and s[-3:] == "fgh" and s[2:-2] == "cdef"
lst = list(range(10))
lst[2:5] = ["x"]
assert lst[:4] == [0, 1, "x", 5]
del lst[::3]
assert lst == [1, "x", 6, 7, 9]

# --- idiom set operations
a, b = {1, 2, 3}, {2, 3, 4}
assert a & b == {2, 3} and a | b == {1, 2, 3, 4} and a - b == {1} and a ^ b == {1, 4}
assert {x % 3 for x in range(10)} == {0, 1, 2} and frozenset("ab") == {"a", "b"}

# --- idiom dunder methods
class Vec:
    def __init__(self, x, y):
        self.x, self.y = x, y
    def __add__(self, o):
        return Vec(self.x + o.x, self.y + o.y)
    def __eq__(self, o):
        return (self.x, self.y) == (o.x, o.y)
    def __repr__(self):
        return f"Vec({self.x}, {self.y})"
    def __len__(self):
        return 2
    def __iter__(self):
        yield self.x
        yield self.y
    def __hash__(self):
        return hash((self.x, self.y))
v = Vec(1, 2) + Vec(3, 4)
assert v == Vec(4, 6) and repr(v) == "Vec(4, 6)" and list(v) == [4, 6] and len(v) == 2
assert len({Vec(1, 1), Vec(1, 1)}) == 1

# --- idiom exceptions groups of handling
def risky(x):
    if x == 0:
        raise ZeroDivisionError("zero")
    if x < 0:
        raise ValueError("neg")
    return 1 / x
results = []
for x in (1, 0, -1):
    try:
        results.append(risky(x))
    except (ZeroDivisionError, ValueError) as e:
        results.append(type(e).__name__)
    else:
        results.append("ok")
    finally:
        results.append("done")
assert results == [1.0, "ok", "done", "ZeroDivisionError", "done", "ValueError", "done"]

# --- idiom enumerate zip and dict comprehension
names, scores = ["a", "b"], [3, 5]
assert dict(zip(names, scores)) == {"a": 3, "b": 5}
assert {n: s for n, s in zip(names, scores) if s > 4} == {"b": 5}
assert list(enumerate("xy", 1)) == [(1, "x"), (2, "y")]
assert list(zip(*[(1, "a"), (2, "b")])) == [(1, 2), ("a", "b")]
assert max(names, key=lambda n: dict(zip(names, scores))[n]) == "b"

# --- idiom walrus and conditional expressions
data = [1, 5, 9]
if (n := len(data)) > 2:
    label = "big" if n > 5 else "medium"
assert label == "medium"
assert min([], default=0) == 0 and max(3, 7) == 7
