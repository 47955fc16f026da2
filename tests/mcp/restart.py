"""One MCP client process across its server's restarts, through the official MCP Python SDK.

Modes (Usage: restart.py <cairn binary> <project root> MODE [ARG...]):
- `restart`: a session begun, the connection's own session written, then the server killed
  with SIGKILL; the same process starts it again and, without `--actor`, is the same actor:
  it writes and finishes the session it began and goes on with its own session. A second
  server of this process (started through `sh -c`, a wrapper) is the same actor beside it.
  Leaves one session open for the other modes.
- `other SESSION OWNER`: another client process with the same client name is another actor;
  using OWNER's session is refused, saying how to continue it (`--actor`).
- `owner SESSION OWNER`: a server started with `--actor OWNER`, as the refusal says, goes on
  with the session and finishes it.
Asserts here; prints one JSON object for the Rust side, which checks the proposals.
"""
import asyncio
import json
import os
import signal
import sys
import time
from contextlib import AsyncExitStack

import mcp
from mcp import StdioServerParameters, types
from sdk import failed, ok

NAME = "restart-agent"


def client(cairn, root, *server_args, wrapped=False):
    if wrapped:
        # `; exit $?` keeps the shell between this process and the server (no exec).
        params = StdioServerParameters(command="/bin/sh", args=["-c", '"$0" "$@"; exit $?', cairn, "mcp", *server_args], cwd=root)
    else:
        params = StdioServerParameters(command=cairn, args=["mcp", *server_args], cwd=root)
    return mcp.Client(params, client_info=types.Implementation(name=NAME, version="1.0"))


def stat(pid):
    """(state, parent) of a process, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return fields[0], int(fields[1])
    except (OSError, IndexError, ValueError):
        return None


def servers():
    """The `cairn mcp` processes below this one (children, or below a wrapper), alive."""
    parents = {}
    for e in os.listdir("/proc"):
        if e.isdigit() and (s := stat(e)) and s[0] != "Z":
            parents[int(e)] = s[1]
    out = []
    for pid in parents:
        up, depth = parents.get(pid), 0
        while up and up != os.getpid() and depth < 8:
            up, depth = parents.get(up), depth + 1
        if up != os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if argv[0].endswith(b"cairn") and b"mcp" in argv:
            out.append(pid)
    return out


def wait_until(what, cond, seconds=60):
    deadline = time.monotonic() + seconds
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


async def restart(cairn, root):
    out = {}
    first = AsyncExitStack()
    c = await first.enter_async_context(client(cairn, root))
    me = (await ok(c, "identity"))["actor"]
    out["actor"] = me
    task = await ok(c, "task_create", title="survive a kill")
    sess = await ok(c, "session_begin", task=task["id"], idempotency_key="restart")
    out["session"], out["agent"] = sess["id"], sess["agent"]
    await ok(c, "write_file", session=sess["id"], path="before.txt", content="before\n")
    await ok(c, "write_file", path="own-before.txt", content="own before\n")
    own = await ok(c, "session_get")
    out["own"], out["own_agent"] = own["id"], own["agent"]

    [server] = servers()
    os.kill(server, signal.SIGKILL)
    wait_until("the server to die", lambda: (stat(server) or ("Z",))[0] == "Z")
    try:
        await first.aclose()
    except Exception:  # the connection to the killed server may end with an error
        pass
    wait_until("the killed server to be gone", lambda: server not in servers())

    # The same process starts the server again: the same actor, no --actor.
    async with client(cairn, root) as c:
        again = await ok(c, "identity")
        assert again["actor"] == me, (again, me)
        [restarted] = servers()
        assert restarted != server
        await ok(c, "write_file", session=sess["id"], path="after.txt", content="after\n")
        done = await ok(c, "session_finish", session=sess["id"], summary="before and after the kill")
        assert done["status"] == "finished", done
        # The connection's own session of the killed server is this one's now.
        await ok(c, "write_file", path="own-after.txt", content="own after\n")
        assert (await ok(c, "session_get"))["id"] == own["id"]

        # A second server of this client, through a wrapper, beside it: the same actor, a
        # connection's own session of its own (the first server is alive: nothing to adopt).
        async with client(cairn, root, wrapped=True) as side:
            pids = servers()
            wrapped = next(p for p in pids if p != restarted)
            assert stat(stat(wrapped)[1])[1] == os.getpid(), "a shell stands between this process and the server"
            assert (await ok(side, "identity"))["actor"] == me
            await ok(side, "write_file", path="side.txt", content="side\n")
            side_own = await ok(side, "session_get")
            assert side_own["id"] not in (own["id"], sess["id"]), side_own
            out["side_agent"] = side_own["agent"]
        finished = await ok(c, "session_finish", summary="my own session, across the kill")
        assert finished["id"] == own["id"] and finished["status"] == "finished", finished

        # A session left open for another client process.
        t2 = await ok(c, "task_create", title="left open")
        s2 = await ok(c, "session_begin", task=t2["id"], idempotency_key="left-open")
        await ok(c, "write_file", session=s2["id"], path="open.txt", content="open\n")
        out["open"], out["open_agent"] = s2["id"], s2["agent"]
    return out


async def other(cairn, root, session, owner):
    async with client(cairn, root) as c:
        me = (await ok(c, "identity"))["actor"]
        assert me != owner and me.startswith(f"agent:{NAME}-"), (me, owner)
        write = (await failed(c, "write_file", session=session, path="other.txt", content="x\n"))["message"]
        finish = (await failed(c, "session_finish", session=session, summary="not mine"))["message"]
    return {"actor": me, "write": write, "finish": finish}


async def owner(cairn, root, session, actor):
    async with client(cairn, root, "--actor", actor) as c:
        await ok(c, "write_file", session=session, path="owner.txt", content="owner\n")
        done = await ok(c, "session_finish", session=session, summary="continued with --actor")
    return {"status": done["status"]}


async def main(cairn, root, mode, *rest):
    out = await {"restart": restart, "other": other, "owner": owner}[mode](cairn, root, *rest)
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:]))
