"""The lifecycle of a call, through the official Python SDK: cancelling a call (the SDK sends
`notifications/cancelled` when the awaiting task is cancelled) stops its work — a confined command,
a sandboxed script, a task check — and the server serves on; closing the client mid-call
ends the server and its work. (The times are printed, not bounded: the bench measures speed.) The server is found by its unique `--actor`; its
work as its descendants in /proc.

Usage: lifecycle.py <cairn binary> <project root> <tag>. Asserts; prints one JSON object.
"""
import asyncio
import json
import os
import sys
import time

from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client


def procs():
    out = {}
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                stat = open(f"/proc/{p}/stat").read()
                cmd = open(f"/proc/{p}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            rest = stat.rsplit(")", 1)[1].split()
            out[int(p)] = (int(rest[1]), rest[0], cmd)
    return out


def descendants(pid):
    table, found, frontier = procs(), [], [pid]
    while frontier:
        p = frontier.pop()
        for c, (pp, _, _) in table.items():
            if pp == p and c not in found:
                found.append(c)
                frontier.append(c)
    return found


def alive(pid):
    try:
        return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


async def wait_for(what, cond, secs):
    deadline = time.monotonic() + secs
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


async def main(cairn, root, tag):
    actor = f"agent:py-lifecycle-{tag}"
    params = StdioServerParameters(command=cairn, args=["mcp", "--actor", actor], cwd=root)
    out = {}
    server = None
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, client_info=types.Implementation(name="py-lifecycle", version="1")) as s:
            await s.initialize()
            server = next(p for p, (_, _, cmd) in procs().items() if actor in cmd and " mcp " in f" {cmd} ")
            # A task whose check runs long, with a proposal to check.
            made = await s.call_tool("task_create", {"title": "slow check", "checks": [{"desc": "slow", "cmd": "sleep 300"}]})
            task = (getattr(made, "structured_content", None) or made.structuredContent)["id"]
            began = await s.call_tool("session_begin", {"task": task, "idempotency_key": "slow"})
            sess = (getattr(began, "structured_content", None) or began.structuredContent)["id"]
            await s.call_tool("write_file", {"session": sess, "path": "c.txt", "content": "c\n"})
            await s.call_tool("session_finish", {"session": sess, "summary": "c"})
            for tool, args, marker in [("run_command", {"command": "sleep 300"}, "sleep"), ("run_script", {"code": "while True:\n    pass\n"}, "__sandbox"), ("task_run_checks", {"id": task}, "sleep")]:
                call = asyncio.create_task(s.call_tool(tool, args))
                work = []

                def started():
                    nonlocal work
                    work = descendants(server)
                    return any(marker in procs().get(p, (0, "", ""))[2] for p in work)
                await wait_for(f"{tool} to start", started, 20)
                t = time.monotonic()
                call.cancel()
                await wait_for(f"{tool}'s work to die", lambda: all(not alive(p) for p in work), 60)
                out[f"cancel_{tool}_ms"] = int((time.monotonic() - t) * 1000)
            r = await s.call_tool("identity", {})
            out["alive"] = r.structured_content["actor"] if hasattr(r, "structured_content") else r.structuredContent["actor"]
            late = asyncio.create_task(s.call_tool("run_command", {"command": "sleep 300"}))
            await wait_for("the last call to start", lambda: any("sleep" in procs().get(p, (0, "", ""))[2] for p in descendants(server)), 20)
            work = descendants(server)
            t = time.monotonic()
    # The client is closed (stdin ends) while the call runs.
    late.cancel()
    await wait_for("the server and its work to end", lambda: all(not alive(p) for p in work + [server]), 60)
    out["close_ms"] = int((time.monotonic() - t) * 1000)
    print(json.dumps(out))


asyncio.run(main(*sys.argv[1:4]))
