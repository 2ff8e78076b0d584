// The page for the people in the loop (docs/serving.md, "The page"): the runs,
// one run's timeline from its stream, its question or its pending tool calls,
// and a box to start a run. It uses the public API only, like any client.
//
// Everything a run carries (model output, questions, tool arguments and
// results, the request itself) is untrusted: it reaches the document only as
// text (text nodes, textContent), never as markup.
'use strict';

const THRESHOLD = 0.7;  // the clarification threshold the sample's agents are held to
const POLL_MS = 3000;
const $ = (id) => document.getElementById(id);

let token = sessionStorage.getItem('switchboard.token') || '';
let view = null;  // the run shown: {id, ended, lastIds, steps, pendingId, wake, abort}
const poller = {};  // the runs list's loop (its wake())
const loader = {};  // the workflows' loader

// h('p', {class: 'x'}, 'text', child): an element; strings become text nodes.
function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k === 'onclick' || k === 'onsubmit') el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat(Infinity)) if (c !== null && c !== undefined && c !== false) el.append(c);
  return el;
}

// Resolves after `ms`, or earlier when the returned promise's owner wakes it.
function nap(ms, owner) {
  return new Promise((resolve) => {
    owner.wake = resolve;
    setTimeout(resolve, ms);
  });
}

// ---- the server --------------------------------------------------------------

class HttpError extends Error {
  constructor(status, detail) {
    super(detail);
    this.status = status;
  }
}

function setReachable(ok) {
  const el = $('connection');
  const state = ok ? 'ok' : 'down';
  if (el.dataset.state === state) return;
  el.dataset.state = state;
  el.textContent = ok ? 'Connected' : 'The server is unreachable. Reconnecting…';
}

function authHeaders(extra = {}) {
  return token ? { ...extra, Authorization: `Bearer ${token}` } : extra;
}

// fetch() that tells the page whether the server answered.
async function call(path, init = {}) {
  const sent = token;
  let res;
  try {
    res = await fetch(path, { cache: 'no-store', ...init, headers: authHeaders(init.headers) });
  } catch (e) {
    if (e.name !== 'AbortError') setReachable(false);
    throw e;
  }
  setReachable(res.status < 502);  // 502-504: a proxy with no server behind it, or shutting down
  if (res.status === 401 && sent === token) askToken(Boolean(token));  // not one sent before a new token
  if (!res.ok) {
    let detail = res.statusText;
    try { detail = (await res.json()).detail || detail; } catch { /* not JSON */ }
    throw new HttpError(res.status, detail);
  }
  return res;
}

async function api(method, path, body) {
  const init = { method };
  if (body !== undefined) {
    init.headers = { 'Content-Type': 'application/json' };
    init.body = JSON.stringify(body);
  }
  const res = await call(path, init);
  return res.status === 204 ? null : res.json();
}

function askToken(wrong) {
  const form = $('token-form');
  $('token-hint').textContent = wrong ? 'That token was refused. Try again.'
    : 'It is kept in this tab only, until you close it.';
  if (!form.hidden) return;
  form.hidden = false;
  $('token').focus();
}

$('token-form').addEventListener('submit', (event) => {
  event.preventDefault();
  token = $('token').value.trim();
  sessionStorage.setItem('switchboard.token', token);
  $('token').value = '';
  $('token-form').hidden = true;
  wakeAll();
});

function wakeAll() {
  poller.wake?.();
  loader.wake?.();
  view?.wake?.();
}

// ---- workflows and starting a run ---------------------------------------------

async function loadWorkflows() {
  for (;;) {
    try {
      const assistants = await api('POST', '/assistants/search', { limit: 100 });
      const select = $('workflow');
      select.replaceChildren(...assistants.filter((a) => a.metadata?.created_by === 'system')
        .map((a) => h('option', { value: a.graph_id }, a.graph_id)));
      return;
    } catch { await nap(POLL_MS, loader); }
  }
}

