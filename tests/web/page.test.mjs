// The page `switchboard serve` serves (server/web/), in a real browser:
// Debian's chromium driven by playwright-core, against the sample workflow.
//
//   SWITCHBOARD_BIN=build/bin/switchboard SWITCHBOARD_SAMPLE=examples/scheduling/workflow.json \
//     node --test tests/web/page.test.mjs
//
// A missing chromium or node_modules fails the tests; it does not skip them.
// With SWITCHBOARD_SCREENSHOTS_DIR set, the tests also save the pictures of
// docs/serving.md there (scripts/page-screenshots.sh); without it they write
// nothing, so a test run never rewrites files of the repository.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

// The LangGraph SDK suite's loopback model server (it needs nothing but node:http).
import { parsedEvent, startFakeModel, vagueEvent } from '../langgraph_sdk/lib/fake_model.mjs';

const bin = process.env.SWITCHBOARD_BIN;
const sample = process.env.SWITCHBOARD_SAMPLE;
const chromiumPath = process.env.SWITCHBOARD_CHROMIUM || '/usr/bin/chromium';
const WAIT = 20_000;
const shotsDir = process.env.SWITCHBOARD_SCREENSHOTS_DIR;

const work = mkdtempSync(join(tmpdir(), 'switchboard-web-'));
const servers = [];
let chromium;
let browser;
let server;  // the main one, on sqlite:$work/runs.db

// ---- helpers -------------------------------------------------------------------------

// `state` is the sample's state directory, where its calendar is: a test that
// checks what was booked has one of its own. `env` adds to the environment
// (a null value removes the variable).
async function startServer({ listen = '127.0.0.1:0', store = `sqlite:${work}/runs.db`, state = join(work, 'state'),
  extra = [], env = {} } = {}) {
  const childEnv = { ...process.env, SWITCHBOARD_STATE_DIR: state, ...env };
  for (const [name, value] of Object.entries(env)) if (value === null) delete childEnv[name];
  const proc = spawn(bin, ['serve', sample, '--listen', listen, '--store', store, ...extra], {
    env: childEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const s = { proc, log: '' };
  servers.push(s);
  proc.stderr.on('data', (d) => { s.log += d; });
  s.url = await new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`serve did not start: ${s.log}`)), WAIT);
    proc.stdout.on('data', (d) => {
      out += d;
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) { clearTimeout(timer); resolve(m[1]); }
    });
    proc.on('exit', (code) => { clearTimeout(timer); reject(new Error(`serve exited ${code}: ${s.log}`)); });
  });
  s.port = new URL(s.url).port;
  return s;
}

async function kill(s) {
  if (s.proc.exitCode !== null || s.proc.signalCode !== null) return;
  const exited = new Promise((resolve) => s.proc.once('exit', resolve));
  s.proc.kill('SIGKILL');
  await exited;
}

