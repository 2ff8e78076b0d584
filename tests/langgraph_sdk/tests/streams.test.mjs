// Streams through the SDK: runs.stream's events (metadata first, then values,
// updates and Switchboard's own events as `custom`), monotonic ids, and
// resumable streams: joinStream replays from the start or after an id, and a
// stream cut mid-way and rejoined loses and repeats nothing.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import {
  client,
  collect,
  compareEventIds,
  customEvents,
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

const modes = ["values", "updates", "custom"];
const nodes = [
  "parse",
  "query",
  "schedule",
  "resources",
  "conflicts",
  "resolve",
  "auto_confirm",
  "resolved",
  "cancel",
  "answered",
  "done",
  "declined",
  "unresolved",
  "taken",
];

const withoutMetadata = (parts) => parts.filter((p) => p.event !== "metadata");

function assertIdsIncrease(parts) {
  const ids = parts.filter((p) => p.id !== undefined).map((p) => p.id);
  for (let i = 1; i < ids.length; i++) {
    assert.ok(compareEventIds(ids[i - 1], ids[i]) < 0, `ids not increasing at ${i}: ${JSON.stringify(ids)}`);
  }
  return ids;
}

describe("runs.stream", { timeout: 30000 }, () => {
  test("a completed run: metadata first, then values/updates/custom; the last values are the thread's", async () => {
    const t = await c.threads.create();
    let created;
    const parts = await collect(
      c.runs.stream(t.thread_id, graphId, {
        input: sampleInput(requests.question),
        streamMode: modes,
        onRunCreated: (m) => (created = m),
      }),
    );
    assert.equal(parts[0].event, "metadata", JSON.stringify(parts[0]));
    assert.match(parts[0].data.run_id, uuidPattern);
    assert.equal(created?.run_id, parts[0].data.run_id, "Content-Location names the streamed run");
    const names = new Set(parts.map((p) => p.event));
    for (const name of names) assert.ok(["metadata", ...modes, "end"].includes(name), `unexpected event ${name}`);
    for (const m of modes) assert.ok(names.has(m), `no ${m} event`);
    assert.equal(parts.filter((p) => p.event === "metadata").length, 1);

    const ids = assertIdsIncrease(parts);
    assert.equal(ids.length, parts.filter((p) => p.event !== "end").length, "every event has an id");

    const values = parts.filter((p) => p.event === "values").map((p) => p.data);
    const last = values.at(-1);
    assert.equal(last.status, "completed");
    assert.deepEqual(last, (await c.threads.getState(t.thread_id)).values);

    for (const u of parts.filter((p) => p.event === "updates")) {
      const keys = Object.keys(u.data);
      assert.equal(keys.length, 1, JSON.stringify(u.data));
      assert.ok(nodes.includes(keys[0]), `updates keyed by a node: ${keys[0]}`);
    }
    const updated = parts.filter((p) => p.event === "updates").map((p) => Object.keys(p.data)[0]);
    assert.deepEqual(updated, ["parse", "query"]);

    const events = customEvents(parts);
    for (const e of events) assert.equal(typeof e.kind, "string", JSON.stringify(e));
    const kinds = events.map((e) => e.kind);
    assert.equal(kinds[0], "workflow_started", JSON.stringify(kinds));
    for (const k of ["step_started", "step_completed", "routed", "workflow_completed"]) {
      assert.ok(kinds.includes(k), `${k} missing from ${JSON.stringify(kinds)}`);
    }
    assert.equal(kinds.filter((k) => k === "step_completed").length, 2);
    // each step_completed comes before the values event of its step
    const idxCompleted = parts.findLastIndex((p) => p.event === "custom" && p.data.kind === "step_completed");
    const idxLastValues = parts.findLastIndex((p) => p.event === "values");
    assert.ok(idxCompleted < idxLastValues);

    const [run] = await c.runs.list(t.thread_id);
    assert.equal(run.run_id, parts[0].data.run_id);
    assert.equal(run.status, "success");
  });

  test("a paused run: the last values carry the __interrupt__", async () => {
    const t = await c.threads.create();
    const parts = await collect(
      c.runs.stream(t.thread_id, graphId, { input: sampleInput(requests.soccer), streamMode: modes }),
    );
    const last = parts.filter((p) => p.event === "values").at(-1).data;
    assert.equal(last.status, "awaiting_approval");
    const interrupt = soleInterrupt(last);
    assert.equal(interrupt.value.type, "approval");
    const kinds = customEvents(parts).map((e) => e.kind);
    assert.ok(kinds.includes("approval_requested"), JSON.stringify(kinds));
    assert.deepEqual(last, { ...(await c.threads.getState(t.thread_id)).values, __interrupt__: last.__interrupt__ });
  });

  test("a paused run in updates mode: the pause arrives as {__interrupt__: [...]} (reference 1.5)", async () => {
    const t = await c.threads.create();
    const parts = await collect(
      c.runs.stream(t.thread_id, graphId, { input: sampleInput(requests.soccer), streamMode: ["updates"] }),
    );
    const upd = parts.filter((p) => p.event === "updates" && p.data.__interrupt__);
    assert.equal(upd.length, 1, `one updates event with the __interrupt__: ${JSON.stringify(parts.map((p) => Object.keys(p.data ?? {})))}`);
    const state = await c.threads.getState(t.thread_id);
    assert.deepEqual(upd[0].data.__interrupt__, state.interrupts);
  });

  test("a clarification pause shows as a `paused` event", async () => {
    const t = await c.threads.create();
    const parts = await collect(c.runs.stream(t.thread_id, graphId, { input: sampleInput(requests.piano), streamMode: modes }));
    const kinds = customEvents(parts).map((e) => e.kind);
    assert.ok(kinds.includes("paused"), JSON.stringify(kinds));
    assert.equal(soleInterrupt(parts.filter((p) => p.event === "values").at(-1).data).value.type, "clarification");
  });

  test("the default mode is values only", async () => {
    const t = await c.threads.create();
    const parts = await collect(c.runs.stream(t.thread_id, graphId, { input: sampleInput(requests.question) }));
    assert.deepEqual([...new Set(parts.map((p) => p.event))].filter((e) => e !== "end"), ["metadata", "values"]);
  });

  test("a failing run's stream ends with an error event", async () => {
    const t = await c.threads.create();
    const parts = await collect(
      c.runs.stream(t.thread_id, graphId, { input: sampleInput(requests.question, "garbage"), streamMode: modes }),
    );
    const errors = parts.filter((p) => p.event === "error");
    assert.equal(errors.length, 1, JSON.stringify(parts.map((p) => p.event)));
    assert.equal(typeof errors[0].data.error, "string");
    assert.match(errors[0].data.message, /"now"/);
    assert.equal((await c.threads.get(t.thread_id)).status, "error");
  });

  test("a resume streams on from the pause", async () => {
    const t = await c.threads.create();
    await c.runs.wait(t.thread_id, graphId, { input: sampleInput(requests.piano) });
    const parts = await collect(
      c.runs.stream(t.thread_id, graphId, { command: { resume: requests.pianoAnswer }, streamMode: modes }),
    );
    assert.equal(parts[0].event, "metadata");
    const kinds = customEvents(parts).map((e) => e.kind);
    assert.ok(kinds.includes("resumed") || kinds.includes("workflow_started"), JSON.stringify(kinds));
    assert.equal(parts.filter((p) => p.event === "values").at(-1).data.status, "awaiting_approval");
  });
});

