// `switchboard serve`'s A2A server driven by the A2A project's own client
// (@a2a-js/sdk, pinned in package-lock.json), on the offline scheduling
// sample: the agent card, a booking paused for approval and approved, a
// vague request paused for a question and answered, streaming and
// resubscribing, cancelling, the errors the specification names (unknown
// task, terminal task, racing replies, missing A2A-Version), the token, and a
// paused task continued by the next server after a restart.
//
//   SWITCHBOARD_BIN=build/bin/switchboard node --test tests/a2a_peers/a2a_server.test.mjs
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { createInterface } from "node:readline";
import { ClientFactory, ClientFactoryOptions } from "@a2a-js/sdk/client";
import { SendMessageRequest, Task } from "@a2a-js/sdk";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const bin = process.env.SWITCHBOARD_BIN ?? join(root, "build/bin/switchboard");
const workflow = join(root, "examples/scheduling/workflow.json");

const soccer = "Soccer practice for Maya on Saturday 2-4pm, she needs the minivan";
const piano = "Piano lesson for Leo sometime next week";

// A server on the test's store (a directory of its own unless given), a free port; its URL.
async function startServer(t, { dir, args = [] } = {}) {
  const own = !dir;
  dir ??= mkdtempSync(join(tmpdir(), "switchboard-a2a-"));
  const env = { ...process.env, SWITCHBOARD_STATE_DIR: dir };
  for (const name of ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL",
    "SWITCHBOARD_MODEL", "SWITCHBOARD_PROVIDER", "SWITCHBOARD_OUTPUT_MODE", "SWITCHBOARD_SCHEMA_PATH",
    "SWITCHBOARD_PLUGIN_PATH", "SWITCHBOARD_PROMPT_PATH"]) delete env[name];
  const server = spawn(bin, ["serve", workflow, "--listen", "127.0.0.1:0", "--store", `sqlite:${dir}/runs.db`, ...args],
    { env, stdio: ["ignore", "pipe", "pipe"] });
  let log = "";
  server.stderr.on("data", (chunk) => { log += chunk; });
  const exited = new Promise((r) => server.on("exit", r));
  const stop = async () => { server.kill("SIGTERM"); await exited; };
  t.after(async () => {
    await stop();
    if (t.passed === false) process.stderr.write(`switchboard serve's standard error:\n${log}\n`);
    if (own) rmSync(dir, { recursive: true, force: true });
  });
  const lines = createInterface({ input: server.stdout });
  for await (const line of lines) {
    const m = line.match(/^listening on (http:\/\/127\.0\.0\.1:\d+)/);
    if (m) return { url: m[1], dir, stop };
  }
  throw new Error(`switchboard serve printed no address:\n${log}`);
}

const agentUrl = (url) => `${url}/a2a/family_scheduling/`;
const connect = (url) => new ClientFactory().createFromUrl(agentUrl(url));

let counter = 0;
const message = (parts, taskId) => SendMessageRequest.fromJSON({
  message: { messageId: `m${++counter}`, role: "ROLE_USER", parts, ...(taskId ? { taskId } : {}) },
});
const text = (s) => [{ text: s }];
const decision = (d, reason) => [{ data: { decision: d, ...(reason ? { reason } : {}) } }];
// The task as the wire shows it (proto names, oneofs as fields).
const wire = (task) => Task.toJSON(task);
const state = (task) => wire(task).status.state;
const statusState = (status) => Task.toJSON({ id: "", contextId: "", status, artifacts: [], history: [] }).status.state;

async function refused(promise, code) {
  await assert.rejects(promise, (e) => {
    assert.match(e.constructor.name + " " + e.message, code, e.message);
    return true;
  });
}

test("the agent card: at the well-known path and the agent's own, without the token", async (t) => {
  const { url } = await startServer(t);
  for (const path of ["/.well-known/agent-card.json", "/a2a/family_scheduling/.well-known/agent-card.json"]) {
    const card = await (await fetch(url + path)).json();
    assert.equal(card.name, "family_scheduling");
    assert.equal(card.capabilities.streaming, true);
    assert.deepEqual(card.supportedInterfaces, [
      { url: `${url}/a2a/family_scheduling`, protocolBinding: "JSONRPC", protocolVersion: "1.0" },
      { url: `${url}/a2a/family_scheduling`, protocolBinding: "HTTP+JSON", protocolVersion: "1.0" }]);
    assert.equal(card.skills[0].id, "family_scheduling");
    assert.match(card.skills[0].description, /household request/);
  }
});

