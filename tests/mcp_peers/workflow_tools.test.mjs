// `switchboard mcp` driven by the MCP SDK's own client (@modelcontextprotocol/sdk,
// pinned in package-lock.json) over stdio, on the offline scheduling sample:
// the tools listed, a booking paused for approval and approved with the
// resume tool, a vague request answered through elicitation, the same
// without elicitation (paused results and the resume tool), bad input
// answered with JSON-RPC errors while the server keeps serving.
//
//   SWITCHBOARD_BIN=build/bin/switchboard node --test tests/mcp_peers/workflow_tools.test.mjs
//
// Every test has a state directory of its own (SWITCHBOARD_STATE_DIR): the
// calendar and the runs' store start from the sample's seed each time.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema, ProgressNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const bin = process.env.SWITCHBOARD_BIN ?? join(root, "build/bin/switchboard");
const workflow = join(root, "examples/scheduling/workflow.json");

const soccer = "Soccer practice for Maya on Saturday 2-4pm, she needs the minivan";
const piano = "Piano lesson for Leo sometime next week";

// The environment of the server: the developer's model settings removed
// (the sample runs offline), a state directory of the test's own.
function serverEnvironment(stateDir) {
  const env = { ...process.env, SWITCHBOARD_STATE_DIR: stateDir };
  for (const name of ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL",
    "SWITCHBOARD_MODEL", "SWITCHBOARD_PROVIDER", "SWITCHBOARD_OUTPUT_MODE", "SWITCHBOARD_SCHEMA_PATH",
    "SWITCHBOARD_PLUGIN_PATH", "SWITCHBOARD_PROMPT_PATH"]) delete env[name];
  return env;
}

