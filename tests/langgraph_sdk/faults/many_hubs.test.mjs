// Three `switchboard serve` processes on one PostgreSQL database (a private
// server the file starts and removes), sharing the runs, under faults:
//   a. a run posted to one hub, streamed from another, its state read from a third;
//   b. a pause answered through another hub; one approval posted to two hubs at once;
//      an approval refused while a dead server's claim lapses leaves the thread answerable;
//   c. SIGKILL of the hub executing a run held mid-step: another continues it;
//   d. SIGSTOP of the executing hub past its lease, SIGCONT after a takeover;
//   e. pg_terminate_backend of every hub's sessions under load;
//   f. PostgreSQL itself crashed and restarted (-m immediate) twice under load;
//   g. the executing hub cut off from the database by a network partition
//      (a TCP proxy stalls its connections, then drops them) past its lease.
// Each scenario has a database of its own; after each, the checker
// (lib/pg_checker.mjs) reads the tables and the calendar (the booking tool's
// external ledger, shared by the three hubs through one state directory).
//
// A run is kept mid-step by the fake model (lib/fake_model.mjs) holding the
// parser's answer; nothing waits on a sleep but the lease itself.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { parsedEvent, parsedQuestion, answeredQuestion, startFakeModel, vagueEvent } from "../lib/fake_model.mjs";
import { Fleet, createThread, leaseSeconds, endedRun, onAnyHub, postRunOnce } from "../lib/fleet.mjs";
import { collect, compareEventIds, graphId, rejection, requests, sampleInput, soleInterrupt, statusOf, waitFor } from "../lib/harness.mjs";
import { FenceWatcher, checkLedger, checkStore, startPostgres } from "../lib/pg_checker.mjs";
import { TcpProxy } from "../lib/tcp_proxy.mjs";

let pg;
const cleanups = [];
before(() => {
  pg = startPostgres();
});
after(async () => {
  for (const f of cleanups.reverse()) await f();
  pg?.stop();
});

let databases = 0;
const leftRunning = []; // scenario e's hub runs left running (e2 says there are none)
const knownProblems = []; // what the checker found of those in scenario e
const staleEnds = []; // stream events after a run's end, in d and g (d2 asserts there are none)
const isStaleEnd = (problem) => /: events after its end: /.test(problem);
// A database, three hubs on it (with the fake model when given one), and a fence watcher.
// `urlOf(database, url)`: hub i's URL of the database, when not `url`.
async function scenario(model = null, urlOf = null) {
  const database = `many_hubs_${++databases}`;
  const url = pg.createDatabase(database);
  const fleet = await new Fleet({ url, urlOf: urlOf ? urlOf(database, url) : undefined, model }).start();
  cleanups.push(() => fleet.stopAll());
  const fences = new FenceWatcher(pg, database);
  cleanups.push(() => fences.stop());
  return { database, fleet, fences };
}

// Every promise the checker knows, for a scenario that ended.
// `excused(problem)`: true for a problem the test reports on its own (a known bug).
async function assertChecked({ database, fleet, fences }, approvedHubRuns, excused = () => false) {
  // A server lets a thread go just after its run's end is written: give
  // the queue a few leases to drain (a thread left claimed is then reported).
  await waitFor(() => pg.psql("SELECT count(*) AS n FROM switchboard_queue", database)[0].n === 0, {
    what: "the run queue to drain",
    timeoutMs: 4000 * leaseSeconds,
  }).catch(() => {});
  fences.stop();
  assert.deepEqual(fences.wentBack, [], "fencing numbers went back");
  const store = checkStore(pg, database);
  store.problems = store.problems.filter((p) => !excused(p));
  assert.deepEqual(store.problems, [], `store problems:\n${store.problems.join("\n")}\nlogs:\n${fleet.output().slice(-20000)}`);
  const ledger = checkLedger(fleet.stateDir, new Set(approvedHubRuns));
  assert.deepEqual(ledger.problems, [], "ledger problems");
  return { store, ledger };
}

const dentist = "Dentist appointment for Leo on Tuesday 4-5pm, he needs the minivan";
const withoutMetadata = (parts) => parts.filter((p) => p.event !== "metadata");

function modelWithQuestions() {
  return startFakeModel().then((model) => {
    model.answerAlways("query", answeredQuestion());
    cleanups.push(() => model.close());
    return model;
  });
}