$('start-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  const status = $('start-status');
  const button = event.target.querySelector('button');
  const request = $('request').value.trim();
  if (!request) return;
  button.disabled = true;
  status.textContent = 'Starting…';
  try {
    const thread = await api('POST', '/threads', {});
    await api('POST', `/threads/${thread.thread_id}/runs`,
      { assistant_id: $('workflow').value, input: { request }, stream_mode: ['custom'] });
    $('request').value = '';
    status.textContent = 'Started.';
    openRun(thread.thread_id, false);
    wakeAll();
  } catch (e) {
    status.textContent = `Not started: ${e.message}`;
  } finally {
    button.disabled = false;
  }
});

// ---- the runs ------------------------------------------------------------------

function pendingOf(thread) {
  for (const list of Object.values(thread.interrupts || {})) if (list.length) return list[0];
  return null;
}

function statusOf(thread) {
  if (thread.status === 'interrupted') {
    return pendingOf(thread)?.value?.type === 'approval' ? 'waiting for approval' : 'waiting for an answer';
  }
  if (thread.status === 'busy') return 'running';
  if (thread.status === 'error') return 'failed';
  return thread.values?.status || 'new';
}

function titleOf(thread) {
  const request = thread.values?.input?.request;
  return typeof request === 'string' && request ? request : `Run ${thread.thread_id.slice(0, 8)}`;
}

function age(iso) {
  const s = Math.max(0, (Date.now() - Date.parse(iso)) / 1000);
  if (s < 10) return 'just now';
  if (s < 60) return `${Math.floor(s)} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86400)} d ago`;
}

function renderRuns(threads) {
  // Rebuilt only when what it shows changed, so a click is never lost to a redraw.
  const shown = JSON.stringify(threads.map((t) => [t.thread_id, titleOf(t), statusOf(t), age(t.created_at)]))
    + (view?.id || '');
  if (shown === renderRuns.shown) return;
  renderRuns.shown = shown;
  const focused = document.activeElement?.dataset?.thread;
  $('runs-empty').hidden = threads.length > 0;
  $('runs').replaceChildren(...threads.map((t) => h('li', {},
    h('button', { type: 'button', class: 'run-item', 'data-thread': t.thread_id,
                  'aria-current': view?.id === t.thread_id ? 'true' : null,
                  onclick: () => openRun(t.thread_id, true) },
      h('span', { class: 'run-title' }, titleOf(t)),
      h('span', { class: 'run-line' },
        h('span', { class: 'workflow' }, t.metadata?.graph_id || ''),
        h('span', { class: 'status', 'data-status': statusOf(t) }, statusOf(t)),
        h('time', { datetime: t.created_at }, age(t.created_at)))))));
  if (focused) document.querySelector(`[data-thread="${CSS.escape(focused)}"]`)?.focus();
}

async function pollRuns() {
  for (;;) {
    try {
      const threads = await api('POST', '/threads/search', { limit: 50 });
      renderRuns(threads);
      const shown = view && threads.find((t) => t.thread_id === view.id);
      if (shown) renderThread(view, shown);
    } catch { /* shown as unreachable, or the token is asked for */ }
    await nap(POLL_MS, poller);
  }
}

// ---- one run -------------------------------------------------------------------

function openRun(id, byUser) {
  if (view?.id === id) return;
  view?.abort?.abort();
  view = { id, ended: new Set(), decisions: new Set(), lastIds: {}, steps: new Map(), pendingId: undefined,
           thread: null, endNode: null };
  $('run').hidden = false;
  $('run-title').textContent = 'Run';
  $('run-meta').textContent = '';
  $('notice').textContent = '';
  $('pending').replaceChildren();
  $('timeline').replaceChildren();
  for (const b of document.querySelectorAll('.run-item')) {
    b.setAttribute('aria-current', String(b.dataset.thread === id));
  }
  if (byUser) $('run-title').focus();
  followRun(view);
}

