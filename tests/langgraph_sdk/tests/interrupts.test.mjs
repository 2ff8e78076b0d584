// Pauses answered through the SDK: `command: {resume}` runs on the paused
// thread for a clarification and for an approval (approve, reject), the 409
// for a thread that waits for nothing, and two resumes racing on one pause.
//
// Each booking that is approved here books a slot no other test of the suite
// books (the tests share one calendar when run.sh runs them on one server).
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import {
  client,
  collect,
  customEvents,
  graphId,
  rejection,
  requests,
  sampleInput,
  soleInterrupt,
  statusOf,
  suiteServer,
  toolOf,
} from "../lib/harness.mjs";

let server;
let c;
before(async () => {
  server = await suiteServer();
  c = client(server.url);
});
after(() => server?.stop());

async function pausedThread(request) {
  const t = await c.threads.create();
  const v = await c.runs.wait(t.thread_id, graphId, { input: sampleInput(request) });
  return { threadId: t.thread_id, values: v, interrupt: soleInterrupt(v) };
}

describe("answering an approval", { timeout: 30000 }, () => {
  test("approve: the booking is made, the run completes, the thread is idle", async () => {
    const { threadId, interrupt } = await pausedThread("Dentist appointment for Leo on Tuesday 4-5pm, he needs the minivan");
    assert.equal(interrupt.value.type, "approval");
    assert.equal(interrupt.value.calls[0].arguments.start, "2026-11-24T16:00");

    const v = await c.runs.wait(threadId, graphId, { command: { resume: { decision: "approve" } } });
    assert.equal(v.status, "completed", JSON.stringify(v));
    assert.equal(v.outputs.booking.data.action, "booked", JSON.stringify(v.outputs.booking));
    assert.deepEqual(v.input, sampleInput("Dentist appointment for Leo on Tuesday 4-5pm, he needs the minivan"));
    assert.equal(v.__interrupt__, undefined);
    assert.equal((await c.threads.get(threadId)).status, "idle");
    const runs = await c.runs.list(threadId);
    assert.deepEqual(
      runs.map((r) => r.status),
      ["success", "success"],
    );
    const state = await c.threads.getState(threadId);
    assert.deepEqual(state.next, []);
  });

  test("reject with a reason: nothing is booked, the run ends at 'declined'", async () => {
    const { threadId } = await pausedThread("Book club for Ana on Friday 7-9pm");
    const v = await c.runs.wait(threadId, graphId, {
      command: { resume: { decision: "reject", reason: "Ana is away that evening" } },
    });
    assert.equal(v.status, "completed", JSON.stringify(v));
    assert.equal(v.outputs.booking.data.action, "declined", JSON.stringify(v.outputs.booking));
    assert.equal((await c.threads.get(threadId)).status, "idle");
  });
});

describe("answering a clarification", { timeout: 30000 }, () => {
  test("the answer goes to the parser; the run then pauses for approval of the booking", async () => {
    const { threadId, interrupt } = await pausedThread(requests.piano);
    assert.equal(interrupt.value.type, "clarification");

    const v = await c.runs.wait(threadId, graphId, { command: { resume: requests.pianoAnswer } });
    assert.equal(v.status, "awaiting_approval", JSON.stringify(v));
    const approval = soleInterrupt(v);
    assert.equal(approval.value.type, "approval");
    assert.notEqual(approval.id, interrupt.id, "a new pause has a new interrupt id");
    const [call] = approval.value.calls;
    assert.equal(call.tool, "calendar.book");
    assert.equal(call.arguments.title, "Piano lesson");
    assert.equal(call.arguments.start, "2026-12-02T17:00");
    assert.equal(call.arguments.end, "2026-12-02T18:00");
    assert.deepEqual(call.arguments.participants, ["Leo"]);
    assert.equal((await c.threads.get(threadId)).status, "interrupted");

    const done = await c.runs.wait(threadId, graphId, { command: { resume: { decision: "approve" } } });
    assert.equal(done.status, "completed", JSON.stringify(done));
    assert.equal(done.outputs.booking.data.action, "booked");
    assert.equal((await c.threads.get(threadId)).status, "idle");
  });

  test("a resume keyed by interrupt id (several-interrupt form) is accepted too", async () => {
    const { threadId, interrupt } = await pausedThread(requests.piano);
    const v = await c.runs.wait(threadId, graphId, { command: { resume: { [interrupt.id]: requests.pianoAnswer } } });
    assert.equal(v.status, "awaiting_approval", JSON.stringify(v));
    assert.equal(soleInterrupt(v).value.calls[0].arguments.title, "Piano lesson");
  });
});