describe("resumable streams", { timeout: 30000 }, () => {
  test("joinStream from -1 replays the run's stream; from an id, only what follows it", async () => {
    const t = await c.threads.create();
    const original = await collect(
      c.runs.stream(t.thread_id, graphId, { input: sampleInput(requests.soccer), streamMode: modes, streamResumable: true }),
    );
    const runId = original[0].data.run_id;
    const replay = await collect(c.runs.joinStream(t.thread_id, runId, { lastEventId: "-1" }));
    assertIdsIncrease(replay);
    assert.deepEqual(withoutMetadata(replay), withoutMetadata(original));

    const body = withoutMetadata(original).filter((p) => p.id !== undefined);
    assert.ok(body.length >= 6, `a long enough stream: ${body.length}`);
    const k = Math.floor(body.length / 2);
    const tail = await collect(c.runs.joinStream(t.thread_id, runId, { lastEventId: body[k].id }));
    assert.deepEqual(withoutMetadata(tail), withoutMetadata(original).slice(withoutMetadata(original).indexOf(body[k]) + 1));
  });

  test("a background run created resumable replays the same from -1 twice", async () => {
    const t = await c.threads.create();
    const run = await c.runs.create(t.thread_id, graphId, {
      input: sampleInput(requests.question),
      streamMode: modes,
      streamResumable: true,
    });
    const first = await collect(c.runs.joinStream(t.thread_id, run.run_id, { lastEventId: "-1" }));
    const second = await collect(c.runs.joinStream(t.thread_id, run.run_id, { lastEventId: "-1" }));
    assert.deepEqual(withoutMetadata(second), withoutMetadata(first));
    const kinds = customEvents(first).map((e) => e.kind);
    assert.equal(kinds[0], "workflow_started", JSON.stringify(kinds));
    assert.equal(first.filter((p) => p.event === "values").at(-1).data.status, "completed");
  });

  test("a stream cut mid-way and rejoined after the last id seen: the union is the whole stream, nothing twice", async () => {
    const t = await c.threads.create();
    const controller = new AbortController();
    let runId;
    const seen = [];
    const stream = c.runs.stream(t.thread_id, graphId, {
      input: sampleInput(requests.soccer),
      streamMode: modes,
      streamResumable: true,
      onDisconnect: "continue",
      signal: controller.signal,
      onRunCreated: (m) => (runId = m.run_id),
    });
    for await (const part of stream) {
      seen.push(part);
      if (withoutMetadata(seen).length === 3) break; // leaves the loop: the SDK cancels the response body
    }
    controller.abort();
    runId ??= seen[0].data.run_id;
    const lastId = seen.at(-1).id;
    assert.ok(lastId !== undefined);

    const rest = await collect(c.runs.joinStream(t.thread_id, runId, { lastEventId: lastId }));
    const whole = await collect(c.runs.joinStream(t.thread_id, runId, { lastEventId: "-1" }));
    const union = [...withoutMetadata(seen), ...withoutMetadata(rest)];
    const ids = union.map((p) => p.id);
    assert.equal(new Set(ids).size, ids.length, `duplicates: ${JSON.stringify(ids)}`);
    assert.deepEqual(union, withoutMetadata(whole));
    assert.equal(union.filter((p) => p.event === "values").at(-1).data.status, "awaiting_approval");
  });
});
