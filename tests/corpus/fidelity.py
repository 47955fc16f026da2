# --- codec aliases
assert "x".encode("utf") == b"x" and "x".encode("UTF8") == b"x" and "x".encode("utf_8") == b"x"
assert "é".encode("latin1") == b"\xe9" and "é".encode("iso-8859-1") == b"\xe9"
assert "a".encode("ascii") == b"a" and "a".encode("us-ascii") == b"a"
assert b"\xe9".decode("cp1252") == "é"

# --- codec unicode_escape
assert "é\n".encode("unicode_escape") == b"\\xe9\\n"
assert b"\\u00e9\\t".decode("unicode_escape") == "é\t"
assert "a\\b".encode("raw_unicode_escape") == b"a\\b"

# --- codec utf-16 and errors
assert "a".encode("utf-16-le") == b"a\x00"
assert "a".encode("utf-16")[2:] in (b"a\x00", b"\x00a")
assert b"\xff".decode("utf-8", errors="replace") == "\ufffd"
assert "é".encode("ascii", errors="ignore") == b""
assert "é".encode("ascii", errors="xmlcharrefreplace") == b"&#233;"
assert "é".encode("ascii", errors="backslashreplace") == b"\\xe9"

# --- codec errors messages
try:
    b"\xff".decode("utf-8")
    raise AssertionError("no error")
except UnicodeDecodeError as e:
    assert str(e) == "'utf-8' codec can't decode byte 0xff in position 0: invalid start byte", str(e)
try:
    "x".encode("no-such-codec")
    raise AssertionError("no error")
except LookupError as e:
    assert str(e) == "unknown encoding: no-such-codec", str(e)

# --- dict views as sets
d = {1: "a", 2: "b"}
assert d.keys() == {1, 2} and d.keys() == frozenset({1, 2})
assert {1: "a"}.keys() == frozenset({1}) and frozenset({1}) == {1: "a"}.keys()
assert d.keys() != frozenset({1})
assert d.items() == frozenset({(1, "a"), (2, "b")})
assert d.keys() & {2, 3} == {2} and d.keys() | {3} == {1, 2, 3} and d.keys() - {1} == {2}
assert d.keys() ^ {2, 3} == {1, 3} and d.items() - {(1, "a")} == {(2, "b")}
assert d.keys().isdisjoint({5}) and {1: 0}.keys() <= {1, 2}

# --- dict ordering and ops
d = {"b": 1, "a": 2}
assert list(d) == ["b", "a"] and (d | {"c": 3}) == {"b": 1, "a": 2, "c": 3}
d |= {"b": 9}
assert d["b"] == 9 and list(reversed(d)) == ["a", "b"]
assert dict(zip("ab", [1, 2])) == {"a": 1, "b": 2} and dict.fromkeys("ab", 0) == {"a": 0, "b": 0}
assert d.setdefault("z", []) == [] and d.get("missing", 5) == 5 and d.pop("z") == []

# --- int string digit limit
import sys
assert sys.get_int_max_str_digits() == 4300
assert len(str(10 ** 4299)) == 4300
for convert in (str, repr, lambda n: format(n, ","), lambda n: print(n), lambda n: int.__str__(n)):
    try:
        convert(10 ** 4300)
        raise AssertionError("no error")
    except ValueError as e:
        assert str(e).startswith("Exceeds the limit (4300 digits) for integer string conversion"), str(e)
assert hex(10 ** 5000).startswith("0x")

# --- int string digit limit on parsing
try:
    int("1" * 5000)
    raise AssertionError("no error")
except ValueError as e:
    assert "Exceeds the limit (4300 digits)" in str(e), str(e)
assert int("1" * 4300) > 0

# --- messages of int and float
for text, base, msg in [("abc", 10, "invalid literal for int() with base 10: 'abc'"),
                        ("010", 0, "invalid literal for int() with base 0: '010'"),
                        ("12x", 16, "invalid literal for int() with base 16: '12x'"),
                        ("", 10, "invalid literal for int() with base 10: ''")]:
    try:
        int(text, base)
        raise AssertionError("no error")
    except ValueError as e:
        assert str(e) == msg, str(e)
try:
    float("x1")
    raise AssertionError("no error")
except ValueError as e:
    assert str(e) == "could not convert string to float: 'x1'", str(e)

# --- messages of KeyError and IndexError
try:
    {}["missing"]
except KeyError as e:
    assert str(e) == "'missing'" and e.args == ("missing",)
for seq, msg in [([], "list index out of range"), ((), "tuple index out of range"), ("", "string index out of range")]:
    try:
        seq[3]
        raise AssertionError("no error")
    except IndexError as e:
        assert str(e) == msg, str(e)
try:
    [].pop()
except IndexError as e:
    assert str(e) == "pop from empty list", str(e)

