"""An MCP agent that works for a while, driven by the official MCP Python SDK: it edits one
file through `cairn mcp` (its implicit session), says so on stdout, waits until a gate file
exists (still at work meanwhile, with a heartbeat every few seconds, as a long-running agent
sends), then finishes its session for review.

Usage: edit_wait.py <cairn binary> <project root> <path> <old text> <new text> <gate file>
"""
import asyncio
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp import types


async def main(cairn, root, path, old, new, gate):
    params = StdioServerParameters(command=cairn, args=["mcp"], cwd=root, env=dict(os.environ))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, client_info=types.Implementation(name="gated-agent", version="1.0")) as s:
            await s.initialize()
            r = await s.call_tool("edit_file", {"path": path, "edits": [{"old_text": old, "new_text": new}]})
            assert not getattr(r, "isError", False) and not getattr(r, "is_error", False), r
            print("edited", flush=True)
            beat = 0
            while not os.path.exists(gate):
                await asyncio.sleep(0.05)
                beat += 1
                if beat % 100 == 0:
                    await s.call_tool("session_heartbeat", {"progress": "waiting for its gate"})
            r = await s.call_tool("session_finish", {"summary": "a clearer error message"})
            assert not getattr(r, "isError", False) and not getattr(r, "is_error", False), r
            print("finished", flush=True)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:7]))
