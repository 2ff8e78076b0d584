// What every test file of the suite shares: where the repository, the
// binary and the sample are; a server of the test's own (spawned, killed,
// restarted on the same store); the sample's inputs; the graph's system
// assistant id; polling for a condition; reading a stream to the end.
//
// run.sh starts one server for the suite and passes its URL in SWITCHBOARD_URL;
// tests that kill and restart a server, or need other options, start their own
// with startServer().
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

import { Client } from "@langchain/langgraph-sdk";

export const suiteDir = resolve(dirname(fileURLToPath(import.meta.url)), "..");
export const repoRoot = resolve(suiteDir, "..", "..");
export const sampleWorkflow = join(repoRoot, "examples", "scheduling", "workflow.json");
export const switchboardBin = process.env.SWITCHBOARD_BIN || join(repoRoot, "build", "bin", "switchboard");

export const graphId = "family_scheduling";
// A Monday morning: "Saturday" is 2026-11-28, "Wednesday" 2026-11-25.
export const now = "2026-11-23T09:00";

// The sample's requests (each checked with `switchboard run` offline).
export const requests = {
  // parses, schedules, pauses for approval of calendar.book (never approved in
  // the suite, so it can run on any thread any number of times)
  soccer: "Soccer practice for Maya on Saturday 2-4pm, she needs the minivan",
  // pauses for clarification; "Wednesday 5-6pm" then pauses for approval
  piano: "Piano lesson for Leo sometime next week",
  pianoAnswer: "Wednesday 5-6pm",
  // completes without a pause
  question: "When is everyone free on Sunday?",
};

export function sampleInput(request, at = now) {
  return { request, now: at };
}

