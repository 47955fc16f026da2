# --- string constants and capwords
import string
assert string.ascii_lowercase[:3] == "abc" and string.digits == "0123456789"
assert "!" in string.punctuation and " " in string.whitespace
assert string.capwords("hello  big world") == "Hello Big World"
assert string.hexdigits.startswith("0123456789abcdef")

# --- string template
from string import Template
t = Template("$who likes ${what}s")
assert t.substitute(who="tim", what="kung pao") == "tim likes kung paos"
assert t.safe_substitute(who="tim") == "tim likes ${what}s"
try:
    t.substitute(who="x")
    raise AssertionError("no error")
except KeyError:
    pass

# --- string formatter
import string
f = string.Formatter()
assert f.format("{0}-{name}", 1, name="x") == "1-x"
assert [p[1] for p in f.parse("a{b}c{d}e")] == ["b", "d", None]

# --- textwrap dedent and indent
import textwrap
src = """
    def f():
        return 1
"""
assert textwrap.dedent(src) == "\ndef f():\n    return 1\n"
assert textwrap.indent("a\nb\n", "> ") == "> a\n> b\n"
assert textwrap.indent("a\n\nb", "  ") == "  a\n\n  b"

# --- textwrap fill and wrap
import textwrap
text = "The quick brown fox jumps over the lazy dog"
assert textwrap.wrap(text, width=15) == ["The quick brown", "fox jumps over", "the lazy dog"]
assert textwrap.fill(text, width=20) == "The quick brown fox\njumps over the lazy\ndog"
assert textwrap.fill("a b", width=10, initial_indent="* ") == "* a b"

# --- textwrap shorten
import textwrap
assert textwrap.shorten("Hello  world, this is long", width=15) == "Hello [...]"
assert textwrap.shorten("short", width=10) == "short"

# --- difflib unified diff
import difflib
a = ["one\n", "two\n", "three\n"]
b = ["one\n", "2\n", "three\n"]
diff = list(difflib.unified_diff(a, b, fromfile="a.txt", tofile="b.txt"))
assert diff[0] == "--- a.txt\n" and diff[1] == "+++ b.txt\n"
assert diff[2] == "@@ -1,3 +1,3 @@\n"
assert "-two\n" in diff and "+2\n" in diff

# --- difflib unified diff of lines without newlines
import difflib
out = list(difflib.unified_diff("a b c".split(), "a x c".split(), lineterm="", n=0))
assert out == ["--- ", "+++ ", "@@ -2 +2 @@", "-b", "+x"]

# --- difflib sequencematcher
import difflib
m = difflib.SequenceMatcher(None, "abcd", "abxd")
assert m.ratio() == 0.75
assert [op[0] for op in m.get_opcodes()] == ["equal", "replace", "equal"]
assert m.find_longest_match(0, 4, 0, 4).size == 2

# --- difflib close matches and ndiff
import difflib
assert difflib.get_close_matches("appel", ["ape", "apple", "peach", "puppy"]) == ["apple", "ape"]
nd = list(difflib.ndiff(["a\n", "b\n"], ["a\n", "c\n"]))
assert nd[0] == "  a\n" and "- b\n" in nd and "+ c\n" in nd

# --- fnmatch
import fnmatch
assert fnmatch.fnmatch("main.py", "*.py") and not fnmatch.fnmatch("main.py", "*.rs")
assert fnmatch.filter(["a.py", "b.txt", "c.py"], "*.py") == ["a.py", "c.py"]
assert fnmatch.fnmatchcase("A.PY", "*.py") is False
assert fnmatch.fnmatch("x1", "x[0-9]") and fnmatch.fnmatch("ab", "a?")
assert fnmatch.translate("*.py").startswith("(?s:")

# --- shlex
import shlex
assert shlex.split('cmd --name "John Smith" \'single q\'') == ["cmd", "--name", "John Smith", "single q"]
assert shlex.quote("it's here") == "'it'\"'\"'s here'"
assert shlex.join(["echo", "a b"]) == "echo 'a b'"
assert shlex.split("a # comment", comments=True) == ["a"]

# --- unicodedata
import unicodedata
assert unicodedata.name("é") == "LATIN SMALL LETTER E WITH ACUTE"
assert unicodedata.lookup("SNOWMAN") == "\u2603"
assert unicodedata.category("A") == "Lu" and unicodedata.category("1") == "Nd"
assert unicodedata.numeric("½") == 0.5 and unicodedata.decimal("7") == 7

# --- unicodedata normalize
import unicodedata
composed, decomposed = "\u00e9", "e\u0301"
assert unicodedata.normalize("NFC", decomposed) == composed
assert unicodedata.normalize("NFD", composed) == decomposed
assert unicodedata.normalize("NFKC", "\uff21") == "A"
stripped = "".join(c for c in unicodedata.normalize("NFD", "café") if not unicodedata.combining(c))
assert stripped == "cafe"

# --- str methods agents use
s = "  Hello, World  "
assert s.strip() == "Hello, World" and s.lstrip() == "Hello, World  "
assert "a,b,,c".split(",") == ["a", "b", "", "c"] and "a b  c".split() == ["a", "b", "c"]
assert "x=1=2".partition("=") == ("x", "=", "1=2") and "a.b.c".rsplit(".", 1) == ["a.b", "c"]
assert "snake_case_name".title() == "Snake_Case_Name" and "ABC".lower() == "abc"
assert "hello".center(9, "*") == "**hello**" and "42".zfill(5) == "00042"
assert "prefix_rest".removeprefix("prefix_") == "rest" and "file.py".removesuffix(".py") == "file"
assert "line1\nline2\r\n".splitlines() == ["line1", "line2"] and "a\tb".expandtabs(4) == "a   b"
assert "Straße".casefold() == "strasse" and "abc".translate(str.maketrans("ab", "xy")) == "xyc"

# --- str predicates and search
assert "abc123".isalnum() and "123".isdigit() and "abc".isalpha() and "   ".isspace()
assert "Hello".startswith(("He", "Ha")) and "x.py".endswith(".py")
assert "banana".count("an") == 2 and "banana".find("na") == 2 and "banana".rfind("na") == 4
assert "banana".index("b") == 0 and "banana".replace("a", "o", 2) == "bonona"
assert "_".join(["a", "b"]) == "a_b" and "identifier_1".isidentifier()

# --- printf-style formatting
assert "%s has %d items (%.1f%%)" % ("cart", 3, 12.345) == "cart has 3 items (12.3%)"
assert "%(name)s=%(v)r" % {"name": "k", "v": "x"} == "k='x'"
assert "%5s|%-5s|" % ("a", "b") == "    a|b    |"
assert "{:>6}".format("ab") == "    ab" and "{0}{1}{0}".format("a", "b") == "aba"
