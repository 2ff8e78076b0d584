// Workflow definitions: a builder in C++ (and the equivalent JSON workflow
// file, see workflow_file.hpp and docs/workflow-file.md) produce a
// workflow_definition; compile() checks it against an agent registry and
// returns an immutable compiled_workflow the hub runs.
//
//   workflow_builder b{"scheduling"};
//   b.entry("parse");
//   b.agent("parse", "nl_parser")
//       .route(condition::equals("/intent", "schedule"), "schedule")
//       .otherwise("done");
//   b.agent("schedule").timeout(std::chrono::seconds{10}).otherwise("done");
//   b.end("done");
//   auto workflow = b.compile(registry);
//
// Nodes: an agent, a parallel group of agents, a coordinator (a model or a
// deterministic router picks the agent), a synthesis step, and the terminal
// nodes clarify (pause and ask the user), end and fail. After a node its
// routes are tried in order; the first whose condition holds chooses the next
// node. Before any route, an envelope whose confidence is below the node's
// clarification threshold (workflow default 0.7) pauses the workflow for
// clarification, unless the node opts out. Cycles are allowed and bounded
// by max_steps per run.
//
// compile() refuses a definition with an orchestrator_error
// (invalid_workflow) naming the node: unknown agent, unknown route target,
// unreachable node, a node with no way out (no routes, or no path to a
// terminal node), an `otherwise` that is not last, a condition on a data
// field the agent's output schema does not declare.
//
// Thread-safety: workflow_definition and workflow_builder are plain values
// (not synchronized). compiled_workflow is immutable and safe to share
// between threads and concurrent runs. The agent registry passed to
// compile() must outlive the compiled workflow (it keeps pointers to the
// agents).
#pragma once

#include <switchboard/a2a/remote_agent_config.hpp>
#include <switchboard/mcp/server_config.hpp>
#include <switchboard/orchestrator/condition.hpp>
#include <switchboard/protocol/coordination.hpp>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace switchboard::agents {
class agent_outputs;
class agent_registry;
}  // namespace switchboard::agents

namespace switchboard::orchestrator {

enum class node_kind { agent, parallel, coordinator, synthesis, clarify, end, fail };
std::string_view to_string(node_kind kind) noexcept;  // "agent", "parallel", ...

// Retries of retryable errors (a model_error with retryable(), a timeout).
struct retry_policy {
  int max_attempts = 1;                          // 1 = no retry
  std::chrono::milliseconds backoff{0};          // wait before the 2nd attempt
  double backoff_multiplier = 2.0;               // growth per further attempt
  friend bool operator==(const retry_policy&, const retry_policy&) = default;
};

struct route {
  condition when;
  std::string target;  // node name
  friend bool operator==(const route&, const route&) = default;
};

// A deterministic router: chooses the agent from the input and the outputs
// so far, without a model. Must return a name among the candidates.
using router_fn = std::function<protocol::coordination_request(
    const boost::json::value& input, const agents::agent_outputs& outputs)>;

struct coordinator_options {
  std::vector<std::string> candidates;  // agents it may choose; empty = every registered agent
  std::string default_agent;            // runs when the model fails (required)
  std::string model_role = "coordinator";  // agent_context model role; falls back to "default"
  std::string instructions;             // extra text for the coordinator's system prompt
  router_fn router;                     // set: deterministic, no model is asked
};

struct synthesis_options {
  // Who writes the final answer from all outputs, first that is set:
  std::string agent;       // a registered agent (sees every output in its context)
  std::string model_role;  // a model asked directly for {answer} (complete_structured)
  // neither: deterministic — data {"answer": joined explanations,
  // "outputs": {agent: data}}, confidence = the lowest of the outputs.
};

struct node_definition {
  std::string name;
  node_kind kind = node_kind::agent;
  std::string agent;                   // agent: the agent's registered name
  std::vector<std::string> agents;     // parallel: the group
  bool cancel_rest_on_failure = false; // parallel: one failure cancels the others
  coordinator_options coordinator;     // coordinator
  synthesis_options synthesis;         // synthesis
  std::string message;                 // fail: the reason recorded
  std::optional<double> clarification_threshold;  // overrides the workflow's
  bool clarify_on_low_confidence = true;          // false: never pause here
  std::optional<std::chrono::milliseconds> timeout;  // per agent call
  retry_policy retry;
  std::vector<route> routes;
  std::string on_error;                // node to go to when the step fails; "" = fail the workflow
};

// A plugin a workflow file names and the configuration it hands to it
// (agents::plugin_host::config). `name` is a file path (relative to the
// workflow file) or a plugin name found on the plugin search path
// (agents::find_plugin).
struct plugin_reference {
  std::string name;
  boost::json::object config;

