// threads.getState and threads.getHistory: the checkpoint a paused thread
// continues from, its interrupts (per task and top level), and one history
// entry per saved step, newest first.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import {
  client,
  graphId,
  requests,
  sampleInput,
  soleInterrupt,
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

// The sample's values without the pause marker (state values may omit it).
const withoutInterrupt = ({ __interrupt__, ...rest }) => rest;

describe("threads.getState", { timeout: 30000 }, () => {
  test("paused for approval: values, next = the node that continues, interrupts per task and top level", async () => {
    const t = await c.threads.create();
    const v = await c.runs.wait(t.thread_id, graphId, { input: sampleInput(requests.soccer) });
    const interrupt = soleInterrupt(v);

    const state = await c.threads.getState(t.thread_id);
    assert.deepEqual(withoutInterrupt(state.values), withoutInterrupt(v));
    assert.equal(state.values.status, "awaiting_approval");
    assert.deepEqual(state.next, [interrupt.value.node]);
    assert.deepEqual(state.next, ["auto_confirm"]);
    assert.ok(Array.isArray(state.tasks) && state.tasks.length >= 1, JSON.stringify(state.tasks));
    assert.equal(state.tasks[0].name, "auto_confirm");
    assert.deepEqual(state.tasks[0].interrupts, [interrupt]);
    assert.deepEqual(state.interrupts, [interrupt]);
    assert.match(state.checkpoint.checkpoint_id, uuidPattern);
    assert.equal(state.checkpoint.thread_id, t.thread_id);
    assert.equal(state.checkpoint.checkpoint_ns, "");

    // the thread carries the same interrupts, keyed by task id
    const thread = await c.threads.get(t.thread_id);
    assert.equal(thread.status, "interrupted");
    assert.deepEqual(thread.interrupts, { [state.tasks[0].id]: [interrupt] });
    assert.deepEqual(withoutInterrupt(thread.values), withoutInterrupt(v));
  });

  test("paused for clarification: next = the parser's node", async () => {
    const t = await c.threads.create();
    const v = await c.runs.wait(t.thread_id, graphId, { input: sampleInput(requests.piano) });
    const interrupt = soleInterrupt(v);
    const state = await c.threads.getState(t.thread_id);
    assert.deepEqual(state.next, ["parse"]);
    assert.deepEqual(state.interrupts, [interrupt]);
    assert.deepEqual(state.tasks[0].interrupts, [interrupt]);
  });

  test("completed: next is empty and nothing is interrupted", async () => {
    const t = await c.threads.create();
    const v = await c.runs.wait(t.thread_id, graphId, { input: sampleInput(requests.question) });
    const state = await c.threads.getState(t.thread_id);
    assert.deepEqual(state.values, v);
    assert.deepEqual(state.next, []);
    assert.deepEqual(state.interrupts ?? [], []);
    for (const task of state.tasks ?? []) assert.deepEqual(task.interrupts ?? [], []);
    assert.match(state.checkpoint.checkpoint_id, uuidPattern);
  });

  test("a resumed thread's checkpoint moves on", async () => {
    const t = await c.threads.create();
    await c.runs.wait(t.thread_id, graphId, { input: sampleInput(requests.piano) });
    const paused = await c.threads.getState(t.thread_id);
    await c.runs.wait(t.thread_id, graphId, { command: { resume: requests.pianoAnswer } });
    const later = await c.threads.getState(t.thread_id);
    assert.notEqual(later.checkpoint.checkpoint_id, paused.checkpoint.checkpoint_id);
    // auto_confirm, or resolved when another test booked Leo's Wednesday first
    assert.equal(later.interrupts.length, 1);
    assert.equal(later.interrupts[0].value.type, "approval");
    assert.deepEqual(later.next, [later.interrupts[0].value.node]);
    assert.ok(later.values.step > paused.values.step);
  });
});

describe("threads.getHistory", { timeout: 30000 }, () => {
  test("newest first, one entry per saved step, the newest equal to getState", async () => {
    const t = await c.threads.create();
    const v = await c.runs.wait(t.thread_id, graphId, { input: sampleInput(requests.question) });
    const history = await c.threads.getHistory(t.thread_id);
    const state = await c.threads.getState(t.thread_id);
    assert.ok(history.length >= v.step, `${history.length} entries for ${v.step} steps`);
    assert.deepEqual(history[0].values, state.values);
    assert.equal(history[0].checkpoint.checkpoint_id, state.checkpoint.checkpoint_id);
    const ids = history.map((h) => h.checkpoint.checkpoint_id);
    for (const id of ids) assert.match(id, uuidPattern);
    assert.equal(new Set(ids).size, ids.length, "distinct checkpoints");
    const steps = history.map((h) => h.values?.step ?? h.metadata?.step);
    for (let i = 1; i < steps.length; i++) {
      assert.ok(steps[i] < steps[i - 1], `steps newest first: ${JSON.stringify(steps)}`);
    }
    // every step the run saved is there once
    for (let s = 1; s <= v.step; s++) assert.equal(steps.filter((x) => x === s).length, 1, JSON.stringify(steps));
  });

  test("a paused and resumed thread's history spans both runs", async () => {
    const t = await c.threads.create();
    const paused = await c.runs.wait(t.thread_id, graphId, { input: sampleInput(requests.piano) });
    const resumed = await c.runs.wait(t.thread_id, graphId, { command: { resume: requests.pianoAnswer } });
    const history = await c.threads.getHistory(t.thread_id, { limit: 100 });
    const steps = history.map((h) => h.values?.step ?? h.metadata?.step);
    assert.equal(steps[0], resumed.step);
    assert.ok(steps.includes(paused.step), JSON.stringify(steps));
    assert.ok(history.length >= resumed.step, JSON.stringify(steps));
  });

  test("limit caps the entries", async () => {
    const t = await c.threads.create();
    await c.runs.wait(t.thread_id, graphId, { input: sampleInput(requests.soccer) });
    const all = await c.threads.getHistory(t.thread_id, { limit: 100 });
    assert.ok(all.length >= 3);
    const two = await c.threads.getHistory(t.thread_id, { limit: 2 });
    assert.equal(two.length, 2);
    assert.deepEqual(
      two.map((h) => h.checkpoint.checkpoint_id),
      all.slice(0, 2).map((h) => h.checkpoint.checkpoint_id),
    );
  });

  test("a thread with no run has an empty history", async () => {
    const t = await c.threads.create();
    assert.deepEqual(await c.threads.getHistory(t.thread_id), []);
  });
});
