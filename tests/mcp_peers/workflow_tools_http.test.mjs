// `/mcp` on `switchboard serve` (Streamable HTTP) driven by the MCP SDK's own
// client (@modelcontextprotocol/sdk, pinned in package-lock.json), on the
// offline scheduling sample: the same tools as `switchboard mcp`, a booking
// approved through elicitation (the question travels on the call's event
// stream, the answer comes back as a POST), a paused run continued with the
// resume tool from a second session, bad requests refused.
//
//   SWITCHBOARD_BIN=build/bin/switchboard node --test tests/mcp_peers/workflow_tools_http.test.mjs
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { createInterface } from "node:readline";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema, ProgressNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const bin = process.env.SWITCHBOARD_BIN ?? join(root, "build/bin/switchboard");
const workflow = join(root, "examples/scheduling/workflow.json");

const soccer = "Soccer practice for Maya on Saturday 2-4pm, she needs the minivan";
const piano = "Piano lesson for Leo sometime next week";

// A server of the test's own (state directory, store, free port); its URL.
async function startServer(t) {
  const dir = mkdtempSync(join(tmpdir(), "switchboard-mcp-http-"));
  const env = { ...process.env, SWITCHBOARD_STATE_DIR: dir };
  for (const name of ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL",
    "SWITCHBOARD_MODEL", "SWITCHBOARD_PROVIDER", "SWITCHBOARD_OUTPUT_MODE", "SWITCHBOARD_SCHEMA_PATH",
    "SWITCHBOARD_PLUGIN_PATH", "SWITCHBOARD_PROMPT_PATH"]) delete env[name];
  const server = spawn(bin, ["serve", workflow, "--listen", "127.0.0.1:0", "--store", `sqlite:${dir}/runs.db`],
    { env, stdio: ["ignore", "pipe", "pipe"] });
  let log = "";
  server.stderr.on("data", (chunk) => { log += chunk; });
  t.after(async () => {
    server.kill("SIGTERM");
    await new Promise((r) => server.on("exit", r));
    if (t.passed === false) process.stderr.write(`switchboard serve's standard error:\n${log}\n`);
    rmSync(dir, { recursive: true, force: true });
  });
  const lines = createInterface({ input: server.stdout });
  for await (const line of lines) {
    const m = line.match(/^listening on (http:\/\/127\.0\.0\.1:\d+)/);
    if (m) return m[1];
  }
  throw new Error(`switchboard serve printed no address:\n${log}`);
}

async function connect(t, url, elicit) {
  const client = new Client({ name: "switchboard-tests", version: "1.0.0" },
    { capabilities: elicit ? { elicitation: {} } : {} });
  if (elicit) client.setRequestHandler(ElicitRequestSchema, (request) => elicit(request.params));
  client.progress = [];
  client.setNotificationHandler(ProgressNotificationSchema, (n) => { client.progress.push(n.params); });
  const transport = new StreamableHTTPClientTransport(new URL(`${url}/mcp`));
  await client.connect(transport);
  t.after(() => transport.terminateSession().catch(() => {}).then(() => client.close()));
  return client;
}

const call = (client, name, args) =>
  client.callTool({ name, arguments: args }, undefined, { onprogress: () => {}, timeout: 120000 });

test("over Streamable HTTP: tools, an approval asked through elicitation, progress", async (t) => {
  const url = await startServer(t);
  const asked = [];
  const client = await connect(t, url, async (params) => {
    asked.push(params);
    return { action: "accept", content: { decision: "approve" } };
  });
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((tool) => tool.name), ["family_scheduling", "resume"]);
  const result = await call(client, "family_scheduling", { request: soccer });
  assert.equal(result.isError, undefined, JSON.stringify(result));
  assert.match(result.structuredContent.explanation, /^Confirmed: "Soccer practice", Sat 2026-03-07 14:00/);
  assert.equal(asked.length, 1);
  assert.match(asked[0].message, /calendar\.book/);
  assert.deepEqual(asked[0].requestedSchema.properties.decision.enum, ["approve", "reject"]);
  assert.match(client.progress[0].message, /^step 1 parse \(nl_parser\)/);
  // The run is counted on the server's /metrics like the API's runs.
  const metrics = await (await fetch(`${url}/metrics`)).text();
  assert.match(
    metrics,
    /switchboard_workflow_runs_total\{gen_ai_workflow_name="family_scheduling",switchboard_run_outcome="completed"\} 1/,
  );
});

test("over Streamable HTTP: a paused run is continued by the resume tool of another session", async (t) => {
  const url = await startServer(t);
  const first = await connect(t, url);
  const paused = await call(first, "family_scheduling", { request: piano });
  const { run_id: id, status, question } = paused.structuredContent;
  assert.equal(status, "awaiting_clarification", JSON.stringify(paused));
  assert.match(question, /^When next week should "Piano lesson" take place\?/);

  const second = await connect(t, url);
  const approval = await call(second, "resume", { run_id: id, answer: "Wednesday 5-6pm" });
  assert.equal(approval.structuredContent.status, "awaiting_approval", JSON.stringify(approval));
  const done = await call(second, "resume", { run_id: id, decision: "approve" });
  assert.match(done.structuredContent.explanation, /^Confirmed: "Piano lesson", Wed 2026-03-11 17:00/);
});

test("over Streamable HTTP: bad requests are refused and the endpoint keeps serving", async (t) => {
  const url = await startServer(t);
  const post = (body, headers = {}) => fetch(`${url}/mcp`, { method: "POST", body,
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers } });
  const malformed = await post("{nope");
  assert.equal(malformed.status, 400);
  assert.equal((await malformed.json()).error.code, -32700);
  const noSession = await post(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }));
  assert.equal(noSession.status, 400);
  assert.match((await noSession.json()).error.message, /Mcp-Session-Id/);
  const unknown = await post(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    { "mcp-session-id": "not-a-session" });
  assert.equal(unknown.status, 404);
  const badVersion = await post(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }),
    { "mcp-protocol-version": "1999-01-01" });
  assert.equal(badVersion.status, 400);
  assert.match((await badVersion.json()).error.message, /unsupported MCP-Protocol-Version/);
  const foreign = await post("{}", { origin: "http://evil.example" });
  assert.equal(foreign.status, 403);
  assert.equal((await fetch(`${url}/mcp`)).status, 405);

  const client = await connect(t, url);
  const { tools } = await client.listTools();
  assert.equal(tools.length, 2);
});
