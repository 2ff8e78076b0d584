// The hub's A2A client: a remote A2A agent as a spoke of a workflow
// ("a2a_agents" in the workflow file), called by `switchboard run` and
// `switchboard resume`. The remote agent is a third party built with the A2A
// project's own server classes (remote_agent.mjs, @a2a-js/sdk pinned in
// package-lock.json), started in this process so that its log of what it was
// sent can be read. Covered: a plain booking; the remote's question paused as
// the run's clarification and answered by another process on the same remote
// task (an answer that is a JSON object as a data part); a wrong artifact,
// none at all, a failed task; the node's timeout, whose retry continues the
// same remote task;
// an agent card nobody serves; the process killed after every write of the
// store, while the task starts and while the answer goes back (never a second
// remote task, never an answer sent twice).
//
//   SWITCHBOARD_BIN=build/bin/switchboard node --test tests/a2a_peers/a2a_client.test.mjs
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { startRemoteAgent } from "./remote_agent.mjs";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const bin = process.env.SWITCHBOARD_BIN ?? join(root, "build/bin/switchboard");

// A booking as the workflow's output schema has it; the remote's "bad" answer breaks it.
const bookingSchema = {
  type: "object", required: ["day", "booked"],
  properties: { day: { type: "string" }, booked: { type: "boolean" } }, additionalProperties: false,
};

// The remote agent, in this process; closed after the test.
async function startAgent(t) {
  const agent = await startRemoteAgent();
  t.after(() => agent.close());
  return agent;
}

