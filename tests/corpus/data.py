# --- base64
import base64
assert base64.b64encode(b"hello") == b"aGVsbG8="
assert base64.b64decode("aGVsbG8=") == b"hello"
assert base64.urlsafe_b64encode(b"\xfb\xff") == b"-_8="
assert base64.b32encode(b"a") == b"ME======"
assert base64.b16encode(b"\x01\xab") == b"01AB"
assert base64.b85decode(base64.b85encode(b"data")) == b"data"

# --- base64 errors
import base64, binascii
try:
    base64.b64decode("abc", validate=True)
    raise AssertionError("no error")
except binascii.Error:
    pass

# --- binascii
import binascii
assert binascii.hexlify(b"\x00\xff") == b"00ff"
assert binascii.unhexlify("00ff") == b"\x00\xff"
assert binascii.crc32(b"hello") == 907060870
assert binascii.b2a_base64(b"hi") == b"aGk=\n"

# --- bytes methods
b = bytes.fromhex("48 65 6c 6c 6f")
assert b == b"Hello" and b.hex() == "48656c6c6f" and b.hex(":") == "48:65:6c:6c:6f"
assert b"a,b".split(b",") == [b"a", b"b"] and b"abc".upper() == b"ABC"
ba = bytearray(b"abc")
ba[0] = ord("x")
ba.extend(b"!")
assert ba == b"xbc!" and bytes(ba).decode() == "xbc!"
assert list(b"\x01\x02") == [1, 2] and b"\x00" * 3 == bytes(3)

# --- struct pack unpack
import struct
packed = struct.pack("<IhB", 1, -2, 3)
assert packed == b"\x01\x00\x00\x00\xfe\xff\x03"
assert struct.unpack("<IhB", packed) == (1, -2, 3)
assert struct.calcsize("<IhB") == 7 and struct.calcsize("IhB") >= 7
assert struct.pack(">f", 1.5) == b"?\xc0\x00\x00"

# --- struct iter and Struct
import struct
s = struct.Struct("<2sH")
data = s.pack(b"ab", 513)
assert s.unpack(data) == (b"ab", 513) and s.size == 4
assert [v for (v,) in struct.iter_unpack("<H", b"\x01\x00\x02\x00")] == [1, 2]
try:
    struct.pack("<B", 300)
    raise AssertionError("no error")
except struct.error:
    pass

# --- io stringio
import io
buf = io.StringIO()
buf.write("line1\n")
print("line2", file=buf)
assert buf.getvalue() == "line1\nline2\n"
buf.seek(0)
assert buf.readline() == "line1\n" and [l for l in buf] == ["line2\n"]
assert io.StringIO("a\nb").read().split("\n") == ["a", "b"]

# --- io bytesio
import io
b = io.BytesIO(b"abcdef")
assert b.read(2) == b"ab" and b.tell() == 2
b.seek(0, io.SEEK_END)
b.write(b"gh")
assert b.getvalue() == b"abcdefgh"
assert isinstance(b, io.BufferedIOBase) and isinstance(io.StringIO(), io.TextIOBase)

# --- io textiowrapper over bytes
import io
raw = io.BytesIO("héllo\nwörld\n".encode("utf-8"))
text = io.TextIOWrapper(raw, encoding="utf-8")
assert text.read().splitlines() == ["héllo", "wörld"]

# --- csv reader
import csv, io
rows = list(csv.reader(io.StringIO('name,qty\n"Smith, J",3\nplain,"4"\n')))
assert rows == [["name", "qty"], ["Smith, J", "3"], ["plain", "4"]]
assert list(csv.reader(["a;b"], delimiter=";")) == [["a", "b"]]

# --- csv dictreader dictwriter
import csv, io
out = io.StringIO()
w = csv.DictWriter(out, fieldnames=["a", "b"], lineterminator="\n")
w.writeheader()
w.writerow({"a": 1, "b": "x,y"})
assert out.getvalue() == 'a,b\n1,"x,y"\n'
rows = list(csv.DictReader(io.StringIO(out.getvalue())))
assert rows == [{"a": "1", "b": "x,y"}]

# --- csv writer quoting
import csv, io
out = io.StringIO()
csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows([["a", 1], ['q"t', None]])
assert out.getvalue() == '"a","1"\n"q""t",""\n'

# --- tomllib
import tomllib
doc = tomllib.loads('''
title = "demo"
[owner]
name = "Tom"
dob = 1979-05-27
[[items]]
n = 1
[[items]]
n = 2
''')
assert doc["title"] == "demo" and doc["owner"]["name"] == "Tom"
assert [i["n"] for i in doc["items"]] == [1, 2]
assert doc["owner"]["dob"].year == 1979

# --- tomllib types and errors
import tomllib
d = tomllib.loads('a = [1, 2.5, true]\nb = { x = "y" }\nc = """\nmulti"""')
assert d == {"a": [1, 2.5, True], "b": {"x": "y"}, "c": "multi"}
try:
    tomllib.loads("a = ")
    raise AssertionError("no error")
except tomllib.TOMLDecodeError:
    pass

# --- pathlib pure posix
from pathlib import PurePosixPath
p = PurePosixPath("src/pkg/module.tar.gz")
assert p.suffix == ".gz" and p.suffixes == [".tar", ".gz"]
assert p.stem == "module.tar" and p.name == "module.tar.gz"
assert p.parent == PurePosixPath("src/pkg") and p.parts == ("src", "pkg", "module.tar.gz")
assert str(p.with_suffix(".zip")) == "src/pkg/module.tar.zip"

# --- pathlib joins and relative
from pathlib import PurePosixPath, PurePath
base = PurePosixPath("/repo")
f = base / "src" / "main.py"
assert str(f) == "/repo/src/main.py" and f.is_absolute()
assert str(f.relative_to(base)) == "src/main.py"
assert f.match("*.py") and not f.match("*.rs")
assert str(PurePosixPath("a/./b/../c")) == "a/b/../c"
assert PurePath("a/b").as_posix() == "a/b"

# --- pathlib with_name parents
from pathlib import PurePosixPath
p = PurePosixPath("docs/guide/intro.md")
assert str(p.with_name("index.md")) == "docs/guide/index.md"
assert [str(x) for x in p.parents] == ["docs/guide", "docs", "."]
assert p.with_stem("outro").name == "outro.md"
assert PurePosixPath("a", "b", "c.txt") == PurePosixPath("a/b/c.txt")
