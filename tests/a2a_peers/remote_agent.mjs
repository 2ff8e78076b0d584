// A third-party A2A v1.0 agent for the hub's A2A client to call: the A2A
// project's own server classes (@a2a-js/sdk, pinned in package-lock.json:
// DefaultRequestHandler, InMemoryTaskStore, JsonRpcTransportHandler) behind
// Node's plain `http` module, since express is not installed. It books a day,
// and what it does is chosen by the first text part of the message that
// starts a task:
//
//   "ask"    input required ("Which day?"); the reply on the same task books
//            the day it names (a text part, or a data part as its JSON)
//   "bad"    completed with {"day": 5, ...}: a number where a string belongs
//   "empty"  completed without an artifact
//   "fail"   failed: "no rooms left"
//   "slow"   working until cancelled
//   else     completed with {"day": "monday", "booked": true}
//
// It logs what it was sent (every JSON-RPC request, the tasks it created, the
// cancels) at GET /log, and on the object startRemoteAgent() returns.
//
//   node tests/a2a_peers/remote_agent.mjs    # prints "listening on http://127.0.0.1:PORT"
import http from "node:http";
import { randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import { AgentCard, Extensions, Role, TaskState, A2A_VERSION_HEADER, HTTP_EXTENSION_HEADER } from "@a2a-js/sdk";
import {
  AgentEvent, DefaultRequestHandler, InMemoryTaskStore, JsonRpcTransportHandler, UnauthenticatedUser,
  defaultServerCallContextBuilder, validateVersion,
} from "@a2a-js/sdk/server";
import { ContentTypeNotSupportedError } from "@a2a-js/sdk/errors";

const textPart = (value) => ({ content: { $case: "text", value }, mediaType: "text/plain", filename: "", metadata: undefined });
const dataPart = (value) => ({ content: { $case: "data", value }, mediaType: "application/json", filename: "",
  metadata: undefined });
const texts = (message) => (message?.parts ?? []).filter((p) => p.content?.$case === "text").map((p) => p.content.value);
const datas = (message) => (message?.parts ?? []).filter((p) => p.content?.$case === "data").map((p) => p.content.value);

const agentMessage = (taskId, contextId, text) => ({
  messageId: randomUUID(), role: Role.ROLE_AGENT, taskId, contextId, parts: [textPart(text)], metadata: undefined,
  extensions: [], referenceTaskIds: [],
});
const status = (state, message) => ({ state, message, timestamp: new Date().toISOString() });
const booking = (day) => ({
  artifactId: randomUUID(), name: "booking", description: "", parts: [dataPart({ day, booked: true }),
    textPart(`Booked for ${typeof day === "string" ? day : JSON.stringify(day)}`)], metadata: undefined, extensions: [],
});

// The agent's logic. Each turn publishes the task first (the SDK requires a
// task or a message as every execution's first event), then its outcome.
class BookingExecutor {
  constructor(log) {
    this.log = log;
    this.contexts = new Map(); // task id -> its context id
    this.waiting = new Map();  // task id -> resolves a "slow" task's execute() when it is cancelled
  }

  async execute(requestContext, bus) {
    const { taskId, contextId, userMessage } = requestContext;
    const update = (state, message) => bus.publish(AgentEvent.statusUpdate({ taskId, contextId,
      status: status(state, message), metadata: undefined }));
    const complete = (artifact) => {
      if (artifact) bus.publish(AgentEvent.artifactUpdate({ taskId, contextId, artifact, append: false,
        lastChunk: true, metadata: undefined }));
      update(TaskState.TASK_STATE_COMPLETED, undefined);
    };

    if (requestContext.task) {  // a reply to a task that asked "Which day?"
      bus.publish(AgentEvent.task({ ...requestContext.task, status: status(TaskState.TASK_STATE_WORKING) }));
      const [text] = texts(userMessage);
      const [data] = datas(userMessage);
      complete(booking(text ?? JSON.stringify(data ?? null)));
      return;
    }

    const first = texts(userMessage)[0] ?? JSON.stringify(datas(userMessage)[0] ?? "");
    const kind = ["ask", "bad", "empty", "fail", "slow"].find((k) => first.includes(k)) ?? "book";
    this.contexts.set(taskId, contextId);
    this.log.tasks.push({ taskId, kind });
    bus.publish(AgentEvent.task({ id: taskId, contextId, status: status(TaskState.TASK_STATE_SUBMITTED),
      artifacts: [], history: [userMessage], metadata: undefined }));
    switch (kind) {
      case "ask":
        update(TaskState.TASK_STATE_INPUT_REQUIRED, agentMessage(taskId, contextId, "Which day?"));
        return;
      case "bad":
        complete({ ...booking("monday"), parts: [dataPart({ day: 5, booked: true })] });
        return;
      case "empty":
        complete(undefined);
        return;
      case "fail":
        update(TaskState.TASK_STATE_FAILED, agentMessage(taskId, contextId, "no rooms left"));
        return;
      case "slow":
        // Working until cancelTask() below ends it. execute() stays pending so
        // that the SDK keeps the task's event bus, and cancelTask() gets it.
        update(TaskState.TASK_STATE_WORKING, undefined);
        await new Promise((resolve) => this.waiting.set(taskId, resolve));
        return;
      default:
        complete(booking("monday"));
    }
  }

  // Called by DefaultRequestHandler.cancelTask while the task's bus is alive;
  // it then reads the bus until the task is terminal.
  async cancelTask(taskId, bus) {
    this.log.cancels.push({ taskId, at: new Date().toISOString() });
    const task = this.waiting.get(taskId);
    const contextId = this.contexts.get(taskId) ?? "";
    bus.publish(AgentEvent.statusUpdate({ taskId, contextId, status: status(TaskState.TASK_STATE_CANCELED,
      agentMessage(taskId, contextId, "cancelled")), metadata: undefined }));
    this.waiting.delete(taskId);
    task?.();
  }
}

// What the log keeps of a JSON-RPC request: enough to tell which task a
// message went to, what it carried and how the client asked.
function logEntry(rpc, headers) {
  const params = rpc?.params ?? {};
  const message = params.message;
  return {
    at: new Date().toISOString(),
    method: rpc?.method,
    id: rpc?.id,
    version: headers["a2a-version"],
    traceparent: headers["traceparent"],
    taskId: message ? message.taskId : params.id,
    messageId: message?.messageId,
    role: message?.role,
    texts: (message?.parts ?? []).filter((p) => typeof p.text === "string").map((p) => p.text),
    data: (message?.parts ?? []).filter((p) => "data" in p).map((p) => p.data),
    configuration: params.configuration,
    historyLength: params.historyLength,
  };
}

function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

const json = (res, code, body) => {
  res.writeHead(code, { "Content-Type": "application/json" });
  res.end(JSON.stringify(body));
};

// Starts the agent on 127.0.0.1, a free port unless one is given.
export async function startRemoteAgent({ port = 0, quiet = true } = {}) {
  const log = { requests: [], tasks: [], cancels: [] };
  const executor = new BookingExecutor(log);
  let card;
  let cardJson;
  let handler;
  let transport;

  // POST /a2a, as the SDK's express jsonRpcHandler does it
  // (dist/server/express: contentTypeGuard, express.json(), jsonRpcHandler):
  // only application/json is parsed (another Content-Type is refused, none
  // leaves an empty body), the A2A-Version header is checked against the
  // card, and a streaming answer is written as Server-Sent Events.
  async function rpc(req, res) {
    const raw = await readBody(req);
    const type = req.headers["content-type"];
    const mediaType = type?.split(";", 1)[0].trim().toLowerCase();
    if (type && mediaType !== "application/json") {
      log.requests.push({ at: new Date().toISOString(), refused: `Content-Type ${type}` });
      return json(res, 200, { jsonrpc: "2.0", id: null, error: JsonRpcTransportHandler.mapToJSONRPCError(
        new ContentTypeNotSupportedError(`Unsupported Content-Type "${type}"; expected application/json.`)) });
    }
    let body = {};
    if (type) {
      try {
        body = JSON.parse(raw);
      } catch {
        log.requests.push({ at: new Date().toISOString(), refused: "invalid JSON", raw });
        return json(res, 200, { jsonrpc: "2.0", id: null, error: { code: -32700, message: "Invalid JSON payload." } });
      }
    }
    log.requests.push(logEntry(body, req.headers));
    try {
      const context = defaultServerCallContextBuilder({
        extensions: Extensions.parseServiceParameter(req.headers[HTTP_EXTENSION_HEADER.toLowerCase()]),
        user: new UnauthenticatedUser(),
        headers: req.headers,
        requestedVersion: req.headers[A2A_VERSION_HEADER.toLowerCase()] || undefined,
      });
      validateVersion(context.requestedVersion, card, "JSONRPC");
      const answer = await transport.handle(body, context);
      if (typeof answer?.[Symbol.asyncIterator] !== "function") {
        if (!quiet && answer.error) process.stderr.write(`remote agent: ${body.method}: ${JSON.stringify(answer.error)}\n`);
        return json(res, 200, answer);
      }
      const iterator = answer[Symbol.asyncIterator]();
      let first;
      try {
        first = await iterator.next();
      } catch (e) {
        return json(res, 200, { jsonrpc: "2.0", id: body?.id ?? null, error: JsonRpcTransportHandler.mapToJSONRPCError(e) });
      }
      res.writeHead(200, { "Content-Type": "text/event-stream", "Cache-Control": "no-cache", Connection: "keep-alive" });
      try {
        if (!first.done) res.write(`data: ${JSON.stringify(first.value)}\n\n`);
        for (let next = await iterator.next(); !next.done; next = await iterator.next())
          res.write(`data: ${JSON.stringify(next.value)}\n\n`);
      } catch (e) {
        const error = { jsonrpc: "2.0", id: body?.id ?? null, error: JsonRpcTransportHandler.mapToJSONRPCError(e) };
        res.write(`event: error\ndata: ${JSON.stringify(error)}\n\n`);
      }
      res.end();
    } catch (e) {
      const error = JsonRpcTransportHandler.mapToJSONRPCError(e);
      if (res.headersSent) return res.end();
      json(res, error.code === -32603 ? 500 : 200, { jsonrpc: "2.0", id: body?.id ?? null, error });
    }
  }

  const sockets = new Set();
  const server = http.createServer((req, res) => {
    const path = new URL(req.url, "http://x").pathname;
    if (req.method === "GET" && path === "/.well-known/agent-card.json") return json(res, 200, cardJson);
    if (req.method === "GET" && path === "/log") return json(res, 200, log);
    if (req.method === "POST" && (path === "/a2a" || path === "/a2a/")) {
      return void rpc(req, res).catch((e) => { if (!res.headersSent) json(res, 500, { error: String(e) }); else res.end(); });
    }
    json(res, 404, { error: `no ${req.method} ${path}` });
  });
  server.on("connection", (s) => { sockets.add(s); s.on("close", () => sockets.delete(s)); });
  await new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", resolve);
  });
  const url = `http://127.0.0.1:${server.address().port}`;

  // The card as served (the v1.0 JSON shape), and as the SDK's handler wants it
  // (AgentCard.fromJSON fills in the fields the JSON leaves out).
  const wire = {
    name: "room_booker",
    description: "Books a meeting room for a day; asks which day when told to ask.",
    version: "1.0.0",
    capabilities: { streaming: false },
    supportedInterfaces: [{ url: `${url}/a2a`, protocolBinding: "JSONRPC", protocolVersion: "1.0" }],
    defaultInputModes: ["text/plain", "application/json"],
    defaultOutputModes: ["application/json", "text/plain"],
    skills: [{ id: "book_room", name: "Book a room", description: "Books a room for a day: {day, booked}.",
      tags: ["booking"], examples: ["book it", "ask for a day"] }],
  };
  cardJson = wire;
  card = AgentCard.fromJSON(wire);
  handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor);
  transport = new JsonRpcTransportHandler(handler);

  const close = async () => {
    for (const resolve of executor.waiting.values()) resolve();  // let "slow" executions return
    executor.waiting.clear();
    await new Promise((resolve) => { server.close(resolve); for (const s of sockets) s.destroy(); });
  };
  return { url, log, close, server };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { url, close } = await startRemoteAgent({ port: Number(process.env.PORT ?? 0), quiet: false });
  process.stdout.write(`listening on ${url}\n`);
  for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => close().then(() => process.exit(0)));
}
