"""A live MCP session whose overlay loses its write-ahead log, driven by the official MCP
Python SDK: it writes in a named session and in its connection's own, then waits on stdin
while the Rust side folds the WAL once (as a checkpoint would) and, after more writes, deletes
the `-wal` files as a cleanup tool would. Then session_finish and a file tool must fail
naming what was lost, and session_diff still shows what the overlay holds; the disconnect
ends the connection's own session. Prints `TAG JSON` lines the Rust side waits for.

Usage: wal_loss.py <cairn binary> <project root>.
"""
import asyncio
import json
import sys

import mcp
from mcp import StdioServerParameters, types
from sdk import failed, ok


async def err(c, name, **args):
    return (await failed(c, name, **args))


def say(tag, value):
    print(tag + " " + json.dumps(value), flush=True)


async def gate():
    line = await asyncio.to_thread(sys.stdin.readline)
    assert line.strip() == "go", line


async def main(cairn, root):
    params = StdioServerParameters(command=cairn, args=["mcp"], cwd=root)
    async with mcp.Client(params, client_info=types.Implementation(name="wal-agent", version="1.0")) as c:
        task = await ok(c, "task_create", title="survive a cleanup")
        sess = await ok(c, "session_begin", task=task["id"], idempotency_key="wal")
        sid = sess["id"]
        await ok(c, "write_file", session=sid, path="a.txt", content="the first version, kept\n")
        await ok(c, "write_file", path="implicit.txt", content="from the connection's own session\n")
        implicit = await ok(c, "session_get")
        say("FIRST", {"session": sid, "agent": sess["agent"], "implicit": implicit["agent"]})
        await gate()
        await ok(c, "write_file", session=sid, path="a.txt", content="v2\n")
        await ok(c, "write_file", session=sid, path="b.txt", content="b\n")
        await ok(c, "delete_file", session=sid, path="keep.txt")
        await ok(c, "write_file", path="implicit2.txt", content="more\n")
        say("SECOND", {})
        await gate()
        finish = await err(c, "session_finish", session=sid, summary="a.txt, b.txt, keep.txt")
        write = await err(c, "write_file", session=sid, path="c.txt", content="c\n")
        diff = await ok(c, "session_diff", session=sid)
        again = await err(c, "session_finish", session=sid, summary="a.txt, b.txt, keep.txt")
        say("LOST", {"finish": finish, "write": write, "diff": diff, "again": again})
    say("DONE", {})


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:3]))