async function api(s, method, path, body, headers = {}) {
  const res = await fetch(s.url + path, {
    method, headers: { 'Content-Type': 'application/json', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  assert.ok(res.ok, `${method} ${path}: ${res.status} ${await res.clone().text()}`);
  return res.json();
}

// A thread whose run has paused: started through the API, as another client would.
async function pausedRun(s, request) {
  const thread = await api(s, 'POST', '/threads', {});
  const values = await api(s, 'POST', `/threads/${thread.thread_id}/runs/wait`,
    { assistant_id: 'family_scheduling', input: { request } });
  assert.ok(values.__interrupt__?.length, `the run did not pause: ${JSON.stringify(values).slice(0, 300)}`);
  return thread.thread_id;
}

// A new thread's run of `request`, to its first pause or its end: its values.
async function runToPause(s, request) {
  const thread = await api(s, 'POST', '/threads', {});
  const values = await api(s, 'POST', `/threads/${thread.thread_id}/runs/wait`,
    { assistant_id: 'family_scheduling', input: { request } });
  return { thread: thread.thread_id, values };
}

// Sends a decision or an answer to a paused thread and waits for what follows.
const resume = (s, thread, value) => api(s, 'POST', `/threads/${thread}/runs/wait`,
  { assistant_id: 'family_scheduling', command: { resume: value } });

// A picture of `target` (a page: its viewport; a locator: that element) as
// `name` in SWITCHBOARD_SCREENSHOTS_DIR, only when it is set.
async function screenshot(target, name) {
  if (!shotsDir) return;
  mkdirSync(resolve(shotsDir), { recursive: true });
  await target.screenshot({ path: join(resolve(shotsDir), name) });
}

// A page in a context of its own (its own sessionStorage), watched for script
// errors, CSP violations and dialogs.
async function openPage(url, { width = 1200, height = 900 } = {}) {
  const context = await browser.newContext({ viewport: { width, height } });
  const page = await context.newPage();
  page.problems = [];
  page.on('pageerror', (e) => page.problems.push(`page error: ${e.message}`));
  page.on('dialog', (d) => { page.problems.push(`dialog: ${d.message()}`); d.dismiss(); });
  page.on('console', (m) => {
    if (/Content.Security.Policy/i.test(m.text())) page.problems.push(`CSP: ${m.text()}`);
  });
  await page.goto(url);
  return page;
}

async function closePage(page) {
  const problems = page.problems;
  await page.context().close();
  assert.deepEqual(problems, []);
}

const shown = (page, selector, hasText) => page.locator(selector, hasText ? { hasText } : {}).first()
  .waitFor({ timeout: WAIT });

async function startFromPage(page, request) {
  await page.locator('#workflow option[value="family_scheduling"]').waitFor({ state: 'attached', timeout: WAIT });
  await page.getByLabel('Request').fill(request);
  await page.getByRole('button', { name: 'Start run' }).click();
}

async function openFromList(page, threadId) {
  await page.locator(`[data-thread="${threadId}"]`).click({ timeout: WAIT });
}

// ---- setup ---------------------------------------------------------------------------

before(async () => {
  assert.ok(bin && existsSync(bin), `SWITCHBOARD_BIN names no program: ${bin}`);
  assert.ok(sample && existsSync(sample), `SWITCHBOARD_SAMPLE names no workflow: ${sample}`);
  assert.ok(existsSync(chromiumPath), `no chromium at ${chromiumPath} (scripts/setup.sh installs Debian's)`);
  try {
    ({ chromium } = await import('playwright-core'));
  } catch (e) {
    throw new Error(`playwright-core is not installed: run npm ci in tests/web (scripts/test.sh does): ${e.message}`);
  }
  browser = await chromium.launch({ executablePath: chromiumPath });
  server = await startServer();
});

after(async () => {
  await browser?.close();
  for (const s of servers) await kill(s);
  rmSync(work, { recursive: true, force: true });
});

// ---- the tests -----------------------------------------------------------------------

test('the page and its files are served with their types and a CSP that forbids inline script', async () => {
  for (const [path, type] of [['/', 'text/html'], ['/ui/app.js', 'text/javascript'],
    ['/ui/style.css', 'text/css'], ['/ui/favicon.svg', 'image/svg+xml']]) {
    const res = await fetch(server.url + path);
    assert.equal(res.status, 200, path);
    assert.ok(res.headers.get('content-type').startsWith(type), `${path}: ${res.headers.get('content-type')}`);
    const csp = res.headers.get('content-security-policy');
    assert.match(csp, /default-src 'self'/);
    assert.match(csp, /script-src 'self'(;|$)/);
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
    assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
  }
  assert.equal((await fetch(`${server.url}/ui/missing.js`)).status, 404);
  const html = await (await fetch(server.url)).text();
  assert.doesNotMatch(html, /<script>|<style>| on\w+=/, 'no inline script, style or handler');
});

test('a run started from the text box shows its steps and its approval, and completes once approved', async () => {
  const page = await openPage(server.url);
  await shown(page, '#connection', 'Connected');
  await startFromPage(page, 'Soccer practice for Maya on Saturday 2-4pm, she needs the minivan');

  await shown(page, '#timeline .step', 'nl_parser');
  await shown(page, '#timeline .step .confidence', /threshold 0\.70/);
  await shown(page, '#timeline .step .explanation');
  await shown(page, '#timeline .route', /→ schedule/);
  const card = page.locator('.card');
  await card.getByRole('heading', { name: /approval/ }).waitFor({ timeout: WAIT });
  await shown(page, '.card .call h4', 'calendar.book');
  const args = await page.locator('.card .fields').first().innerText();
  assert.match(args, /Soccer practice/i);
  assert.match(args, /minivan/);
  assert.match(args, /Maya/);
  assert.match(await page.locator('#run-meta').innerText(), /family_scheduling · waiting for approval/);
  assert.ok(await page.locator('#timeline .step').count() >= 4, 'the steps up to the booking are shown');

  await page.getByRole('button', { name: 'Approve' }).click();
  await shown(page, '#timeline .event.completed', 'Completed');
  await shown(page, '#timeline .tool', 'calendar.book');
  await shown(page, '#run-meta', /completed/);
  await shown(page, '.run-item[aria-current="true"] .status', 'completed');
  assert.equal(await page.locator('.card').count(), 0, 'nothing waits any more');
  await closePage(page);
});

test('a clarification shows its question and the answer continues the run', async () => {
  const page = await openPage(server.url);
  await startFromPage(page, 'Piano lesson for Leo sometime next week');
  await shown(page, '.card .question', /Piano lesson/);
  assert.match(await page.locator('#run-meta').innerText(), /waiting for an answer/);
  await page.getByLabel('Your answer').fill('Wednesday 5-6pm');
  await page.getByRole('button', { name: 'Send answer' }).click();
  await shown(page, '#timeline .event.started', 'Resumed');
  await shown(page, '.card .call h4', 'calendar.book');
  assert.match(await page.locator('.card .fields').first().innerText(), /Piano lesson/i);
  await page.getByRole('button', { name: 'Approve' }).click();
  await shown(page, '#run-meta', /completed/);
  await closePage(page);
});

test('two people approving at once: one decision is booked, the other page says someone decided first', async () => {
  const thread = await pausedRun(server, 'Swimming for Leo on Sunday 10-11am');
  const pages = [await openPage(server.url), await openPage(server.url)];
  for (const page of pages) {
    await openFromList(page, thread);
    await shown(page, '.card .call h4', 'calendar.book');
  }
  await Promise.all(pages.map((page) => page.getByRole('button', { name: 'Approve' }).click()));
  for (const page of pages) await shown(page, '#run-meta', /completed/);
  const told = [];
  for (const page of pages) told.push(await page.locator('#notice').innerText());
  assert.equal(told.filter((t) => /Someone else decided first/.test(t)).length, 1, told.join(' | '));
  // booked once: one calendar.book call in the run
  for (const page of pages) assert.equal(await page.locator('#timeline .tool', { hasText: 'calendar.book' }).count(), 1);
  for (const page of pages) await closePage(page);
});

test('rejected with a reason: the run ends declined, the page and the thread say why, and nothing is booked', async () => {
  // A server and a calendar of its own: the approval test books this very slot on the main one.
  const own = await startServer({ store: `sqlite:${work}/reject.db`, state: join(work, 'reject-state') });
  const request = 'Soccer practice for Maya on Saturday 2-4pm, she needs the minivan';
  const reason = 'Maya has a cold, not this Saturday';
  const page = await openPage(own.url);
  await startFromPage(page, request);
  await shown(page, '.card .call h4', 'calendar.book');
  await page.getByLabel('Reason (sent with a rejection)').fill(reason);
  await page.getByRole('button', { name: 'Reject' }).click();

  // The page: the decision with its reason, the call not made, the run ended at "declined".
  await shown(page, '#timeline .event.completed', 'ended at declined');
  await shown(page, '#run-meta', /completed: declined/);
  assert.equal(await page.locator('#timeline .decision.rejected .reason').innerText(), reason);
  await shown(page, '#timeline .tool.rejected', 'calendar.book');
  assert.ok((await page.locator('#timeline .tool.rejected .reason').innerText()).includes(reason),
    'the server\'s word on the call not made carries the reason');
  await shown(page, '#timeline .step .explanation', /declined/i);
  assert.equal(await page.locator('#timeline .tool:not(.rejected)', { hasText: 'calendar.book' }).count(), 0,
    'no call of calendar.book was made');
  assert.equal(await page.locator('.card').count(), 0, 'nothing waits any more');

  // The thread over the API: the rejection with its reason went through resume, the booking declined it.
  const thread = await page.locator('.run-item[aria-current="true"]').getAttribute('data-thread', { timeout: WAIT });
  const [last] = await api(own, 'GET', `/threads/${thread}/runs`);
  assert.deepEqual(last.kwargs.command.resume, { decision: 'reject', reason });
  const { values } = await api(own, 'GET', `/threads/${thread}/state`);
  assert.equal(values.status, 'completed');
  const booking = values.outputs.booking.data;
  assert.equal(booking.action, 'declined');
  assert.deepEqual(booking.booked, []);
  assert.ok(booking.problems.some((p) => /rejected/.test(p) && p.includes(reason)), JSON.stringify(booking.problems));

  // The calendar: the same request again finds Maya's slot and the minivan free. That this probe
  // does see a booking is checked too: once the second is approved, a third finds the minivan taken.
  const again = await runToPause(own, request);
  const minivan = (v) => v.outputs.resource_manager.data.resources.find((r) => r.name === 'minivan');
  assert.deepEqual(minivan(again.values).bookings_overlapping, [], 'the rejected booking was not made');
  assert.equal(again.values.outputs.conflict_detection.data.has_conflicts, false);
  assert.equal((await resume(own, again.thread, { decision: 'approve' })).outputs.booking.data.action, 'booked');
  const third = await runToPause(own, request);
  assert.equal(third.values.outputs.conflict_detection.data.has_conflicts, true);
  assert.notDeepEqual(minivan(third.values).bookings_overlapping, []);
  await closePage(page);
  await kill(own);
});

test('untrusted text in a run is shown as text: no element made, no script run', async () => {
  const evil = '<img src=x onerror=alert(1)>';
  const page = await openPage(server.url);
  await startFromPage(page, `Dentist ${evil} for Maya on Friday 3-4pm`);
  await shown(page, '#run-title', evil);
  await shown(page, '.card');
  await shown(page, '.run-item .run-title', evil);
  const texts = await page.locator('#timeline .explanation, .card .fields dd, .card .question').allInnerTexts();
  assert.ok(texts.some((t) => t.includes(evil)), `the text reached an explanation or argument: ${texts.join(' | ')}`);
  assert.equal(await page.locator('img').count(), 0, 'no <img> element was created');
  await page.waitForTimeout(500);
  await closePage(page);  // asserts no dialog, no page error, no CSP report
});

test('model output is shown as text: an explanation, a question and arguments from the loopback model run nothing', async () => {
  const img = '<img src=x onerror=alert(1)>';
  const script = '<script>window.__pwned=1</script>';
  const model = await startFakeModel();
  // The parse: below the threshold, so the run asks the model's question; then the answer's
  // parse, whose title becomes an argument of the booking waiting for approval.
  const vague = vagueEvent('Piano lesson');
  model.answer('nl_parser', { ...vague, explanation: img, data: { ...vague.data, clarification_question: script } });
  model.answer('nl_parser', parsedEvent({ title: img, date: '2026-11-25', start: '17:00', end: '18:00',
    participants: ['Leo'] }));
  const own = await startServer({ store: `sqlite:${work}/model.db`, state: join(work, 'model-state'),
    env: { OPENAI_BASE_URL: model.baseUrl, OPENAI_API_KEY: 'test-key', SWITCHBOARD_MODEL: 'fake-model',
           SWITCHBOARD_PROVIDER: null, SWITCHBOARD_OUTPUT_MODE: null } });  // the loopback model, whatever is set
  try {
    const page = await openPage(own.url);
    await startFromPage(page, 'Piano lesson for Leo sometime next week');
    await shown(page, '.card .question');
    assert.equal(await page.locator('.card .question').innerText(), script, 'the question, literally');
    assert.equal(await page.locator('#timeline .step .explanation').first().innerText(), img,
      'the explanation, literally');
    assert.deepEqual(model.agents(), ['nl_parser'], 'the text came from the model');

    await page.getByLabel('Your answer').fill('Wednesday 5-6pm');
    await page.getByRole('button', { name: 'Send answer' }).click();
    await shown(page, '.card .call h4', 'calendar.book');
    assert.equal(await page.locator('.card .fields dt', { hasText: /^title$/ }).locator('+ dd').innerText(), img,
      'the argument, literally');
    assert.deepEqual(model.agents(), ['nl_parser', 'nl_parser']);

    assert.equal(await page.locator('img').count(), 0, 'no <img> element was created');
    assert.deepEqual(await page.evaluate(() => [...document.scripts].map((el) => el.getAttribute('src'))),
      ['/ui/app.js'], 'no <script> element was created');
    assert.equal(await page.evaluate(() => window.__pwned), undefined);
    await closePage(page);  // asserts no dialog, no page error, no CSP report
  } finally {
    await kill(own);
    await model.close();
  }
});

test('the runs, newest first, with their workflow and status; an approval with its arguments (the docs\' pictures)', async () => {
  // A server of its own, so the list holds these runs only, in a known order.
  const own = await startServer({ store: `sqlite:${work}/list.db`, state: join(work, 'list-state') });
  const made = [];
  const asked = await runToPause(own, 'When is everyone free on Sunday?');
  made.push(['When is everyone free on Sunday?', 'completed']);
  const tennis = await runToPause(own, 'Tennis for Leo on Thursday 4-5pm');
  await resume(own, tennis.thread, { decision: 'approve' });
  made.push(['Tennis for Leo on Thursday 4-5pm', 'completed']);
  const swim = await runToPause(own, 'Swimming for Leo on Sunday 10-11am');
  await resume(own, swim.thread, { decision: 'reject', reason: 'the pool is closed that week' });
  made.push(['Swimming for Leo on Sunday 10-11am', 'completed']);
  await runToPause(own, 'Piano lesson for Leo sometime next week');
  made.push(['Piano lesson for Leo sometime next week', 'waiting for an answer']);
  const soccer = await runToPause(own, 'Soccer practice for Maya on Saturday 2-4pm, she needs the minivan');
  made.push(['Soccer practice for Maya on Saturday 2-4pm, she needs the minivan', 'waiting for approval']);
  assert.equal(asked.values.status, 'completed');

  const page = await openPage(own.url, { width: 1100, height: 700 });
  await page.locator('.run-item').nth(made.length - 1).waitFor({ timeout: WAIT });
  const titles = await page.locator('.run-item .run-title').allInnerTexts();
  const statuses = await page.locator('.run-item .status').allInnerTexts();
  assert.deepEqual(titles.map((t, i) => [t, statuses[i]]), [...made].reverse(), 'newest first');
  assert.deepEqual(await page.locator('.run-item .workflow').allInnerTexts(), made.map(() => 'family_scheduling'));

  await openFromList(page, swim.thread);
  await shown(page, '#timeline .decision.rejected', 'the pool is closed that week');
  await shown(page, '#run-meta', /completed: declined/);
  await screenshot(page.locator('section[aria-labelledby="runs-heading"]'), 'page-runs.png');

  await openFromList(page, soccer.thread);
  await shown(page, '.card .call h4', 'calendar.book');
  const args = await page.locator('.card .fields').first().innerText();
  for (const shownArg of [/Soccer practice/, /Maya/, /minivan/, /14:00/, /16:00/]) assert.match(args, shownArg);
  await page.evaluate(() => window.scrollTo(0, 0));  // the click scrolled; the picture starts at the top
  await screenshot(page, 'page-approval.png');
  await closePage(page);

  const phone = await openPage(own.url, { width: 375, height: 740 });
  await openFromList(phone, soccer.thread);
  await shown(phone, '.card .call h4', 'calendar.book');
  // From the run's status line down: the whole card, its buttons too, fits the phone's screen.
  await phone.evaluate(() => document.getElementById('run-meta').scrollIntoView({ block: 'start' }));
  await screenshot(phone, 'page-phone.png');
  await closePage(phone);
  await kill(own);
});

test('on a 375 px wide screen the controls are visible and nothing scrolls sideways', async () => {
  const thread = await pausedRun(server, 'Tennis for Leo on Thursday 4-5pm');
  const page = await openPage(server.url, { width: 375, height: 740 });
  await openFromList(page, thread);
  await shown(page, '.card .call h4', 'calendar.book');
  for (const control of [page.getByLabel('Request'), page.getByRole('button', { name: 'Start run' }),
    page.getByLabel('Workflow'), page.getByLabel(/Reason/), page.getByRole('button', { name: 'Approve' }),
    page.getByRole('button', { name: 'Reject' })]) {
    await control.scrollIntoViewIfNeeded();
    assert.ok(await control.isVisible());
    const box = await control.boundingBox();
    assert.ok(box.x >= 0 && box.x + box.width <= 375, `inside the screen: ${JSON.stringify(box)}`);
    assert.ok(box.height >= 24, 'big enough to tap');
  }
  const width = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(width <= 375, `the page is ${width} px wide`);
  // Keyboard only: Tab goes from each box to its buttons, Enter presses one.
  const focused = () => page.evaluate(() => document.activeElement.textContent);
  await page.getByLabel('Request').focus();
  await page.keyboard.press('Tab');
  assert.equal(await focused(), 'Start run');
  await page.getByLabel('Reason (sent with a rejection)').focus();
  await page.keyboard.type('not this week');
  await page.keyboard.press('Tab');
  assert.equal(await focused(), 'Approve');
  await page.keyboard.press('Tab');
  assert.equal(await focused(), 'Reject');
  await page.keyboard.press('Enter');
  await shown(page, '#run-meta', /completed/);
  await shown(page, '#timeline .step', /declined|not booked|rejected/i);
  await closePage(page);
});

test('a stream cut off is resumed from the last event (Last-Event-ID), each event once', async () => {
  const page = await openPage(server.url);
  const streams = [];
  let cut = false;
  await page.route('**/runs/*/stream*', async (route) => {
    streams.push(route.request().headers()['last-event-id'] ?? null);
    if (cut) return route.continue();
    cut = true;
    // The first stream: the real one, cut after its third event.
    const res = await route.fetch();
    const frames = (await res.text()).split('\n\n').filter((f) => /^id: /m.test(f));
    const kept = frames.slice(0, 3);
    page.cutAt = /^id: (\d+)/m.exec(kept.at(-1))[1];
    await route.fulfill({ status: 200, headers: { 'Content-Type': 'text/event-stream' }, body: `${kept.join('\n\n')}\n\n` });
  });
  await startFromPage(page, 'Guitar lesson for Maya on Monday 5-6pm');
  await shown(page, '#timeline .event.paused', 'Waiting for approval');
  assert.ok(streams.length >= 2, `reconnected: ${JSON.stringify(streams)}`);
  assert.equal(streams[0], null);
  assert.equal(streams[1], page.cutAt, 'the second stream starts after the last event the first one brought');
  assert.equal(await page.locator('#timeline .event', { hasText: 'Run started' }).count(), 1);
  const titles = await page.locator('#timeline .step h4').allInnerTexts();
  assert.equal(new Set(titles).size, titles.length, `no step twice: ${titles.join(' | ')}`);
  assert.ok(titles.length >= 4);
  await closePage(page);
});

test('with --auth-token-file the page asks for the token once and sends it as a Bearer header', async () => {
  const tokenFile = join(work, 'token');
  const secret = 'page-test-token-0123456789abcdef';
  writeFileSync(tokenFile, `${secret}\n`);
  const guarded = await startServer({ store: `sqlite:${work}/guarded.db`, extra: ['--auth-token-file', tokenFile] });
  assert.equal((await fetch(guarded.url)).status, 200, 'the page loads without the token');
  assert.equal((await fetch(`${guarded.url}/ui/app.js`)).status, 200);
  assert.equal((await fetch(`${guarded.url}/threads/search`, { method: 'POST', body: '{}' })).status, 401,
    'the API does not');
  assert.equal((await fetch(`${guarded.url}/ui/missing.js`)).status, 401, 'only the page files are exempt');

  const page = await openPage(guarded.url);
  const authorizations = [];
  page.on('request', (r) => { if (r.url().includes('/threads')) authorizations.push(r.headers().authorization); });
  await page.getByLabel('This server needs its API token').fill(secret);
  await page.getByRole('button', { name: 'Use this token' }).click();
  await startFromPage(page, 'Haircut for Sam on Wednesday 7-8pm');
  await shown(page, '.card .call h4', 'calendar.book');
  assert.ok(authorizations.includes(`Bearer ${secret}`));
  assert.equal(await page.evaluate(() => sessionStorage.getItem('switchboard.token')), secret);
  assert.ok(!page.url().includes(secret), 'the token is not in the URL');
  await page.reload();
  await shown(page, '.run-item');
  assert.ok(await page.locator('#token-form').isHidden(), `asked once per tab: ${await page.locator('#token-hint').innerText()}`);
  await closePage(page);
  await kill(guarded);
});

test('a server killed and started again on the same store: the page says unreachable, then carries on', async () => {
  const thread = await pausedRun(server, 'Chess club for Leo on Tuesday 6-7pm');
  const page = await openPage(server.url);
  await openFromList(page, thread);
  await shown(page, '.card .call h4', 'calendar.book');
  const steps = await page.locator('#timeline .step').count();

  await kill(server);
  await shown(page, '#connection', 'unreachable');
  server = await startServer({ listen: `127.0.0.1:${server.port}` });
  await shown(page, '#connection', 'Connected');

  await page.getByRole('button', { name: 'Approve' }).click();
  await shown(page, '#run-meta', /completed/);
  assert.equal(await page.locator('#timeline .event', { hasText: 'Run started' }).count(), 1);
  await shown(page, '#timeline .tool', 'calendar.book');
  assert.equal(await page.locator('#timeline .step').count(), steps, 'the booking step goes on, no step twice');
  await closePage(page);
});