// Follows the thread's runs in order, each over its stream, then watches for
// the next one (an answer posted here or by someone else).
async function followRun(v) {
  while (v === view) {
    try {
      const runs = (await api('GET', `/threads/${v.id}/runs?limit=100`)).reverse();  // oldest first
      const next = runs.find((r) => !v.ended.has(r.run_id));
      if (next) {
        if (!v.decisions.has(next.run_id)) {
          v.decisions.add(next.run_id);
          renderDecision(next.kwargs?.command?.resume);
        }
        await followStream(v, next);
        continue;
      }
      renderThread(v, await api('GET', `/threads/${v.id}`));
    } catch (e) {
      if (v !== view) return;
    }
    await nap(POLL_MS, v);
  }
}

// One stream, from the last event seen (Last-Event-ID), until the run ends.
// Returns when the run has ended, throws when the connection failed.
async function followStream(v, run) {
  v.abort = new AbortController();
  const last = v.lastIds[run.run_id];
  const res = await call(`/threads/${v.id}/runs/${run.run_id}/stream?stream_mode=custom`,
    { headers: last ? { 'Last-Event-ID': String(last) } : {}, signal: v.abort.signal });
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  let frames = 0;
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value.replace(/\r/g, '');
      for (let end; (end = buffer.indexOf('\n\n')) >= 0;) {
        const frame = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        if (v !== view) return;
        if (onFrame(v, run, frame)) frames += 1;
      }
    }
  } catch (e) {
    if (e.name !== 'AbortError') setReachable(false);
    throw e;
  }
  // The server ends a stream at the run's end. Whatever closed this one, the
  // run has ended only once a stream from the last id brings nothing more.
  if (frames === 0) {
    const now = await api('GET', `/threads/${v.id}/runs/${run.run_id}`);
    if (now.status !== 'pending' && now.status !== 'running') v.ended.add(run.run_id);
    else await nap(POLL_MS, v);
  }
}

