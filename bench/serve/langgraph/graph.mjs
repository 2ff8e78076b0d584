// bench/serve's workflow as a LangGraph JS graph: the same four nodes as
// ../workflow/workflow.json with the same trivial work (fixed answers, no
// model), and the same state shape as Switchboard's thread values
// (outputs by agent, status, step, result).
//
//   coordinate   research's fixed findings (support's for a support topic);
//                waits input.hold_ms first when given
//   route        confidence >= 0.8 -> review, otherwise -> quick_check
//   review | quick_check
//   synthesize   deterministic synthesis of every output -> END
//
// `park` pauses at once for a person (interrupt), like ../workflow/park.json.
import { Annotation, END, START, StateGraph, interrupt } from "@langchain/langgraph";

const State = Annotation.Root({
  request: Annotation(),
  user: Annotation(),
  hold_ms: Annotation(),
  outputs: Annotation({ reducer: (a, b) => ({ ...a, ...b }), default: () => ({}) }),
  status: Annotation(),
  step: Annotation({ reducer: (a, b) => b, default: () => 0 }),
  result: Annotation(),
});

const findings = {
  topic: "quarterly report",
  findings: ["Revenue grew 4%.", "Costs fell 2%."],
  sources: [{ title: "Q3 report", year: 2026 }],
};
const review = { verdict: "accept", notes: ["Figures match the report."], score: 0.9 };
const envelope = (data, explanation, confidence = 0.9) => ({
  data: structuredClone(data),
  explanation,
  confidence,
  reasoning: "A fixed answer.",
});
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const coordinate = async (state) => {
  if (Number.isInteger(state.hold_ms) && state.hold_ms > 0) await sleep(state.hold_ms);
  return { outputs: { research: envelope(findings, "Two findings, one source.") }, status: "running", step: state.step + 1 };
};
const support = async (state) => ({
  outputs: { support: envelope(findings, "Two findings, one source.") },
  step: state.step + 1,
});
const reviewNode = async (state) => ({ outputs: { review: envelope(review, "The findings hold.") }, step: state.step + 1 });
const quickCheck = async (state) => ({
  outputs: { quick_check: envelope(review, "The findings hold.") },
  step: state.step + 1,
});
// Switchboard's deterministic synthesis: the explanations joined, every
// agent's data, the lowest confidence.
const synthesize = async (state) => {
  const agents = Object.entries(state.outputs);
  const answer = {
    data: {
      answer: agents.map(([, e]) => e.explanation).join(" "),
      outputs: Object.fromEntries(agents.map(([name, e]) => [name, e.data])),
    },
    explanation: agents.map(([, e]) => e.explanation).join(" "),
    confidence: Math.min(...agents.map(([, e]) => e.confidence)),
    reasoning: `Combined the latest output of ${agents.length} agent(s); confidence is the lowest of theirs.`,
  };
  return { outputs: { synthesize: answer }, result: answer, status: "completed", step: state.step + 1 };
};

const byConfidence = (agent) => (state) => (state.outputs[agent].confidence >= 0.8 ? "review" : "quick_check");

export const graph = new StateGraph(State)
  .addNode("coordinate", coordinate)
  .addNode("support", support)
  .addNode("review", reviewNode)
  .addNode("quick_check", quickCheck)
  .addNode("synthesize", synthesize)
  .addEdge(START, "coordinate")
  .addConditionalEdges(
    "coordinate",
    (state) => (state.outputs.research.data.topic === "support" ? "support" : byConfidence("research")(state)),
    ["support", "review", "quick_check"],
  )
  .addConditionalEdges("support", byConfidence("support"), ["review", "quick_check"])
  .addEdge("review", "synthesize")
  .addEdge("quick_check", "synthesize")
  .addEdge("synthesize", END)
  .compile();

export const park = new StateGraph(State)
  .addNode("ask", async (state) => {
    const answer = interrupt({
      type: "clarification",
      question: "ask is not sure: Is the quarterly report the one meant? (A fixed answer.) Could you clarify?",
      node: "ask",
      agent: "ask",
    });
    return { outputs: { ask: envelope(review, String(answer)) }, status: "completed", step: state.step + 1 };
  })
  .addEdge(START, "ask")
  .addEdge("ask", END)
  .compile();
