// Cancelling a run and the multitask strategies (reject, enqueue, interrupt,
// rollback) on a thread whose run is active.
//
// A run is kept active without timing: the server's LLM-backed nl_parser asks
// the test's fake model (lib/fake_model.mjs), which holds its answer until
// the test releases it. Once the model has been asked, the run is running and
// stays so; the other runs' calls are answered at once.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { parsedQuestion, vagueEvent } from "../lib/fake_model.mjs";
import {
  finishedRun,
  graphId,
  rejection,
  requests,
  sampleInput,
  settledThread,
  startServerWithModel,
  statusOf,
  waitFor,
} from "../lib/harness.mjs";

let server;
let model;
let c;
before(async () => {
  ({ server, model, c } = await startServerWithModel());
});
after(async () => {
  await server?.stop();
  await model?.close();
});

const question = () => sampleInput(requests.question);

// A background run on a new thread, parked in its nl_parser call.
async function activeRun() {
  const gate = model.hold("nl_parser", parsedQuestion());
  const t = await c.threads.create();
  const run = await c.runs.create(t.thread_id, graphId, { input: question() });
  await gate.asked;
  return { threadId: t.thread_id, runId: run.run_id, gate };
}

describe("a held run is active", { timeout: 30000 }, () => {
  test("while the model holds its answer, run running and thread busy; released, it completes", async () => {
    const { threadId, runId, gate } = await activeRun();
    try {
      assert.equal((await c.runs.get(threadId, runId)).status, "running");
      assert.equal((await c.threads.get(threadId)).status, "busy");
    } finally {
      gate.release();
    }
    const v = await c.runs.join(threadId, runId);
    assert.equal(v.status, "completed", JSON.stringify(v));
    assert.equal((await c.runs.get(threadId, runId)).status, "success");
    assert.equal((await c.threads.get(threadId)).status, "idle");
  });
});

describe("runs.cancel", { timeout: 30000 }, () => {
  test("cancel(wait, interrupt) of a running run: run interrupted, thread usable again", async () => {
    const { threadId, runId, gate } = await activeRun();
    try {
      await c.runs.cancel(threadId, runId, true, "interrupt");
      assert.equal((await c.runs.get(threadId, runId)).status, "interrupted");
      const thread = await settledThread(c, threadId);
      assert.notEqual(thread.status, "error");
    } finally {
      gate.release();
    }
    const v = await c.runs.wait(threadId, graphId, { input: question() });
    assert.equal(v.status, "completed", "a new run on the thread works");
  });

  test("cancel without wait answers at once; the run ends interrupted", async () => {
    const { threadId, runId, gate } = await activeRun();
    try {
      await c.runs.cancel(threadId, runId, false, "interrupt");
      assert.equal((await finishedRun(c, threadId, runId)).status, "interrupted");
    } finally {
      gate.release();
    }
  });

  test("cancel(rollback) deletes the run", async () => {
    const { threadId, runId, gate } = await activeRun();
    try {
      await c.runs.cancel(threadId, runId, true, "rollback");
      await waitFor(async () => statusOf(await rejection(c.runs.get(threadId, runId))) === 404, {
        what: "the rolled-back run to be gone",
      });
      assert.deepEqual(await c.runs.list(threadId), []);
    } finally {
      gate.release();
    }
  });
});

