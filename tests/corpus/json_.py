# --- json ensure_ascii default
import json
assert json.dumps(["é"]) == '["\\u00e9"]'
assert json.dumps("😀") == '"\\ud83d\\ude00"'
assert json.dumps({"k": "é"}, ensure_ascii=False) == '{"k": "é"}'
assert json.loads(json.dumps("é😀")) == "é😀"

# --- json indent sort_keys
import json
out = json.dumps({"b": 1, "a": [1, 2]}, indent=2, sort_keys=True)
assert out == '{\n  "a": [\n    1,\n    2\n  ],\n  "b": 1\n}'
assert json.dumps({}, indent=2) == "{}" and json.dumps([], indent=2) == "[]"
assert json.dumps([1], indent="\t") == "[\n\t1\n]"
assert json.dumps([1, [2]], indent=0) == "[\n1,\n[\n2\n]\n]"

# --- json separators and compact
import json
assert json.dumps({"a": 1, "b": [1, 2]}, separators=(",", ":")) == '{"a":1,"b":[1,2]}'
assert json.dumps([1, 2]) == "[1, 2]" and json.dumps({"a": None}) == '{"a": null}'
assert json.dumps((1, 2)) == "[1, 2]" and json.dumps(True) == "true"

# --- json big numbers
import json
assert json.loads("123456789012345678901234567890") == 123456789012345678901234567890
assert json.loads("1" * 400) == int("1" * 400)
assert json.loads("1e400") == float("inf")
assert json.loads("-1e400") == float("-inf")
assert json.dumps(10 ** 30) == "1" + "0" * 30
assert json.loads("1.5") == 1.5 and isinstance(json.loads("2"), int)

# --- json nan infinity
import json
assert json.dumps(float("nan")) == "NaN" and json.dumps(float("inf")) == "Infinity"
assert json.loads("NaN") != json.loads("NaN")
try:
    json.dumps(float("nan"), allow_nan=False)
    raise AssertionError("no error")
except ValueError as e:
    assert "Out of range float values are not JSON compliant" in str(e), str(e)

# --- json decode errors
import json
try:
    json.loads('{"a" 1}')
    raise AssertionError("no error")
except json.JSONDecodeError as e:
    assert e.msg == "Expecting ':' delimiter", e.msg
    assert (e.lineno, e.colno, e.pos) == (1, 6, 5)
try:
    json.loads("[1, 2")
    raise AssertionError("no error")
except ValueError as e:
    assert str(e) == "Expecting ',' delimiter: line 1 column 6 (char 5)", str(e)

# --- json more decode errors
import json
for bad, msg in [("", "Expecting value"), ("[1] x", "Extra data"), ('"abc', "Unterminated string starting at")]:
    try:
        json.loads(bad)
        raise AssertionError("no error for %r" % bad)
    except json.JSONDecodeError as e:
        assert e.msg == msg, (bad, e.msg)

# --- json default and hooks
import json
class P:
    def __init__(self, x):
        self.x = x
assert json.dumps(P(1), default=lambda o: o.__dict__) == '{"x": 1}'
try:
    json.dumps(P(1))
    raise AssertionError("no error")
except TypeError as e:
    assert str(e) == "Object of type P is not JSON serializable", str(e)
assert json.loads('{"a": 1}', object_hook=lambda d: sorted(d)) == ["a"]
assert json.loads("[1.5]", parse_float=str) == ["1.5"]
assert json.loads('[["a", 1]]', object_pairs_hook=dict) == [["a", 1]]

# --- json keys
import json
assert json.dumps({2: "a", True: "b", None: "c", 1.5: "d"}) == '{"2": "a", "true": "b", "null": "c", "1.5": "d"}'
try:
    json.dumps({(1, 2): "x"})
    raise AssertionError("no error")
except TypeError as e:
    assert str(e) == "keys must be str, int, float, bool or None, not tuple", str(e)
assert json.dumps({"b": 1, "a": 2}, sort_keys=True) == '{"a": 2, "b": 1}'

# --- json bad indent
import json
try:
    json.dumps([1], indent=[1])
    raise AssertionError("no error")
except TypeError:
    pass

# --- json roundtrip of nested data
import json
data = {"name": "x", "list": [1, 2.5, None, True, {"deep": ["é"]}], "empty": {}}
assert json.loads(json.dumps(data)) == data
assert json.loads(json.dumps(data, indent=4, sort_keys=True)) == data