// A workflow directory of the test's own, one node calling the remote agent
// through its card, and the store its runs are kept in. `nodeTimeoutMs` sets
// the node's own limit (the agent entry keeps its 10 s).
function workflowDir(t, cardUrl, { nodeTimeoutMs, attempts } = {}) {
  const dir = mkdtempSync(join(tmpdir(), "switchboard-a2a-client-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(join(dir, "schemas"));
  writeFileSync(join(dir, "schemas", "booking.output@1.json"), JSON.stringify(bookingSchema));
  const workflow = {
    name: "remote_booking",
    schemas: ["schemas"],
    a2a_agents: {
      booker: { card: cardUrl, output_schema: "booking.output@1", description: "books a day",
        timeout_ms: 10000, poll_ms: 100 },
    },
    nodes: {
      book: { type: "agent", agent: "booker", ...(nodeTimeoutMs ? { timeout_ms: nodeTimeoutMs } : {}),
        ...(attempts ? { retry: { max_attempts: attempts } } : {}),
        routes: [{ when: "otherwise", to: "done" }] },
      done: { type: "end" },
    },
  };
  const file = join(dir, "workflow.json");
  writeFileSync(file, JSON.stringify(workflow, null, 2));
  return { dir, file, store: `sqlite:${join(dir, "runs.db")}` };
}

// Runs `switchboard ARGS` to its end with standard input closed (so no answer
// is read from it) and without any model configured; its exit code, output
// and, with --json, the final state. Its standard error is printed if the
// test fails.
async function switchboard(t, dir, args, extraEnv = {}) {
  const env = { ...process.env, SWITCHBOARD_STATE_DIR: dir };
  for (const name of ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL",
    "SWITCHBOARD_MODEL", "SWITCHBOARD_PROVIDER", "SWITCHBOARD_OUTPUT_MODE", "SWITCHBOARD_SCHEMA_PATH",
    "SWITCHBOARD_PLUGIN_PATH", "SWITCHBOARD_PROMPT_PATH"]) delete env[name];
  for (const name of Object.keys(env)) if (name.startsWith("OTEL_")) delete env[name];
  Object.assign(env, extraEnv);
  const child = spawn(bin, args, { env, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk) => { stdout += chunk; });
  child.stderr.on("data", (chunk) => { stderr += chunk; });
  // A hub that hangs fails the test rather than the whole file's time limit.
  const killer = setTimeout(() => child.kill("SIGKILL"), 60_000);
  const [code, signal] = await new Promise((r) => child.on("exit", (c, s) => r([c, s])));
  clearTimeout(killer);
  t.after(() => {
    if (t.passed === false) {
      process.stderr.write(`switchboard ${args.join(" ")}\nexit ${code ?? signal}; standard error:\n${stderr}\n` +
        `standard output:\n${stdout}\n`);
    }
  });
  let state;
  try { state = JSON.parse(stdout); } catch { state = undefined; }
  return { code, signal, stdout, stderr, state };
}

const run = (t, flow, input) =>
  switchboard(t, flow.dir, ["run", flow.file, "--input", input, "--store", flow.store, "--json"]);

// The run's errors as one text, for messages and matching.
const errorText = (state) => (state?.errors ?? []).map((e) => `${e.type} (${e.agent}): ${e.message}`).join("\n");

// The requests the remote was sent, by method.
const sent = (agent, method) => agent.log.requests.filter((r) => r.method === method);

test("a plain request: the remote task's artifact becomes the result", async (t) => {
  const agent = await startAgent(t);
  const flow = workflowDir(t, `${agent.url}/.well-known/agent-card.json`);
  const { code, state } = await run(t, flow, "book it");
  assert.equal(state?.status, "completed", errorText(state));
  assert.equal(code, 0);
  assert.deepEqual(state.result.data, { day: "monday", booked: true });
  assert.equal(agent.log.tasks.length, 1, JSON.stringify(agent.log));
  // The request went as a text part and the whole input as a data part.
  const [first] = sent(agent, "SendMessage");
  assert.ok(!first.taskId, JSON.stringify(first));
  assert.ok(first.texts.includes("book it"), JSON.stringify(first));
  assert.deepEqual(first.data, [{ request: "book it" }]);
  assert.equal(first.version, "1.0");
  assert.equal(first.traceparent, undefined);  // not traced: nothing to carry
});

test("a traced run carries its step's traceparent to the remote agent", async (t) => {
  const agent = await startAgent(t);
  const flow = workflowDir(t, `${agent.url}/.well-known/agent-card.json`);
  // Spans go to the agent's server, which refuses them (404): counted by the
  // exporter, no concern of the run's.
  const { state } = await switchboard(t, flow.dir, ["run", flow.file, "--input", "book it", "--store", flow.store,
    "--json"], { OTEL_EXPORTER_OTLP_ENDPOINT: agent.url, OTEL_TRACES_SAMPLER: "always_on" });
  assert.equal(state?.status, "completed", errorText(state));
  const requests = agent.log.requests.filter((r) => r.method === "SendMessage" || r.method === "GetTask");
  assert.ok(requests.length >= 1);
  const parents = new Set(requests.map((r) => r.traceparent));
  assert.equal(parents.size, 1, JSON.stringify([...parents]));  // one step: one parent span
  const [parent] = parents;
  assert.match(parent ?? "", /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
  assert.notEqual(parent.split("-")[1], "0".repeat(32));
});

test("the remote's question: the run pauses, another process answers, the same remote task completes",
  async (t) => {
    const agent = await startAgent(t);
    const flow = workflowDir(t, `${agent.url}/.well-known/agent-card.json`);
    const paused = await run(t, flow, "ask for a day");
    assert.equal(paused.state?.status, "awaiting_clarification", errorText(paused.state));
    assert.equal(paused.code, 3);
    assert.equal(paused.state.clarification.question, "Which day?");
    assert.equal(paused.state.clarification.node, "book");
    assert.equal(agent.log.tasks.length, 1);
    const [{ taskId }] = agent.log.tasks;

    // A new process: the remote task's id comes from the store, not from memory.
    const resumed = await switchboard(t, flow.dir, ["resume", paused.state.id, "--workflow", flow.file,
      "--answer", "tuesday", "--store", flow.store, "--json"]);
    assert.equal(resumed.state?.status, "completed", errorText(resumed.state));
    assert.equal(resumed.code, 0);
    assert.equal(resumed.state.id, paused.state.id);
    assert.deepEqual(resumed.state.result.data, { day: "tuesday", booked: true });

    // One remote task in all; the answer went to it, as a text part.
    assert.equal(agent.log.tasks.length, 1, JSON.stringify(agent.log.tasks));
    const messages = sent(agent, "SendMessage");
    assert.equal(messages.filter((m) => !m.taskId).length, 1, JSON.stringify(messages));
    const replies = messages.filter((m) => m.taskId);
    assert.equal(replies.length, 1, JSON.stringify(messages));
    assert.equal(replies[0].taskId, taskId);
    assert.deepEqual(replies[0].texts, ["tuesday"]);
  });

test("killed after every write of the store: never a second remote task, and the run goes on or says why",
  async (t) => {
    const agent = await startAgent(t);
    let completed = 0;
    let unknown = 0;
    for (let writes = 1; writes <= 12; ++writes) {
      const flow = workflowDir(t, `${agent.url}/.well-known/agent-card.json`);
      const tasksBefore = agent.log.tasks.length;
      const first = await switchboard(t, flow.dir, ["run", flow.file, "--input", "ask for a day", "--store",
        flow.store, "--json"], { SWITCHBOARD_FAULT_KILL_AFTER_WRITES: String(writes) });
      let state = first.state;
      if (first.signal === "SIGKILL") {
        const listed = await switchboard(t, flow.dir, ["runs", "--store", flow.store, "--json"]);
        const runs = Array.isArray(listed.state) ? listed.state : listed.state?.runs ?? [];
        if (runs.length === 0) continue;  // killed before the run was stored: nothing to continue
        const id = runs[0].id ?? runs[0].workflow_id;
        state = (await switchboard(t, flow.dir, ["resume", id, "--workflow", flow.file, "--store", flow.store,
          "--json"])).state;
      }
      const at = `killed after write ${writes}`;
      if (state?.status === "failed") {
        // The one window that cannot be told apart: the start recorded, its task not.
        assert.match(errorText(state), /unknown_outcome.*'sb-[0-9a-f]+'/, `${at}: ${errorText(state)}`);
        ++unknown;
      } else {
        assert.equal(state?.status, "awaiting_clarification", `${at}: ${errorText(state)}`);
        const done = await switchboard(t, flow.dir, ["resume", state.id, "--workflow", flow.file, "--answer",
          "tuesday", "--store", flow.store, "--json"]);
        assert.equal(done.state?.status, "completed", `${at}: ${errorText(done.state)}`);
        assert.deepEqual(done.state.result.data, { day: "tuesday", booked: true });
        ++completed;
      }
      assert.ok(agent.log.tasks.length - tasksBefore <= 1, `${at}: ${agent.log.tasks.length - tasksBefore} tasks`);
      if (first.signal !== "SIGKILL") break;  // past the last write: every commit point was tried
    }
    assert.ok(completed >= 3, `completed ${completed}, unknown outcome ${unknown}`);
  });

test("killed after every write while the answer goes back: the same remote task, asked again at worst",
  async (t) => {
    const agent = await startAgent(t);
    let askedAgain = 0;
    for (let writes = 1; writes <= 12; ++writes) {
      const flow = workflowDir(t, `${agent.url}/.well-known/agent-card.json`);
      const paused = await run(t, flow, "ask for a day");
      assert.equal(paused.state?.status, "awaiting_clarification", errorText(paused.state));
      const [{ taskId }] = agent.log.tasks.slice(-1);
      const tasksBefore = agent.log.tasks.length;
      const answering = await switchboard(t, flow.dir, ["resume", paused.state.id, "--workflow", flow.file,
        "--answer", "tuesday", "--store", flow.store, "--json"], { SWITCHBOARD_FAULT_KILL_AFTER_WRITES: String(writes) });
      let state = answering.state;
      const at = `killed after write ${writes}`;
      if (answering.signal === "SIGKILL") {
        const listed = await switchboard(t, flow.dir, ["runs", "--store", flow.store, "--json"]);
        const stored = (Array.isArray(listed.state) ? listed.state : []).find((r) => r.id === paused.state.id);
        // Killed right after its last save, the run had completed: read it as stored.
        state = stored?.status === "completed"
          ? (await switchboard(t, flow.dir, ["runs", "show", paused.state.id, "--store", flow.store])).state
          : (await switchboard(t, flow.dir, ["resume", paused.state.id, "--workflow", flow.file, "--store",
            flow.store, "--json"])).state;
        if (state?.status === "awaiting_clarification") {
          // Killed before the answer was kept, or kept but not sent: the question stands.
          ++askedAgain;
          state = (await switchboard(t, flow.dir, ["resume", paused.state.id, "--workflow", flow.file, "--answer",
            "tuesday", "--store", flow.store, "--json"])).state;
        }
      }
      assert.equal(state?.status, "completed", `${at}: ${errorText(state)}`);
      assert.deepEqual(state.result.data, { day: "tuesday", booked: true }, at);
      assert.equal(agent.log.tasks.length, tasksBefore, `${at}: a second remote task`);
      const replies = sent(agent, "SendMessage").filter((r) => r.taskId === taskId);
      assert.equal(replies.length, 1, `${at}: ${replies.length} answers sent to the task`);
      if (answering.signal !== "SIGKILL") break;
    }
    assert.ok(askedAgain >= 1, "no kill landed before the answer was sent");
  });

test("an answer that is a JSON object goes back to the remote task as a data part", async (t) => {
  const agent = await startAgent(t);
  const flow = workflowDir(t, `${agent.url}/.well-known/agent-card.json`);
  const { code, state } = await switchboard(t, flow.dir, ["run", flow.file, "--input", "ask for a day",
    "--answer", '{"when": "wednesday"}', "--store", flow.store, "--json"]);
  assert.equal(state?.status, "completed", errorText(state));
  assert.equal(code, 0);
  // The remote books the JSON text of the data part it was sent.
  assert.deepEqual(state.result.data, { day: '{"when":"wednesday"}', booked: true });
  const replies = sent(agent, "SendMessage").filter((m) => m.taskId);
  assert.equal(replies.length, 1);
  assert.equal(replies[0].taskId, agent.log.tasks[0].taskId);
  assert.deepEqual(replies[0].data, [{ when: "wednesday" }]);
  assert.deepEqual(replies[0].texts, []);
});

test("an artifact that breaks the output schema fails the step, naming the agent and the schema", async (t) => {
  const agent = await startAgent(t);
  const flow = workflowDir(t, `${agent.url}/.well-known/agent-card.json`);
  const { code, state } = await run(t, flow, "bad booking");
  assert.equal(state?.status, "failed", JSON.stringify(state?.result));
  assert.equal(code, 1);
  const errors = errorText(state);
  assert.match(errors, /booker/);
  assert.match(errors, /booking\.output@1/);
});

test("a task completed without an artifact fails the step, naming the agent", async (t) => {
  const agent = await startAgent(t);
  const flow = workflowDir(t, `${agent.url}/.well-known/agent-card.json`);
  const { code, state } = await run(t, flow, "empty booking");
  assert.equal(state?.status, "failed", JSON.stringify(state?.result));
  assert.equal(code, 1);
  const errors = errorText(state);
  assert.match(errors, /booker/);
  assert.match(errors, /artifact|data part/i);
});

test("a failed remote task fails the step with the remote's message", async (t) => {
  const agent = await startAgent(t);
  const flow = workflowDir(t, `${agent.url}/.well-known/agent-card.json`);
  const { code, state } = await run(t, flow, "fail booking");
  assert.equal(state?.status, "failed", JSON.stringify(state?.result));
  assert.equal(code, 1);
  assert.match(errorText(state), /no rooms left/);
});

test("the node's timeout: the retry continues the same remote task, and nothing is cancelled", async (t) => {
  const agent = await startAgent(t);
  const flow = workflowDir(t, `${agent.url}/.well-known/agent-card.json`, { nodeTimeoutMs: 1000, attempts: 2 });
  const { code, state } = await run(t, flow, "slow booking");
  assert.equal(state?.status, "failed", JSON.stringify(state?.result));
  assert.equal(code, 1);
  assert.ok(state.errors.some((e) => e.type === "timeout" && e.agent === "booker"), errorText(state));
  // Two attempts, one task: the second looked at the task the first started.
  assert.equal(agent.log.tasks.length, 1, JSON.stringify(agent.log.requests));
  const [{ taskId }] = agent.log.tasks;
  assert.equal(sent(agent, "SendMessage").length, 1);
  const firstPoll = sent(agent, "GetTask")[0];
  assert.equal(firstPoll?.taskId, taskId);
  // A step given up is not the remote task's end: a resume would go on with it.
  assert.equal(sent(agent, "CancelTask").length, 0);
});

test("an agent card nobody serves fails the run naming the card's URL", async (t) => {
  // A port that was free a moment ago: nothing listens on it.
  const port = await new Promise((r) => {
    const s = createServer().listen(0, "127.0.0.1", () => { const p = s.address().port; s.close(() => r(p)); });
  });
  const card = `http://127.0.0.1:${port}/.well-known/agent-card.json`;
  const flow = workflowDir(t, card);
  const { code, state } = await run(t, flow, "book it");
  assert.equal(state?.status, "failed");
  assert.equal(code, 1);
  assert.ok(errorText(state).includes(card), errorText(state));
});
