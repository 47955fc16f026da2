"""A scripted model behind the Anthropic Messages API on 127.0.0.1, for driving real agent
CLIs (Claude Code) in tests: each request that offers tools gets the next step of a script
(a tool call, or the final text), chosen by how many tool results the conversation already
holds. Requests without tools (the CLI's side queries: titles, summaries) get a short text.

Usage: anthropic_stub.py <script.json> <port file>. The script is either a JSON list of
steps, {"tool": NAME, "input": {...}} or {"text": "..."}, or, for an interactive session of
several turns, {"turns": [[step, ...], [step, ...]], "gate_dir": "/path"}: the turn is the
number of the user's own messages in the conversation (user messages without a tool result)
minus one, the step within it the number of tool results after the turn's message. A step
may also say "wait": "NAME": its request is answered only once gate_dir/NAME exists (the
CLI stays busy meanwhile, so a test can look at what it did so far). The last turn and the
last step of a turn repeat. For several sessions at once, {"by_prompt": {"WORD": script, ...}}
gives each conversation the script whose WORD its user's first message holds.

Serves until killed; writes its port to <port file> once listening, and every request's
path, whether it offered tools, and messages to stderr (a JSON line each).
"""
import json
import os
import sys
import time
import uuid

from stub_server import JsonHandler, serve

SCRIPT = json.load(open(sys.argv[1]))


def content_blocks(message):
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content or [] if isinstance(b, dict)]


def is_tool_result(message):
    return any(b.get("type") == "tool_result" for b in content_blocks(message))


def is_users_own(message):
    """A message the user wrote: no tool result, and some text beyond the CLI's
    <system-reminder> blocks (counted once per message, however many blocks it has)."""
    if message.get("role") != "user" or is_tool_result(message):
        return False
    return any(b.get("type") == "text" and not b.get("text", "").lstrip().startswith("<system-reminder>")
               for b in content_blocks(message))


def tool_results(messages):
    return sum(1 for m in messages for b in content_blocks(m) if b.get("type") == "tool_result")


def text_of(message):
    return "\n".join(b.get("text", "") for b in content_blocks(message) if b.get("type") == "text")


def script_for(messages):
    """The script of this conversation (by its first prompt, for a by_prompt script)."""
    if not isinstance(SCRIPT, dict) or "by_prompt" not in SCRIPT:
        return SCRIPT
    first = next((text_of(m) for m in messages if is_users_own(m)), "")
    for word, script in SCRIPT["by_prompt"].items():
        if word in first:
            return script
    return [{"text": "no script for this prompt"}]


def step_for(messages):
    """The step answering this conversation, and its tool call's number."""
    script = script_for(messages)
    if isinstance(script, list):
        results = tool_results(messages)
        return script[min(results, len(script) - 1)], results
    own = [i for i, m in enumerate(messages) if is_users_own(m)]
    turns = script["turns"]
    turn = min(max(len(own) - 1, 0), len(turns) - 1)
    steps = turns[turn]
    since = messages[own[-1] + 1:] if own else messages
    results = tool_results(since)
    return steps[min(results, len(steps) - 1)], f"{len(own) - 1}_{results}"


def wait_for_gate(name):
    gate = os.path.join(SCRIPT["gate_dir"], name)
    while not os.path.exists(gate):
        time.sleep(0.05)


def blocks_for(body):
    if not body.get("tools"):
        return [{"type": "text", "text": "ok"}], "end_turn"
    step, n = step_for(body.get("messages", []))
    if "wait" in step:
        wait_for_gate(step["wait"])
    if "tool" in step:
        return [{"type": "tool_use", "id": f"toolu_{n}", "name": step["tool"], "input": step["input"]}], "tool_use"
    return [{"type": "text", "text": step["text"]}], "end_turn"


class Handler(JsonHandler):
    def do_HEAD(self):
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self):
        self.reply(200, {})

    def do_POST(self):
        body = self.body()
        # What the CLI sent back (tool results included), for the test to read.
        sys.stderr.write(json.dumps({"path": self.path, "tools": bool(body.get("tools")), "messages": body.get("messages", [])}) + "\n")
        sys.stderr.flush()
        if "count_tokens" in self.path:
            return self.reply(200, {"input_tokens": 10})
        if not self.path.startswith("/v1/messages"):
            return self.reply(404, {"type": "error", "error": {"type": "not_found_error", "message": self.path}})
        blocks, stop = blocks_for(body)
        model = body.get("model", "claude-scripted")
        # An id of its own for each reply: Claude Code merges the assistant messages that
        # share one (as the parts of a single reply).
        msg_id = f"msg_{uuid.uuid4().hex}"
        usage = {"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        if not body.get("stream"):
            return self.reply(200, {"id": msg_id, "type": "message", "role": "assistant", "model": model, "content": blocks,
                                    "stop_reason": stop, "stop_sequence": None, "usage": usage})
        self.stream()

        def event(kind, data):
            data["type"] = kind
            self.wfile.write(f"event: {kind}\ndata: {json.dumps(data)}\n\n".encode())

        event("message_start", {"message": {"id": msg_id, "type": "message", "role": "assistant", "model": model, "content": [],
                                             "stop_reason": None, "stop_sequence": None, "usage": usage}})
        for i, b in enumerate(blocks):
            if b["type"] == "tool_use":
                event("content_block_start", {"index": i, "content_block": {"type": "tool_use", "id": b["id"], "name": b["name"], "input": {}}})
                event("content_block_delta", {"index": i, "delta": {"type": "input_json_delta", "partial_json": json.dumps(b["input"])}})
            else:
                event("content_block_start", {"index": i, "content_block": {"type": "text", "text": ""}})
                event("content_block_delta", {"index": i, "delta": {"type": "text_delta", "text": b["text"]}})
            event("content_block_stop", {"index": i})
        event("message_delta", {"delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": 5}})
        event("message_stop", {})
        self.wfile.flush()


serve(Handler, sys.argv[2])
