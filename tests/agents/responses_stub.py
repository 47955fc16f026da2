"""A scripted model behind the OpenAI Responses API (`POST /v1/responses`, streamed) on
127.0.0.1, for driving Codex CLI in tests: each request that offers tools gets the next step
of a script (a function call, or the final text), chosen by how many function call outputs the
conversation already holds. A step names a tool by its suffix; the stub calls the declared
name that ends with it, preferring one that names the server (Codex prefixes MCP tools).

Usage: responses_stub.py <script.json> <port file> <server name>. Writes each request's path,
tool names and the call outputs it carries to stderr (a JSON line each).
"""
import json
import sys

from stub_server import JsonHandler, serve

STEPS = json.load(open(sys.argv[1]))
SERVER = sys.argv[3]


def declared(body):
    names = []
    for t in body.get("tools") or []:
        if t.get("type") == "function" and t.get("name"):
            names.append(t["name"])
        for f in t.get("tools") or []:  # a namespace of tools: called as (namespace, name)
            if f.get("name"):
                names.append(f"{t.get('name')}/{f['name']}")
    return names


def resolve(names, want):
    ours = [n for n in names if n.endswith("/" + want) and SERVER in n]
    exact = [n for n in names if n == want]
    return (ours or exact or [want])[0]


def outputs(body):
    items = body.get("input") or []
    return [i for i in items if isinstance(i, dict) and i.get("type") in ("function_call_output", "custom_tool_call_output", "mcp_tool_call_output")]


def item_for(body):
    names = declared(body)
    done = len(outputs(body))
    step = STEPS[min(done, len(STEPS) - 1)] if names else {"text": "ok"}
    if "tool" in step:
        name = resolve(names, step["tool"])
        call = {"type": "function_call", "id": f"fc_{done}", "call_id": f"call_{done}", "name": name, "arguments": json.dumps(step["input"])}
        if "/" in name:
            call["namespace"], call["name"] = name.split("/", 1)
        return call
    return {"type": "message", "id": f"msg_{done}", "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": step["text"], "annotations": []}]}


class Handler(JsonHandler):
    def do_GET(self):
        self.reply(200, {"object": "list", "data": [], "models": []})

    def do_POST(self):
        body = self.body()
        sys.stderr.write(json.dumps({"path": self.path, "tools": declared(body), "outputs": outputs(body)}) + "\n")
        sys.stderr.flush()
        if not self.path.rstrip("/").endswith("/responses"):
            return self.reply(404, {"error": {"message": self.path}})
        item = item_for(body)
        usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 15}
        self.stream()

        def event(kind, data):
            data["type"] = kind
            self.wfile.write(f"event: {kind}\ndata: {json.dumps(data)}\n\n".encode())

        event("response.created", {"response": {"id": "resp_s", "status": "in_progress"}})
        event("response.output_item.added", {"output_index": 0, "item": item})
        event("response.output_item.done", {"output_index": 0, "item": item})
        event("response.completed", {"response": {"id": "resp_s", "status": "completed", "output": [item], "usage": usage}})
        self.wfile.flush()


serve(Handler, sys.argv[2])
