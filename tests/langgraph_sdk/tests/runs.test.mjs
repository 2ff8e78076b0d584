// Runs through the SDK: wait, create (background) with get/list/join, and
// the run and thread statuses of a completed, a paused and a failed run.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import {
  client,
  finishedRun,
  graphId,
  now,
  rejection,
  requests,
  sampleInput,
  settledThread,
  soleInterrupt,
  suiteServer,
  systemAssistantId,
  uuidPattern,
} from "../lib/harness.mjs";

let server;
let c;
before(async () => {
  server = await suiteServer();
  c = client(server.url);
});
after(() => server?.stop());

const envelopeKeys = ["confidence", "data", "explanation", "reasoning"];

function assertEnvelope(e, where) {
  assert.ok(e && typeof e === "object", `${where}: ${JSON.stringify(e)}`);
  for (const k of envelopeKeys) assert.ok(k in e, `${where} lacks ${k}: ${JSON.stringify(e)}`);
}

describe("runs.wait", { timeout: 30000 }, () => {
  test("a question completes: values carry input, outputs per agent, status, step and result", async () => {
    const t = await c.threads.create();
    const v = await c.runs.wait(t.thread_id, graphId, { input: sampleInput(requests.question) });
    assert.deepEqual(v.input, sampleInput(requests.question));
    assert.equal(v.status, "completed", JSON.stringify(v));
    assert.equal(v.step, 2, JSON.stringify(v));
    assert.deepEqual(Object.keys(v.outputs).sort(), ["nl_parser", "query"]);
    assertEnvelope(v.outputs.nl_parser, "outputs.nl_parser");
    assertEnvelope(v.outputs.query, "outputs.query");
    assert.equal(v.outputs.nl_parser.data.intent, "query");
    assert.match(v.outputs.query.data.answer, /free on Sunday 2026-11-29/);
    assertEnvelope(v.result, "result");
    assert.deepEqual(v.result, v.outputs.query);
    assert.equal(v.__interrupt__, undefined, "a completed run has no __interrupt__");

    const thread = await c.threads.get(t.thread_id);
    assert.equal(thread.status, "idle");
    const runs = await c.runs.list(t.thread_id);
    assert.equal(runs.length, 1);
    assert.equal(runs[0].status, "success");
    assert.equal(runs[0].thread_id, t.thread_id);
    assert.equal(runs[0].assistant_id, systemAssistantId(graphId));
  });

  test("the assistant's uuid works like the graph id", async () => {
    const t = await c.threads.create();
    const v = await c.runs.wait(t.thread_id, systemAssistantId(graphId), { input: sampleInput(requests.question) });
    assert.equal(v.status, "completed");
  });

  test("a booking request pauses for approval: run success, thread interrupted, __interrupt__ the approval", async () => {
    const t = await c.threads.create();
    const v = await c.runs.wait(t.thread_id, graphId, { input: sampleInput(requests.soccer) });
    assert.equal(v.status, "awaiting_approval", JSON.stringify(v));
    for (const agent of ["nl_parser", "scheduling", "resource_manager", "conflict_detection"]) {
      assertEnvelope(v.outputs[agent], `outputs.${agent}`);
    }
    assert.equal(v.outputs.booking, undefined, "nothing booked before the approval");
    const i = soleInterrupt(v);
    assert.equal(i.value.type, "approval");
    assert.equal(i.value.node, "auto_confirm");
    assert.equal(i.value.calls.length, 1);
    const [call] = i.value.calls;
    assert.equal(typeof call.id, "string");
    assert.equal(call.tool, "calendar.book");
    assert.equal(call.agent, "booking");
    assert.equal(typeof call.description, "string");
    assert.equal(call.arguments.title, "Soccer practice");
    assert.equal(call.arguments.start, "2026-11-28T14:00");
    assert.equal(call.arguments.end, "2026-11-28T16:00");
    assert.deepEqual(call.arguments.participants, ["Maya"]);
    assert.deepEqual(call.arguments.resources, ["minivan"]);

    const thread = await c.threads.get(t.thread_id);
    assert.equal(thread.status, "interrupted");
    const [run] = await c.runs.list(t.thread_id);
    assert.equal(run.status, "success");
  });

  test("a vague request pauses for clarification with the parser's question", async () => {
    const t = await c.threads.create();
    const v = await c.runs.wait(t.thread_id, graphId, { input: sampleInput(requests.piano) });
    assert.equal(v.status, "awaiting_clarification", JSON.stringify(v));
    const i = soleInterrupt(v);
    assert.equal(i.value.type, "clarification");
    assert.equal(i.value.node, "parse");
    assert.equal(i.value.agent, "nl_parser");
    assert.match(i.value.question, /Piano lesson/);
    assert.equal((await c.threads.get(t.thread_id)).status, "interrupted");
    assert.equal((await c.runs.list(t.thread_id))[0].status, "success");
  });

  test("a failing run: run error, thread error, and wait throws the error (the __error__ body)", async () => {
    const t = await c.threads.create();
    const e = await rejection(c.runs.wait(t.thread_id, graphId, { input: sampleInput(requests.question, "garbage") }));
    assert.match(String(e.message), /now/, String(e));
    const [run] = await c.runs.list(t.thread_id);
    assert.equal(run.status, "error");
    assert.equal((await c.threads.get(t.thread_id)).status, "error");

    const raw = await c.runs.wait(t.thread_id, graphId, {
      input: sampleInput(requests.question, "garbage"),
      raiseError: false,
    });
    assert.equal(typeof raw.__error__, "object", JSON.stringify(raw));
    assert.equal(typeof raw.__error__.error, "string");
    assert.match(raw.__error__.message, /"now"/);
  });
});

