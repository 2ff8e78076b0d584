// The checked, index-based form of a workflow definition the hub runs.
#pragma once

#include "state_journal.hpp"

#include <switchboard/agents/agent.hpp>
#include <switchboard/agents/agent_registry.hpp>
#include <switchboard/orchestrator/workflow.hpp>
#include <switchboard/protocol/validation.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
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
  // The fingerprint and the node names, as every save of a run records
  // them: built once here, not copied into each run.
  detail::definition_identity identity;
  // Node name → index into `nodes`, so that compiling (a lookup per route)
  // stays linear in the size of the workflow. The keys view the names in
  // `definition`, which never changes once compiled.
  std::unordered_map<std::string_view, int> index;

  int index_of(std::string_view node) const noexcept {
    const auto it = index.find(node);
    return it == index.end() ? detail::no_node : it->second;
  }
};

}  // namespace switchboard::orchestrator