// An SSE frame; true when it carried an event id.
function onFrame(v, run, frame) {
  let event = 'message';
  let id = null;
  const data = [];
  for (const line of frame.split('\n')) {
    if (line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (field === 'event') event = value;
    else if (field === 'data') data.push(value);
    else if (field === 'id') id = value;
  }
  if (id === null) return false;
  v.lastIds[run.run_id] = Number(id);
  let payload = null;
  try { payload = JSON.parse(data.join('\n')); } catch { return true; }
  if (event === 'custom') renderEvent(v, payload);
  else if (event === 'error') line('failed', `Error: ${payload?.message || payload?.error || 'the run failed'}`);
  return true;
}

function renderThread(v, thread) {
  v.thread = thread;
  renderMeta(v);
  const pending = thread.status === 'interrupted' ? pendingOf(thread) : null;
  const key = pending ? pending.id : null;
  if (key === v.pendingId) return;  // unchanged: keep what is being typed
  v.pendingId = key;
  $('pending').replaceChildren(pending ? pendingCard(v, thread, pending.value) : '');
}

// The run's workflow, status and age; a completed run also names the end node
// it reached (the sample's "done" or "declined"), as its stream reported it.
function renderMeta(v) {
  const thread = v.thread;
  if (!thread) return;
  const status = statusOf(thread);
  const end = status === 'completed' && v.endNode ? `: ${v.endNode}` : '';
  $('run-title').textContent = titleOf(thread);
  $('run-meta').textContent = `${thread.metadata?.graph_id || ''} · ${status}${end} · started ${age(thread.created_at)}`;
}

// ---- the question or the approval -------------------------------------------------

function fields(value) {
  if (typeof value === 'string') {  // arguments as the model wrote them: JSON text
    try { value = JSON.parse(value); } catch { /* shown as it is */ }
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return h('pre', {}, show(value));
  return h('dl', { class: 'fields' }, Object.entries(value).map(([k, x]) => [
    h('dt', {}, k),
    h('dd', {}, typeof x === 'object' && x !== null && !(Array.isArray(x) && x.every((i) => typeof i !== 'object'))
      ? h('pre', {}, show(x)) : show(x)),
  ]));
}

function show(value) {
  if (typeof value === 'string') return value;
  if (value === null || value === undefined) return '—';
  if (Array.isArray(value) && value.length === 0) return 'none';
  if (Array.isArray(value) && value.every((i) => typeof i !== 'object')) return value.join(', ');
  return JSON.stringify(value, null, 2);
}

function pendingCard(v, thread, value) {
  const status = h('p', { class: 'hint', role: 'status' });
  const card = h('section', { class: 'card', 'aria-labelledby': 'pending-heading' });
  const send = async (resume, form) => {
    for (const b of form.querySelectorAll('button, textarea, input')) b.disabled = true;
    status.textContent = 'Sending…';
    try {
      await api('POST', `/threads/${v.id}/runs`,
        { assistant_id: thread.metadata?.graph_id, command: { resume }, stream_mode: ['custom'] });
      status.textContent = 'Sent.';
      v.wake?.();
    } catch (e) {
      if (e.status === 409) {
        status.textContent = '';
        const who = value?.type === 'clarification' ? 'answered' : 'decided';
        $('notice').textContent = `Someone else ${who} first, so this was not sent (the server said: ${e.message}).`;
        v.wake?.();
      } else {
        status.textContent = `Not sent: ${e.message}`;
        for (const b of form.querySelectorAll('button, textarea, input')) b.disabled = false;
      }
    }
  };

  if (value?.type === 'clarification') {
    const form = h('form', {},
      h('label', { for: 'answer' }, 'Your answer'),
      h('textarea', { id: 'answer', rows: 2, required: true }),
      h('button', { type: 'submit' }, 'Send answer'));
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      const text = $('answer').value.trim();
      if (text) send(text, form);
    });
    card.append(h('h3', { id: 'pending-heading' }, 'A question for you'),
      h('p', { class: 'question' }, value.question || ''), form, status);
    return card;
  }

  const calls = Array.isArray(value?.calls) ? value.calls : [];
  const form = h('form', { class: 'decision' },
    h('label', { for: 'reason' }, 'Reason (sent with a rejection)'),
    h('input', { id: 'reason', type: 'text' }),
    h('div', { class: 'buttons' },
      h('button', { type: 'submit', value: 'approve', class: 'approve' }, 'Approve'),
      h('button', { type: 'submit', value: 'reject', class: 'reject' }, 'Reject')));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const decision = event.submitter?.value === 'reject' ? 'reject' : 'approve';
    const reason = $('reason').value.trim();
    send(decision === 'reject' && reason ? { decision, reason } : { decision }, form);
  });
  card.append(h('h3', { id: 'pending-heading' },
    calls.length === 1 ? 'This tool call waits for your approval' : `These ${calls.length} tool calls wait for your approval`),
  ...calls.map((c) => h('article', { class: 'call' },
    h('h4', {}, String(c.tool)),
    c.description ? h('p', {}, String(c.description)) : null,
    fields(c.arguments),
    c.agent ? h('p', { class: 'hint' }, `asked by ${c.agent}`) : null)),
  form, status);
  return card;
}

// ---- the timeline --------------------------------------------------------------------

function line(kind, ...content) {
  $('timeline').append(h('li', { class: `event ${kind}` }, ...content));
}

// What a resumed run was told (its command.resume, from whoever sent it):
// a decision on the pending tool calls, with the reason of a rejection, or
// the answer to a question.
function renderDecision(resume) {
  if (resume === undefined || resume === null) return;
  if (typeof resume === 'string') return line('decision', 'Answered: ', h('q', {}, resume));
  if (resume.decision === 'reject') {
    return line('decision rejected', h('strong', {}, 'Rejected'),
      typeof resume.reason === 'string' && resume.reason
        ? [', because: ', h('q', { class: 'reason' }, resume.reason)] : ' (no reason given)');
  }
  if (resume.decision === 'approve') return line('decision approved', h('strong', {}, 'Approved'));
  return null;
}