test("a booking: input required for the approval, approved, completed with the envelope as an artifact", async (t) => {
  const { url } = await startServer(t);
  const client = await connect(url);
  const paused = wire(await client.sendMessage(message(text(soccer))));
  assert.equal(paused.status.state, "TASK_STATE_INPUT_REQUIRED");
  assert.equal(paused.contextId, "family_scheduling");
  const calls = paused.status.message.parts.find((p) => p.data).data.pending_calls;
  assert.equal(calls.length, 1);
  assert.equal(calls[0].tool, "calendar.book");
  assert.equal(calls[0].arguments.title, "Soccer practice");

  const done = wire(await client.sendMessage(message(decision("approve"), paused.id)));
  assert.equal(done.id, paused.id);
  assert.equal(done.status.state, "TASK_STATE_COMPLETED");
  const [artifact] = done.artifacts;
  const envelope = artifact.parts.find((p) => p.data).data;
  assert.equal(envelope.data.action, "booked");
  assert.match(envelope.explanation, /^Confirmed: "Soccer practice", Sat 2026-03-07 14:00/);
  assert.equal(artifact.parts.find((p) => p.text).text, envelope.explanation);

  // A terminal task takes no more messages; GetTask and ListTasks show it.
  await refused(client.sendMessage(message(decision("approve"), paused.id)), /UnsupportedOperation|-32004|terminal/);
  assert.equal(state(await client.getTask({ tenant: "", id: paused.id })), "TASK_STATE_COMPLETED");
  const listed = await client.listTasks({ tenant: "", contextId: "", status: 0, pageSize: 10, pageToken: "",
    historyLength: undefined, statusTimestampAfter: undefined, includeArtifacts: true });
  assert.ok(listed.tasks.some((task) => task.id === paused.id));
});

test("the HTTP+JSON binding: the SDK's REST transport asks, answers, approves, lists, streams and is refused",
  async (t) => {
    const { url } = await startServer(t);
    const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default,
      { preferredTransports: ["HTTP+JSON"] }));
    const client = await factory.createFromUrl(agentUrl(url));
    // The paths it calls are the binding's (not the JSON-RPC endpoint).
    const raw = await fetch(`${url}/a2a/family_scheduling/message:send`, { method: "POST",
      headers: { "Content-Type": "application/json", "A2A-Version": "1.0" },
      body: JSON.stringify({ message: { messageId: "r1", role: "ROLE_USER", parts: [{ text: piano }] } }) });
    assert.equal(raw.status, 200);
    assert.match(raw.headers.get("content-type"), /application\/a2a\+json/);
    const rawTask = (await raw.json()).task;
    assert.equal(rawTask.status.state, "TASK_STATE_INPUT_REQUIRED");

    const asked = wire(await client.sendMessage(message(text(piano))));
    assert.equal(asked.status.state, "TASK_STATE_INPUT_REQUIRED");
    assert.match(asked.status.message.parts[0].text, /When next week should "Piano lesson" take place/);
    const approval = wire(await client.sendMessage(message(text("Wednesday 5-6pm"), asked.id)));
    assert.ok(approval.status.message.parts.some((p) => p.data?.pending_calls));
    const done = wire(await client.sendMessage(message(decision("approve"), asked.id)));
    assert.equal(done.status.state, "TASK_STATE_COMPLETED");
    assert.match(done.artifacts[0].parts.find((p) => p.text).text, /Piano lesson/);
    assert.equal(state(await client.getTask({ tenant: "", id: asked.id, historyLength: 0 })), "TASK_STATE_COMPLETED");
    const listed = await client.listTasks({ tenant: "", contextId: "family_scheduling", status: 0, pageSize: 10,
      pageToken: "", historyLength: undefined, statusTimestampAfter: undefined, includeArtifacts: true });
    assert.ok(listed.tasks.some((task) => task.id === asked.id));

    // The errors as the binding gives them: the SDK reads their reason.
    await refused(client.sendMessage(message(decision("approve"), asked.id)), /UnsupportedOperation|terminal/);
    await refused(client.getTask({ tenant: "", id: "a2a-nobody" }), /TaskNotFound|no task/);
    await refused(client.cancelTask({ tenant: "", id: asked.id }), /TaskNotCancelable|completed/);
    const unknown = await fetch(`${url}/a2a/family_scheduling/tasks/a2a-nobody`, { headers: { "A2A-Version": "1.0" } });
    assert.equal(unknown.status, 404);
    const body = await unknown.json();
    assert.equal(body.error.status, "NOT_FOUND");
    assert.equal(body.error.details[0].reason, "TASK_NOT_FOUND");
    const old = await fetch(`${url}/a2a/family_scheduling/tasks/${asked.id}`);
    assert.equal(old.status, 400);
    assert.equal((await old.json()).error.details[0].reason, "VERSION_NOT_SUPPORTED");

    // Streaming over the binding: the task, updates, the pause; a paused task cancelled.
    const events = [];
    for await (const event of client.sendMessageStream(message(text(piano)))) events.push(event);
    assert.equal(events[0].payload.$case, "task");
    const last = events.at(-1).payload;
    assert.equal(last.$case, "statusUpdate");
    assert.equal(statusState(last.value.status), "TASK_STATE_INPUT_REQUIRED");
    const cancelled = wire(await client.cancelTask({ tenant: "", id: events[0].payload.value.id }));
    assert.equal(cancelled.status.state, "TASK_STATE_CANCELED");
  });

