// A server killed (SIGKILL) or stopped (SIGTERM) and started again on the
// same store: paused threads stay paused and can be answered; a run cut off
// mid-run continues (its thread is never left busy); a resumable stream cut by
// the kill is rejoined on the new server after the last id seen, and nothing
// is lost or repeated.
//
// Mid-run is exact: the run's nl_parser waits on the test's fake model
// (lib/fake_model.mjs) when the server is killed.
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";

import { parsedQuestion } from "../lib/fake_model.mjs";
import {
  client,
  collect,
  customEvents,
  finishedRun,
  graphId,
  modelEnv,
  requests,
  sampleInput,
  settledThread,
  soleInterrupt,
  startServer,
  startServerWithModel,
} from "../lib/harness.mjs";

const cleanups = [];
after(async () => {
  for (const f of cleanups.reverse()) await f();
});

async function offlineServer() {
  const server = await startServer();
  cleanups.push(() => server.kill("SIGKILL"));
  return server;
}

async function modelServer() {
  const s = await startServerWithModel();
  cleanups.push(() => s.model.close());
  cleanups.push(() => s.server.kill("SIGKILL"));
  return s;
}

async function restart(server, env = {}) {
  const again = await startServer({ store: server.store, stateDir: server.stateDir, env });
  cleanups.push(() => again.kill("SIGKILL"));
  return again;
}

const withoutMetadata = (parts) => parts.filter((p) => p.event !== "metadata");

