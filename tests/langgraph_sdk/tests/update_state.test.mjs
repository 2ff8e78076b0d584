// threads.updateState: a person sets a node's answer instead of its agent
// ("edit, then continue"). The answer is checked against the agent's schema
// (422 naming the field), the thread's checkpoint moves on, and a run
// without input continues from where the node routes; a thread that
// finished, never ran, or moved on since the checkpoint given: 409 (a busy
// one: tests/server/gated_runs_test.cpp, which can hold a run).
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import {
  client,
  graphId,
  rejection,
  requests,
  sampleInput,
  soleInterrupt,
  statusOf,
  suiteServer,
  uuidPattern,
} from "../lib/harness.mjs";

let server;
let c;
before(async () => {
  server = await suiteServer();
  c = client(server.url);
});
after(() => server?.stop());

async function pausedForClarification() {
  const t = await c.threads.create();
  const v = await c.runs.wait(t.thread_id, graphId, { input: sampleInput(requests.piano) });
  assert.equal(soleInterrupt(v).value.type, "clarification", JSON.stringify(v));
  return t.thread_id;
}

// What the parser makes of the request once it is clear: the answer a
// person gives in its place.
async function parsedRequest() {
  const t = await c.threads.create();
  const v = await c.runs.wait(t.thread_id, graphId, { input: sampleInput("Piano lesson for Leo on Wednesday 5-6pm") });
  assert.ok(v.outputs.nl_parser, JSON.stringify(v));
  return v.outputs.nl_parser.data;
}

describe("threads.updateState", { timeout: 30000 }, () => {
  test("the parser's answer set by a person: no question, the next run continues from the scheduler", async () => {
    const threadId = await pausedForClarification();
    const parsed = await parsedRequest();
    const before = await c.threads.getState(threadId);

    const updated = await c.threads.updateState(threadId, { values: parsed, asNode: "parse" });
    assert.match(updated.checkpoint.checkpoint_id, uuidPattern);
    assert.notEqual(updated.checkpoint.checkpoint_id, before.checkpoint.checkpoint_id);

    const state = await c.threads.getState(threadId);
    assert.equal(state.checkpoint.checkpoint_id, updated.checkpoint.checkpoint_id);
    assert.deepEqual(state.next, ["schedule"]);
    assert.deepEqual(state.interrupts, []);
    assert.deepEqual(state.values.outputs.nl_parser.data, parsed);
    assert.equal(state.values.outputs.nl_parser.confidence, 1);
    assert.equal(state.values.step, before.values.step + 1);
    assert.equal((await c.threads.get(threadId)).status, "idle");

    const v = await c.runs.wait(threadId, graphId, { input: null });
    assert.equal(v.status, "awaiting_approval", JSON.stringify(v));
    assert.equal(soleInterrupt(v).value.calls[0].arguments.title, "Piano lesson");
  });

  test("asNode left out: the node the run stopped at", async () => {
    const threadId = await pausedForClarification();
    const parsed = await parsedRequest();
    await c.threads.updateState(threadId, { values: parsed });
    assert.deepEqual((await c.threads.getState(threadId)).next, ["schedule"]);
  });

  test("values the parser's schema refuses: 422 naming the field; the question still stands", async () => {
    const threadId = await pausedForClarification();
    const before = await c.threads.getState(threadId);
    const e = await rejection(c.threads.updateState(threadId, { values: { intent: 42 }, asNode: "parse" }));
    assert.equal(statusOf(e), 422, String(e));
    assert.match(String(e.message ?? e), /\/data\/intent/);
    const after = await c.threads.getState(threadId);
    assert.equal(after.checkpoint.checkpoint_id, before.checkpoint.checkpoint_id);
    assert.deepEqual(after.interrupts, before.interrupts);
    const v = await c.runs.wait(threadId, graphId, { command: { resume: requests.pianoAnswer } });
    assert.equal(v.status, "awaiting_approval", JSON.stringify(v));
  });

  test("a node that is not in the workflow, or not an agent's: 422", async () => {
    const threadId = await pausedForClarification();
    for (const asNode of ["nowhere", "answered"]) {
      const e = await rejection(c.threads.updateState(threadId, { values: {}, asNode }));
      assert.equal(statusOf(e), 422, `${asNode}: ${e}`);
      assert.match(String(e.message ?? e), new RegExp(asNode));
    }
  });

  test("values that are not an object: 422", async () => {
    const threadId = await pausedForClarification();
    const e = await rejection(c.threads.updateState(threadId, { values: [1, 2], asNode: "parse" }));
    assert.equal(statusOf(e), 422, String(e));
  });

  test("a thread that never ran, a finished one, a stale checkpoint: 409, nothing changed", async () => {
    const fresh = await c.threads.create();
    const never = await rejection(c.threads.updateState(fresh.thread_id, { values: {}, asNode: "parse" }));
    assert.equal(statusOf(never), 409, String(never));

    const done = await c.threads.create();
    const v = await c.runs.wait(done.thread_id, graphId, { input: sampleInput(requests.question) });
    assert.equal(v.status, "completed");
    const finished = await rejection(c.threads.updateState(done.thread_id, { values: {}, asNode: "query" }));
    assert.equal(statusOf(finished), 409, String(finished));
    assert.deepEqual((await c.threads.getState(done.thread_id)).values, v);

    const threadId = await pausedForClarification();
    const parsed = await parsedRequest();
    const stale = await rejection(
      c.threads.updateState(threadId, { values: parsed, asNode: "parse", checkpointId: "00000000-0000-7000-8000-000000000000" }),
    );
    assert.equal(statusOf(stale), 409, String(stale));
    const current = await c.threads.getState(threadId);
    await c.threads.updateState(threadId, { values: parsed, asNode: "parse", checkpointId: current.checkpoint.checkpoint_id });
    assert.deepEqual((await c.threads.getState(threadId)).next, ["schedule"]);
  });
});