test("a vague request: the question as a text part, answered, then approved", async (t) => {
  const { url } = await startServer(t);
  const client = await connect(url);
  const asked = wire(await client.sendMessage(message(text(piano))));
  assert.equal(asked.status.state, "TASK_STATE_INPUT_REQUIRED");
  assert.match(asked.status.message.parts[0].text, /When next week should "Piano lesson" take place/);

  // The question wants an answer: a decision is the wrong reply.
  await refused(client.sendMessage(message(decision("approve"), asked.id)), /InvalidParams|-32602|text part/);
  const approval = wire(await client.sendMessage(message(text("Wednesday 5-6pm"), asked.id)));
  assert.equal(approval.status.state, "TASK_STATE_INPUT_REQUIRED");
  assert.ok(approval.status.message.parts.some((p) => p.data?.pending_calls));
  const done = wire(await client.sendMessage(message(decision("approve"), asked.id)));
  assert.equal(done.status.state, "TASK_STATE_COMPLETED");
  assert.match(done.artifacts[0].parts.find((p) => p.text).text, /Piano lesson/);
});

test("streaming: the task, a status update per step, then input required; resubscribing shows the task", async (t) => {
  const { url } = await startServer(t);
  const client = await connect(url);
  const events = [];
  for await (const event of client.sendMessageStream(message(text(piano)))) events.push(event);
  assert.equal(events[0].payload.$case, "task");
  const id = events[0].payload.value.id;
  const updates = events.slice(1).map((e) => e.payload);
  assert.ok(updates.every((u) => u.$case === "statusUpdate"), JSON.stringify(updates));
  assert.ok(updates.length >= 2, "a progress update and the last status");
  assert.match(updates[0].value.status.message.parts[0].content.value, /^step 1 /);
  assert.equal(statusState(updates.at(-1).value.status), "TASK_STATE_INPUT_REQUIRED");

  const again = [];
  for await (const event of client.resubscribeTask({ tenant: "", id })) again.push(event);
  assert.equal(again.length, 1);
  assert.equal(again[0].payload.value.id, id);

  // The answer streamed: the approval is asked next.
  const answered = [];
  for await (const event of client.sendMessageStream(message(text("Wednesday 5-6pm"), id))) answered.push(event);
  assert.equal(answered[0].payload.value.id, id);
  const final = answered.at(-1).payload.value.status;
  assert.ok(final.message.parts.some((p) => p.content.$case === "data"));
});

test("returnImmediately: the task is working at once; subscribing follows it to its pause", async (t) => {
  const { url } = await startServer(t);
  const client = await connect(url);
  const request = message(text(piano));
  request.configuration = { acceptedOutputModes: [], historyLength: undefined, returnImmediately: true };
  const started = wire(await client.sendMessage(request));
  assert.equal(started.status.state, "TASK_STATE_WORKING");
  const events = [];
  for await (const event of client.resubscribeTask({ tenant: "", id: started.id })) events.push(event);
  assert.equal(events[0].payload.$case, "task");
  assert.equal(events[0].payload.value.id, started.id);
  // The last event is the task (it paused before the subscription) or the last status update.
  assert.equal(statusState(events.at(-1).payload.value.status), "TASK_STATE_INPUT_REQUIRED");
  assert.equal(state(await client.getTask({ tenant: "", id: started.id })), "TASK_STATE_INPUT_REQUIRED");
});

