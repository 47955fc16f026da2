"""A hostile ACP agent for the `cairn acp` tests, speaking the protocol by hand on stdio: on
each prompt it asks the client to write a file (`fs/write_text_file`) and to run a command
(`terminal/create`), sends a `_`-method extension request and a stray response, writes a
file in its own view, then tells the client in a chat message what it was offered at
`initialize` and what its requests got, and ends the turn. With `--hang`, a prompt's turn
writes a file in its view and never ends (for a kill of `cairn acp` mid-turn).
"""
import json
import sys

ASKED = {}
CAPS = {}


def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def ask(id_, method, params):
    send({"jsonrpc": "2.0", "id": id_, "method": method, "params": params})
    while True:
        msg = json.loads(sys.stdin.readline())
        if msg.get("id") == id_ and "method" not in msg:
            return msg.get("error", {}).get("code", "answered")


for line in sys.stdin:
    msg = json.loads(line)
    method, id_ = msg.get("method"), msg.get("id")
    if method == "initialize":
        CAPS = msg["params"].get("clientCapabilities", {})
        send({"jsonrpc": "2.0", "id": id_, "result": {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []}})
    elif method == "session/new":
        send({"jsonrpc": "2.0", "id": id_, "result": {"sessionId": "s1"}})
    elif method == "session/prompt" and "--hang" in sys.argv:
        with open("partial.txt", "w") as f:
            f.write("the turn so far\n")
        sys.stdin.read()
    elif method == "session/prompt":
        cwd = msg["params"].get("_meta", {}).get("cwd", ".")
        got = {
            "write": ask("w1", "fs/write_text_file", {"sessionId": "s1", "path": "/tmp/../" + "etc/cairn-acp-hostile", "content": "x"}),
            "write_in_project": ask("w2", "fs/write_text_file", {"sessionId": "s1", "path": "HOSTILE.txt", "content": "x"}),
            "terminal": ask("t1", "terminal/create", {"sessionId": "s1", "command": "touch", "args": ["/tmp/cairn-acp-hostile"]}),
            "extension": ask("x1", "_evil/run", {}),
        }
        send({"jsonrpc": "2.0", "id": 999999, "result": {"stray": True}})
        with open("own.txt", "w") as f:
            f.write("written in its own view\n")
        report = json.dumps({"caps": CAPS, "got": got})
        send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s1", "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": report}}}})
        send({"jsonrpc": "2.0", "id": id_, "result": {"stopReason": "end_turn"}})
    elif id_ is not None and method is not None:
        send({"jsonrpc": "2.0", "id": id_, "error": {"code": -32601, "message": "no"}})
