# --- itertools groupby
import itertools
data = sorted(["apple", "avocado", "banana", "cherry", "cranberry"], key=lambda w: w[0])
grouped = {k: list(g) for k, g in itertools.groupby(data, key=lambda w: w[0])}
assert grouped == {"a": ["apple", "avocado"], "b": ["banana"], "c": ["cherry", "cranberry"]}
assert [k for k, _ in itertools.groupby("aaabbc")] == ["a", "b", "c"]

# --- itertools combinatorics
from itertools import product, permutations, combinations, combinations_with_replacement
assert list(product("ab", repeat=2)) == [("a", "a"), ("a", "b"), ("b", "a"), ("b", "b")]
assert len(list(permutations(range(4), 2))) == 12
assert list(combinations("abc", 2)) == [("a", "b"), ("a", "c"), ("b", "c")]
assert len(list(combinations_with_replacement("ab", 2))) == 3

# --- itertools chain islice count
from itertools import chain, islice, count, cycle, repeat
assert list(chain([1, 2], (3,), "ab")) == [1, 2, 3, "a", "b"]
assert list(chain.from_iterable([[1], [2, 3]])) == [1, 2, 3]
assert list(islice(count(10, 5), 3)) == [10, 15, 20]
assert list(islice(cycle("xy"), 5)) == list("xyxyx")
assert list(repeat(7, 3)) == [7, 7, 7]

# --- itertools accumulate takewhile
import itertools, operator
assert list(itertools.accumulate([1, 2, 3, 4])) == [1, 3, 6, 10]
assert list(itertools.accumulate([1, 2, 3], operator.mul)) == [1, 2, 6]
assert list(itertools.takewhile(lambda x: x < 3, [1, 2, 3, 1])) == [1, 2]
assert list(itertools.dropwhile(lambda x: x < 3, [1, 2, 3, 1])) == [3, 1]
assert list(itertools.filterfalse(str.isdigit, "a1b2")) == ["a", "b"]

# --- itertools zip_longest pairwise starmap tee
import itertools
assert list(itertools.zip_longest("ab", "xyz", fillvalue="-")) == [("a", "x"), ("b", "y"), ("-", "z")]
assert list(itertools.pairwise([1, 2, 3])) == [(1, 2), (2, 3)]
assert list(itertools.starmap(pow, [(2, 3), (3, 2)])) == [8, 9]
a, b = itertools.tee([1, 2])
assert list(a) == list(b) == [1, 2]
assert list(itertools.compress("abcd", [1, 0, 1, 0])) == ["a", "c"]

# --- functools lru_cache
import functools
calls = []
@functools.lru_cache(maxsize=None)
def fib(n):
    calls.append(n)
    return n if n < 2 else fib(n - 1) + fib(n - 2)
assert fib(30) == 832040
assert len(calls) == 31
info = fib.cache_info()
assert info.misses == 31 and info.hits > 0
fib.cache_clear()
assert fib.cache_info().currsize == 0

# --- functools cache and cached_property
from functools import cache, cached_property
@cache
def square(x):
    return x * x
assert square(4) == 16
class Box:
    def __init__(self):
        self.computed = 0
    @cached_property
    def value(self):
        self.computed += 1
        return 42
b = Box()
assert b.value == 42 and b.value == 42 and b.computed == 1

# --- functools partial reduce
from functools import partial, reduce
int2 = partial(int, base=2)
assert int2("1010") == 10
assert reduce(lambda a, b: a * b, range(1, 6)) == 120
assert reduce(lambda a, b: a + b, [], 0) == 0

# --- functools wraps total_ordering
import functools
def deco(f):
    @functools.wraps(f)
    def inner(*a):
        return f(*a)
    return inner
@deco
def named():
    "doc"
assert named.__name__ == "named" and named.__doc__ == "doc"
@functools.total_ordering
class V:
    def __init__(self, n):
        self.n = n
    def __eq__(self, o):
        return self.n == o.n
    def __lt__(self, o):
        return self.n < o.n
assert V(1) <= V(2) and V(3) > V(2) and V(2) >= V(2)

# --- functools singledispatch
from functools import singledispatch
@singledispatch
def describe(x):
    return "thing"
@describe.register
def _(x: int):
    return "int"
@describe.register(list)
def _(x):
    return "list"
assert (describe(1), describe([]), describe("s")) == ("int", "list", "thing")

# --- operator getters
import operator
rows = [{"n": "b", "v": 2}, {"n": "a", "v": 1}]
assert sorted(rows, key=operator.itemgetter("n"))[0]["v"] == 1
assert operator.itemgetter(0, 2)("abc") == ("a", "c")
class P:
    def __init__(self, x):
        self.x = x
    def twice(self, k):
        return self.x * 2 * k
assert [operator.attrgetter("x")(p) for p in (P(1), P(2))] == [1, 2]
assert operator.methodcaller("twice", 3)(P(2)) == 12
assert operator.add(2, 3) == 5 and operator.not_(False)

# --- heapq
import heapq
h = []
for x in [5, 1, 4, 2]:
    heapq.heappush(h, x)
assert [heapq.heappop(h) for _ in range(4)] == [1, 2, 4, 5]
assert heapq.nlargest(2, [3, 9, 1, 7]) == [9, 7]
assert heapq.nsmallest(2, ["bb", "a", "ccc"], key=len) == ["a", "bb"]
data = [9, 3, 5]
heapq.heapify(data)
assert data[0] == 3
assert list(heapq.merge([1, 4], [2, 3])) == [1, 2, 3, 4]

# --- bisect
import bisect
a = [1, 3, 3, 7]
assert bisect.bisect_left(a, 3) == 1 and bisect.bisect_right(a, 3) == 3
bisect.insort(a, 5)
assert a == [1, 3, 3, 5, 7]
grades = "FDCBA"
assert [grades[bisect.bisect([60, 70, 80, 90], s)] for s in (33, 99, 77)] == ["F", "A", "C"]

# --- bisect key
import bisect
items = [("a", 1), ("b", 5), ("c", 9)]
assert bisect.bisect_left(items, 5, key=lambda kv: kv[1]) == 1

# --- copy
import copy
orig = {"a": [1, 2], "b": {"c": 3}}
shallow = copy.copy(orig)
deep = copy.deepcopy(orig)
orig["a"].append(3)
assert shallow["a"] == [1, 2, 3]
assert deep["a"] == [1, 2]
class Obj:
    def __init__(self):
        self.items = [1]
o2 = copy.deepcopy(Obj())
assert o2.items == [1]

# --- copy custom hooks
import copy
class Tracked:
    def __init__(self, v):
        self.v = v
    def __copy__(self):
        return Tracked(self.v + 1)
assert copy.copy(Tracked(1)).v == 2
cyc = [1]
cyc.append(cyc)
d = copy.deepcopy(cyc)
assert d[1] is d