# --- messages of TypeError for operands
cases = [(lambda: 1 + "a", "unsupported operand type(s) for +: 'int' and 'str'"),
         (lambda: [] - {}, "unsupported operand type(s) for -: 'list' and 'dict'"),
         (lambda: None * 2, "unsupported operand type(s) for *: 'NoneType' and 'int'"),
         (lambda: "a" + 1, 'can only concatenate str (not "int") to str'),
         (lambda: [1] + (2,), 'can only concatenate list (not "tuple") to list'),
         (lambda: 1 < "a", "'<' not supported between instances of 'int' and 'str'"),
         (lambda: len(5), "object of type 'int' has no len()"),
         (lambda: None(), "'NoneType' object is not callable"),
         (lambda: 5[0], "'int' object is not subscriptable")]
for f, msg in cases:
    try:
        f()
        raise AssertionError("no error: " + msg)
    except TypeError as e:
        assert str(e) == msg, str(e)

# --- messages of NameError and UnboundLocalError
try:
    undefined_thing
except NameError as e:
    assert str(e) == "name 'undefined_thing' is not defined", str(e)
def f():
    total += 1
    total = 0
try:
    f()
    raise AssertionError("no error")
except UnboundLocalError as e:
    assert str(e) == "cannot access local variable 'total' where it is not associated with a value", str(e)
    assert isinstance(e, NameError)

# --- messages of AttributeError
import json
class C:
    pass
for f, msg in [(lambda: (1).nope, "'int' object has no attribute 'nope'"),
               (lambda: json.nope, "module 'json' has no attribute 'nope'"),
               (lambda: C().nope, "'C' object has no attribute 'nope'"),
               (lambda: C.nope, "type object 'C' has no attribute 'nope'"),
               (lambda: None.x, "'NoneType' object has no attribute 'x'")]:
    try:
        f()
        raise AssertionError("no error")
    except AttributeError as e:
        assert str(e) == msg, str(e)

# --- messages of other common errors
for f, exc, msg in [(lambda: 1 / 0, ZeroDivisionError, "division by zero"),
                    (lambda: [].index(3), ValueError, "3 is not in list"),
                    (lambda: "abc".index("z"), ValueError, "substring not found"),
                    (lambda: {}.popitem(), KeyError, "'popitem(): dictionary is empty'"),
                    (lambda: next(iter([])), StopIteration, ""),
                    (lambda: int(None), TypeError, "int() argument must be a string, a bytes-like object or a real number, not 'NoneType'")]:
    try:
        f()
        raise AssertionError("no error")
    except exc as e:
        assert str(e) == msg, (msg, str(e))

# --- unpacking errors
try:
    a, b = [1, 2, 3]
except ValueError as e:
    # CPython 3.14 adds ", got 3".
    assert str(e).startswith("too many values to unpack (expected 2"), str(e)
try:
    a, b, c = [1]
except ValueError as e:
    assert str(e) == "not enough values to unpack (expected 3, got 1)", str(e)

# --- call errors
def g(a, b=1):
    return a
try:
    g()
except TypeError as e:
    assert str(e) == "g() missing 1 required positional argument: 'a'", str(e)
try:
    g(1, 2, 3)
except TypeError as e:
    assert str(e) == "g() takes from 1 to 2 positional arguments but 3 were given", str(e)
try:
    g(1, c=2)
except TypeError as e:
    assert str(e) == "g() got an unexpected keyword argument 'c'", str(e)

# --- sys facts
import sys
assert sys.version_info >= (3, 8) and sys.version_info[0] == 3
assert sys.maxsize == 2 ** 63 - 1 and sys.byteorder in ("little", "big")
assert sys.float_info.max > 1e308 and sys.float_info.epsilon < 1e-15
assert sys.int_info.bits_per_digit > 0
assert sys.intern("abc") == "abc" and sys.maxunicode == 0x10FFFF

# --- sys recursion limit
import sys
old = sys.getrecursionlimit()
assert old >= 100
sys.setrecursionlimit(200)
assert sys.getrecursionlimit() == 200
def depth(n):
    return 0 if n == 0 else 1 + depth(n - 1)
assert depth(150) == 150
try:
    depth(10000)
    raise AssertionError("no error")
except RecursionError:
    pass
sys.setrecursionlimit(old)

# --- sys streams
import sys
n = sys.stdout.write("to stdout\n")
assert n == 10
print("to stderr", file=sys.stderr)
try:
    sys.exit(3)
except SystemExit as e:
    assert e.code == 3

# --- print arguments
import io
buf = io.StringIO()
print("a", "b", sep="-", end="!\n", file=buf)
print(1, 2, file=buf, sep="")
print(file=buf)
assert buf.getvalue() == "a-b!\n12\n\n"
try:
    print("x", sep=1)
    raise AssertionError("no error")
except TypeError as e:
    assert str(e) == "sep must be None or a string, not int", str(e)
