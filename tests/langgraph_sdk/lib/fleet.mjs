// Several `switchboard serve` processes on one PostgreSQL database, sharing
// one state directory (so one calendar: the external ledger of the booking
// tool), for the many-hubs fault tests: start, kill with any signal,
// restart, find which one executes a thread, and call whichever is alive
// with retries that never post a run twice.
import { randomUUID } from "node:crypto";

import { client, graphId, modelEnv, scratchDir, startServer, statusOf } from "./harness.mjs";

export const leaseSeconds = 2;

// The client of a hub that is not running: every call rejects (no HTTP status).
const stoppedHub = new Proxy(
  {},
  {
    get: () =>
      new Proxy(
        {},
        {
          get: () => async () => {
            throw new Error("the hub is not running");
          },
        },
      ),
  },
);

export class Fleet {
  // `model`: a fake model (lib/fake_model.mjs) for the LLM-backed agents;
  // without one the sample runs its offline agents. `urlOf(i)`: hub i's
  // store URL when hubs reach the database differently (through a proxy each).
  constructor({ url, urlOf = () => url, size = 3, model = null, maxThreads = 16 }) {
    this.urlOf = urlOf;
    this.size = size;
    this.env = model ? modelEnv(model) : {};
    this.args = ["--lease", String(leaseSeconds), "--max-threads", String(maxThreads), "--grace", "2"];
    this.stateDir = scratchDir("sb-fleet-state-");
    this.hubs = new Array(size).fill(null);
    this.logs = new Array(size).fill("");
  }

  async start() {
    for (let i = 0; i < this.size; i++) await this.startHub(i);
    return this;
  }

  // `env`: variables for this start of hub i only (a crash point).
  async startHub(i, env = {}) {
    this.hubs[i] = await startServer({ store: this.urlOf(i), stateDir: this.stateDir, env: { ...this.env, ...env }, args: this.args });
    this.hubs[i].client = client(this.hubs[i].url);
    return this.hubs[i];
  }

  // Sends `signal` to hub i; for a signal that ends it, resolves once it exited
  // (its log kept for a failure's message).
  async signal(i, signal) {
    const hub = this.hubs[i];
    if (signal === "SIGSTOP" || signal === "SIGCONT") {
      hub.proc.kill(signal);
      return;
    }
    await hub.kill(signal, 5000);
    this.logs[i] += hub.output();
    this.hubs[i] = null;
  }

  async stopAll() {
    for (let i = 0; i < this.size; i++) {
      const hub = this.hubs[i];
      if (!hub) continue;
      hub.proc.kill("SIGCONT");
      await this.signal(i, "SIGKILL");
    }
  }

  alive() {
    return this.hubs.map((h, i) => (h ? i : -1)).filter((i) => i >= 0);
  }

  // Hub i's client; one whose calls fail as a network error would when the
  // hub was stopped since the caller picked it.
  client(i) {
    return this.hubs[i]?.client ?? stoppedHub;
  }

  // The hub whose server holds the thread in the run queue (its owner id
  // names the process: host:pid:start/serve-…), or -1.
  hubHolding(pg, database, threadId) {
    const [row] = pg.psql(`SELECT owner FROM switchboard_queue WHERE workflow_id = '${threadId}'`, database);
    const pid = Number(/^[^:]*:(\d+):/.exec(row?.owner ?? "")?.[1]);
    return this.hubs.findIndex((h) => h && h.proc.pid === pid);
  }

  output() {
    return this.hubs.map((h, i) => `--- hub ${i}\n${this.logs[i]}${h ? h.output() : ""}`).join("\n");
  }
}

