# --- counter most_common
from collections import Counter
c = Counter("abracadabra")
assert c.most_common(2) == [("a", 5), ("b", 2)]
assert c["z"] == 0
assert sum(c.values()) == 11

# --- counter arithmetic
from collections import Counter
a, b = Counter(x=3, y=1), Counter(x=1, y=2)
assert a + b == Counter(x=4, y=3)
assert a - b == Counter(x=2)
assert (a & b) == Counter(x=1, y=1)
assert (a | b) == Counter(x=3, y=2)
assert sorted(Counter("aab").elements()) == ["a", "a", "b"]

# --- counter update and subtract
from collections import Counter
c = Counter()
c.update(["x", "y", "x"])
c.subtract({"x": 1})
assert c == Counter({"x": 1, "y": 1})
assert c.total() == 2

# --- defaultdict list
from collections import defaultdict
groups = defaultdict(list)
for word in ["apple", "avocado", "banana", "blueberry", "cherry"]:
    groups[word[0]].append(word)
assert dict(groups) == {"a": ["apple", "avocado"], "b": ["banana", "blueberry"], "c": ["cherry"]}
assert "z" not in groups
assert groups["z"] == [] and "z" in groups

# --- defaultdict int and nested
from collections import defaultdict
counts = defaultdict(int)
for ch in "hello":
    counts[ch] += 1
assert counts["l"] == 2
tree = defaultdict(lambda: defaultdict(int))
tree["a"]["b"] += 2
assert tree["a"]["b"] == 2

# --- ordereddict
from collections import OrderedDict
d = OrderedDict.fromkeys("abcde")
d.move_to_end("b")
assert "".join(d) == "acdeb"
d.move_to_end("b", last=False)
assert "".join(d) == "bacde"
assert d.popitem() == ("e", None)
assert d.popitem(last=False) == ("b", None)

# --- namedtuple
from collections import namedtuple
Point = namedtuple("Point", "x y")
p = Point(1, y=2)
assert p.x + p.y == 3
assert p._replace(x=5) == Point(5, 2)
assert p._asdict() == {"x": 1, "y": 2}
assert Point._fields == ("x", "y")
assert Point._make([3, 4]) == (3, 4)
assert repr(p) == "Point(x=1, y=2)"

# --- namedtuple defaults
from collections import namedtuple
Node = namedtuple("Node", ["name", "children"], defaults=[()])
assert Node("a").children == ()
a, b = Node("x", (1,))
assert (a, b) == ("x", (1,))

# --- deque
from collections import deque
d = deque([1, 2, 3], maxlen=3)
d.append(4)
assert list(d) == [2, 3, 4]
d.rotate(1)
assert list(d) == [4, 2, 3]
d.appendleft(9)
assert list(d) == [9, 4, 2]
assert d.popleft() == 9

# --- chainmap
from collections import ChainMap
defaults = {"color": "red", "user": "guest"}
overrides = {"user": "admin"}
cm = ChainMap(overrides, defaults)
assert cm["user"] == "admin" and cm["color"] == "red"
assert sorted(cm) == ["color", "user"]

# --- collections.abc
from collections.abc import Mapping, Sequence, Iterable, Callable
assert isinstance({}, Mapping)
assert isinstance([], Sequence) and not isinstance({}, Sequence)
assert isinstance(iter([]), Iterable)
assert isinstance(len, Callable)
import collections.abc
assert issubclass(dict, collections.abc.MutableMapping)

# --- userdict
from collections import UserDict
class Lower(UserDict):
    def __setitem__(self, key, value):
        super().__setitem__(key.lower(), value)
d = Lower()
d["KEY"] = 1
assert d == {"key": 1}
