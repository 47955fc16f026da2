"""The editor's stand-in for the `cairn acp` tests: the official ACP Python SDK
(`agent-client-protocol`) as the client. It starts the agent command, initializes offering
the client file system and terminal (as an editor does), opens a session in the project,
sends each prompt, and right after each prompt returns runs a check command (`cairn status
--json`), so the test sees the state at the moment the editor hears the turn is over.

Usage: client.py <config.json>; config: {"agent": [argv], "cwd": DIR, "prompts": [TEXT],
"check": [argv], "after_first": [[argv]], "wait_text": TEXT}: after the first prompt, the
`after_first` commands run ("{id}" is the agent's id from the check), then the client waits
for an agent message holding `wait_text` (a turn it did not prompt: the reviewer's feedback). Prints one JSON object: each turn's stop reason, session updates seen and
check output; the fs/terminal calls the agent made of this client (never any, under cairn).
"""
import asyncio
import json
import os
import subprocess
import sys

import acp
from acp import schema

CONFIG = json.load(open(sys.argv[1]))
CALLS = []
UPDATES = []
TEXT = []
WAITED = asyncio.Event()


class Editor:
    async def request_permission(self, session_id, tool_call, options, **kwargs):
        CALLS.append({"method": "session/request_permission", "tool": tool_call.title})
        allow = next((o for o in options if o.kind in ("allow_once", "allow_always")), options[0])
        return schema.RequestPermissionResponse(outcome=schema.AllowedOutcome(outcome="selected", option_id=allow.option_id))

    async def session_update(self, session_id, update, **kwargs):
        UPDATES.append(update.session_update)
        if update.session_update == "agent_message_chunk" and getattr(update.content, "text", None):
            TEXT.append(update.content.text)
            if CONFIG.get("wait_text") and CONFIG["wait_text"] in "".join(TEXT):
                WAITED.set()

    async def write_text_file(self, session_id, path, content, **kwargs):
        CALLS.append({"method": "fs/write_text_file", "path": path})
        with open(path, "w") as f:
            f.write(content)
        return schema.WriteTextFileResponse()

    async def read_text_file(self, session_id, path, line=None, limit=None, **kwargs):
        CALLS.append({"method": "fs/read_text_file", "path": path})
        return schema.ReadTextFileResponse(content=open(path).read())

    async def create_terminal(self, session_id, command, **kwargs):
        CALLS.append({"method": "terminal/create", "command": command})
        raise acp.RequestError.method_not_found("terminal/create")

    def on_connect(self, conn):
        pass


async def main():
    turns = []
    limit = 64 << 20
    async with acp.spawn_agent_process(Editor(), *CONFIG["agent"], env=dict(os.environ), cwd=CONFIG["cwd"], transport_kwargs={"limit": limit}) as (conn, proc):
        caps = schema.ClientCapabilities(fs=schema.FileSystemCapabilities(read_text_file=True, write_text_file=True), terminal=True)
        await conn.initialize(protocol_version=acp.PROTOCOL_VERSION, client_capabilities=caps)
        session = await conn.new_session(cwd=CONFIG["cwd"], mcp_servers=[])
        for text in CONFIG["prompts"]:
            seen = len(UPDATES)
            done = await conn.prompt(session_id=session.session_id, prompt=[acp.text_block(text)])
            check = subprocess.run(CONFIG["check"], capture_output=True, text=True)
            turns.append({"stop_reason": done.stop_reason, "updates": UPDATES[seen:], "check": check.stdout, "check_err": check.stderr})
            if len(turns) == 1 and CONFIG.get("after_first"):
                agent = json.loads(check.stdout)[0]["id"]
                ran = [subprocess.run([a.replace("{id}", agent) for a in argv], capture_output=True, text=True) for argv in CONFIG["after_first"]]
                turns[-1]["after"] = [{"code": r.returncode, "stdout": r.stdout, "stderr": r.stderr} for r in ran]
                seen = len(UPDATES)
                await asyncio.wait_for(WAITED.wait(), 120)
                turns[-1]["after_updates"] = UPDATES[seen:]
    print(json.dumps({"turns": turns, "calls": CALLS, "text": "".join(TEXT)}))


asyncio.run(main())
