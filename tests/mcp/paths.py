"""Absolute paths from an MCP client, through the official MCP Python SDK: every tool that takes
a path refuses one outside the project, naming the project root, and changes nothing; one
inside the project (by the root's own spelling or through a symbolic link to it) is that file;
a script run through `run_script` keeps the scripts' convention (a leading `/` is the root).

Usage: paths.py <cairn binary> <project root> <outside dir> <link to the root>. Asserts here;
prints one JSON object for the Rust side, which checks the proposal and the disk.
"""
import asyncio
import json
import sys

import mcp
from mcp import StdioServerParameters, types
from sdk import failed, ok


async def main(cairn, root, outside, link):
    params = StdioServerParameters(command=cairn, args=["mcp"], cwd=root)
    refused = {}

    async def refuse(c, label, name, **args):
        message = (await failed(c, name, **args))["message"]
        assert root in message and "outside the project" in message, (label, message)
        refused[label] = message

    async with mcp.Client(params, client_info=types.Implementation(name="paths-agent", version="1.0")) as c:
        # The first call of the connection, in its own session: refused, nothing written.
        await refuse(c, "implicit write_file", "write_file", path=f"{outside}/abs.txt", content="x\n")

        task = await ok(c, "task_create", title="paths")
        s = (await ok(c, "session_begin", task=task["id"], idempotency_key="paths"))["id"]
        secret = f"{outside}/secret.txt"
        await refuse(c, "write_file", "write_file", session=s, path=f"{outside}/abs.txt", content="x\n")
        await refuse(c, "read_file", "read_file", session=s, path=secret)
        await refuse(c, "edit_file", "edit_file", session=s, path=secret, edits=[{"old_text": "secret", "new_text": "x"}])
        await refuse(c, "edit_lines", "edit_lines", session=s, path=secret, ops=[{"op": "delete", "tag": "1:aa"}])
        await refuse(c, "delete_file", "delete_file", session=s, path=secret)
        await refuse(c, "move_file to", "move_file", session=s, **{"from": "a.txt", "to": f"{outside}/moved.txt"})
        await refuse(c, "move_file from", "move_file", session=s, **{"from": secret, "to": "b.txt"})
        await refuse(c, "list_dir", "list_dir", session=s, path=outside)
        await refuse(c, "search_files", "search_files", session=s, pattern=f"{outside}/**")
        await refuse(c, "search_files path", "search_files", session=s, pattern="*.txt", path=outside)
        await refuse(c, "search_content", "search_content", session=s, pattern="secret", path=outside)
        await refuse(c, "search_content glob", "search_content", session=s, pattern="secret", glob=f"{outside}/*.txt")
        await refuse(c, "run_command cwd", "run_command", session=s, command="true", cwd=outside)
        await refuse(c, "task_create check cwd", "task_create", title="t", checks=[{"desc": "d", "cmd": "true", "cwd": outside}])
        many = await ok(c, "read_files", session=s, paths=[secret, "a.txt"])
        assert root in many["files"][0]["error"] and many["files"][1]["content"] == "a\n", many

        # Inside the project: the root's own spelling, or a symbolic link to it.
        await ok(c, "write_file", session=s, path=f"{root}/in/root.txt", content="by root\n")
        await ok(c, "write_file", session=s, path=f"{link}/in/link.txt", content="by link\n")
        assert (await ok(c, "read_file", session=s, path=f"{link}/a.txt"))["content"] == "a\n"
        assert "a.txt" in (await ok(c, "list_dir", session=s, path=link))["entries"]
        found = (await ok(c, "search_files", session=s, pattern=f"{link}/in/*.txt"))["files"]
        assert found == ["in/link.txt", "in/root.txt"], found
        hits = (await ok(c, "search_content", session=s, pattern="by ", path=f"{root}/in"))["matches"]
        assert sorted(h["file"] for h in hits) == ["in/link.txt", "in/root.txt"], hits
        await ok(c, "edit_file", session=s, path=f"{link}/a.txt", edits=[{"old_text": "a\n", "new_text": "edited\n"}])
        # A script keeps the scripts' convention: a leading `/` is the project root.
        await ok(c, "run_script", session=s, code="write_file('/tmp/script.txt', 'from a script\\n')")
        done = await ok(c, "session_finish", session=s, summary="paths")
    print(json.dumps({"agent": done["agent"], "refused": refused}), flush=True)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
