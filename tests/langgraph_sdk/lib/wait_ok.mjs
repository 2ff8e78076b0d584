// node wait_ok.mjs URL [TIMEOUT_MS]: polls GET URL/ok until it answers 200
// with {"ok": true}; exits 0 then, 1 after TIMEOUT_MS (default 30000).
const [url, timeoutArg] = process.argv.slice(2);
const deadline = Date.now() + Number(timeoutArg ?? 30000);
let last = "no answer";
while (Date.now() < deadline) {
  try {
    const res = await fetch(`${url}/ok`, { signal: AbortSignal.timeout(2000) });
    const body = await res.text();
    if (res.status === 200 && JSON.parse(body)?.ok === true) process.exit(0);
    last = `HTTP ${res.status}: ${body}`;
  } catch (e) {
    last = String(e?.cause ?? e);
  }
  await new Promise((r) => setTimeout(r, 50));
}
console.error(`wait_ok: ${url}/ok: ${last}`);
process.exit(1);
