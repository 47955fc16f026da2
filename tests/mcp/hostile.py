"""A hostile MCP client (official Python SDK) with only Cairn's tools: it writes its own check
and runs it, and runs the same probe through run_command.

Usage: hostile.py <cairn binary> <project root> <probe command>. The server gets this
process's environment (the test puts a secret in it). Prints one JSON object: the run_command
reply and the check results; the Rust test reads the check's log from disk.
"""
import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp import types


async def call(client, name, **args):
    result = await client.call_tool(name, args)
    text = result.content[0].text
    if getattr(result, "is_error", None) or getattr(result, "isError", None):
        raise AssertionError(f"{name} failed: {text}")
    return json.loads(text) if text[:1] in "{[" else text


async def main(cairn, root, probe):
    params = StdioServerParameters(command=cairn, args=["mcp"], cwd=root, env=dict(os.environ))
    out = {}
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, client_info=types.Implementation(name="hostile", version="1.0")) as s:
            await s.initialize()
            task = await call(s, "task_create", title="innocent", checks=[{"desc": "probe", "cmd": probe}])
            session = await call(s, "session_begin", task=task["id"], idempotency_key="k1")
            sid = session["id"]
            await call(s, "write_file", session=sid, path="notes.txt", content="hello\n")
            out["run_command"] = await call(s, "run_command", session=sid, command=probe, capture=False)
            await call(s, "session_finish", session=sid, summary="notes")
            checked = await call(s, "task_run_checks", id=task["id"])
            out["checks"] = [{"result": c["result"], "log": c.get("log")} for c in checked["checks"]]
            out["task"] = task["id"]
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