test("cancel: a paused task is cancelled, and then neither cancelable nor continued; unknown tasks are not found",
  async (t) => {
    const { url } = await startServer(t);
    const client = await connect(url);
    const asked = wire(await client.sendMessage(message(text(piano))));
    const cancelled = wire(await client.cancelTask({ tenant: "", id: asked.id, metadata: undefined }));
    assert.equal(cancelled.status.state, "TASK_STATE_CANCELED");
    await refused(client.cancelTask({ tenant: "", id: asked.id, metadata: undefined }), /NotCancelable|-32002/);
    await refused(client.sendMessage(message(text("Wednesday 5-6pm"), asked.id)), /UnsupportedOperation|-32004/);
    await refused(client.getTask({ tenant: "", id: "a2a-no-such-task" }), /TaskNotFound|-32001/);
    await refused(client.sendMessage(message(text("hello"), "a2a-no-such-task")), /TaskNotFound|-32001/);
  });

test("two replies race: one continues the task, the other is refused", async (t) => {
  const { url } = await startServer(t);
  const client = await connect(url);
  const paused = wire(await client.sendMessage(message(text(soccer))));
  const results = await Promise.allSettled([
    client.sendMessage(message(decision("approve"), paused.id)),
    client.sendMessage(message(decision("reject", "not now"), paused.id)),
  ]);
  const won = results.filter((r) => r.status === "fulfilled");
  const lost = results.filter((r) => r.status === "rejected");
  assert.equal(won.length, 1, JSON.stringify(results.map((r) => r.reason?.message)));
  assert.equal(lost.length, 1);
  assert.match(lost[0].reason.constructor.name + lost[0].reason.message, /UnsupportedOperation|-32004/);
  assert.equal(state(won[0].value), "TASK_STATE_COMPLETED");
});

test("the protocol's rules: A2A-Version required, the token required but for the card", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "switchboard-a2a-token-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, "token"), "a2a-test-token-0123456789\n");
  const { url } = await startServer(t, { dir, args: ["--auth-token-file", join(dir, "token")] });
  const card = await fetch(`${url}/.well-known/agent-card.json`);
  assert.equal(card.status, 200);
  assert.ok((await card.json()).securitySchemes.bearer);
  const body = JSON.stringify({ jsonrpc: "2.0", id: 7, method: "GetTask", params: { id: "x" } });
  const rpc = `${url}/a2a/family_scheduling`;
  assert.equal((await fetch(rpc, { method: "POST", body })).status, 401);
  const auth = { Authorization: "Bearer a2a-test-token-0123456789", "Content-Type": "application/json" };
  const noVersion = await (await fetch(rpc, { method: "POST", body, headers: auth })).json();
  assert.equal(noVersion.id, 7);
  assert.equal(noVersion.error.code, -32009);
  const found = await (await fetch(rpc, { method: "POST", body, headers: { ...auth, "A2A-Version": "1.0" } })).json();
  assert.equal(found.error.code, -32001);
  assert.equal(found.error.data[0].reason, "TASK_NOT_FOUND");
  const unknown = await (await fetch(rpc, { method: "POST", headers: { ...auth, "A2A-Version": "1.0" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 8, method: "tasks/get", params: {} }) })).json();
  assert.equal(unknown.error.code, -32601);
});

test("a task paused before a restart is continued by the next server", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "switchboard-a2a-restart-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const first = await startServer(t, { dir });
  const asked = wire(await (await connect(first.url)).sendMessage(message(text(piano))));
  assert.equal(asked.status.state, "TASK_STATE_INPUT_REQUIRED");
  await first.stop();

  const second = await startServer(t, { dir });
  const client = await connect(second.url);
  const still = wire(await client.getTask({ tenant: "", id: asked.id }));
  assert.equal(still.status.state, "TASK_STATE_INPUT_REQUIRED");
  assert.match(still.status.message.parts[0].text, /Piano lesson/);
  const subscribed = [];
  for await (const event of client.resubscribeTask({ tenant: "", id: asked.id })) subscribed.push(event);
  assert.equal(subscribed.length, 1);
  assert.equal(state(subscribed[0].payload.value), "TASK_STATE_INPUT_REQUIRED");
  const approval = wire(await client.sendMessage(message(text("Wednesday 5-6pm"), asked.id)));
  assert.ok(approval.status.message.parts.some((p) => p.data?.pending_calls));
  const done = wire(await client.sendMessage(message(decision("approve"), asked.id)));
  assert.equal(done.status.state, "TASK_STATE_COMPLETED");
});