// 30 runs posted one after the other through any hub, a booking every
// third (it pauses for approval), else a question; each pushed to `posted`.
async function postThirtyRuns(s, posted) {
  for (let k = 0; k < 30; k++) {
    const threadId = await createThread(s.fleet);
    const request = k % 3 === 0 ? dentist : requests.question;
    const run = await postRunOnce(s.fleet, threadId, { input: sampleInput(request) });
    posted.push({ threadId, run, request });
  }
}

// Each of the three hubs completes a run of its own (it still takes work).
async function eachHubCompletesARun(s) {
  const threadId = await createThread(s.fleet);
  for (const i of [0, 1, 2]) {
    const completed = await waitFor(async () => {
      const v = await s.fleet.client(i).runs.wait(threadId, graphId, { input: sampleInput(requests.question) });
      return v?.status === "completed";
    }, { what: `hub ${i} to complete a run`, intervalMs: 100 });
    assert.ok(completed);
  }
}

// A booking posted to hub 0, held in its parser's model call: the thread,
// the run, the model's gate, and the hub executing it.
async function heldBooking(s, model) {
  const event = parsedEvent({ title: "Dentist appointment", date: "2026-11-24", start: "16:00", end: "17:00", participants: ["Leo"], resources: ["minivan"] });
  const gate = model.hold("nl_parser", event);
  model.answerAlways("nl_parser", event);
  const threadId = await createThread(s.fleet);
  const run = await s.fleet.client(0).runs.create(threadId, graphId, { input: sampleInput(dentist) });
  await gate.asked;
  const holder = s.fleet.hubHolding(pg, s.database, threadId);
  assert.ok(holder >= 0, "a hub holds the thread");
  return { gate, threadId, run, holder };
}

// Another hub claims the thread `lost` held once its lease lapsed, and runs
// it to the pause (it may have let the thread go again by the time this
// looks: nobody holding it is `lost` no longer holding it too). Returns the
// fleet without `lost`.
async function takenOverToThePause(s, { threadId, run }, lost) {
  await waitFor(() => s.fleet.hubHolding(pg, s.database, threadId) !== lost,
                { what: "another hub to claim the thread", timeoutMs: 30000 });
  const others = s.fleet.alive().filter((i) => i !== lost);
  const onOthers = { ...s.fleet, alive: () => others, client: (i) => s.fleet.client(i) };
  const paused = await endedRun(onOthers, threadId, run.run_id);
  assert.equal(paused.status, "success", JSON.stringify(paused));
  return onOthers;
}

// The booking approved through `onOthers`; then `lost`, serving again,
// tells the thread completed, booked, with its two runs, idle.
async function approvedAndSeenBy(s, onOthers, threadId, lost) {
  const approved = await postRunOnce(onOthers, threadId, { command: { resume: { decision: "approve" } } }, { pick: () => 0 });
  assert.equal((await endedRun(onOthers, threadId, approved.run_id)).status, "success");
  const final = await waitFor(async () => {
    const v = (await s.fleet.client(lost).threads.getState(threadId)).values;
    return v?.status === "completed" ? v : null;
  }, { what: "the hub that lost the thread to tell it completed" });
  assert.equal(final.outputs.booking.data.action, "booked", JSON.stringify(final));
  const runs = await s.fleet.client(lost).runs.list(threadId);
  assert.deepEqual(runs.map((r) => r.status), ["success", "success"], `runs: ${JSON.stringify(runs)}\n${s.fleet.hubs[lost].output()}`);
  assert.equal((await s.fleet.client(lost).threads.get(threadId)).status, "idle");
}