describe("restarts on the same store", { timeout: 60000 }, () => {
  test("SIGKILL with a thread paused for approval: state, thread and runs survive; the approval still works", async () => {
    const first = await offlineServer();
    let c = client(first.url);
    const t = await c.threads.create();
    const paused = await c.runs.wait(t.thread_id, graphId, { input: sampleInput(requests.soccer) });
    const interrupt = soleInterrupt(paused);
    const stateBefore = await c.threads.getState(t.thread_id);
    const runsBefore = await c.runs.list(t.thread_id);
    const assistant = await c.assistants.get(graphId);

    await first.kill("SIGKILL");
    const second = await restart(first);
    c = client(second.url);
    // the same assistant (its timestamps may be those of the new start)
    const { created_at, updated_at, ...same } = assistant;
    const { created_at: c2, updated_at: u2, ...again } = await c.assistants.get(graphId);
    assert.deepEqual(again, same);
    assert.deepEqual(await c.threads.getState(t.thread_id), stateBefore);
    assert.deepEqual(await c.runs.list(t.thread_id), runsBefore);
    const thread = await c.threads.get(t.thread_id);
    assert.equal(thread.status, "interrupted");

    const v = await c.runs.wait(t.thread_id, graphId, { command: { resume: { decision: "approve" } } });
    assert.equal(v.status, "completed", JSON.stringify(v));
    assert.equal(v.outputs.booking.data.action, "booked");
    assert.notEqual(interrupt.id, undefined);
    assert.equal((await c.threads.get(t.thread_id)).status, "idle");
  });

  test("SIGTERM stops the server cleanly; a clarification answered after the restart", async () => {
    const first = await offlineServer();
    let c = client(first.url);
    const t = await c.threads.create();
    await c.runs.wait(t.thread_id, graphId, { input: sampleInput(requests.piano) });
    const { code, signal, escalated } = await first.kill("SIGTERM");
    assert.ok(!escalated, `still running 15 s after SIGTERM; stderr:\n${first.output()}`);
    assert.equal(code, 0, `exit ${code ?? signal}; stderr:\n${first.output()}`);

    const second = await restart(first);
    c = client(second.url);
    assert.equal((await c.threads.get(t.thread_id)).status, "interrupted");
    const v = await c.runs.wait(t.thread_id, graphId, { command: { resume: requests.pianoAnswer } });
    assert.equal(v.status, "awaiting_approval", JSON.stringify(v));
  });

  test("SIGKILL mid-run: after the restart the run continues and the thread is not left busy", async () => {
    const { server: first, model } = await modelServer();
    let c = client(first.url);
    const gate = model.hold("nl_parser", parsedQuestion());
    const t = await c.threads.create();
    const run = await c.runs.create(t.thread_id, graphId, { input: sampleInput(requests.question) });
    await gate.asked;
    assert.equal((await c.runs.get(t.thread_id, run.run_id)).status, "running");

    await first.kill("SIGKILL");
    gate.release(); // nobody is listening any more
    const second = await restart(first, modelEnv(model));
    c = client(second.url);

    const thread = await settledThread(c, t.thread_id);
    assert.ok(["idle", "interrupted"].includes(thread.status), thread.status);
    const done = await finishedRun(c, t.thread_id, run.run_id);
    assert.equal(done.status, "success", JSON.stringify(done));
    assert.equal(thread.status, "idle");
    const state = await c.threads.getState(t.thread_id);
    assert.equal(state.values.status, "completed", JSON.stringify(state.values));
    assert.match(state.values.outputs.query.data.answer, /Everyone is free/);
    // and the thread takes new runs
    const v = await c.runs.wait(t.thread_id, graphId, { input: sampleInput(requests.question) });
    assert.equal(v.status, "completed");
  });

  test("a resumable stream cut by SIGKILL mid-run, rejoined on the restarted server: the union is the whole stream", async () => {
    const { server: first, model } = await modelServer();
    let c = client(first.url);
    const gate = model.hold("nl_parser", parsedQuestion());
    const t = await c.threads.create();
    const controller = new AbortController();
    const stream = c.runs.stream(t.thread_id, graphId, {
      input: sampleInput(requests.question),
      streamMode: ["values", "updates", "custom"],
      streamResumable: true,
      onDisconnect: "continue",
      signal: controller.signal,
    });
    // Read up to the parser's step_started: the run is then inside the held model call.
    const seen = [];
    const iterator = stream[Symbol.asyncIterator]();
    for (;;) {
      const { value, done } = await iterator.next();
      assert.ok(!done, "the stream ended before the parser started");
      seen.push(value);
      if (value.event === "custom" && value.data.kind === "step_started") break;
    }
    await gate.asked;
    const runId = seen[0].data.run_id;
    const lastId = seen.at(-1).id;

    await first.kill("SIGKILL");
    controller.abort();
    await iterator.return?.().catch(() => {});
    gate.release();

    const second = await restart(first, modelEnv(model));
    c = client(second.url);
    const rest = await collect(c.runs.joinStream(t.thread_id, runId, { lastEventId: lastId }));
    const whole = await collect(c.runs.joinStream(t.thread_id, runId, { lastEventId: "-1" }));

    const union = [...withoutMetadata(seen), ...withoutMetadata(rest)];
    const ids = union.map((p) => p.id);
    assert.equal(new Set(ids).size, ids.length, `duplicates: ${JSON.stringify(ids)}`);
    assert.deepEqual(union, withoutMetadata(whole));
    const last = union.filter((p) => p.event === "values").at(-1).data;
    assert.equal(last.status, "completed", JSON.stringify(last));
    const kinds = customEvents(union).map((e) => e.kind);
    assert.ok(kinds.includes("workflow_completed"), JSON.stringify(kinds));
    assert.equal((await c.threads.get(t.thread_id)).status, "idle");
  });

  test("a resumable stream replays the same after a SIGKILL and restart", async () => {
    const first = await offlineServer();
    let c = client(first.url);
    const t = await c.threads.create();
    const original = await collect(
      c.runs.stream(t.thread_id, graphId, {
        input: sampleInput(requests.soccer),
        streamMode: ["values", "updates", "custom"],
        streamResumable: true,
      }),
    );
    const runId = original[0].data.run_id;
    await first.kill("SIGKILL");
    const second = await restart(first);
    c = client(second.url);
    const replay = await collect(c.runs.joinStream(t.thread_id, runId, { lastEventId: "-1" }));
    assert.deepEqual(withoutMetadata(replay), withoutMetadata(original));
  });
});