// uuid5(namespace, name): RFC 4122 section 4.3 with SHA-1.
export function uuid5(namespace, name) {
  const ns = Buffer.from(namespace.replace(/-/g, ""), "hex");
  const hash = createHash("sha1").update(ns).update(Buffer.from(name, "utf8")).digest();
  const b = Buffer.from(hash.subarray(0, 16));
  b[6] = (b[6] & 0x0f) | 0x50;
  b[8] = (b[8] & 0x3f) | 0x80;
  const hex = b.toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

export const graphNamespace = "6ba7b821-9dad-11d1-80b4-00c04fd430c8";
export const systemAssistantId = (graph) => uuid5(graphNamespace, graph);

export const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

// The suite's shared server: run.sh's (SWITCHBOARD_URL), or one of the
// file's own when the file runs alone (node --test tests/x.test.mjs).
// Returns {url, stop()}.
export async function suiteServer() {
  if (process.env.SWITCHBOARD_URL) return { url: process.env.SWITCHBOARD_URL.replace(/\/$/, ""), stop: async () => {} };
  const server = await startServer();
  return { url: server.url, stop: () => server.stop() };
}

// A client of `url`. Retries off: a test must see the server's first answer
// (the SDK would retry 5xx and network errors four times with backoff).
export function client(url, options = {}) {
  return new Client({ apiUrl: url, apiKey: null, callerOptions: { maxRetries: 0 }, ...options });
}

// A scratch directory removed when the process exits.
const scratchDirs = [];
export function scratchDir(prefix = "sb-sdk-") {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  scratchDirs.push(dir);
  return dir;
}

const liveServers = new Set();
process.on("exit", () => {
  for (const s of liveServers) {
    try {
      s.proc.kill("SIGKILL");
    } catch {}
  }
  for (const d of scratchDirs) {
    try {
      rmSync(d, { recursive: true, force: true });
    } catch {}
  }
});

// Starts `switchboard serve WORKFLOW --listen 127.0.0.1:0 --store sqlite:STORE`
// (or --store STORE when it is a URL: postgresql://…) with SWITCHBOARD_STATE_DIR=stateDir and the model variables unset (the
// sample then runs its offline agents), and resolves once the first line of
// its standard output says where it listens. The same store and state
// directory passed again make a restart of the same server.
//
// Returns {url, port, proc, output(), kill(signal), stop()}: kill() sends the
// signal and resolves when the process has exited; stop() is kill("SIGTERM").
export async function startServer({
  store,
  stateDir,
  workflow = sampleWorkflow,
  args = [],
  env = {},
  startTimeoutMs = 30000,
} = {}) {
  stateDir ??= scratchDir("sb-sdk-state-");
  store ??= join(stateDir, "runs.db");
  const childEnv = { ...process.env };
  for (const name of [
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_BASE_URL",
    "SWITCHBOARD_MODEL",
    "SWITCHBOARD_PROVIDER",
    "SWITCHBOARD_OUTPUT_MODE",
    "SWITCHBOARD_SCHEMA_PATH",
    "SWITCHBOARD_PLUGIN_PATH",
    "SWITCHBOARD_PROMPT_PATH",
  ]) {
    delete childEnv[name];
  }
  Object.assign(childEnv, { SWITCHBOARD_STATE_DIR: stateDir }, env);
  const storeArg = /^[a-z]+:\/\//.test(store) ? store : `sqlite:${store}`;
  const argv = ["serve", workflow, "--listen", "127.0.0.1:0", "--store", storeArg, ...args];
  const proc = spawn(switchboardBin, argv, { env: childEnv, stdio: ["ignore", "pipe", "pipe"] });
  let stderr = "";
  proc.stderr.setEncoding("utf8");
  proc.stderr.on("data", (chunk) => {
    stderr += chunk;
    if (stderr.length > 200000) stderr = stderr.slice(-100000);
  });
  const exited = new Promise((resolve) => {
    proc.once("exit", (code, signal) => resolve({ code, signal }));
    proc.once("error", (error) => {
      stderr += `\n${error}`;
      resolve({ code: null, signal: null, error });
    });
  });
  const server = {
    proc,
    store,
    stateDir,
    output: () => stderr,
    exited,
    // Sends `signal` and resolves with {code, signal} once the process exited;
    // one that outlives `escalateMs` is killed with SIGKILL (and `escalated` set).
    async kill(signal = "SIGTERM", escalateMs = 15000) {
      let escalated = false;
      let timer;
      if (proc.exitCode === null && proc.signalCode === null) {
        proc.kill(signal);
        if (signal !== "SIGKILL") {
          timer = setTimeout(() => {
            escalated = true;
            proc.kill("SIGKILL");
          }, escalateMs);
        }
      }
      const r = await exited;
      clearTimeout(timer);
      liveServers.delete(server);
      return { ...r, escalated };
    },
    stop() {
      return server.kill("SIGTERM");
    },
  };
  liveServers.add(server);

  const lines = createInterface({ input: proc.stdout });
  const firstLine = new Promise((resolve) => lines.once("line", resolve));
  let timer;
  const outcome = await Promise.race([
    firstLine.then((line) => ({ line })),
    exited.then((r) => ({ exit: r })),
    new Promise((resolve) => {
      timer = setTimeout(() => resolve({ timeout: true }), startTimeoutMs);
    }),
  ]);
  clearTimeout(timer);
  // Keep draining standard output so the server never blocks on a full pipe.
  lines.on("line", () => {});
  if (!outcome.line) {
    await server.kill("SIGKILL");
    const why = outcome.exit
      ? `exited (${outcome.exit.code ?? outcome.exit.signal})`
      : `printed nothing in ${startTimeoutMs} ms`;
    throw new Error(`switchboard ${argv.join(" ")} ${why}; stderr:\n${stderr}`);
  }
  const m = /^listening on (http:\/\/127\.0\.0\.1:(\d+))\/?\s*$/.exec(outcome.line);
  if (!m) {
    await server.kill("SIGKILL");
    throw new Error(`unexpected first line from switchboard serve: ${JSON.stringify(outcome.line)}`);
  }
  server.url = m[1];
  server.port = Number(m[2]);
  return server;
}

// Writes a file of the scratch directory and returns its path.
export function writeScratchFile(name, text, dir = scratchDir()) {
  const file = join(dir, name);
  writeFileSync(file, text, { mode: 0o600 });
  return file;
}

// Polls `probe` (sync or async) until it returns a truthy value, which it
// resolves to; rejects with `what` and the last value seen after `timeoutMs`.
export async function waitFor(probe, { timeoutMs = 20000, intervalMs = 25, what = "condition" } = {}) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      last = await probe();
      if (last) return last;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; last: ${describe(last)}`);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

function describe(v) {
  if (v instanceof Error) return v.stack || String(v);
  try {
    return JSON.stringify(v);
  } catch {
    return String(v);
  }
}

// Every part of an SDK stream, in order.
export async function collect(stream) {
  const parts = [];
  for await (const part of stream) parts.push(part);
  return parts;
}

// The thread's status once it is no longer busy (a background run ended).
export async function settledThread(c, threadId, opts = {}) {
  return waitFor(
    async () => {
      const t = await c.threads.get(threadId);
      return t.status !== "busy" ? t : null;
    },
    { what: `thread ${threadId} to leave busy`, ...opts },
  );
}

// The run once its status is final (success, error, timeout, interrupted).
export async function finishedRun(c, threadId, runId, opts = {}) {
  return waitFor(
    async () => {
      const r = await c.runs.get(threadId, runId);
      return r.status !== "pending" && r.status !== "running" ? r : null;
    },
    { what: `run ${runId} to finish`, ...opts },
  );
}

// The Switchboard events (stream mode "custom") of a list of stream parts.
export const customEvents = (parts) => parts.filter((p) => p.event === "custom").map((p) => p.data);

// The calls a `tool_called` event reports, whatever nesting the server uses.
export function toolOf(event) {
  return event?.tool_call?.tool ?? event?.tool ?? event?.call?.tool ?? null;
}

// Raw HTTP (what the SDK cannot send: bad bodies, missing auth).
export async function http(url, path, { method = "GET", headers = {}, body } = {}) {
  const res = await fetch(url + path, { method, headers, body });
  const text = await res.text();
  let json;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}

// The status of an SDK error (HTTPError), or undefined.
export function statusOf(error) {
  return error?.status ?? error?.response?.status;
}

// Resolves to the error `promise` rejects with; fails when it resolves.
export async function rejection(promise) {
  try {
    const v = await promise;
    throw Object.assign(new Error(`expected a rejection, got ${describe(v)}`), { unexpected: true });
  } catch (e) {
    if (e.unexpected) throw e;
    return e;
  }
}

// --- what the sample's values look like

// The one interrupt of paused values (`__interrupt__` of a values event or of
// a wait/join result), checked for shape: [{id: uuid, value}].
export function soleInterrupt(values) {
  const list = values?.__interrupt__;
  if (!Array.isArray(list) || list.length !== 1) {
    throw new Error(`expected one __interrupt__, got ${JSON.stringify(list)} in ${JSON.stringify(values)}`);
  }
  const [i] = list;
  if (typeof i.id !== "string" || !uuidPattern.test(i.id)) throw new Error(`interrupt id is not a UUID: ${JSON.stringify(i)}`);
  if (i.value === null || typeof i.value !== "object") throw new Error(`interrupt value is not an object: ${JSON.stringify(i)}`);
  return i;
}

// Compares two stream event ids: numbers ("7"), Redis-like ("1700000000-3"),
// else as strings. Negative when a < b.
export function compareEventIds(a, b) {
  const parse = (s) => {
    const m = /^(\d+)(?:-(\d+))?$/.exec(String(s));
    return m ? [BigInt(m[1]), BigInt(m[2] ?? 0)] : null;
  };
  const pa = parse(a);
  const pb = parse(b);
  if (pa && pb) {
    if (pa[0] !== pb[0]) return pa[0] < pb[0] ? -1 : 1;
    if (pa[1] !== pb[1]) return pa[1] < pb[1] ? -1 : 1;
    return 0;
  }
  return String(a) < String(b) ? -1 : String(a) > String(b) ? 1 : 0;
}

// --- servers whose LLM-backed agents ask the test's fake model

// The environment that points a server at `model` (lib/fake_model.mjs).
export function modelEnv(model) {
  return { OPENAI_BASE_URL: model.baseUrl, OPENAI_API_KEY: "test-key", SWITCHBOARD_MODEL: "fake-model" };
}

// A fake model that answers every question run ("When is everyone free on
// Sunday?") and a server that uses it. Returns {server, model, c}; restart
// with startServer({store: server.store, stateDir: server.stateDir, env: modelEnv(model)}).
export async function startServerWithModel(options = {}) {
  const { startFakeModel, parsedQuestion, answeredQuestion } = await import("./fake_model.mjs");
  const model = await startFakeModel();
  model.answerAlways("nl_parser", parsedQuestion());
  model.answerAlways("query", answeredQuestion());
  const server = await startServer({ ...options, env: { ...modelEnv(model), ...(options.env ?? {}) } });
  return { server, model, c: client(server.url) };
}
