// The lifecycle of a call, through the official TypeScript SDK: aborting a call (the SDK sends
// `notifications/cancelled`) stops its work — a confined command, a sandboxed script — and the
// server serves on; closing the client mid-call ends the server and its work. (The times are
// printed, not bounded: the bench measures speed.) Its work is found as the server's descendants in /proc.
//
// Usage: node lifecycle.mjs <cairn binary> <project root>. Asserts; prints one JSON object.
import fs from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [cairn, root] = process.argv.slice(2);

function procs() {
  const out = new Map();
  for (const p of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(p)) continue;
    try {
      const rest = fs.readFileSync(`/proc/${p}/stat`, "utf8").split(")").pop().trim().split(/\s+/);
      const cmd = fs.readFileSync(`/proc/${p}/cmdline`, "utf8").replaceAll("\0", " ");
      out.set(Number(p), { ppid: Number(rest[1]), state: rest[0], cmd });
    } catch {}
  }
  return out;
}
function descendants(pid) {
  const table = procs(), found = [], frontier = [pid];
  while (frontier.length) {
    const p = frontier.pop();
    for (const [c, info] of table) if (info.ppid === p && !found.includes(c)) { found.push(c); frontier.push(c); }
  }
  return found;
}
function alive(pid) {
  try { return fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(")").pop().trim()[0] !== "Z"; } catch { return false; }
}
async function waitFor(what, cond, secs) {
  const deadline = Date.now() + secs * 1000;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
function assert(ok, what) { if (!ok) throw new Error(what); }

const transport = new StdioClientTransport({ command: cairn, args: ["mcp"], cwd: root, env: process.env, stderr: "ignore" });
const client = new Client({ name: "ts-lifecycle", version: "1" });
await client.connect(transport);
const server = transport.pid;
const out = {};
for (const [tool, args, marker] of [["run_command", { command: "sleep 300" }, "sleep"], ["run_script", { code: "while True:\n    pass\n" }, "__sandbox"]]) {
  const ac = new AbortController();
  const call = client.callTool({ name: tool, arguments: args }, undefined, { signal: ac.signal, timeout: 600000 }).catch((e) => e);
  let work = [];
  await waitFor(`${tool} to start`, () => { work = descendants(server); return work.some((p) => (procs().get(p)?.cmd ?? "").includes(marker)); }, 20);
  const t = Date.now();
  ac.abort("test");
  await waitFor(`${tool}'s work to die`, () => work.every((p) => !alive(p)), 60);
  out[`cancel_${tool}_ms`] = Date.now() - t;
  await call;
}
const id = await client.callTool({ name: "identity", arguments: {} });
out.alive = id.structuredContent.actor;
const late = client.callTool({ name: "run_command", arguments: { command: "sleep 300" } }, undefined, { timeout: 600000 }).catch((e) => e);
await waitFor("the last call to start", () => descendants(server).some((p) => (procs().get(p)?.cmd ?? "").includes("sleep")), 20);
const work = descendants(server);
const t = Date.now();
await client.close();
await waitFor("the server and its work to end", () => [...work, server].every((p) => !alive(p)), 60);
out.close_ms = Date.now() - t;
await late;
console.log(JSON.stringify(out));
