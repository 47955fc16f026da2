"""The tool shapes coding agents expect, through the official Python SDK's high-level
`mcp.Client` (it negotiates the newest protocol): instructions, annotations, structured
results, read ranges, edit_file (exact, ambiguous, not found, atomic, dry run), move_file,
session_diff, clear errors with the server alive, 32 parallel edit_file calls on one file, and
an implicit session. Asserts here; prints one JSON object for the Rust side.

Usage: tools.py <cairn binary> <project root>.
"""
import asyncio
import json
import sys

import mcp
from mcp import StdioServerParameters, types


def attr(obj, *names):
    for n in names:
        if hasattr(obj, n):
            return getattr(obj, n)
    return None


def structured(r):
    s = attr(r, "structured_content", "structuredContent")
    assert isinstance(s, dict), f"no structured object: {r}"
    return s


def is_error(r):
    return bool(attr(r, "is_error", "isError"))


async def ok(c, name, **args):
    r = await c.call_tool(name, args)
    assert not is_error(r), f"{name}({args}) failed: {r}"
    return structured(r), r.content[0].text


async def err(c, name, **args):
    r = await c.call_tool(name, args)
    assert is_error(r), f"{name}({args}) did not fail: {r}"
    return structured(r)["message"]


async def main(cairn, root):
    out = {}
    params = StdioServerParameters(command=cairn, args=["mcp"], cwd=root)
    async with mcp.Client(params, client_info=types.Implementation(name="shape-agent", version="1.0")) as c:
        out["protocol"] = str(c.protocol_version)
        instructions = c.instructions or ""
        assert "nothing you write reaches" in instructions and "edit_file" in instructions, instructions
        tools = {t.name: t for t in (await c.list_tools()).tools}
        for name in ["edit_file", "read_files", "move_file", "session_diff", "read_file", "list_dir", "search_content"]:
            assert name in tools, (name, sorted(tools))
        for t in tools.values():
            a = t.annotations
            assert a is not None and attr(a, "read_only_hint", "readOnlyHint") is not None, t.name
            assert attr(t, "output_schema", "outputSchema")["type"] == "object", t.name
            schema = json.dumps(attr(t, "input_schema", "inputSchema"))
            assert "$ref" not in schema and '"format"' not in schema, (t.name, schema)
        assert attr(tools["read_file"].annotations, "read_only_hint", "readOnlyHint") is True
        assert attr(tools["write_file"].annotations, "destructive_hint", "destructiveHint") is False

        ident, _ = await ok(c, "identity")
        out["actor"], out["client"] = ident["actor"], ident["client"]
        task, _ = await ok(c, "task_create", title="shapes")
        sess, _ = await ok(c, "session_begin", task=task["id"], idempotency_key="shapes")
        sid = sess["id"]
        out["agent"] = sess["agent"]

        # Read ranges, read_files, a JSON file read as text inside an object.
        part, text = await ok(c, "read_file", session=sid, path="lines.txt", offset=3, limit=2)
        assert part["content"] == "line 3\nline 4\n" and part["total_lines"] == 10, part
        assert "of 10" in text, text
        js, text = await ok(c, "read_file", session=sid, path="data.json")
        assert js["content"] == "[1, 2, 3]\n" and text == "[1, 2, 3]\n", (js, text)
        many, _ = await ok(c, "read_files", session=sid, paths=["data.json", "missing.txt"])
        assert many["files"][0]["content"] == "[1, 2, 3]\n" and "no such file" in many["files"][1]["error"], many

        # edit_file: exact, ambiguous, not found, all-or-nothing, dry run, absolute path.
        e, text = await ok(c, "edit_file", session=sid, path="app.py", edits=[{"old_text": "def a():\n    return 1", "new_text": "def a():\n    return 10"}])
        assert "+    return 10" in e["diff"] and text.startswith("---"), e
        amb = await err(c, "edit_file", session=sid, path="app.py", edits=[{"old_text": "return 1", "new_text": "x"}])
        assert "2 times" in amb and "lines" in amb, amb
        missing = await err(c, "edit_file", session=sid, path="app.py", edits=[{"old_text": "def zzz_b():", "new_text": "x"}])
        assert "not found" in missing and "closest lines" in missing and "def b():" in missing, missing
        atomic = await err(c, "edit_file", session=sid, path="app.py", edits=[{"old_text": "def b():", "new_text": "def bb():"}, {"old_text": "nope nope", "new_text": "x"}])
        assert "edits[1]" in atomic, atomic
        dry, _ = await ok(c, "edit_file", session=sid, path="app.py", dry_run=True, edits=[{"old_text": "def c():", "new_text": "def cc():"}])
        assert "+def cc():" in dry["diff"], dry
        now, _ = await ok(c, "read_file", session=sid, path=f"{root}/app.py")
        assert "def bb" not in now["content"] and "def cc" not in now["content"] and "return 10" in now["content"], now
        allr, _ = await ok(c, "edit_file", session=sid, path="app.py", edits=[{"old_text": "return 2", "new_text": "return 20", "replace_all": True}])
        assert allr["diff"].count("+    return 20") == 2, allr

        # move_file and the agent's own diff.
        await ok(c, "move_file", session=sid, **{"from": "old_name.py", "to": "pkg/new_name.py"})
        exists = await err(c, "move_file", session=sid, **{"from": "data.json", "to": "app.py"})
        assert "exists" in exists, exists
        d, text = await ok(c, "session_diff", session=sid)
        assert "rename from old_name.py" in d["diff"] and "rename to pkg/new_name.py" in d["diff"], d
        assert "app.py" in d["paths"], d

        # search and list.
        found, _ = await ok(c, "search_content", session=sid, pattern="DEF B", ignore_case=True, glob="*.py", context=1)
        assert found["matches"] and found["matches"][0]["file"] == "app.py" and found["matches"][0]["before"], found
        capped, _ = await ok(c, "search_content", session=sid, pattern="line", max_results=3)
        assert len(capped["matches"]) == 3 and capped["truncated"] is True, capped
        tree, _ = await ok(c, "list_dir", session=sid, depth=3, sizes=True)
        assert {"path": "pkg/new_name.py", "type": "file", "size": 11} in tree["entries"], tree
        files, _ = await ok(c, "search_files", session=sid, pattern="**/*.py", path="pkg")
        assert files["files"] == ["pkg/new_name.py"], files

        # Errors the model can act on; the server stays up.
        trav = await err(c, "read_file", session=sid, path="../../etc/passwd")
        assert "Invalid path" in trav, trav
        outside = await err(c, "write_file", session=sid, path="/../cairn-abs.txt", content="x")
        assert "paths are relative to the project root" in outside, outside
        unknown = await err(c, "read_file", session="no-such-session", path="app.py")
        assert "no-such-session" in unknown, unknown
        async def protocol_fault(name, args):
            try:
                r = await c.call_tool(name, args)
            except Exception as e:  # a JSON-RPC error (older protocol versions)
                return str(e)
            assert is_error(r), f"{name}({args}) was accepted: {r}"
            return r.content[0].text
        wrong = await protocol_fault("write_file", {"session": sid, "path": 7, "content": "x"})
        assert "`path` must be a string" in wrong, wrong
        nested = await protocol_fault("edit_file", {"session": sid, "path": "app.py", "edits": [{"old_text": 1, "new_text": "x"}]})
        assert "`edits[0].old_text`" in nested, nested
        none = await protocol_fault("delete_file", {"session": sid})
        assert "missing required argument `path`" in none, none
        boom = await err(c, "run_script", session=sid, code="1 / 0")
        assert "ZeroDivisionError" in boom, boom
        big = await err(c, "task_create", title="t" * 5000)
        assert "at most" in big, big

        # The rest of the task-graph contract: expected_actor, metadata, progress, execution,
        # session_list, head.
        t2, _ = await ok(c, "task_create", title="seed 004")
        wrong = await err(c, "session_begin", task=t2["id"], idempotency_key="k2", expected_actor="agent:someone-else")
        assert ident["actor"] in wrong, wrong
        s2, _ = await ok(c, "session_begin", task=t2["id"], idempotency_key="k2", expected_actor=ident["actor"],
                         meta={"client": "shape-agent", "model": "scripted", "pid": 42})
        got, _ = await ok(c, "session_get", session=s2["id"])
        assert got["meta"] == {"client": "shape-agent", "model": "scripted", "pid": 42}, got
        await ok(c, "session_heartbeat", session=s2["id"], progress="writing tests")
        tg, _ = await ok(c, "task_get", id=t2["id"])
        assert tg["execution"] == "active" and tg["progress"] == "writing tests", tg
        active, _ = await ok(c, "task_list", execution="active")
        assert t2["id"] in [t["id"] for t in active["tasks"]] and all(t["execution"] == "active" for t in active["tasks"]), active
        listed, _ = await ok(c, "session_list", task=t2["id"], status="active")
        assert [x["id"] for x in listed["sessions"]] == [s2["id"]], listed
        await ok(c, "write_file", session=s2["id"], path="s2.txt", content="s2\n")
        fin, _ = await ok(c, "session_finish", session=s2["id"], summary="s2")
        assert fin["head"].startswith("blake3:"), fin
        waiting, _ = await ok(c, "task_list", execution="awaiting_review")
        assert t2["id"] in [t["id"] for t in waiting["tasks"]], waiting

        # 32 parallel edit_file calls on one file: every success is in the proposal.
        lines = [f"item {i} = {i}" for i in range(32)]
        await ok(c, "write_file", session=sid, path="par.txt", content="\n".join(lines) + "\n")
        calls = [c.call_tool("edit_file", {"session": sid, "path": "par.txt", "edits": [{"old_text": f"item {i} = {i}\n", "new_text": f"item {i} = edited\n"}]}) for i in range(32)]
        results = await asyncio.gather(*calls)
        final, _ = await ok(c, "read_file", session=sid, path="par.txt")
        good = [i for i, r in enumerate(results) if not is_error(r)]
        assert good, results
        for i in good:
            assert f"item {i} = edited" in final["content"], (i, final)
        out["parallel_ok"] = len(good)

        await ok(c, "session_finish", session=sid, summary="shapes")

    # An implicit session: no task, no session; the write becomes a proposal on disconnect.
    async with mcp.Client(params, client_info=types.Implementation(name="quick-agent", version="1.0")) as c:
        w, _ = await ok(c, "write_file", path="implicit.txt", content="implicit\n")
        e, _ = await ok(c, "edit_file", path="app.py", edits=[{"old_text": "def c():", "new_text": "def see():"}])
        assert "+def see():" in e["diff"], e
    print(json.dumps(out))


asyncio.run(main(sys.argv[1], sys.argv[2]))