// Calls fn(client) on a live hub, the next one on a network error or a 5xx
// (a hub killed or restarting, a database session cut), until `timeoutMs`.
// A 4xx is the answer and is thrown.
export async function onAnyHub(fleet, fn, { timeoutMs = 60000, pick = Math.random } = {}) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    const alive = fleet.alive();
    if (alive.length > 0) {
      const i = alive[Math.floor(pick() * alive.length)];
      try {
        return await fn(fleet.client(i), i);
      } catch (e) {
        const status = statusOf(e);
        if (status !== undefined && status < 500) throw e;
        last = e;
      }
    }
    if (Date.now() > deadline) throw new Error(`no hub answered in ${timeoutMs} ms; last: ${last?.stack ?? last}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

// Posts a run on the thread (input or command) through any hub, exactly
// once. Each attempt carries a key of its own in the run's metadata
// (post_key). After an attempt whose outcome is unknown (the hub died, a
// 5xx) the thread's runs are searched for its key on every live hub, once
// their catalogs have had time to converge, before posting again; so is
// the thread when a later attempt is refused because it waits for nothing
// ("is not waiting for input": that earlier attempt may have answered it).
// The keys of attempts refused with a 4xx go to `options.refused`: a run
// carrying one must never exist (the caller checks).
export async function postRunOnce(fleet, threadId, payload, options = {}) {
  const base = randomUUID();
  const uncertain = []; // keys of attempts that may have posted the run
  const deadline = Date.now() + (options.timeoutMs ?? 60000);
  for (let attempt = 1; ; ) {
    const alive = fleet.alive();
    if (alive.length === 0) {
      if (Date.now() > deadline) throw new Error(`no hub alive to post a run to in ${options.timeoutMs ?? 60000} ms`);
      await new Promise((r) => setTimeout(r, 100));
      continue;
    }
    const i = alive[Math.floor((options.pick ?? Math.random)() * alive.length)];
    const key = `${base}/${attempt++}`;
    const keyed = { ...payload, metadata: { ...(payload.metadata ?? {}), post_key: key } };
    try {
      return await fleet.client(i).runs.create(threadId, graphId, keyed); // one attempt: no retry here
    } catch (e) {
      const status = statusOf(e);
      if (status !== undefined && status < 500) options.refused?.push(key);
      const notWaiting = status === 409 && /is not waiting for input/.test(String(e));
      if (notWaiting && uncertain.length > 0) {
        const posted = await postedWithKey(fleet, threadId, uncertain);
        if (posted) return posted;
      }
      // 409 "busy": the thread's holder has not let it go yet (or an earlier
      // attempt went through); "not waiting for input" is the caller's to judge.
      const busy = status === 409 && !notWaiting;
      if (status !== undefined && status < 500 && !busy) throw e;
      if (status === undefined || status >= 500) uncertain.push(key);
      if (Date.now() > deadline) throw e;
    }
    if (uncertain.length === 0) {
      await new Promise((r) => setTimeout(r, catalogLagMs));
      continue;
    }
    const posted = await postedWithKey(fleet, threadId, uncertain);
    if (posted) return posted;
  }
}

// The thread's run posted with one of `keys`, looked for on every live hub
// once their catalogs have had time to converge; null when none has it.
async function postedWithKey(fleet, threadId, keys) {
  await new Promise((r) => setTimeout(r, catalogLagMs));
  for (const i of fleet.alive()) {
    const runs = await fleet.client(i).runs.list(threadId).catch(() => []);
    const posted = runs.find((r) => keys.includes(r.metadata?.post_key));
    if (posted) return posted;
  }
  return null;
}

// How long a run journaled by one server may take to show on the others
// (each follows the catalog's journal with a 500 ms wait).
const catalogLagMs = 1500;

// Creates a thread with an id of the test's own (so a retry cannot make a second).
export async function createThread(fleet, options = {}) {
  const threadId = randomUUID();
  await onAnyHub(fleet, (c) => c.threads.create({ threadId, ifExists: "do_nothing" }), options);
  return threadId;
}

// The run once it ended, read through any live hub.
export async function endedRun(fleet, threadId, runId, { timeoutMs = 90000 } = {}) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const r = await onAnyHub(fleet, (c) => c.runs.get(threadId, runId), { timeoutMs });
    if (r.status !== "pending" && r.status !== "running") return r;
    if (Date.now() > deadline) throw new Error(`run ${runId} still ${r.status} after ${timeoutMs} ms`);
    await new Promise((res) => setTimeout(res, 100));
  }
}

// A small seeded generator (mulberry32): the load's choices replay with the seed.
export function seededRandom(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
