// A loopback OpenAI-compatible model (POST …/chat/completions) whose answers
// the test scripts per agent, and which can hold an answer until the test
// releases it. A run whose LLM-backed agent waits on a held answer is
// "running" for as long as the test wants, with no timing involved: that is
// how the cancel, multitask and kill-mid-run tests keep a run active.
//
//   const model = await startFakeModel();
//   model.answerAlways("nl_parser", parsedQuestion());
//   const gate = model.hold("nl_parser", parsedQuestion());  // the next nl_parser call waits
//   ... start a run ...
//   await gate.asked;                    // the run is now inside the model call
//   gate.release();                      // the model answers
//
// The agent asking is read from the request (the schema name the prompt
// names, "<agent>.output@1"). A request with nothing scripted gets HTTP 500.
import { createServer } from "node:http";

export function agentOf(request) {
  const m = /\b(nl_parser|query|resolution)\.output@1/.exec(JSON.stringify(request ?? ""));
  return m ? m[1] : null;
}

export async function startFakeModel() {
  const once = new Map(); // agent -> [step]
  const always = new Map(); // agent -> step
  const requests = [];
  const sockets = new Set();
  const waiters = [];

  const server = createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (c) => (body += c));
    req.on("end", async () => {
      let request = null;
      try {
        request = JSON.parse(body);
      } catch {}
      const agent = agentOf(request);
      const record = { url: req.url, agent, body: request };
      requests.push(record);
      for (const w of waiters.splice(0)) w();
      if (!req.url.endsWith("/chat/completions")) {
        res.writeHead(404, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: `no route ${req.url}` } }));
        return;
      }
      const step = once.get(agent)?.shift() ?? always.get(agent);
      if (!step) {
        res.writeHead(500, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: `the fake model has no answer scripted for ${agent}` } }));
        return;
      }
      step.onAsked?.(record);
      if (step.gate) await step.gate;
      if (res.destroyed || req.socket.destroyed) return;
      reply(res, request, step.content);
    });
  });
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  const push = (agent, step) => {
    if (!once.has(agent)) once.set(agent, []);
    once.get(agent).push(step);
  };

  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    // The agents of the requests so far, in order of arrival.
    agents: () => requests.map((r) => r.agent),
    // The next request of `agent` is answered with `content` (a string, or an object sent as JSON).
    answer(agent, content) {
      push(agent, { content: text(content) });
    },
    // Every request of `agent` with nothing else scripted is answered with `content`.
    answerAlways(agent, content) {
      always.set(agent, { content: text(content) });
    },
    // The next request of `agent` waits until release(); `asked` resolves once it arrived.
    hold(agent, content) {
      let release;
      let onAsked;
      const gate = new Promise((r) => (release = r));
      const asked = new Promise((r) => (onAsked = r));
      push(agent, { content: text(content), gate, onAsked });
      return { asked, release: () => release() };
    },
    // Resolves once at least `n` requests have arrived.
    async requestCount(n) {
      while (requests.length < n) await new Promise((r) => waiters.push(r));
      return requests.length;
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

function text(content) {
  return typeof content === "string" ? content : JSON.stringify(content);
}

function reply(res, request, content) {
  const model = request?.model ?? "fake-model";
  if (request?.stream) {
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    const chunk = (delta, finish = null) =>
      `data: ${JSON.stringify({
        id: "chatcmpl-fake",
        object: "chat.completion.chunk",
        created: 0,
        model,
        choices: [{ index: 0, delta, finish_reason: finish }],
      })}\n\n`;
    res.write(chunk({ role: "assistant", content: "" }));
    res.write(chunk({ content }));
    res.write(chunk({}, "stop"));
    if (request?.stream_options?.include_usage) {
      res.write(
        `data: ${JSON.stringify({
          id: "chatcmpl-fake",
          object: "chat.completion.chunk",
          created: 0,
          model,
          choices: [],
          usage: { prompt_tokens: 10, completion_tokens: 10, total_tokens: 20 },
        })}\n\n`,
      );
    }
    res.end("data: [DONE]\n\n");
    return;
  }
  res.writeHead(200, { "content-type": "application/json" });
  res.end(
    JSON.stringify({
      id: "chatcmpl-fake",
      object: "chat.completion",
      created: 0,
      model,
      choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }],
      usage: { prompt_tokens: 10, completion_tokens: 10, total_tokens: 20 },
    }),
  );
}

// The nl_parser's envelope for a request the test wants parsed as a dated
// event (its schema: examples/scheduling/schemas/nl_parser.output@1.json).
export function parsedEvent({ title, date, start, end, participants, resources = [] }) {
  const [sh, sm] = start.split(":").map(Number);
  const [eh, em] = end.split(":").map(Number);
  return {
    data: {
      intent: "create",
      title,
      date,
      date_range: null,
      start_time: start,
      end_time: end,
      time_window: null,
      duration_minutes: eh * 60 + em - (sh * 60 + sm),
      participants,
      resources,
      priority: "normal",
      flexibility: "fixed",
    },
    explanation: `A create request: "${title}" on ${date} ${start}-${end}.`,
    confidence: 0.9,
    reasoning: "scripted by the test's fake model",
  };
}

// The nl_parser's envelope for a question about everyone's free time on `date`.
export function parsedQuestion(date = "2026-11-29") {
  return {
    data: {
      intent: "query",
      title: "Free time",
      date,
      date_range: null,
      start_time: null,
      end_time: null,
      time_window: null,
      duration_minutes: null,
      participants: ["Ana", "Sam", "Maya", "Leo"],
      resources: [],
      priority: "normal",
      flexibility: "flexible",
      query_kind: "free_time",
    },
    explanation: `A question about everyone's free time on ${date}.`,
    confidence: 0.9,
    reasoning: "scripted by the test's fake model",
  };
}

// The query agent's envelope answering parsedQuestion(date).
export function answeredQuestion(date = "2026-11-29") {
  const answer = `Everyone is free on ${date} from 07:00 to 13:00.`;
  return {
    data: {
      question: "When is everyone free?",
      kind: "free_time",
      date,
      participants: ["Ana", "Sam", "Maya", "Leo"],
      free_slots: [{ start: `${date}T07:00`, end: `${date}T13:00`, duration_minutes: 360 }],
      answer,
    },
    explanation: `Answer: ${answer}`,
    confidence: 0.9,
    reasoning: "scripted by the test's fake model",
  };
}

// The nl_parser's envelope for a request too vague to schedule: the hub
// pauses for clarification with its question.
export function vagueEvent(title = "Piano lesson") {
  return {
    data: {
      intent: "create",
      title,
      date: null,
      date_range: null,
      start_time: null,
      end_time: null,
      time_window: null,
      duration_minutes: null,
      participants: ["Leo"],
      resources: [],
      priority: "normal",
      flexibility: "flexible",
      unresolved: ["date", "start_time"],
      clarification_question: `When should "${title}" take place?`,
    },
    explanation: `A create request: "${title}", no day or time given.`,
    confidence: 0.3,
    reasoning: "scripted by the test's fake model",
  };
}