// The step an event is about: one item per workflow run, step and node.
function stepOf(v, e) {
  const key = `${e.workflow_id}/${e.step}/${e.node}`;
  let item = v.steps.get(key);
  if (!item) {
    item = h('li', { class: 'step', 'data-state': 'running' },
      h('h4', {}, `Step ${e.step} · ${e.node}`, e.agent ? h('span', { class: 'agent' }, e.agent) : null));
    v.steps.set(key, item);
    $('timeline').append(item);
  }
  return item;
}

function renderEvent(v, e) {
  switch (e.kind) {
    case 'workflow_started':
    case 'resumed':
      v.endNode = null;
      renderMeta(v);
      return line('started', e.kind === 'resumed' ? 'Resumed' : 'Run started');
    case 'step_started': return stepOf(v, e);
    case 'step_completed': {
      const item = stepOf(v, e);
      const env = e.envelope || {};
      const c = Number(env.confidence);
      item.dataset.state = 'done';
      if (Number.isFinite(c)) {
        const below = c < THRESHOLD;
        item.append(h('p', { class: below ? 'confidence below' : 'confidence' },
          h('meter', { min: 0, max: 1, low: THRESHOLD, high: 0.9, optimum: 1, value: c,
                       'aria-label': 'confidence' }),
          ` confidence ${c.toFixed(2)}, ${below ? 'below' : 'at or above'} the threshold ${THRESHOLD.toFixed(2)}`));
      }
      if (env.explanation) item.append(h('p', { class: 'explanation' }, String(env.explanation)));
      if (env.data !== undefined) item.append(h('details', {}, h('summary', {}, 'Data'), h('pre', {}, show(env.data))));
      return item;
    }
    case 'step_failed': {
      const item = stepOf(v, e);
      item.dataset.state = 'failed';
      return item.append(h('p', { class: 'error' }, `Failed: ${e.error?.message || e.error?.type || 'error'}`));
    }
    case 'routed':
      return stepOf(v, e).append(h('p', { class: 'route' }, `→ ${e.target}`,
        e.condition ? h('span', { class: 'hint' }, ` because ${e.condition}`) : null));
    case 'tool_called': {
      const t = e.tool_call || {};
      if (t.is_error && t.error?.code === 'rejected') {  // a person said no: not made, and why
        return stepOf(v, e).append(h('div', { class: 'tool rejected' },
          h('p', {}, h('strong', {}, String(t.tool)), ' rejected, not made'),
          fields(t.arguments ?? {}),
          h('p', { class: 'reason' }, String(t.error.message || 'rejected'))));
      }
      const outcome = t.is_error ? 'error' : 'ok';
      const result = t.is_error ? (t.error ?? t.result) : t.result;
      const text = show(result ?? null);
      return stepOf(v, e).append(h('div', { class: `tool ${outcome}` },
        h('p', {}, h('strong', {}, String(t.tool)),
          ` called: ${outcome}${t.replayed || e.replayed ? ' (replayed)' : ''}`),
        fields(t.arguments ?? {}),
        h('details', { open: text.length < 240 }, h('summary', {}, t.is_error ? 'Error' : 'Result'),
          h('pre', {}, text))));
    }
    case 'paused': return line('paused', `Asked: ${e.question || ''}`);
    case 'approval_requested': return line('paused', `Waiting for approval: ${e.question || ''}`);
    case 'workflow_completed':
      v.endNode = typeof e.node === 'string' ? e.node : null;
      renderMeta(v);
      return line('completed', v.endNode ? `Completed: ended at ${v.endNode}` : 'Completed');
    case 'workflow_failed': return line('failed', `Failed: ${e.error?.message || 'error'}`);
    case 'workflow_cancelled': return line('failed', 'Cancelled');
    case 'workflow_interrupted': return line('paused', 'Stopped; it can be continued');
    default: return null;  // model text deltas and the like
  }
}

loadWorkflows();
pollRuns();