describe("three hubs on one PostgreSQL", { timeout: 300000 }, () => {
  test("a. posted to one hub, streamed from another, state read from a third: every event once, in order", async () => {
    const model = await modelWithQuestions();
    const s = await scenario(model);
    const gate = model.hold("nl_parser", parsedQuestion());
    model.answerAlways("nl_parser", parsedQuestion());
    const threadId = await createThread(s.fleet);
    const run = await s.fleet.client(0).runs.create(threadId, graphId, {
      input: sampleInput(requests.question),
      streamMode: ["values", "updates", "custom"],
      streamResumable: true,
    });
    await gate.asked;
    const executing = await waitFor(() => {
      const i = s.fleet.hubHolding(pg, s.database, threadId);
      return i >= 0 ? { i } : null;
    }, { what: "the hub executing the thread" });
    const [streamer, reader] = [0, 1, 2].filter((i) => i !== executing.i);
    const joined = collect(s.fleet.client(streamer).runs.joinStream(threadId, run.run_id, { lastEventId: "-1" }));
    gate.release();
    const seen = withoutMetadata(await joined);

    const ids = seen.map((p) => p.id);
    assert.ok(ids.length > 5 && ids.every((id) => id !== undefined), JSON.stringify(ids));
    for (let k = 1; k < ids.length; k++) assert.ok(compareEventIds(ids[k - 1], ids[k]) < 0, `ids out of order: ${ids}`);
    const kinds = seen.filter((p) => p.event === "custom").map((p) => p.data.kind);
    assert.equal(kinds.filter((k) => k === "workflow_completed").length, 1, JSON.stringify(kinds));
    assert.equal(kinds.at(-1), "workflow_completed");
    // the same stream replayed from the third hub
    const replay = await collect(s.fleet.client(reader).runs.joinStream(threadId, run.run_id, { lastEventId: "-1" }));
    assert.deepEqual(withoutMetadata(replay), seen);
    const state = await s.fleet.client(reader).threads.getState(threadId);
    assert.equal(state.values.status, "completed", JSON.stringify(state.values));
    assert.match(state.values.outputs.query.data.answer, /Everyone is free/);
    assert.equal((await s.fleet.client(reader).threads.get(threadId)).status, "idle");
    await assertChecked(s, []);
  });

  test("b. a pause answered through another hub; one approval posted to two hubs at once: one 200, one 409", async () => {
    const s = await scenario();
    const threadId = await createThread(s.fleet);
    const paused = await s.fleet.client(0).runs.wait(threadId, graphId, { input: sampleInput(dentist) });
    assert.equal(soleInterrupt(paused).value.type, "approval");
    const hubRun = (await s.fleet.client(1).runs.list(threadId))[0].run_id;
    assert.equal((await s.fleet.client(2).threads.get(threadId)).status, "interrupted");

    const approve = { command: { resume: { decision: "approve" } } };
    const outcomes = await Promise.allSettled([
      s.fleet.client(1).runs.create(threadId, graphId, approve),
      s.fleet.client(2).runs.create(threadId, graphId, approve),
    ]);
    const accepted = outcomes.filter((o) => o.status === "fulfilled");
    const refused = outcomes.filter((o) => o.status === "rejected");
    assert.equal(accepted.length, 1, JSON.stringify(outcomes.map((o) => o.status)));
    assert.equal(statusOf(refused[0].reason), 409, String(refused[0].reason));

    const done = await endedRun(s.fleet, threadId, accepted[0].value.run_id);
    assert.equal(done.status, "success", JSON.stringify(done));
    const state = await s.fleet.client(0).threads.getState(threadId);
    assert.equal(state.values.outputs.booking.data.action, "booked", JSON.stringify(state.values.outputs.booking));
    assert.equal(state.values.outputs.booking.data.replayed, false);
    // (its withdrawal reaches every server's catalog within a follow of it)
    await waitFor(async () => {
      const runs = await s.fleet.client(0).runs.list(threadId);
      return runs.length === 2 || Promise.reject(new Error(JSON.stringify(runs.map((r) => [r.run_id, r.status, r.kwargs]))));
    }, {
      what: "the refused approval to leave no run",
      timeoutMs: 5000,
    });
    const { store } = await assertChecked(s, [hubRun]);
    assert.deepEqual(store.approvals.map((a) => a.n), [1]);
  });

  test("b2. an approval refused while a dead server's claim on the thread lapses is accepted once it has", async () => {
    const s = await scenario();
    const threadId = await createThread(s.fleet);
    const paused = await s.fleet.client(0).runs.wait(threadId, graphId, { input: sampleInput(dentist) });
    assert.equal(soleInterrupt(paused).value.type, "approval");
    const hubRun = (await s.fleet.client(0).runs.list(threadId))[0].run_id;
    // A server killed after writing its run's end, before letting the thread
    // go: its claim stays in the queue until its lease lapses.
    pg.exec(
      "INSERT INTO switchboard_queue (workflow_id, workflow_name, reason, payload, owner, lease_expires_ns, fence, enqueue_seq)" +
        ` VALUES ('${threadId}', 'serve.thread', 'new_run', '', 'elsewhere:1:1/serve-gone',` +
        ` (extract(epoch FROM clock_timestamp()) * 1e9)::bigint + ${leaseSeconds} * 1000000000, 1, nextval('switchboard_enqueue_seq'))`,
      s.database,
    );
    const approve = { command: { resume: { decision: "approve" } } };
    const refused = await rejection(s.fleet.client(1).runs.create(threadId, graphId, approve));
    assert.equal(statusOf(refused), 409, String(refused));
    assert.equal((await s.fleet.client(2).threads.get(threadId)).status, "interrupted", "the refused run left the thread as it was");
    // once a server took the lapsed claim over and let the thread go, the approval is accepted
    await waitFor(() => pg.psql(`SELECT 1 FROM switchboard_queue WHERE workflow_id = '${threadId}'`, s.database).length === 0, {
      what: "the lapsed claim to be taken over and let go",
      timeoutMs: 30000,
    });
    const accepted = await s.fleet.client(2).runs.create(threadId, graphId, approve);
    assert.equal((await endedRun(s.fleet, threadId, accepted.run_id)).status, "success");
    const state = await s.fleet.client(1).threads.getState(threadId);
    assert.equal(state.values.outputs.booking.data.action, "booked", JSON.stringify(state.values));
    await assertChecked(s, [hubRun]);
  });

  test("c. SIGKILL of the hub executing a held step: another continues after the lease; nothing repeats", async () => {
    const model = await modelWithQuestions();
    const s = await scenario(model);
    model.answer("nl_parser", vagueEvent("Piano lesson"));
    const piano = parsedEvent({ title: "Piano lesson", date: "2026-11-25", start: "17:00", end: "18:00", participants: ["Leo"] });
    const threadId = await createThread(s.fleet);
    const asked = await s.fleet.client(0).runs.wait(threadId, graphId, { input: sampleInput(requests.piano) });
    assert.equal(soleInterrupt(asked).value.type, "clarification");
    const hubRun = (await s.fleet.client(0).runs.list(threadId))[0].run_id;

    const gate = model.hold("nl_parser", piano);
    model.answerAlways("nl_parser", piano);
    const answer = await s.fleet.client(1).runs.create(threadId, graphId, { command: { resume: requests.pianoAnswer } });
    await gate.asked;
    const victim = s.fleet.hubHolding(pg, s.database, threadId);
    assert.ok(victim >= 0, "a hub holds the thread");
    await s.fleet.signal(victim, "SIGKILL");
    gate.release(); // nobody is listening any more

    const resumed = await endedRun(s.fleet, threadId, answer.run_id);
    assert.equal(resumed.status, "success", `${JSON.stringify(resumed)}\n${s.fleet.output()}`);
    const state = await onAnyHub(s.fleet, (c) => c.threads.getState(threadId));
    assert.equal(state.values.status, "awaiting_approval", JSON.stringify(state.values));
    const approved = await postRunOnce(s.fleet, threadId, { command: { resume: { decision: "approve" } } });
    assert.equal((await endedRun(s.fleet, threadId, approved.run_id)).status, "success");
    const final = await onAnyHub(s.fleet, (c) => c.threads.getState(threadId));
    assert.equal(final.values.outputs.booking.data.action, "booked", JSON.stringify(final.values));
    // the parser: asked for the request, then the held answer (cut by the kill), then once more
    assert.equal(model.agents().filter((a) => a === "nl_parser").length, 3, JSON.stringify(model.agents()));
    const { store } = await assertChecked(s, [hubRun]);
    assert.deepEqual(store.approvals.map((a) => a.n), [1]);
  });

  test("d. SIGSTOP of the executing hub past its lease, SIGCONT after the takeover: its writes are refused", async () => {
    const model = await modelWithQuestions();
    const s = await scenario(model);
    const held = await heldBooking(s, model);
    const frozen = held.holder;
    await s.fleet.signal(frozen, "SIGSTOP");
    cleanups.push(() => s.fleet.hubs[frozen]?.proc.kill("SIGCONT"));
    const onOthers = await takenOverToThePause(s, held, frozen);

    // The frozen hub wakes up inside its model call and gets the answer: its save must be refused.
    await s.fleet.signal(frozen, "SIGCONT");
    held.gate.release();
    await waitFor(() => /save of workflow '[^']+' refused: fencing number \d+ .* is stale/.test(s.fleet.hubs[frozen].output()), {
      what: "the woken hub's save to be refused as stale",
      timeoutMs: 30000,
    });
    await approvedAndSeenBy(s, onOthers, held.threadId, frozen);
    staleEnds.push(...checkStore(pg, s.database).problems.filter(isStaleEnd));
    await assertChecked(s, [held.run.run_id], isStaleEnd);
  });

  test("e. every hub's database sessions terminated under load: the hubs reconnect, every run finishes", async (t) => {
    const s = await scenario();
    const posted = [];
    let terminated = 0;
    const load = postThirtyRuns(s, posted);
    for (let round = 0; round < 5; round++) {
      await waitFor(() => posted.length >= round * 6, { what: `${round * 6} runs posted`, timeoutMs: 60000 });
      terminated += pg.terminateSessions(s.database);
    }
    await load;
    assert.ok(terminated > 0, "sessions were terminated");
    // A run whose save met a terminated session fails (the store does not
    // retry a fenced save whose outcome it cannot know); every run ends.
    const failed = new Set();
    const ended = [];
    for (const p of posted) ended.push({ ...p, done: await endedRun(s.fleet, p.threadId, p.run.run_id) });
    // A hub run whose last save met a cut session was once left `running`
    // (e2 checks that none is): its thread's state would be the stale row's.
    const stuck = new Set(checkStore(pg, s.database).runs.filter((r) => r.status === "running").map((r) => r.workflow_id));
    for (const { threadId, run, request, done } of ended) {
      if (stuck.has(run.run_id)) {
        leftRunning.push(run.run_id);
        continue;
      }
      if (done.status === "error") {
        failed.add(run.run_id);
        const thread = await onAnyHub(s.fleet, (c) => c.threads.get(threadId));
        assert.equal(thread.status, "error", JSON.stringify(thread));
        continue;
      }
      const state = await onAnyHub(s.fleet, (c) => c.threads.getState(threadId));
      assert.equal(done.status, "success", `${JSON.stringify(done)}\n${s.fleet.output().slice(-30000)}`);
      assert.equal(state.values.status, request === dentist ? "awaiting_approval" : "completed", JSON.stringify(state.values));
    }
    t.diagnostic(
      `${terminated} sessions terminated; of ${posted.length} runs ${failed.size} failed on a cut session, ` +
        `${leftRunning.length} left running`,
    );
    // and the hubs still claim new work after it all
    // (a pooled session cut while idle is found on its next use: that run
    // may fail; the next one runs on a new session)
    await eachHubCompletesARun(s);
    // What e2 checks: a run whose save, or whose stream's end, met a cut
    // session left `running` under its live server, its stream unended.
    const known = (p) => / ended as running$| is still owned by | ended 0 times$/.test(p);
    knownProblems.push(...checkStore(pg, s.database).problems.filter(known));
    const { store } = await assertChecked(s, [], known);
    // (a run failed before its hub run was first saved has none)
    assert.ok(store.runs.length >= posted.length - failed.size - leftRunning.length + 3, `${store.runs.length} hub runs`);
  });

  // A save that meets a cut session may or may not have landed: the hub
  // saves nothing more of that run and gives it up (checkpoint_store::
  // release), so the server that claims its thread next continues it from
  // its last save, instead of the row staying `running` under a live server
  // whose lease keeper renews it for ever; a completion not kept is reported
  // failed, not completed. Catalog records and the stream's end are written
  // again until kept, so no stream is left without its end.
  test("e2. a save or append that meets a cut session leaves no run running and no stream unended", () => {
    assert.deepEqual({ leftRunning, knownProblems }, { leftRunning: [], knownProblems: [] });
  });

  // A PostgreSQL that crashes loses no committed write but cuts every
  // session at once, mid-statement or idle, and refuses connections while
  // it recovers: the hubs' pools, their listeners and their retried writes
  // all meet it together.
  test("f. PostgreSQL crashed and restarted under load: the hubs reconnect, every run ends once, nothing twice", async (t) => {
    const s = await scenario();
    const posted = [];
    const load = postThirtyRuns(s, posted);
    load.catch(() => {}); // awaited below; a failure meanwhile is not left unhandled
    for (const when of [6, 18]) {
      await waitFor(() => posted.length >= when, { what: `${when} runs posted`, timeoutMs: 60000 });
      await pg.restart(1);
    }
    await load;
    const failed = [];
    for (const { threadId, run, request } of posted) {
      const done = await endedRun(s.fleet, threadId, run.run_id).catch((e) => {
        throw new Error(`${e}\n${s.fleet.output().slice(-30000)}`);
      });
      if (done.status === "error") {
        failed.push(run.run_id);
        continue;
      }
      assert.equal(done.status, "success", `${JSON.stringify(done)}\n${s.fleet.output().slice(-30000)}`);
      const state = await onAnyHub(s.fleet, (c) => c.threads.getState(threadId));
      assert.equal(state.values.status, request === dentist ? "awaiting_approval" : "completed", JSON.stringify(state.values));
    }
    t.diagnostic(`of ${posted.length} runs ${failed.length} failed on the crash`);
    // A save cut by the crash gives its run up at its last save that landed
    // and another claim continues it: none fails for it.
    assert.deepEqual(failed, [], s.fleet.output().slice(-30000));
    // The hubs still take new work, each of them.
    await eachHubCompletesARun(s);
    await assertChecked(s, []);
  });

  test("g. the executing hub partitioned from the database past its lease: another continues, the partitioned one's writes are refused", async () => {
    const model = await modelWithQuestions();
    const proxies = [];
    cleanups.push(() => Promise.all(proxies.map((p) => p.close())));
    for (let i = 0; i < 3; i++) proxies.push(await TcpProxy.start(pg.port));
    const s = await scenario(model, (database) => (i) => pg.tcpUrl(database, proxies[i].port));
    const held = await heldBooking(s, model);
    const cut = held.holder;
    proxies[cut].stall();
    // Its renewals unanswered, its lease lapses: another hub takes the run
    // over and runs the step again, to the pause.
    const onOthers = await takenOverToThePause(s, held, cut);

    // The partitioned hub gets its model's answer and saves into the
    // silence; the partition ends with its connections dropped.
    held.gate.release();
    await new Promise((r) => setTimeout(r, 500));
    proxies[cut].cut();
    proxies[cut].heal();
    // Its save met the dropped connection (outcome unknown: it gives the run
    // up, and the store refuses, another hub holding it) or, sent again, was
    // refused by the fence.
    await waitFor(() => /not given up: |refused: fencing number \d+ .* is stale/.test(s.fleet.hubs[cut].output()), {
      what: "the store to refuse the partitioned hub",
      timeoutMs: 30000,
    });
    await approvedAndSeenBy(s, onOthers, held.threadId, cut);
    // the parser: asked by the partitioned hub (its answer never saved), then by the one that took over
    assert.equal(model.agents().filter((a) => a === "nl_parser").length, 2, JSON.stringify(model.agents()));
    staleEnds.push(...checkStore(pg, s.database).problems.filter(isStaleEnd));
    const { store } = await assertChecked(s, [held.run.run_id], isStaleEnd);
    assert.deepEqual(store.approvals.map((a) => a.n), [1]);
  });

  // The woken hub's save is refused, and so are the events of the step it
  // was in: a stream takes records only under its thread's claim in the
  // run queue, checked in the append's transaction (ADR 0037), so nothing
  // lands after the end the hub that took over wrote.
  test("d2. a hub woken past its lease appends nothing to the stream of the run it lost", () => {
    assert.deepEqual(staleEnds, []);
  });
});

describe("ten hubs on one PostgreSQL", { timeout: 300000 }, () => {
  // Each hub opens at most 9 connections (docs/scaling.md): ten fit the
  // 100 PostgreSQL allows by default, with its reserved ones to spare.
  test("h. ten hubs loaded at once stay within 90 connections, and every run completes", async () => {
    const database = `many_hubs_${++databases}`;
    const url = pg.createDatabase(database);
    const fleet = await new Fleet({ url, size: 10 }).start();
    cleanups.push(() => fleet.stopAll());
    const runs = 40;
    const outcomes = await Promise.all(
      Array.from({ length: runs }, async (_, k) => {
        const threadId = await createThread(fleet);
        const values = await fleet.client(k % 10).runs.wait(threadId, graphId, { input: sampleInput(requests.question) });
        return values?.status;
      }),
    );
    assert.deepEqual(outcomes, new Array(runs).fill("completed"));
    const [{ connections }] = pg.psql(
      `SELECT count(*)::int AS connections FROM pg_stat_activity WHERE datname = '${database}' AND pid <> pg_backend_pid()`,
      database,
    );
    assert.ok(connections >= 10 && connections <= 90, `${connections} connections for ten hubs`);
  });
});
