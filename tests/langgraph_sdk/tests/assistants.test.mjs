// The health and info endpoints, and the graph's system assistant: its id is
// uuid5(6ba7b821-…, graph id) as in the reference servers, and the graph id
// works wherever an assistant id does.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import {
  client,
  graphId,
  http,
  rejection,
  sampleInput,
  requests,
  statusOf,
  suiteServer,
  systemAssistantId,
  uuid5,
} from "../lib/harness.mjs";

let server;
let c;
before(async () => {
  server = await suiteServer();
  c = client(server.url);
});
after(() => server?.stop());

describe("health and info", { timeout: 30000 }, () => {
  test("GET /ok answers {ok: true}", async () => {
    const r = await http(server.url, "/ok");
    assert.equal(r.status, 200);
    assert.deepEqual(r.json, { ok: true });
  });

  test("GET /info answers a JSON object", async () => {
    const r = await http(server.url, "/info");
    assert.equal(r.status, 200);
    assert.match(r.headers.get("content-type") ?? "", /application\/json/);
    assert.equal(typeof r.json, "object");
    assert.ok(r.json !== null && !Array.isArray(r.json), r.text);
  });
});

describe("the system assistant", { timeout: 30000 }, () => {
  test("uuid5 helper matches the reference derivation (lead_agent, from deer-flow#1087)", () => {
    assert.equal(systemAssistantId("lead_agent"), "bee7d354-5df5-5f26-a978-10ea053f620d");
    // RFC 4122 appendix B's example (DNS namespace, "www.example.com")
    assert.equal(uuid5("6ba7b810-9dad-11d1-80b4-00c04fd430c8", "www.example.com"), "2ed6657d-e927-568b-95e1-2665a8aea6a2");
  });

  test("assistants.get(graph id) returns the graph's system assistant", async () => {
    const a = await c.assistants.get(graphId);
    assert.equal(a.assistant_id, systemAssistantId(graphId));
    assert.equal(a.graph_id, graphId);
  });

  test("assistants.get(uuid5) returns the same assistant", async () => {
    const byGraph = await c.assistants.get(graphId);
    const byId = await c.assistants.get(systemAssistantId(graphId));
    assert.equal(byId.assistant_id, systemAssistantId(graphId));
    assert.equal(byId.graph_id, graphId);
    assert.deepEqual(byId, byGraph);
  });

  test("assistants.search() lists it", async () => {
    const all = await c.assistants.search();
    assert.ok(Array.isArray(all), JSON.stringify(all));
    const mine = all.filter((a) => a.assistant_id === systemAssistantId(graphId));
    assert.equal(mine.length, 1, JSON.stringify(all));
    assert.equal(mine[0].graph_id, graphId);
  });

  test("assistants.search({graphId}) finds it by graph", async () => {
    const found = await c.assistants.search({ graphId });
    assert.ok(found.some((a) => a.assistant_id === systemAssistantId(graphId)), JSON.stringify(found));
  });

  test("an unknown assistant id gives 404 'No assistant found'", async () => {
    for (const id of ["no_such_graph", "00000000-0000-4000-8000-000000000000"]) {
      const e = await rejection(c.assistants.get(id));
      assert.equal(statusOf(e), 404, String(e));
      assert.match(String(e.message), /No assistant found/);
    }
  });

  test("a run on an unknown assistant gives 404 'No assistant found'", async () => {
    const t = await c.threads.create();
    const e = await rejection(c.runs.wait(t.thread_id, "no_such_graph", { input: sampleInput(requests.question) }));
    assert.equal(statusOf(e), 404, String(e));
    assert.match(String(e.message), /No assistant found/);
  });
});
