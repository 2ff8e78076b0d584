// A seeded load on three `switchboard serve` processes sharing one
// PostgreSQL database (a private server the file starts and removes), while
// the test kills (SIGKILL, or SIGTERM) and restarts a hub at random moments,
// or pauses one (SIGSTOP) past its lease and continues it. Each thread runs
// one of the sample's flows through whichever hub is alive: a booking that
// pauses for approval and is approved, or rejected, or left paused; a
// question that completes. Afterwards the checker
// (lib/pg_checker.mjs) proves: every run ended exactly once, each hub run's
// journal is contiguous, no tool record or approval was committed twice
// (every pause answered at most once), the fencing numbers never went
// back, the calendar (the booking tool's external ledger) holds each
// approved booking once and nothing else, and no post refused with a 4xx
// left a run behind (each attempt's key is in its run's metadata).
//
//   SWITCHBOARD_FAULT_RUNS  threads to drive (default 150: about half a minute on 2 cores)
//   SWITCHBOARD_FAULT_SEED  the seed of the choices (default: from the clock; printed)
//   SWITCHBOARD_FAULT_LOG   a file to write the hubs' logs to at the end
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { after, before, test } from "node:test";

import { Fleet, createThread, endedRun, leaseSeconds, onAnyHub, postRunOnce, seededRandom } from "../lib/fleet.mjs";
import { requests, sampleInput, statusOf } from "../lib/harness.mjs";
import { FenceWatcher, checkLedger, checkStore, startPostgres } from "../lib/pg_checker.mjs";

const threads = Number(process.env.SWITCHBOARD_FAULT_RUNS ?? 150);
const seed = Number(process.env.SWITCHBOARD_FAULT_SEED ?? Date.now() % 2 ** 31);
const concurrency = 6;

let pg;
let fleet;
const staleEnds = []; // stream events after a run's end (the stale-end test asserts there are none)
const refused = []; // post keys of attempts refused with a 4xx: no run may carry one
const refusedYetApplied = []; // runs carrying such a key (the last test asserts there are none)
const isStaleEnd = (problem) => /: events after its end: /.test(problem);
let fences;
before(() => {
  pg = startPostgres();
});
after(async () => {
  fences?.stop();
  await fleet?.stopAll();
  if (process.env.SWITCHBOARD_FAULT_LOG && fleet) writeFileSync(process.env.SWITCHBOARD_FAULT_LOG, fleet.output());
  pg?.stop();
});

const dentist = "Dentist appointment for Leo on Tuesday 4-5pm, he needs the minivan";
// Thread k books in a week of its own (its Monday is 2026-11-23 + k weeks), so bookings never collide.
function mondayOf(k) {
  const d = new Date(Date.UTC(2026, 10, 23 + 7 * k));
  return d.toISOString().slice(0, 10);
}

function chooseKind(random) {
  const r = random();
  if (r < 0.4) return "approve";
  if (r < 0.6) return "reject";
  if (r < 0.75) return "leave";
  return "question";
}

