"""Drives `cairn mcp` with the official MCP Python SDK (a client we did not write).

Usage: client.py <cairn binary> <project root>. Prints one JSON object with what the Rust
test checks afterwards (ids, tool names, errors); exits non-zero on any failed expectation.
"""
import asyncio
import json
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
try:
    from mcp.shared.exceptions import MCPError as McpError
except ImportError:  # mcp 1.x
    from mcp.shared.exceptions import McpError
from mcp import types


def attr(obj, *names):
    """An attribute under its mcp 2.x (snake_case) or 1.x (camelCase) name."""
    for n in names:
        if hasattr(obj, n):
            return getattr(obj, n)
    return None


def payload(result):
    assert not attr(result, "is_error", "isError"), result
    return result.content[0].text


async def call(client, name, **args):
    return payload(await client.call_tool(name, args))


async def refused(client, name, **args):
    try:
        result = await client.call_tool(name, args)
    except McpError as e:
        return getattr(getattr(e, "error", None), "message", None) or str(e)
    if attr(result, "is_error", "isError"):
        return result.content[0].text
    raise AssertionError(f"{name}({args}) was not refused: {result}")


async def main(cairn, root):
    params = StdioServerParameters(command=cairn, args=["mcp"], cwd=root)
    out = {}
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, client_info=types.Implementation(name="pytest-agent", version="1.0")) as s:
            await s.initialize()
            tools = (await s.list_tools()).tools
            names = sorted(t.name for t in tools)
            for t in tools:
                schema = attr(t, "input_schema", "inputSchema")
                assert schema.get("type") == "object", (t.name, schema)
                assert t.description, t.name
            out["tools"] = names
            out["identity"] = json.loads(await call(s, "identity"))["actor"]

            task = json.loads(await call(s, "task_create", title="bump a()", body="return 2",
                                         checks=[{"desc": "returns 2", "cmd": "grep -q 'return 2' src/lib.py"}]))
            out["task"] = task["id"]
            blocked = json.loads(await call(s, "task_create", title="later", deps=[task["id"]]))
            out["deps_gate"] = await refused(s, "session_begin", task=blocked["id"], idempotency_key="k-blocked")

            sess = json.loads(await call(s, "session_begin", task=task["id"], idempotency_key="k1"))
            again = json.loads(await call(s, "session_begin", task=task["id"], idempotency_key="k1"))
            assert again["id"] == sess["id"], (again, sess)
            out["session"], out["agent"] = sess["id"], sess["agent"]

            tagged = await call(s, "read_file", session=sess["id"], path="src/lib.py", tagged=True)
            tag = tagged.splitlines()[1].split("|", 1)[0]
            await call(s, "edit_lines", session=sess["id"], path="src/lib.py",
                       ops=[{"op": "replace", "tag": tag, "lines": ["    return 2"]}])
            await call(s, "write_file", session=sess["id"], path="NOTES.md", content="bumped\n")
            out["stale"] = await refused(s, "edit_lines", session=sess["id"], path="src/lib.py",
                                         ops=[{"op": "delete", "tag": tag}])
            out["script"] = json.loads(await call(s, "run_script", session=sess["id"],
                                                  code="read_file('src/lib.py').count('return 2')"))
            out["unknown_tool"] = await refused(s, "no_such_tool")
            out["bad_args"] = await refused(s, "write_file", session=sess["id"], path=7)
            await call(s, "session_finish", session=sess["id"], summary="return 2 from a()")
            out["after_finish"] = await refused(s, "write_file", session=sess["id"], path="x.txt", content="x")
            checked = json.loads(await call(s, "task_run_checks", id=task["id"]))
            out["checks"] = [c["result"] for c in checked["checks"]]
            out["alive"] = json.loads(await call(s, "identity"))["actor"]
    print(json.dumps(out))


asyncio.run(main(sys.argv[1], sys.argv[2]))
