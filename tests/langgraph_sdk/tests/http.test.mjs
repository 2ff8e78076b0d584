// What the SDK never sends but a server meets: requests without the token
// when one is required, malformed JSON, bodies over the 1 MiB limit; the
// server answers each with the right status and goes on serving.
import assert from "node:assert/strict";
import { connect } from "node:net";
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

// Sends only the head of a request (its body announced by Content-Length,
// not sent) on a socket of its own, and resolves with what the server
// answers before it closes, or after `timeoutMs`.
function headOnly(url, head, timeoutMs = 20000) {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const sock = connect(Number(port), hostname);
    let data = "";
    const timer = setTimeout(() => sock.destroy(), timeoutMs);
    sock.setEncoding("utf8");
    sock.on("data", (d) => {
      data += d;
      // one whole response is enough
      const m = /\r\ncontent-length: (\d+)\r\n[\s\S]*?\r\n\r\n([\s\S]*)$/i.exec(data);
      if (m && Buffer.byteLength(m[2]) >= Number(m[1])) sock.destroy();
    });
    sock.on("error", () => {});
    sock.on("close", () => {
      clearTimeout(timer);
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(data)?.[1]);
      const body = data.split("\r\n\r\n").slice(1).join("\r\n\r\n");
      resolve({ status, text: body, raw: data });
    });
    sock.write(head);
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

  test("a body over 1 MiB: 413 with a detail (through the SDK), and the server goes on serving", async () => {
    const c = client(server.url);
    const t = await c.threads.create();
    const e = await rejection(
      c.runs.create(t.thread_id, graphId, { input: sampleInput("x".repeat(1024 * 1024 + 4096)) }),
    );
    assert.equal(statusOf(e), 413, String(e));
    detailOf({ json: JSON.parse(e.text), text: e.text });
    assert.deepEqual(await c.runs.list(t.thread_id), [], "no run was created");

    const ok = await http(server.url, "/ok");
    assert.equal(ok.status, 200);
    const v = await c.runs.wait(t.thread_id, graphId, { input: sampleInput(requests.question) });
    assert.equal(v.status, "completed");
  });

  test("a Content-Length over 1 MiB is refused with 413 before the body is sent", async () => {
    const r = await headOnly(
      server.url,
      `POST /threads HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${1536 * 1024}\r\n\r\n`,
    );
    assert.equal(r.status, 413, r.raw);
    detailOf({ json: JSON.parse(r.text), text: r.text });
  });

  test("a body just under 1 MiB is read (not 413)", async () => {
    const padding = "x".repeat(1024 * 1024 - 4096);
    const r = await http(server.url, "/threads", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ metadata: { padding } }),
    });
    assert.equal(r.status, 200, r.text.slice(0, 300));
    assert.equal(r.json.metadata.padding, padding);
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