// One thread's flow; returns what the checker needs to know of it. The
// person takes a moment (`pause` ms) before answering.
async function drive(k, kind, pause) {
  const input = sampleInput(kind === "question" ? requests.question : dentist, `${mondayOf(k)}T09:00`);
  const threadId = await createThread(fleet);
  const first = await postRunOnce(fleet, threadId, { input }, { refused });
  const outcome = { k, kind, threadId, hubRun: first.run_id, runs: [first.run_id] };
  outcome.firstStatus = (await endedRun(fleet, threadId, first.run_id)).status;
  if (kind === "question" || kind === "leave" || outcome.firstStatus !== "success") return outcome;
  await new Promise((r) => setTimeout(r, pause));
  const decision = kind === "approve" ? { decision: "approve" } : { decision: "reject", reason: "not that week" };
  let second;
  for (const deadline = Date.now() + 60000; !second; ) {
    try {
      second = await postRunOnce(fleet, threadId, { command: { resume: decision } }, { refused });
    } catch (e) {
      if (statusOf(e) !== 409 || Date.now() > deadline) throw e;
      // "not waiting for input": a server whose catalog is behind, or an
      // attempt whose answer was lost answered it and the search for it
      // missed (the catalogs slower than it waited). Which run answered is
      // then read from the thread (and no refused attempt's, the last test checks).
      const state = await onAnyHub(fleet, (c) => c.threads.getState(threadId));
      if (state.values?.status === "completed") {
        outcome.answeredUnseen = true;
        return outcome;
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  outcome.runs.push(second.run_id);
  outcome.secondStatus = (await endedRun(fleet, threadId, second.run_id)).status;
  return outcome;
}

// What the tables say of a thread: its queue row, hub runs and catalog records.
function tablesOf(thread) {
  const q = (sql) => JSON.stringify(pg.psql(sql, "many_hubs_load"));
  const catalog = `SELECT position, event FROM switchboard_events WHERE workflow_id = 'switchboard.serve.catalog' AND event LIKE '%${thread}%'`;
  return (
    `\nqueue: ${q(`SELECT * FROM switchboard_queue WHERE workflow_id = '${thread}'`)}` +
    `\nhub runs: ${q(`SELECT workflow_id, status, step, owner, fence, journal_length FROM switchboard_runs WHERE workflow_id IN (SELECT substring(event from '"run_id":"([0-9a-f-]+)"') FROM (${catalog}) c)`)}` +
    `\ncatalog: ${q(`${catalog} ORDER BY position`)}`
  );
}

// A thread's flow that failed, with what the tables say of its thread.
function explained(error, k, kind) {
  const thread = /Thread ([0-9a-f-]{36})/i.exec(String(error))?.[1];
  return new Error(`thread ${k} (${kind}): ${error}${thread ? tablesOf(thread) : ""}\nseed ${seed}; hubs alive: ${fleet.alive()}`);
}

// Every 0.25-1.25 s, one live hub at a time: SIGKILL (most often) or
// SIGTERM and a restart, or SIGSTOP past its lease and SIGCONT (its
// threads are taken over meanwhile; what it writes after is refused).
async function chaos(random, done, log) {
  while (!done()) {
    await new Promise((r) => setTimeout(r, 250 + random() * 1000));
    if (done()) break;
    const alive = fleet.alive();
    const victim = alive[Math.floor(random() * alive.length)];
    const r = random();
    const signal = r < 0.6 ? "SIGKILL" : r < 0.8 ? "SIGTERM" : "SIGSTOP";
    log.push(`${signal} hub ${victim}`);
    if (signal === "SIGSTOP") {
      await fleet.signal(victim, "SIGSTOP");
      await new Promise((res) => setTimeout(res, leaseSeconds * 1000 + 500 + random() * 1000));
      await fleet.signal(victim, "SIGCONT");
      continue;
    }
    await fleet.signal(victim, signal);
    await new Promise((res) => setTimeout(res, 100 + random() * 700));
    await fleet.startHub(victim);
  }
}

test("a seeded load across three hubs killed and restarted at random: every run ends once, nothing twice", { timeout: 900000 }, async (t) => {
  t.diagnostic(`seed ${seed} (SWITCHBOARD_FAULT_SEED), ${threads} threads (SWITCHBOARD_FAULT_RUNS)`);
  const random = seededRandom(seed);
  const database = "many_hubs_load";
  fleet = await new Fleet({ url: pg.createDatabase(database) }).start();
  fences = new FenceWatcher(pg, database);

  const kinds = Array.from({ length: threads }, () => chooseKind(random));
  const pauses = Array.from({ length: threads }, () => Math.floor(random() * 300));
  const outcomes = [];
  let next = 0;
  const worker = async () => {
    while (next < threads) {
      const k = next++;
      outcomes.push(await drive(k, kinds[k], pauses[k]).catch((e) => Promise.reject(explained(e, k, kinds[k]))));
    }
  };
  let finished = false;
  const kills = [];
  const chaosDone = chaos(seededRandom(seed + 1), () => finished, kills);
  await Promise.all(Array.from({ length: concurrency }, worker)).finally(() => {
    finished = true;
  });
  await chaosDone;
  t.diagnostic(`${kills.length} hub kills: ${kills.join(", ")}`);

  // Every run as the API tells it, through any hub: the runs posted, each ended once.
  const approved = new Set();
  const problems = [];
  for (const o of outcomes.sort((a, b) => a.k - b.k)) {
    const listed = await onAnyHub(fleet, (c) => c.runs.list(o.threadId));
    const ids = listed.map((r) => r.run_id).reverse();
    for (const r of listed)
      if (refused.includes(r.metadata?.post_key)) refusedYetApplied.push(`thread ${o.k} (${o.kind}): run ${r.run_id}${tablesOf(o.threadId)}`);
    if (JSON.stringify(ids) !== JSON.stringify(o.runs) && !o.answeredUnseen) problems.push(`thread ${o.k} (${o.kind}): runs ${ids}, posted ${o.runs}`);
    for (const r of listed)
      if (r.status !== "success") problems.push(`thread ${o.k} (${o.kind}): run ${r.run_id} ended ${r.status}${tablesOf(o.threadId)}`);
    const state = await onAnyHub(fleet, (c) => c.threads.getState(o.threadId));
    const v = state.values;
    const expected = { approve: "completed", reject: "completed", leave: "awaiting_approval", question: "completed" }[o.kind];
    if (v?.status !== expected) problems.push(`thread ${o.k} (${o.kind}): state ${v?.status}, expected ${expected}`);
    if (o.kind === "approve" && v?.outputs?.booking?.data?.action !== "booked")
      problems.push(`thread ${o.k}: booking ${JSON.stringify(v?.outputs?.booking?.data?.action)}`);
    if (o.kind === "reject" && v?.outputs?.booking?.data?.action !== "declined")
      problems.push(`thread ${o.k}: booking ${JSON.stringify(v?.outputs?.booking?.data?.action)}`);
    if (o.kind === "approve") approved.add(o.hubRun);
  }
  assert.deepEqual(problems, [], `API problems (seed ${seed})`);

  // A server lets a thread go just after its run's end is written.
  for (let i = 0; i < 40 && pg.psql("SELECT count(*) AS n FROM switchboard_queue", database)[0].n > 0; i++)
    await new Promise((r) => setTimeout(r, 250));
  fences.stop();
  assert.deepEqual(fences.wentBack, [], `fencing numbers went back (seed ${seed})`);
  assert.ok(fences.samples > 0);
  const store = checkStore(pg, database);
  staleEnds.push(...store.problems.filter(isStaleEnd));
  const problemsLeft = store.problems.filter((p) => !isStaleEnd(p));
  assert.deepEqual(problemsLeft, [], `store problems (seed ${seed}):\n${problemsLeft.join("\n")}`);
  assert.equal(store.runs.length, threads, "one hub run per thread");
  const answered = outcomes.filter((o) => o.kind === "approve" || o.kind === "reject").length;
  assert.equal(store.approvals.length, answered, "every answered pause has its approval journaled");
  assert.ok(store.approvals.every((a) => a.n === 1), JSON.stringify(store.approvals));
  const ledger = checkLedger(fleet.stateDir, approved);
  assert.deepEqual(ledger.problems, [], `ledger problems (seed ${seed})`);
  assert.equal(ledger.operations, approved.size);
  t.diagnostic(
    `hub runs ${JSON.stringify(store.byStatus)}; ${store.feeds} streams; ${approved.size} bookings; ` +
      `${fences.samples} fence samples`,
  );
});

// A server paused past its lease in the moment it was ending a run (its
// thread journaled, not yet the run) wakes up and tries to write the run's
// last values and its stream's end, while the server that took the thread
// over, having read the run as still running, ends it again: the woken
// server's records are refused (they are made under its claim on the
// thread, which it lost), so the stream holds one end, and nothing after it.
test("a server paused while ending a run writes nothing after the run's end (stale end)", () => {
  assert.deepEqual(staleEnds, []);
});

// A post refused with a 4xx (a 409: the thread busy, or not waiting for
// that answer any more) leaves nothing behind: no run carrying its key
// exists, so no refused answer was applied.
test("a post refused with a 4xx is never applied", () => {
  assert.deepEqual(refusedYetApplied, []);
});
