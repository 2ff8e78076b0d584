// A small MCP server that misbehaves on purpose, for the client's error
// paths (tests/mcp/). Plain Node: the SDK would not let it break the
// protocol. One JSON-RPC handler behind two transports:
//
//   node misbehaving_server.mjs [stdio] [--version V] [--stubborn] [--endless-pages]
//   node misbehaving_server.mjs http PORT_FILE        (Streamable HTTP on 127.0.0.1, port written to PORT_FILE)
//
// Tools: echo, slow (never answers), crash (exits mid-call), garbage
// (invalid JSON), not_rpc (JSON that is not JSON-RPC), huge (a 5 MiB line),
// chatty (progress, list_changed and two server->client requests before
// answering), cancelled (the request ids this server saw cancelled), fails
// (isError), headers (HTTP headers of the call), resume (HTTP: the SSE
// stream breaks after an event id; the answer waits for the GET resume).
import { createServer } from "node:http";
import { writeFileSync } from "node:fs";
import readline from "node:readline";

const argv = process.argv.slice(2);
const mode = argv[0] === "http" ? "http" : "stdio";
const flag = (name) => argv.includes(name);
const option = (name, fallback) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : fallback);
const version = option("--version", "2025-11-25");

const cancelled = [];
let listChanged = false;
let lastHeaders = {};
const replies = new Map(); // answers to our server->client requests

function toolList() {
  const tool = (name, annotations = {}) => ({
    name, description: `the ${name} tool`, inputSchema: { type: "object", properties: { text: { type: "string" } } }, annotations,
  });
  const all = ["echo", "slow", "crash", "garbage", "not_rpc", "huge", "chatty", "cancelled", "fails", "headers", "resume"]
    .map((n) => tool(n));
  all[0].annotations = { readOnlyHint: true };
  all.push(tool("delete_all", { destructiveHint: true, idempotentHint: false }));
  if (listChanged) all.push(tool("added"));
  return all;
}

const result = (id, r) => ({ jsonrpc: "2.0", id, result: r });
const text = (t) => ({ content: [{ type: "text", text: t }] });

// Handles one message; `out(message)` sends (stdio: a line; HTTP: an event),
// `raw(text)` writes bytes as they are. Returns false to leave a request
// unanswered.
function handle(msg, out, raw) {
  if (msg.method === undefined) { replies.set(msg.id, msg); return; }
  if (msg.method === "notifications/cancelled") { cancelled.push(msg.params.requestId); return; }
  if (msg.id === undefined) return;
  switch (msg.method) {
    case "initialize":
      return out(result(msg.id, { protocolVersion: version, capabilities: { tools: { listChanged: true } },
                                  serverInfo: { name: "misbehaving", version: "1.0.0" } }));
    case "ping": return out(result(msg.id, {}));
    case "tools/list": {
      const tools = toolList();
      if (flag("--endless-pages")) return out(result(msg.id, { tools: [], nextCursor: "more" }));
      const page = msg.params?.cursor === "page2" ? 1 : 0;
      const half = Math.ceil(tools.length / 2);
      return out(result(msg.id, page === 0 ? { tools: tools.slice(0, half), nextCursor: "page2" } : { tools: tools.slice(half) }));
    }
    case "tools/call": return call(msg, out, raw);
    default: return out({ jsonrpc: "2.0", id: msg.id, error: { code: -32601, message: "no such method" } });
  }
}

function call(msg, out, raw) {
  const name = msg.params.name;
  const args = msg.params.arguments ?? {};
  switch (name) {
    case "echo": return out(result(msg.id, { ...text(args.text ?? ""), structuredContent: { echoed: args.text ?? "" } }));
    case "slow": return false;
    case "crash": process.stderr.write("crashing on purpose\n"); process.exit(3);
    case "garbage": return raw("{this is not json\n");
    case "not_rpc": return raw(JSON.stringify({ hello: "world" }) + "\n");
    case "huge": return raw(JSON.stringify(result(msg.id, text("x".repeat(5 * 1024 * 1024)))) + "\n");
    case "fails": return out(result(msg.id, { ...text("the tool failed on purpose"), isError: true }));
    case "cancelled": return out(result(msg.id, text(JSON.stringify(cancelled))));
    case "headers": return out(result(msg.id, text(JSON.stringify(lastHeaders))));
    case "chatty": {
      const token = msg.params._meta?.progressToken;
      for (let i = 1; i <= 3; ++i)
        out({ jsonrpc: "2.0", method: "notifications/progress", params: { progressToken: token, progress: i, total: 3 } });
      listChanged = true;
      out({ jsonrpc: "2.0", method: "notifications/tools/list_changed" });
      out({ jsonrpc: "2.0", id: "s1", method: "sampling/createMessage", params: {} });
      out({ jsonrpc: "2.0", id: "s2", method: "ping" });
      // Answer once both replies came back, reporting them.
      const wait = () => {
        if (replies.has("s1") && replies.has("s2"))
          return out(result(msg.id, text(JSON.stringify({ s1: replies.get("s1"), s2: replies.get("s2") }))));
        setTimeout(wait, 5);
      };
      return wait();
    }
    default: return out({ jsonrpc: "2.0", id: msg.id, error: { code: -32602, message: `unknown tool ${name}` } });
  }
}

if (mode === "stdio") {
  if (flag("--stubborn")) { process.on("SIGTERM", () => {}); setInterval(() => {}, 1000); }
  const rl = readline.createInterface({ input: process.stdin });
  const out = (m) => process.stdout.write(JSON.stringify(m) + "\n");
  rl.on("line", (line) => handle(JSON.parse(line), out, (t) => process.stdout.write(t)));
  rl.on("close", () => { if (!flag("--stubborn")) process.exit(0); });
} else {
  const resumable = new Map(); // event id -> the answer a GET resume delivers
  let nextEvent = 1;
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      lastHeaders = { session: req.headers["mcp-session-id"] ?? null, version: req.headers["mcp-protocol-version"] ?? null,
                      accept: req.headers["accept"] ?? null };
      if (req.method === "DELETE") { res.writeHead(200).end(); return; }
      if (req.method === "GET") {
        const answer = resumable.get(req.headers["last-event-id"]);
        if (!answer) { res.writeHead(405).end(); return; }
        res.writeHead(200, { "content-type": "text/event-stream" });
        res.end(`id: ${nextEvent++}\ndata: ${JSON.stringify(answer)}\n\n`);
        return;
      }
      const msg = JSON.parse(body);
      if (msg.id === undefined || msg.method === undefined) { handle(msg, () => {}, () => {}); res.writeHead(202).end(); return; }
      const headers = { "content-type": "text/event-stream" };
      if (msg.method === "initialize") headers["mcp-session-id"] = "session-1";
      res.writeHead(200, headers);
      if (msg.params?.name === "resume") {
        const id = String(nextEvent++);
        resumable.set(id, result(msg.id, text("resumed")));
        res.write(`retry: 10\nid: ${id}\ndata: ${JSON.stringify({ jsonrpc: "2.0", method: "notifications/message", params: { level: "info", data: "before the break" } })}\n\n`);
        setTimeout(() => res.socket.destroy(), 20);
        return;
      }
      const out = (m) => { res.write(`data: ${JSON.stringify(m)}\n\n`); if (m.id === msg.id && (m.result || m.error)) res.end(); };
      if (handle(msg, out, (t) => { res.write(`data: ${t}\n\n`); res.end(); }) === false) return;  // slow: left open
    });
  });
  server.listen(0, "127.0.0.1", () => writeFileSync(argv[1], String(server.address().port)));
}