describe("multitask strategies while a run is active", { timeout: 30000 }, () => {
  test("reject: a second run is refused with 409; the first goes on", async () => {
    const { threadId, runId, gate } = await activeRun();
    try {
      const e = await rejection(c.runs.create(threadId, graphId, { input: question(), multitaskStrategy: "reject" }));
      assert.equal(statusOf(e), 409, String(e));
      const e2 = await rejection(c.runs.wait(threadId, graphId, { input: question(), multitaskStrategy: "reject" }));
      assert.equal(statusOf(e2), 409, String(e2));
      assert.equal((await c.runs.get(threadId, runId)).status, "running");
    } finally {
      gate.release();
    }
    assert.equal((await c.runs.join(threadId, runId)).status, "completed");
    const runs = await c.runs.list(threadId);
    assert.deepEqual(
      runs.map((r) => r.run_id),
      [runId],
      "the refused runs were not recorded",
    );
    // idle again: reject lets a run in
    const v = await c.runs.wait(threadId, graphId, { input: question(), multitaskStrategy: "reject" });
    assert.equal(v.status, "completed");
  });

  test("enqueue: the second run waits pending and runs after the first", async () => {
    const { threadId, runId, gate } = await activeRun();
    const before = model.requests.length;
    let second;
    try {
      second = await c.runs.create(threadId, graphId, { input: question(), multitaskStrategy: "enqueue" });
      assert.equal(second.status, "pending");
      assert.equal((await c.runs.get(threadId, second.run_id)).status, "pending");
      assert.equal(model.requests.length, before, "the queued run has not started");
    } finally {
      gate.release();
    }
    const v = await c.runs.join(threadId, second.run_id);
    assert.equal(v.status, "completed", JSON.stringify(v));
    assert.equal((await c.runs.get(threadId, runId)).status, "success");
    assert.equal((await c.runs.get(threadId, second.run_id)).status, "success");
    // the first run's query call came before the second run's parser call
    assert.deepEqual(model.agents().slice(before - 1), ["nl_parser", "query", "nl_parser", "query"]);
    assert.equal((await settledThread(c, threadId)).status, "idle");
  });

  test("no strategy given: enqueue, the Python server's default", async () => {
    const { threadId, runId, gate } = await activeRun();
    let second;
    try {
      second = await c.runs.create(threadId, graphId, { input: question() });
      assert.equal(second.status, "pending");
      assert.equal(second.multitask_strategy, "enqueue");
    } finally {
      gate.release();
    }
    assert.equal((await c.runs.join(threadId, second.run_id)).status, "completed");
    assert.equal((await c.runs.get(threadId, runId)).status, "success");
  });

  test("interrupt: the active run is cancelled (interrupted) and the new one runs", async () => {
    const { threadId, runId, gate } = await activeRun();
    let second;
    try {
      second = await c.runs.create(threadId, graphId, { input: question(), multitaskStrategy: "interrupt" });
      assert.equal((await finishedRun(c, threadId, runId)).status, "interrupted");
    } finally {
      gate.release();
    }
    const v = await c.runs.join(threadId, second.run_id);
    assert.equal(v.status, "completed", JSON.stringify(v));
    assert.equal((await c.runs.get(threadId, second.run_id)).status, "success");
    assert.equal((await settledThread(c, threadId)).status, "idle");
  });

  test("rollback: the active run is cancelled and deleted (404), the new one runs", async () => {
    const { threadId, runId, gate } = await activeRun();
    let second;
    try {
      second = await c.runs.create(threadId, graphId, { input: question(), multitaskStrategy: "rollback" });
      await waitFor(async () => statusOf(await rejection(c.runs.get(threadId, runId))) === 404, {
        what: "the rolled-back run to be gone",
      });
    } finally {
      gate.release();
    }
    const v = await c.runs.join(threadId, second.run_id);
    assert.equal(v.status, "completed", JSON.stringify(v));
    const runs = await c.runs.list(threadId);
    assert.deepEqual(
      runs.map((r) => r.run_id),
      [second.run_id],
    );
  });

  test("a run paused for input is not active: reject lets a new input in", async () => {
    const t = await c.threads.create();
    model.answer("nl_parser", vagueEvent());
    const paused = await c.runs.wait(t.thread_id, graphId, { input: sampleInput(requests.piano) });
    assert.equal(paused.status, "awaiting_clarification", JSON.stringify(paused));
    assert.equal((await c.threads.get(t.thread_id)).status, "interrupted");
    const v = await c.runs.wait(t.thread_id, graphId, { input: question(), multitaskStrategy: "reject" });
    assert.equal(v.status, "completed", JSON.stringify(v));
  });
});
