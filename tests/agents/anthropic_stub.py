"""A scripted model behind the Anthropic Messages API on 127.0.0.1, for driving real agent
CLIs (Claude Code) in tests: each request that offers tools gets the next step of a script
(a tool call, or the final text), chosen by how many tool results the conversation already
holds. Requests without tools (the CLI's side queries: titles, summaries) get a short text.

Usage: anthropic_stub.py <script.json> <port file>. The script is a JSON list of steps:
{"tool": NAME, "input": {...}} or {"text": "..."}. Serves until killed; writes its port to
<port file> once listening, and every request's path and messages to stderr (a JSON line
each).
"""
import json
import sys

from stub_server import JsonHandler, serve

STEPS = json.load(open(sys.argv[1]))


def blocks_for(body):
    if not body.get("tools"):
        return [{"type": "text", "text": "ok"}], "end_turn"
    results = sum(1 for m in body.get("messages", []) if isinstance(m.get("content"), list)
                  for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_result")
    step = STEPS[min(results, len(STEPS) - 1)]
    if "tool" in step:
        return [{"type": "tool_use", "id": f"toolu_{results}", "name": step["tool"], "input": step["input"]}], "tool_use"
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
        sys.stderr.write(json.dumps({"path": self.path, "messages": body.get("messages", [])}) + "\n")
        sys.stderr.flush()
        if "count_tokens" in self.path:
            return self.reply(200, {"input_tokens": 10})
        if not self.path.startswith("/v1/messages"):
            return self.reply(404, {"type": "error", "error": {"type": "not_found_error", "message": self.path}})
        blocks, stop = blocks_for(body)
        model = body.get("model", "claude-scripted")
        usage = {"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        if not body.get("stream"):
            return self.reply(200, {"id": "msg_s", "type": "message", "role": "assistant", "model": model, "content": blocks,
                                    "stop_reason": stop, "stop_sequence": None, "usage": usage})
        self.stream()

        def event(kind, data):
            data["type"] = kind
            self.wfile.write(f"event: {kind}\ndata: {json.dumps(data)}\n\n".encode())

        event("message_start", {"message": {"id": "msg_s", "type": "message", "role": "assistant", "model": model, "content": [],
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
