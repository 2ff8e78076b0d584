// The checked, index-based form of a workflow definition the hub runs.
#pragma once

#include <switchboard/agents/agent.hpp>
#include <switchboard/agents/agent_registry.hpp>
#include <switchboard/orchestrator/workflow.hpp>
#include <switchboard/protocol/validation.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace switchboard::orchestrator {

namespace detail {

inline constexpr int no_node = -1;

struct compiled_route {
  const condition* when;   // points into the definition
  int target;
  std::string text;        // condition::to_string(), computed once for the audit log
};

struct compiled_node {
  const node_definition* definition;
  agents::agent* agent = nullptr;              // agent node, synthesis by agent
  std::vector<agents::agent*> group;           // parallel; coordinator candidates
  agents::agent* default_agent = nullptr;      // coordinator
  std::optional<protocol::compiled_schema> model_schema;  // coordinator / synthesis by model
  std::vector<std::string> candidate_names;    // coordinator
  std::vector<compiled_route> routes;
  int on_error = no_node;
  double threshold = 0.7;
  bool clarify = true;

  node_kind kind() const noexcept { return definition->kind; }
  const std::string& name() const noexcept { return definition->name; }
};

}  // namespace detail

struct compiled_workflow::impl {
  workflow_definition definition;
  std::vector<detail::compiled_node> nodes;
  int entry = 0;
  const agents::agent_registry* registry = nullptr;
  std::string fingerprint;

  int index_of(std::string_view node) const noexcept {
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      if (nodes[i].name() == node) return static_cast<int>(i);
    }
    return detail::no_node;
  }
};

}  // namespace switchboard::orchestrator
