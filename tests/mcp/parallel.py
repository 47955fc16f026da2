"""Parallel tool calls on one session, as agent clients send them (official Python SDK, all
requests in flight at once): `width` edit_lines of different lines of one file plus `width`
write_file of other files, `rounds` times. Every call that reported success must be in the
proposal afterwards.

Usage: parallel.py <cairn binary> <project root> <rounds> <width>. Prints one JSON object.
"""
import asyncio
import json
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp import types


async def main(cairn, root, rounds, width):
    params = StdioServerParameters(command=cairn, args=["mcp"], cwd=root)
    lost = []
    applied = 0
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, client_info=types.Implementation(name="parallel", version="1.0")) as s:
            await s.initialize()

            async def call(name, **args):
                r = await s.call_tool(name, args)
                err = getattr(r, "is_error", None) or getattr(r, "isError", None)
                return (not err), r.content[0].text

            ok, text = await call("task_create", title="parallel edits")
            task = json.loads(text)["id"]
            ok, text = await call("session_begin", task=task, idempotency_key="p")
            sid = json.loads(text)["id"]
            path = "big.txt"
            for r in range(rounds):
                lines = [f"round {r} line {i}" for i in range(width)]
                await call("write_file", session=sid, path=path, content="\n".join(lines) + "\n")
                ok, tagged = await call("read_file", session=sid, path=path, tagged=True)
                tags = [l.split("|", 1)[0] for l in tagged.splitlines()]
                edits = [call("edit_lines", session=sid, path=path, ops=[{"op": "replace", "tag": tags[i], "lines": [f"edited {r} {i}"]}]) for i in range(width)]
                writes = [call("write_file", session=sid, path=f"w/{r}-{i}.txt", content=f"{r} {i}\n") for i in range(width)]
                results = await asyncio.gather(*edits, *writes)
                ok, now = await call("read_file", session=sid, path=path)
                for i in range(width):
                    if results[i][0]:
                        applied += 1
                        if f"edited {r} {i}" not in now.splitlines():
                            lost.append(f"round {r}: edit of line {i}")
                for i in range(width):
                    if results[width + i][0]:
                        applied += 1
                        ok, got = await call("read_file", session=sid, path=f"w/{r}-{i}.txt")
                        if got != f"{r} {i}\n":
                            lost.append(f"round {r}: write {i}")
    print(json.dumps({"applied": applied, "lost": lost}))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])))