  friend bool operator==(const plugin_reference&, const plugin_reference&) = default;
};

struct workflow_definition {
  std::string name;
  std::string entry;
  double clarification_threshold = 0.7;
  int max_steps = 100;                 // agent/group steps per run (resumes included)
  int max_clarification_rounds = 3;
  // What a host loads before compile(), in this order (file form; paths
  // relative to the workflow file): schema directories, plugins, prompt
  // directories. The orchestrator records them; loading is the host's job.
  std::vector<std::string> schema_dirs;
  std::vector<plugin_reference> plugins;
  std::vector<std::string> prompt_dirs;
  // MCP servers whose tools the host registers as "mcp:<server>/<tool>"
  // (file form: "mcp_servers": {"<server>": {"command": [...]} or {"url": ...}};
  // docs/mcp.md). Sorted by name; starting them is the host's job.
  std::vector<mcp::server_config> mcp_servers;
  // Remote A2A agents the host registers as agents under their names (file
  // form: "a2a_agents": {"<agent>": {"card": URL, "output_schema": ...}};
  // docs/interop.md). Sorted by name.
  std::vector<a2a::remote_agent_config> a2a_agents;
  std::vector<node_definition> nodes;  // in definition order

  const node_definition* find(std::string_view node) const noexcept;
};

class compiled_workflow;

// Fluent editing of one node of a builder; valid until the builder is gone.
class node_builder {
 public:
  node_builder& route(condition when, std::string target);
  node_builder& otherwise(std::string target);
  node_builder& on_error(std::string target);
  node_builder& timeout(std::chrono::milliseconds limit);
  node_builder& retry(retry_policy policy);
  node_builder& clarification_threshold(double threshold);
  node_builder& no_clarification();  // opt out of the low-confidence pause
  node_builder& cancel_rest_on_failure(bool value = true);
  node_definition& definition();

 private:
  friend class workflow_builder;
  node_builder(workflow_definition& workflow, std::size_t index) : workflow_(&workflow), index_(index) {}
  workflow_definition* workflow_;
  std::size_t index_;
};

class workflow_builder {
 public:
  explicit workflow_builder(std::string name);
  explicit workflow_builder(workflow_definition definition);

  workflow_builder& entry(std::string node);
  workflow_builder& clarification_threshold(double threshold);
  workflow_builder& max_steps(int steps);
  workflow_builder& max_clarification_rounds(int rounds);

  // `agent_name` defaults to the node's name.
  node_builder agent(std::string node, std::string agent_name = {});
  node_builder parallel(std::string node, std::vector<std::string> agents);
  node_builder coordinator(std::string node, coordinator_options options);
  node_builder synthesis(std::string node, synthesis_options options = {});
  node_builder clarify(std::string node);
  node_builder end(std::string node);
  node_builder fail(std::string node, std::string message);
  node_builder node(std::string_view name);  // an existing node; throws if unknown

  const workflow_definition& definition() const noexcept { return definition_; }
  // Throws orchestrator_error(invalid_workflow) naming the node.
  std::shared_ptr<const compiled_workflow> compile(const agents::agent_registry& registry) const;

 private:
  node_builder add(node_definition node);
  workflow_definition definition_;
};

// Checks `definition` against `registry`; throws orchestrator_error
// (invalid_workflow) naming the node and what is wrong.
std::shared_ptr<const compiled_workflow> compile(workflow_definition definition,
                                                 const agents::agent_registry& registry);

class compiled_workflow {
 public:
  struct impl;
  explicit compiled_workflow(std::unique_ptr<const impl> impl);
  ~compiled_workflow();
  compiled_workflow(const compiled_workflow&) = delete;
  compiled_workflow& operator=(const compiled_workflow&) = delete;

  const std::string& name() const noexcept;
  const workflow_definition& definition() const noexcept;
  // Identity of what the definition does (nodes, agents, routes, limits),
  // e.g. "fnv1a64:9c1f...": a stored run continues only under a definition
  // with the same fingerprint. Not a security measure: it detects change.
  const std::string& fingerprint() const noexcept;
  const impl& internals() const noexcept { return *impl_; }  // for the hub

 private:
  std::unique_ptr<const impl> impl_;
};

}  // namespace switchboard::orchestrator
