"""Identity and claims through the official MCP Python SDK: two servers started for the same
client (one clientInfo name) act as two actors; `identity` names the client; re-claiming your
own task changes nothing; another actor's claim, session_begin or expected_actor is refused
with a clear error; `--actor` overrides the default identity. Asserts here; prints one JSON
object for the Rust side (which checks the task's row and provenance from the CLI).

Usage: identity.py <cairn binary> <project root>.
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


def client(cairn, root, name, *server_args):
    params = StdioServerParameters(command=cairn, args=["mcp", *server_args], cwd=root)
    return mcp.Client(params, client_info=types.Implementation(name=name, version="1.0"))


async def main(cairn, root):
    out = {}
    async with AsyncExitStack() as stack:
        one = await stack.enter_async_context(client(cairn, root, "twin-agent"))
        two = await stack.enter_async_context(client(cairn, root, "twin-agent"))
        fixed = await stack.enter_async_context(client(cairn, root, "twin-agent", "--actor", "agent:fixed"))
        id1, id2, id3 = await ok(one, "identity"), await ok(two, "identity"), await ok(fixed, "identity")
        out["identities"] = [id1, id2, id3]
        assert id1["actor"] != id2["actor"], (id1, id2)
        assert (await ok(one, "identity"))["actor"] == id1["actor"], "the identity is fixed"
        me, other = id1["actor"], id2["actor"]

        task = await ok(one, "task_create", title="only one of us")
        first = await ok(one, "task_claim", id=task["id"])
        again = await ok(one, "task_claim", id=task["id"])
        assert first["assignee"] == me and again == first, (first, again)
        out["task"] = task["id"]
        out["claims_by_other"] = await err(two, "task_claim", id=task["id"])
        out["begin_by_other"] = await err(two, "session_begin", task=task["id"], idempotency_key="theirs")
        out["expected_other"] = await err(two, "session_begin", task=task["id"], idempotency_key="k", expected_actor=me)
        assert (await ok(two, "task_get", id=task["id"]))["assignee"] == me, "the refusals changed nothing"
        # The owner's session on its own claimed task starts (the claim in begin is a no-op too).
        sess = await ok(one, "session_begin", task=task["id"], idempotency_key="mine", expected_actor=me)
        out["session_actor"] = sess["actor"]
        out["others_session_call"] = await err(two, "session_heartbeat", session=sess["id"])
        await ok(one, "session_cancel", session=sess["id"], reason="done with the test")
        out["other"] = other
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:3]))
