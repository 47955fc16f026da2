"""Makes tool calls in order through the official MCP Python SDK and prints what each
returned, for a Rust test to check against state it arranged itself.

Usage: calls.py <cairn binary> <project root> <calls JSON> [cairn mcp argument...], where the
calls are `[[tool, {arguments}], ...]`. Prints one JSON list: per call `{"ok": true,
"value": structured result}` or `{"ok": false, "message": ...}`.
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


async def main(cairn, root, calls, *server_args):
    params = StdioServerParameters(command=cairn, args=["mcp", *server_args], cwd=root)
    out = []
    async with mcp.Client(params, client_info=types.Implementation(name="calls-agent", version="1.0")) as c:
        for name, args in json.loads(calls):
            r = await c.call_tool(name, args)
            s = attr(r, "structured_content", "structuredContent") or {}
            if attr(r, "is_error", "isError"):
                out.append({"ok": False, "message": s.get("message") or r.content[0].text})
            else:
                out.append({"ok": True, "value": s})
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:]))
