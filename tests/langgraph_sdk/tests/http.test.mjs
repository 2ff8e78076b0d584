// What the SDK never sends but a server meets: requests without the token
// when one is required, malformed JSON, bodies over the 1 MiB limit; the
// server answers each with the right status and goes on serving.
import assert from "node:assert/strict";
import { request as httpRequest } from "node:http";
import { after, before, describe, test } from "node:test";

import {
  client,
  graphId,
  http,
  rejection,
  requests,
  sampleInput,
  scratchDir,
  startServer,
  statusOf,
  suiteServer,
  writeScratchFile,
} from "../lib/harness.mjs";

const cleanups = [];
after(async () => {
  for (const f of cleanups.reverse()) await f();
});

// POST a JSON body of `size` bytes (head, padding, tail), through node:http so that a server which
// answers before reading it all (413) is still heard: resolves {status, body}
// or {error} when the connection failed before any answer.
function postLarge(url, path, size, head = '{"assistant_id":"family_scheduling","input":{"request":"', tail = '"}}') {
  return new Promise((resolve) => {
    const req = httpRequest(url + path, {
      method: "POST",
      headers: { "content-type": "application/json", "content-length": size },
    });
    let answered = false;
    req.on("response", (res) => {
      answered = true;
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (c) => (body += c));
      res.on("end", () => resolve({ status: res.statusCode, body }));
      res.on("error", () => resolve({ status: res.statusCode, body }));
    });
    req.on("error", (error) => {
      if (!answered) resolve({ error });
    });
    // head + "xxxx…" + tail, `size` bytes in all
    const chunk = "x".repeat(64 * 1024);
    let left = size - head.length - tail.length;
    req.write(head);
    const pump = () => {
      while (left > 0) {
        const piece = chunk.slice(0, Math.min(chunk.length, left));
        left -= piece.length;
        if (!req.write(piece)) {
          req.once("drain", pump);
          return;
        }
      }
      req.end(tail);
    };
    pump();
  });
}

function detailOf(r) {
  assert.ok(r.json && typeof r.json === "object", `a JSON body: ${r.text}`);
  assert.equal(typeof r.json.detail, "string", `a detail: ${r.text}`);
  assert.ok(r.json.detail.length > 0);
  return r.json.detail;
}

describe("bad requests", { timeout: 30000 }, () => {
  let server;
  before(async () => {
    server = await suiteServer();
    cleanups.push(() => server.stop());
  });

  test("malformed JSON: 400 or 422 with a detail", async () => {
    const c = client(server.url);
    const t = await c.threads.create();
    for (const path of ["/threads", `/threads/${t.thread_id}/runs`, `/threads/${t.thread_id}/runs/wait`, "/assistants/search"]) {
      const r = await http(server.url, path, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: '{"assistant_id": "family_scheduling", "input": {',
      });
      assert.ok([400, 422].includes(r.status), `${path}: HTTP ${r.status} ${r.text}`);
      detailOf(r);
    }
    assert.deepEqual(await c.runs.list(t.thread_id), [], "no run was created");
  });

  test("a body over 1 MiB: 413, and the server goes on serving", async () => {
    const c = client(server.url);
    const t = await c.threads.create();
    const r = await postLarge(server.url, `/threads/${t.thread_id}/runs`, 1024 * 1024 + 4096);
    assert.equal(r.error, undefined, `the connection failed before an answer: ${r.error}`);
    assert.equal(r.status, 413, r.body);

    const ok = await http(server.url, "/ok");
    assert.equal(ok.status, 200);
    const v = await c.runs.wait(t.thread_id, graphId, { input: sampleInput(requests.question) });
    assert.equal(v.status, "completed");
  });

  test("a body just under 1 MiB is read (not 413)", async () => {
    const r = await postLarge(server.url, "/threads", 1024 * 1024 - 4096, '{"metadata":{"padding":"', '"}}');
    assert.equal(r.error, undefined, String(r.error));
    assert.equal(r.status, 200, r.body);
    assert.equal(JSON.parse(r.body).metadata.padding.length, 1024 * 1024 - 4096 - 27);
  });

  test("unknown thread: 404", async () => {
    const c = client(server.url);
    const e = await rejection(c.threads.get("00000000-0000-4000-8000-000000000001"));
    assert.equal(statusOf(e), 404, String(e));
  });
});

describe("--auth-token-file", { timeout: 30000 }, () => {
  const token = "s3cret-token-for-the-suite";
  let server;
  before(async () => {
    const dir = scratchDir();
    const file = writeScratchFile("token", `${token}\n`, dir);
    server = await startServer({ stateDir: dir, args: ["--auth-token-file", file] });
    cleanups.push(() => server.kill("SIGKILL"));
  });

  test("without the token: 401 with a detail", async () => {
    for (const [method, path, body] of [
      ["POST", "/threads", "{}"],
      ["POST", "/assistants/search", "{}"],
      ["GET", `/assistants/${graphId}`, undefined],
      ["POST", "/threads/search", "{}"],
    ]) {
      const r = await http(server.url, path, { method, headers: { "content-type": "application/json" }, body });
      assert.equal(r.status, 401, `${method} ${path}: ${r.text}`);
      detailOf(r);
    }
  });

  test("a wrong token: 401, in either header", async () => {
    for (const headers of [{ "x-api-key": "wrong" }, { authorization: "Bearer wrong" }, { authorization: `Basic ${token}` }]) {
      const r = await http(server.url, "/threads", {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body: "{}",
      });
      assert.equal(r.status, 401, `${JSON.stringify(headers)}: ${r.text}`);
    }
  });

  test("the SDK without an apiKey is refused with 401", async () => {
    const e = await rejection(client(server.url).threads.create());
    assert.equal(statusOf(e), 401, String(e));
  });

  test("the SDK's apiKey (x-api-key) is accepted: a whole run", async () => {
    const c = client(server.url, { apiKey: token });
    const t = await c.threads.create();
    const v = await c.runs.wait(t.thread_id, graphId, { input: sampleInput(requests.question) });
    assert.equal(v.status, "completed");
    const parts = [];
    for await (const p of c.runs.stream(t.thread_id, graphId, { input: sampleInput(requests.question) })) parts.push(p);
    assert.equal(parts[0].event, "metadata");
  });

  test("Authorization: Bearer TOKEN is accepted", async () => {
    const r = await http(server.url, "/threads", {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
      body: "{}",
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(typeof r.json.thread_id, "string");
  });
});
