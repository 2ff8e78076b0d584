// The crash-point matrix: a booking that pauses for approval, is approved
// and books, while the hub executing it is SIGKILLed at a named moment of
// the run (SWITCHBOARD_FAULT_KILL_AT, orchestrator/crash_point.hpp) — once per
// point, each on a database of its own. Hub 0 runs alone with the point
// armed, so the run meets it there; when hub 0 dies, hubs 1 and 2 start and
// hub 0 comes back without it, and the flow goes on through whichever hub is
// alive. Afterwards the run ended once, the thread completed with the
// booking made, and the checker (lib/pg_checker.mjs) finds every promise
// kept: journals contiguous, fences never back, each stream ended once and
// nothing after its end, the approval journaled once, the calendar holding
// the booking once.
//
// The sample's calendar tools are idempotent (a repeated call answers what
// the first did), so a call cut off after its effect is made again and
// replays; the non-idempotent case (`unknown_outcome`, never repeated) is
// covered by tests/orchestrator/tool_call_test.cpp, whose tool kills its
// process mid-call.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { answeredQuestion, parsedEvent, startFakeModel } from "../lib/fake_model.mjs";
import { Fleet, createThread, endedRun, leaseSeconds, onAnyHub, postRunOnce } from "../lib/fleet.mjs";
import { sampleInput, waitFor } from "../lib/harness.mjs";
import { FenceWatcher, checkLedger, checkStore, startPostgres } from "../lib/pg_checker.mjs";

const dentist = "Dentist appointment for Leo on Tuesday 4-5pm, he needs the minivan";
const points = [
  ["serve.claimed", "a server claimed the thread of the new run"],
  ["serve.pause_saved", "the run paused for approval and was saved, its end not yet in the catalog"],
  ["serve.answer_journaled", "the approval's run was journaled, not yet offered to the queue"],
  ["tool.effect_made", "the booking was made, its result not yet recorded"],
  ["tool.result_recorded", "the booking's result was recorded"],
  ["serve.completion_saved", "the run completed and was saved, its end not yet in the catalog"],
];

let pg;
let model;
const cleanups = [];
before(async () => {
  pg = startPostgres();
  model = await startFakeModel();
  model.answerAlways("nl_parser", parsedEvent({ title: "Dentist appointment", date: "2026-11-24", start: "16:00", end: "17:00", participants: ["Leo"], resources: ["minivan"] }));
  model.answerAlways("query", answeredQuestion());
});
after(async () => {
  for (const f of cleanups.reverse()) await f();
  await model?.close();
  pg?.stop();
});

// Hub 0 alone, armed with `point`; once it died there, the other two start
// and it starts again, unarmed. Resolves with how hub 0 ended.
async function fleetArmedAt(point, database) {
  const fleet = new Fleet({ url: pg.createDatabase(database), model });
  cleanups.push(() => fleet.stopAll());
  const armed = await fleet.startHub(0, { SWITCHBOARD_FAULT_KILL_AT: point });
  const crashed = armed.exited.then(async (ended) => {
    fleet.logs[0] += armed.output();
    fleet.hubs[0] = null;
    for (const i of [1, 2, 0]) await fleet.startHub(i);
    return ended;
  });
  return { fleet, crashed };
}

describe("a hub SIGKILLed at each crash point of a booking", { timeout: 300000 }, () => {
  points.forEach(([point, moment], n) => {
    test(`${point}: killed when ${moment}; another hub finishes the run, nothing twice`, async () => {
      const database = `crash_points_${n}`;
      const { fleet, crashed } = await fleetArmedAt(point, database);
      const fences = new FenceWatcher(pg, database);
      cleanups.push(() => fences.stop());

      const threadId = await createThread(fleet);
      const first = await postRunOnce(fleet, threadId, { input: sampleInput(dentist) }, { timeoutMs: 90000 });
      assert.equal((await endedRun(fleet, threadId, first.run_id)).status, "success");
      const approval = await postRunOnce(fleet, threadId, { command: { resume: { decision: "approve" } } }, { timeoutMs: 90000 });
      assert.equal((await endedRun(fleet, threadId, approval.run_id)).status, "success");

      // Both runs ended: hub 0 met the point on the way (or never will).
      const ended = await Promise.race([crashed, new Promise((r) => setTimeout(() => r(null), 10000))]);
      assert.ok(ended, `hub 0 never reached ${point}:\n${fleet.output().slice(-5000)}`);
      assert.equal(ended.signal, "SIGKILL", `hub 0 ended ${JSON.stringify(ended)}`);
      assert.match(fleet.logs[0], new RegExp(`crash point '${point.replace(".", "\\.")}' reached`));

      const state = await waitFor(async () => {
        const v = (await onAnyHub(fleet, (c) => c.threads.getState(threadId))).values;
        return v?.status === "completed" ? v : null;
      }, { what: "the thread to be completed" });
      assert.equal(state.outputs.booking.data.action, "booked", JSON.stringify(state));
      const runs = await onAnyHub(fleet, (c) => c.runs.list(threadId));
      assert.deepEqual(runs.map((r) => r.status), ["success", "success"], JSON.stringify(runs));

      // A server lets a thread go just after its run's end is written.
      await waitFor(() => pg.psql("SELECT count(*) AS n FROM switchboard_queue", database)[0].n === 0, {
        what: "the run queue to drain",
        timeoutMs: 4000 * leaseSeconds,
      });
      fences.stop();
      assert.deepEqual(fences.wentBack, [], "fencing numbers went back");
      const store = checkStore(pg, database);
      assert.deepEqual(store.problems, [], `store problems:\n${store.problems.join("\n")}\nlogs:\n${fleet.output().slice(-20000)}`);
      assert.deepEqual(store.approvals.map((a) => a.n), [1], "the approval journaled once");
      const ledger = checkLedger(fleet.stateDir, new Set([first.run_id]));
      assert.deepEqual(ledger.problems, [], "ledger problems");
      assert.equal(ledger.operations, 1, "one booking in the calendar");
    });
  });
});