function stateDirectory(t) {
  const dir = mkdtempSync(join(tmpdir(), "switchboard-mcp-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

// A connected SDK client; `elicit` (optional) answers elicitation/create.
async function connect(t, stateDir, elicit, extraEnv = {}) {
  const client = new Client({ name: "switchboard-tests", version: "1.0.0" },
    { capabilities: elicit ? { elicitation: {} } : {} });
  if (elicit) client.setRequestHandler(ElicitRequestSchema, (request) => elicit(request.params));
  // Every progress notification, by token. The SDK's own onprogress drops
  // those that arrive in the same read as the result (it forgets the
  // request's handler before it runs the queued notifications), and the
  // sample's steps take about a millisecond each.
  client.progress = [];
  client.setNotificationHandler(ProgressNotificationSchema, (n) => { client.progress.push(n.params); });
  const transport = new StdioClientTransport({ command: bin, args: ["mcp", workflow], env: { ...serverEnvironment(stateDir), ...extraEnv },
    stderr: "pipe" });
  let log = "";
  transport.stderr?.on("data", (chunk) => { log += chunk; });
  await client.connect(transport);
  client.serverPid = transport.pid;
  t.after(async () => {
    await client.close();
    if (t.passed === false) process.stderr.write(`switchboard mcp's standard error:\n${log}\n`);
  });
  return client;
}

// tools/call with a progress token, and the progress notifications sent for it.
async function call(client, name, args) {
  client.progress = [];
  const result = await client.callTool({ name, arguments: args }, undefined,
    { onprogress: () => {}, timeout: 120000 });
  return { result, progress: client.progress };
}

// The status of run `id` as `switchboard runs --json` lists it.
function storedStatus(stateDir, id) {
  const out = execFileSync(bin, ["runs", "--json"], { env: serverEnvironment(stateDir), encoding: "utf8" });
  const run = JSON.parse(out).find((r) => r.id === id);
  return run ? run.status : "(not listed)";
}

test("lists one tool per workflow and the resume tool", async (t) => {
  const client = await connect(t, stateDirectory(t));
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((tool) => tool.name), ["family_scheduling", "resume"]);
  const [workflowTool, resumeTool] = tools;
  assert.match(workflowTool.description, /household request/);
  assert.equal(workflowTool.inputSchema.type, "object");
  assert.deepEqual(workflowTool.inputSchema.required, ["request"]);
  assert.equal(workflowTool.inputSchema.properties.request.type, "string");
  assert.deepEqual(resumeTool.inputSchema.required, ["run_id"]);
  assert.deepEqual(resumeTool.inputSchema.properties.decision.enum, ["approve", "reject"]);
});

test("a clear request pauses for approval, the resume tool approves it and the booking is made", async (t) => {
  const stateDir = stateDirectory(t);
  const client = await connect(t, stateDir);
  const paused = await call(client, "family_scheduling", { request: soccer });
  assert.equal(paused.result.isError, undefined, JSON.stringify(paused.result));
  const waiting = paused.result.structuredContent;
  assert.equal(waiting.status, "awaiting_approval");
  assert.match(waiting.run_id, /^mcp-[0-9a-f]{32}$/);
  assert.ok(waiting.pending_calls.length >= 1);
  assert.equal(waiting.pending_calls[0].tool, "calendar.book");
  assert.match(paused.result.content[0].text, /waiting for approval/);
  const steps = paused.progress.map((p) => p.message);
  assert.equal(steps.length, 5, `progress per step: ${JSON.stringify(paused.progress)}`);
  assert.match(steps[0], /^step 1 parse \(nl_parser\): confidence 0\.95: A create request/);
  assert.match(steps[3], /^step 4 conflicts \(conflict_detection\)/);
  assert.match(steps[4], /^waiting for approval: booking wants to call calendar\.book/);
  assert.deepEqual(paused.progress.map((p) => p.progress), [1, 2, 3, 4, 5]);
  assert.equal(storedStatus(stateDir, waiting.run_id), "awaiting_approval");

  const done = await call(client, "resume", { run_id: waiting.run_id, decision: "approve" });
  assert.equal(done.result.isError, undefined, JSON.stringify(done.result));
  const envelope = done.result.structuredContent;
  assert.match(envelope.explanation, /^Confirmed: "Soccer practice", Sat 2026-03-07 14:00/);
  assert.equal(typeof envelope.confidence, "number");
  assert.equal(typeof envelope.data, "object");
  assert.equal(done.result.content[0].text, envelope.explanation);
  assert.equal(storedStatus(stateDir, waiting.run_id), "completed");

  // A finished run is not continued again.
  const again = await call(client, "resume", { run_id: waiting.run_id, decision: "approve" });
  assert.equal(again.result.isError, true);
  assert.match(again.result.content[0].text, /is completed: there is nothing to continue/);
});

test("a rejected booking is not made, and the reason reaches the run", async (t) => {
  const stateDir = stateDirectory(t);
  const client = await connect(t, stateDir);
  const paused = await call(client, "family_scheduling", { request: soccer });
  const id = paused.result.structuredContent.run_id;
  const refused = await call(client, "resume", { run_id: id, decision: "approve", reason: "because" });
  assert.equal(refused.result.isError, true);
  assert.match(refused.result.content[0].text, /"reason" goes with "decision": "reject"/);
  const rejected = await call(client, "resume", { run_id: id, decision: "reject", reason: "not this week" });
  const envelope = rejected.result.structuredContent;
  assert.match(envelope.explanation, /^Not booked \(declined\): "Soccer practice"/);
  assert.deepEqual(envelope.data.booked, []);
  assert.match(envelope.data.problems[0], /the user rejected this call of 'calendar\.book': not this week/);
  assert.equal(storedStatus(stateDir, id), "completed");
});

test("a vague request asks its question through elicitation and completes", async (t) => {
  const asked = [];
  const client = await connect(t, stateDirectory(t), async (params) => {
    asked.push(params);
    if (params.requestedSchema.properties.answer) return { action: "accept", content: { answer: "Wednesday 5-6pm" } };
    return { action: "accept", content: { decision: "approve" } };
  });
  const { result } = await call(client, "family_scheduling", { request: piano });
  assert.equal(result.isError, undefined, JSON.stringify(result));
  assert.match(result.structuredContent.explanation, /^Confirmed: "Piano lesson", Wed 2026-03-11 17:00/);
  assert.equal(asked.length, 2, JSON.stringify(asked));
  assert.match(asked[0].message, /^When next week should "Piano lesson" take place\?/);
  assert.deepEqual(asked[0].requestedSchema.required, ["answer"]);
  assert.match(asked[1].message, /calendar\.book/);
});

test("a declined question leaves the run paused with its id", async (t) => {
  const stateDir = stateDirectory(t);
  const client = await connect(t, stateDir, async () => ({ action: "decline" }));
  const { result } = await call(client, "family_scheduling", { request: piano });
  assert.equal(result.isError, undefined, JSON.stringify(result));
  assert.equal(result.structuredContent.status, "awaiting_clarification");
  assert.equal(storedStatus(stateDir, result.structuredContent.run_id), "awaiting_clarification");
});

test("a call cancelled while its question is asked cancels the run", async (t) => {
  const stateDir = stateDirectory(t);
  const abort = new AbortController();
  let asked;
  const questionSeen = new Promise((resolve) => { asked = resolve; });
  // The client never answers: it cancels the call instead.
  const client = await connect(t, stateDir, (params) => { asked(params); return new Promise(() => {}); });
  const calling = client.callTool({ name: "family_scheduling", arguments: { request: piano } }, undefined,
    { signal: abort.signal, timeout: 120000 });
  await questionSeen;
  abort.abort("changed my mind");
  await assert.rejects(calling, /changed my mind|abort/i);
  // The cancellation is a notification: the server's work on it is seen in
  // the store once done (runs lists the run as it is saved).
  const id = () => JSON.parse(execFileSync(bin, ["runs", "--json"], { env: serverEnvironment(stateDir),
    encoding: "utf8" }))[0];
  let run = id();
  for (let i = 0; i < 200 && run?.status !== "cancelled"; i++) {
    await new Promise((r) => setTimeout(r, 50));
    run = id();
  }
  assert.equal(run?.status, "cancelled", JSON.stringify(run));
  // The session still serves.
  const { tools } = await client.listTools();
  assert.equal(tools.length, 2);
});

test("without elicitation the question comes back in the result and the resume tool answers it", async (t) => {
  const stateDir = stateDirectory(t);
  const client = await connect(t, stateDir);
  const paused = await call(client, "family_scheduling", { request: piano });
  const question = paused.result.structuredContent;
  assert.equal(question.status, "awaiting_clarification", JSON.stringify(paused.result));
  assert.match(question.question, /^When next week should "Piano lesson" take place\?/);
  assert.match(paused.result.content[0].text, /resume tool/);

  // A decision where an answer is awaited is refused, naming what is awaited.
  const wrong = await call(client, "resume", { run_id: question.run_id, decision: "approve" });
  assert.equal(wrong.result.isError, true);
  assert.match(wrong.result.content[0].text, /takes an answer, not a decision/);

  const answered = await call(client, "resume", { run_id: question.run_id, answer: "Wednesday 5-6pm" });
  const approval = answered.result.structuredContent;
  assert.equal(approval.status, "awaiting_approval", JSON.stringify(answered.result));
  assert.equal(approval.run_id, question.run_id);

  const done = await call(client, "resume", { run_id: question.run_id, decision: "approve" });
  assert.match(done.result.structuredContent.explanation, /^Confirmed: "Piano lesson", Wed 2026-03-11 17:00/);
});

test("bad arguments are tool errors naming what is wrong", async (t) => {
  const client = await connect(t, stateDirectory(t));
  const missing = await call(client, "family_scheduling", { text: "hello" });
  assert.equal(missing.result.isError, true);
  assert.match(missing.result.content[0].text, /"request": a non-empty string/);
  const unknownRun = await call(client, "resume", { run_id: "no-such-run", answer: "x" });
  assert.equal(unknownRun.result.isError, true);
  assert.match(unknownRun.result.content[0].text, /no run with id 'no-such-run'/);
  await assert.rejects(client.callTool({ name: "no_such_tool", arguments: {} }), /unknown tool 'no_such_tool'/);
});

test("a run whose server died mid-run is continued by the resume tool of a new server", async (t) => {
  const stateDir = stateDirectory(t);
  // The server kills itself right after the store's third write (the run
  // created, its first steps saved): the call never gets an answer.
  const dying = await connect(t, stateDir, undefined, { SWITCHBOARD_FAULT_KILL_AFTER_WRITES: "3" });
  await assert.rejects(dying.callTool({ name: "family_scheduling", arguments: { request: soccer } }));
  const [run] = JSON.parse(execFileSync(bin, ["runs", "--json"], { env: serverEnvironment(stateDir),
    encoding: "utf8" }));
  assert.match(run.id, /^mcp-/);
  assert.notEqual(run.status, "completed");

  const client = await connect(t, stateDir);
  const continued = await call(client, "resume", { run_id: run.id });
  assert.equal(continued.result.structuredContent.status, "awaiting_approval", JSON.stringify(continued.result));
  const done = await call(client, "resume", { run_id: run.id, decision: "approve" });
  assert.match(done.result.structuredContent.explanation, /^Confirmed: "Soccer practice", Sat 2026-03-07 14:00/);
  assert.equal(storedStatus(stateDir, run.id), "completed");
});

test("a server stopped by SIGTERM while asking a question leaves the run paused, to be resumed", async (t) => {
  const stateDir = stateDirectory(t);
  let asked;
  const questionSeen = new Promise((resolve) => { asked = resolve; });
  const client = await connect(t, stateDir, (params) => { asked(params); return new Promise(() => {}); });
  const closed = new Promise((resolve) => { client.onclose = resolve; });
  const calling = client.callTool({ name: "family_scheduling", arguments: { request: piano } });
  await questionSeen;
  process.kill(client.serverPid, "SIGTERM");
  await assert.rejects(calling);  // no answer: the session ended
  await closed;
  const [run] = JSON.parse(execFileSync(bin, ["runs", "--json"], { env: serverEnvironment(stateDir),
    encoding: "utf8" }));
  assert.equal(run.status, "awaiting_clarification");

  const next = await connect(t, stateDir);
  const answered = await call(next, "resume", { run_id: run.id, answer: "Wednesday 5-6pm" });
  assert.equal(answered.result.structuredContent.status, "awaiting_approval", JSON.stringify(answered.result));
});

test("a workflow given twice is refused at start, naming it", async (t) => {
  const child = spawn(bin, ["mcp", workflow, workflow], { env: serverEnvironment(stateDirectory(t)),
    stdio: ["pipe", "pipe", "pipe"] });
  let err = "";
  child.stderr.on("data", (chunk) => { err += chunk; });
  const code = await new Promise((r) => child.on("exit", r));
  assert.equal(code, 1, err);
  assert.match(err, /workflow 'family_scheduling' is given twice/);
});

// Raw lines to the server (no SDK: it would not send garbage), one answer
// per line that has an id or is not JSON.
test("malformed and oversized messages get JSON-RPC errors and the server keeps serving", async (t) => {
  const child = spawn(bin, ["mcp", workflow], { env: serverEnvironment(stateDirectory(t)), stdio: ["pipe", "pipe", "pipe"] });
  t.after(() => child.kill("SIGKILL"));
  const answers = [];
  let buffer = "";
  const waiters = [];
  child.stdout.on("data", (chunk) => {
    buffer += chunk;
    let newline;
    while ((newline = buffer.indexOf("\n")) >= 0) {
      answers.push(JSON.parse(buffer.slice(0, newline)));
      buffer = buffer.slice(newline + 1);
      waiters.splice(0).forEach((w) => w());
    }
  });
  const next = async () => {
    while (answers.length === 0) await new Promise((r) => waiters.push(r));
    return answers.shift();
  };
  const send = (text) => child.stdin.write(text + "\n");

  send(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }));
  assert.match((await next()).error.message, /not initialized/);
  send(JSON.stringify({ jsonrpc: "2.0", id: 2, method: "initialize",
    params: { protocolVersion: "2099-01-01", capabilities: {}, clientInfo: { name: "raw", version: "1" } } }));
  assert.equal((await next()).result.protocolVersion, "2025-11-25");  // an unknown revision: the latest offered
  send("{not json");
  const parse = await next();
  assert.equal(parse.id, null);
  assert.equal(parse.error.code, -32700);
  send("[" + "[".repeat(100) + "]".repeat(100) + "]");
  assert.equal((await next()).error.code, -32700);  // deeper than the depth limit
  send(JSON.stringify([{ jsonrpc: "2.0", id: 3, method: "ping" }]));
  assert.equal((await next()).error.code, -32600);  // batches
  send(JSON.stringify({ jsonrpc: "2.0", id: 4, method: "no/such" }));
  assert.equal((await next()).error.code, -32601);
  send(JSON.stringify({ jsonrpc: "2.0", id: 5, method: "tools/call", params: { name: 42 } }));
  assert.equal((await next()).error.code, -32602);
  send(JSON.stringify({ jsonrpc: "2.0", id: 6, method: "ping", padding: "x".repeat(5 * 1024 * 1024) }));
  const oversized = await next();
  assert.equal(oversized.error.code, -32600);
  assert.match(oversized.error.message, /larger than 4194304 bytes/);
  send(JSON.stringify({ jsonrpc: "2.0", id: 7, method: "ping" }));
  assert.deepEqual(await next(), { jsonrpc: "2.0", id: 7, result: {} });

  child.stdin.end();
  const code = await new Promise((r) => child.on("exit", r));
  assert.equal(code, 0);
});
