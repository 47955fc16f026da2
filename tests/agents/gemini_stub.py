"""A scripted model behind the Gemini API (generateContent / streamGenerateContent) on
127.0.0.1, for driving Gemini CLI in tests: each request that offers tools gets the next step
of a script (a function call, or the final text), chosen by how many function responses the
conversation already holds. A step names a tool by its suffix: the CLI may prefix an MCP
server's tools (`cairn__read_file` beside its own `read_file`), and the stub calls the
declared name that ends with it, preferring one that names the server. Requests without tools
get a short text; JSON-mode requests (the CLI's own checks) get an object filling the schema.

Usage: gemini_stub.py <script.json> <port file> <server name>. Writes each request's path and
the function responses it carries to stderr (a JSON line each).
"""
import json
import sys

from stub_server import JsonHandler, serve

STEPS = json.load(open(sys.argv[1]))
SERVER = sys.argv[3]


def declared(body):
    names = []
    for t in body.get("tools") or []:
        for f in t.get("functionDeclarations") or t.get("function_declarations") or []:
            names.append(f["name"])
    return names


def resolve(names, want):
    ours = [n for n in names if n.endswith(want) and SERVER in n]
    exact = [n for n in names if n == want]
    return (ours or exact or [want])[0]


def fill(schema):
    """A value for a JSON schema: the CLI's side checks (next speaker: the user)."""
    if not isinstance(schema, dict):
        return "ok"
    if "enum" in schema:
        return "user" if "user" in schema["enum"] else schema["enum"][0]
    kind = schema.get("type", "object")
    kind = kind.lower() if isinstance(kind, str) else "object"
    if kind == "object":
        return {k: fill(v) for k, v in (schema.get("properties") or {}).items()}
    if kind == "array":
        return []
    if kind in ("number", "integer"):
        return schema.get("minimum", 0)
    if kind == "boolean":
        return False
    return "ok"


def responses(body):
    out = []
    for c in body.get("contents") or []:
        for p in c.get("parts") or []:
            r = p.get("functionResponse") or p.get("function_response")
            if r:
                out.append(r)
    return out


def parts_for(body):
    cfg = body.get("generationConfig") or {}
    schema = cfg.get("responseJsonSchema") or cfg.get("responseSchema")
    if cfg.get("responseMimeType") == "application/json" or schema:
        return [{"text": json.dumps(fill(schema or {}))}]
    names = declared(body)
    if not names:
        return [{"text": "ok"}]
    done = len(responses(body))
    step = STEPS[min(done, len(STEPS) - 1)]
    if "tool" in step:
        return [{"functionCall": {"name": resolve(names, step["tool"]), "args": step["input"]}}]
    return [{"text": step["text"]}]


class Handler(JsonHandler):
    def do_GET(self):
        self.reply(200, {"models": []})

    def do_POST(self):
        body = self.body()
        sys.stderr.write(json.dumps({"path": self.path, "tools": declared(body), "responses": responses(body)}) + "\n")
        sys.stderr.flush()
        if ":countTokens" in self.path:
            return self.reply(200, {"totalTokens": 10})
        if ":embedContent" in self.path or ":batchEmbedContents" in self.path:
            return self.reply(200, {"embeddings": [{"values": [0.0]}]})
        usage = {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}
        chunk = {"candidates": [{"content": {"role": "model", "parts": parts_for(body)}, "finishReason": "STOP", "index": 0}], "usageMetadata": usage}
        if ":streamGenerateContent" not in self.path:
            return self.reply(200, chunk)
        self.stream()
        self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
        self.wfile.flush()


serve(Handler, sys.argv[2])