describe("resuming a thread that waits for nothing", { timeout: 30000 }, () => {
  test("a completed thread: 409", async () => {
    const t = await c.threads.create();
    const v = await c.runs.wait(t.thread_id, graphId, { input: sampleInput(requests.question) });
    assert.equal(v.status, "completed");
    const e = await rejection(c.runs.wait(t.thread_id, graphId, { command: { resume: { decision: "approve" } } }));
    assert.equal(statusOf(e), 409, String(e));
    assert.equal((await c.threads.get(t.thread_id)).status, "idle", "the refused resume changed nothing");
  });

  test("a thread that never ran: 409", async () => {
    const t = await c.threads.create();
    const e = await rejection(c.runs.create(t.thread_id, graphId, { command: { resume: "Wednesday 5-6pm" } }));
    assert.equal(statusOf(e), 409, String(e));
  });

  test("a thread already resumed: the second resume of the same pause gets 409", async () => {
    const { threadId } = await pausedThread("Book club for Ana on Friday 7-9pm");
    const v = await c.runs.wait(threadId, graphId, { command: { resume: { decision: "reject", reason: "no" } } });
    assert.equal(v.status, "completed");
    const e = await rejection(c.runs.wait(threadId, graphId, { command: { resume: { decision: "reject", reason: "no" } } }));
    assert.equal(statusOf(e), 409, String(e));
  });
});

describe("two resumes posted at once", { timeout: 30000 }, () => {
  test("exactly one is accepted, the other gets 409, and the booking is made once", async () => {
    const request = "Guitar lesson for Maya on Wednesday 3-4pm";
    const { threadId, interrupt } = await pausedThread(request);
    assert.equal(interrupt.value.calls[0].arguments.title, "Guitar lesson");

    const resume = () =>
      collect(
        c.runs.stream(threadId, graphId, {
          command: { resume: { decision: "approve" } },
          streamMode: ["values", "custom"],
        }),
      );
    const outcomes = await Promise.allSettled([resume(), resume()]);
    const accepted = outcomes.filter((o) => o.status === "fulfilled");
    const refused = outcomes.filter((o) => o.status === "rejected");
    assert.equal(accepted.length, 1, outcomes.map((o) => o.reason ?? "ok").join("; "));
    assert.equal(refused.length, 1);
    assert.equal(statusOf(refused[0].reason), 409, String(refused[0].reason));

    const parts = accepted[0].value;
    const books = customEvents(parts).filter((e) => e.kind === "tool_called" && toolOf(e) === "calendar.book");
    assert.equal(books.length, 1, JSON.stringify(customEvents(parts)));
    const finalValues = parts.filter((p) => p.event === "values").at(-1).data;
    assert.equal(finalValues.status, "completed");
    assert.equal(finalValues.outputs.booking.data.action, "booked");

    const thread = await c.threads.get(threadId);
    assert.equal(thread.status, "idle");
    const runs = await c.runs.list(threadId);
    assert.equal(runs.length, 2, "the paused run and the one accepted resume: " + JSON.stringify(runs));

    // The calendar, asked on another thread, has the lesson once.
    const t2 = await c.threads.create();
    const q = await c.runs.wait(t2.thread_id, graphId, { input: sampleInput("What does Maya have on Wednesday?") });
    assert.equal(q.status, "completed", JSON.stringify(q));
    const answer = q.outputs.query.data.answer;
    assert.equal(answer.split("Guitar lesson").length - 1, 1, answer);
  });
});
