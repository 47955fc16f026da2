"""Identity and claims through the official MCP Python SDK: the servers one client process
starts (one clientInfo name) are one actor; another client process is another; `identity`
names the client; re-claiming your own task changes nothing; another actor's claim,
session_begin, expected_actor or use of a session is refused with a clear error; `--actor`
overrides the default identity. Asserts here; prints one JSON object for the Rust side (which
checks the task's row and provenance from the CLI).

Usage: identity.py <cairn binary> <project root> first
       identity.py <cairn binary> <project root> other TASK SESSION OWNER
"""
import asyncio
import json
import sys
from contextlib import AsyncExitStack

import mcp
from mcp import StdioServerParameters, types
from sdk import failed, ok


async def err(c, name, **args):
    return (await failed(c, name, **args))["message"]


def client(cairn, root, *server_args):
    params = StdioServerParameters(command=cairn, args=["mcp", *server_args], cwd=root)
    return mcp.Client(params, client_info=types.Implementation(name="twin-agent", version="1.0"))


async def first(cairn, root):
    out = {}
    async with AsyncExitStack() as stack:
        one = await stack.enter_async_context(client(cairn, root))
        two = await stack.enter_async_context(client(cairn, root))
        fixed = await stack.enter_async_context(client(cairn, root, "--actor", "agent:fixed"))
        id1, id2, id3 = await ok(one, "identity"), await ok(two, "identity"), await ok(fixed, "identity")
        out["identities"] = [id1, id2, id3]
        assert (await ok(one, "identity"))["actor"] == id1["actor"], "the identity is fixed"
        me = id1["actor"]

        task = await ok(one, "task_create", title="only one of us")
        claimed = await ok(one, "task_claim", id=task["id"])
        again = await ok(one, "task_claim", id=task["id"])
        by_twin = await ok(two, "task_claim", id=task["id"])
        assert claimed["assignee"] == me and again == claimed and by_twin == claimed, (claimed, again, by_twin)
        out["task"] = task["id"]
        # The owner's session on its own claimed task starts (the claim in begin is a no-op too).
        sess = await ok(one, "session_begin", task=task["id"], idempotency_key="mine", expected_actor=me)
        out["session"], out["session_actor"] = sess["id"], sess["actor"]
        await ok(two, "session_heartbeat", session=sess["id"], progress="the twin server beats too")
    print(json.dumps(out), flush=True)


async def other(cairn, root, task, session, owner):
    out = {}
    async with client(cairn, root) as c:
        out["actor"] = (await ok(c, "identity"))["actor"]
        out["claims_by_other"] = await err(c, "task_claim", id=task)
        out["begin_by_other"] = await err(c, "session_begin", task=task, idempotency_key="theirs")
        out["expected_other"] = await err(c, "session_begin", task=task, idempotency_key="k", expected_actor=owner)
        out["others_session_call"] = await err(c, "session_heartbeat", session=session)
        assert (await ok(c, "task_get", id=task))["assignee"] == owner, "the refusals changed nothing"
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    cairn, root, mode, *rest = sys.argv[1:]
    asyncio.run(first(cairn, root) if mode == "first" else other(cairn, root, *rest))
