// The benchmark's workflow, of the sample's shape, shared by the load
// program (LLM agents over HTTP) and the in-process benchmark (native
// agents):
//
//   coordinate   coordinator: picks research or support, which then runs
//   route        confidence >= 0.8 -> review, otherwise -> quick_check
//   review | quick_check
//   synthesize   deterministic synthesis of every output -> done
#pragma once

#include <switchboard/agents/agent_registry.hpp>
#include <switchboard/orchestrator/workflow.hpp>
#include <switchboard/protocol/schema_registry.hpp>

#include "../protocol/bench_schemas.hpp"

#include <boost/json/parse.hpp>

#include <memory>
#include <string_view>

namespace bench {

// Output schemas of the four agents: small, like the sample's
// (findings_schema is shared with the protocol benchmarks).
inline constexpr std::string_view review_schema = R"({
  "type": "object", "additionalProperties": false,
  "required": ["verdict", "notes", "score"],
  "properties": {
    "verdict": {"type": "string", "enum": ["accept", "revise"]},
    "notes": {"type": "array", "items": {"type": "string"}},
    "score": {"type": "number", "minimum": 0, "maximum": 1}
  }
})";

inline void register_schemas(switchboard::protocol::schema_registry& schemas) {
  schemas.add({"bench.findings", 1}, boost::json::parse(findings_schema), "bench/e2e/bench_workflow.hpp");
  schemas.add({"bench.review", 1}, boost::json::parse(review_schema), "bench/e2e/bench_workflow.hpp");
}

// The threshold of the route on confidence after `coordinate`.
inline constexpr double review_threshold = 0.8;

// `router` set: a deterministic coordinator (no model call).
inline std::shared_ptr<const switchboard::orchestrator::compiled_workflow> build_workflow(
    const switchboard::agents::agent_registry& registry, switchboard::orchestrator::router_fn router = {}) {
  namespace so = switchboard::orchestrator;
  so::workflow_builder b{"bench_e2e"};
  b.entry("coordinate");
  so::coordinator_options coordinator;
  coordinator.candidates = {"research", "support"};
  coordinator.default_agent = "research";
  coordinator.router = std::move(router);
  b.coordinator("coordinate", coordinator)
      .route(so::condition::confidence(so::comparison::ge, review_threshold), "review")
      .otherwise("quick_check");
  b.agent("review").otherwise("synthesize");
  b.agent("quick_check").otherwise("synthesize");
  b.synthesis("synthesize").otherwise("done");
  b.end("done");
  return b.compile(registry);
}

}  // namespace bench
