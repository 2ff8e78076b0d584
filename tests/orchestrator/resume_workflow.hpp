// The workflow the durable-resume test runs in two processes: the test
// binary and switchboard_orchestrator_pause_helper build it identically.
#pragma once

#include <switchboard/agents/agent_registry.hpp>
#include <switchboard/orchestrator/workflow.hpp>

#include "orchestrator_test_support.hpp"

namespace switchboard::orchestrator::testing {

// "parse" is unsure until the user answered, then echoes the answer;
// "book" confirms.
inline void register_resume_agents(agents::agent_registry& registry) {
  registry.add(std::make_shared<fn_agent>("parse", [](agents::agent_context& c, int) {
    if (c.clarification_answers.empty()) {
      return make_envelope({{"clarification_question", "Which day do you mean?"}}, 0.3, "The day is ambiguous.");
    }
    return make_envelope({{"status", c.clarification_answers.back()}}, 0.95, "Day understood.");
  }));
  registry.add(std::make_shared<fn_agent>("book", [](agents::agent_context& c, int) {
    const auto* parsed = c.outputs.latest("parse");
    return make_envelope({{"status", parsed ? parsed->data.at("status") : "nothing parsed"}}, 0.9, "Booked.");
  }));
}

inline workflow_builder resume_workflow() {
  workflow_builder b{"booking"};
  b.agent("parse").route(condition::exists("/status"), "book").otherwise("done");
  b.agent("book").otherwise("done");
  b.end("done");
  return b;
}

}  // namespace switchboard::orchestrator::testing