describe("background runs", { timeout: 30000 }, () => {
  test("runs.create returns a pending or running Run with a UUID run_id; get, list and join follow it", async () => {
    const t = await c.threads.create();
    let created;
    const run = await c.runs.create(t.thread_id, graphId, {
      input: sampleInput(requests.question),
      onRunCreated: (m) => (created = m),
    });
    assert.match(run.run_id, uuidPattern);
    assert.equal(run.thread_id, t.thread_id);
    assert.equal(run.assistant_id, systemAssistantId(graphId));
    assert.ok(["pending", "running"].includes(run.status), run.status);
    assert.deepEqual(created, { run_id: run.run_id, thread_id: t.thread_id }, "Content-Location -> onRunCreated");

    const got = await c.runs.get(t.thread_id, run.run_id);
    assert.equal(got.run_id, run.run_id);
    const listed = await c.runs.list(t.thread_id);
    assert.deepEqual(
      listed.map((r) => r.run_id),
      [run.run_id],
    );

    const joined = await c.runs.join(t.thread_id, run.run_id);
    assert.equal(joined.status, "completed", JSON.stringify(joined));
    assert.deepEqual(joined.input, sampleInput(requests.question));
    const done = await finishedRun(c, t.thread_id, run.run_id);
    assert.equal(done.status, "success");
    const state = await c.threads.getState(t.thread_id);
    assert.deepEqual(joined, state.values);
    // join on a finished run answers at once with the same values
    assert.deepEqual(await c.runs.join(t.thread_id, run.run_id), joined);
  });

  test("runs.wait fires onRunCreated too", async () => {
    const t = await c.threads.create();
    let created;
    await c.runs.wait(t.thread_id, graphId, { input: sampleInput(requests.question), onRunCreated: (m) => (created = m) });
    assert.equal(created?.thread_id, t.thread_id);
    assert.match(created?.run_id ?? "", uuidPattern);
    const runs = await c.runs.list(t.thread_id);
    assert.deepEqual(
      runs.map((r) => r.run_id),
      [created.run_id],
    );
  });

  test("a background failing run ends error, its thread error", async () => {
    const t = await c.threads.create();
    const run = await c.runs.create(t.thread_id, graphId, { input: sampleInput(requests.question, "not a time") });
    assert.equal((await finishedRun(c, t.thread_id, run.run_id)).status, "error");
    assert.equal((await settledThread(c, t.thread_id)).status, "error");
  });

  test("a background paused run ends success, its thread interrupted, join returns the __interrupt__", async () => {
    const t = await c.threads.create();
    const run = await c.runs.create(t.thread_id, graphId, { input: sampleInput(requests.soccer) });
    const v = await c.runs.join(t.thread_id, run.run_id);
    assert.equal(v.status, "awaiting_approval");
    assert.equal(soleInterrupt(v).value.type, "approval");
    assert.equal((await finishedRun(c, t.thread_id, run.run_id)).status, "success");
    assert.equal((await settledThread(c, t.thread_id)).status, "interrupted");
  });

  test("runs.list of a thread with several runs, newest first", async () => {
    const t = await c.threads.create();
    const first = await c.runs.create(t.thread_id, graphId, { input: sampleInput(requests.question) });
    await c.runs.join(t.thread_id, first.run_id);
    const second = await c.runs.create(t.thread_id, graphId, { input: sampleInput(requests.question) });
    await c.runs.join(t.thread_id, second.run_id);
    const listed = await c.runs.list(t.thread_id);
    assert.deepEqual(
      listed.map((r) => r.run_id),
      [second.run_id, first.run_id],
    );
  });

  test("the sample's now comes from the input", async () => {
    const t = await c.threads.create();
    const v = await c.runs.wait(t.thread_id, graphId, { input: sampleInput(requests.question, "2026-11-30T09:00") });
    assert.equal(v.status, "completed");
    assert.match(v.outputs.query.data.answer, /2026-12-06/);
    assert.notEqual(now, "2026-11-30T09:00");
  });
});
