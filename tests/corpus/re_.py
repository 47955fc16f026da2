# --- re lookahead
import re
src = "foo(1) foo bar(2) foo(3)"
assert re.findall(r"\w+(?=\()", src) == ["foo", "bar", "foo"]
assert re.sub(r"foo(?=\()", "baz", src) == "baz(1) foo bar(2) baz(3)"
assert re.findall(r"\b\w+\b(?!\()", "a( b c(") == ["b"]

# --- re lookbehind
import re
assert re.findall(r"(?<=\$)\d+", "cost $30 and $45") == ["30", "45"]
assert re.findall(r"(?<!\$)\b\d+", "cost $30 and 45") == ["45"]

# --- re backreferences
import re
assert re.findall(r"\b(\w+) \1\b", "the the cat sat sat down") == ["the", "sat"]
assert re.sub(r"(\w+) \1", r"\1", "hello hello world") == "hello world"
assert re.search(r"(?P<q>['\"]).*?(?P=q)", "say 'hi' now").group() == "'hi'"

# --- re sub with function
import re
def upper(m):
    return m.group(1).upper()
assert re.sub(r"_(\w)", upper, "snake_case_name") == "snakeCaseName"
assert re.sub(r"\d+", lambda m: str(int(m.group()) * 2), "a1 b22") == "a2 b44"
assert re.subn(r"a", "b", "aaa") == ("bbb", 3)

# --- re named groups
import re
m = re.match(r"(?P<key>\w+)\s*=\s*(?P<value>.*)", "name = cairn")
assert m.group("key") == "name" and m["value"] == "cairn"
assert m.groupdict() == {"key": "name", "value": "cairn"}
assert m.span("value") == (7, 12) and m.start() == 0

# --- re flags
import re
assert re.findall(r"^\w+", "one\ntwo", re.M) == ["one", "two"]
assert re.match(r"hello", "HELLO", re.I)
assert re.search(r"a.b", "a\nb", re.S)
pat = re.compile(r"""
    (\d{3})   # area
    [-.]?
    (\d{4})   # number
""", re.VERBOSE)
assert pat.search("call 555-1234").groups() == ("555", "1234")

# --- re split finditer fullmatch
import re
assert re.split(r"[,;]\s*", "a, b;c") == ["a", "b", "c"]
assert re.split(r"(\d)", "a1b2c") == ["a", "1", "b", "2", "c"]
assert [m.start() for m in re.finditer(r"o", "foo boo")] == [1, 2, 5, 6]
assert re.fullmatch(r"\d+", "123") and not re.fullmatch(r"\d+", "123a")
assert re.escape("a.b*c") == "a\\.b\\*c"

# --- re compiled and errors
import re
p = re.compile(r"(a)(b)?")
assert p.match("a").groups() == ("a", None) and p.groups == 2
assert p.pattern == "(a)(b)?"
try:
    re.compile(r"(unclosed")
    raise AssertionError("no error")
except re.error as e:
    assert "missing )" in str(e), str(e)

# --- re unicode and classes
import re
assert re.findall(r"\w+", "héllo wörld") == ["héllo", "wörld"]
assert re.findall(r"[^\W\d_]+", "ab12_cd") == ["ab", "cd"]
assert re.sub(r"\s+", " ", "a \t\n b") == "a b"
assert re.findall(r"\d+", "a12b3") == ["12", "3"]

# --- re non-greedy conditional atomic-free
import re
assert re.findall(r"<.+?>", "<a><b>") == ["<a>", "<b>"]
assert re.match(r"(a)?(?(1)b|c)", "ab").group() == "ab"
assert re.match(r"(a)?(?(1)b|c)", "c").group() == "c"
assert re.findall(r"(?:ab)+", "ababx abab") == ["abab", "abab"]

# --- re refactoring idiom
import re
code = "def old_name(x):\n    return old_name(x - 1)\nold_name_2 = 1\n"
new = re.sub(r"\bold_name\b(?=\()", "new_name", code)
assert new == "def new_name(x):\n    return new_name(x - 1)\nold_name_2 = 1\n"
imports = re.findall(r"^(?:from\s+(\S+)\s+)?import\s+(\S+)", "import os\nfrom a.b import c\n", re.M)
assert imports == [("", "os"), ("a.b", "c")]
