#include <switchboard/orchestrator/workflow.hpp>

#include <switchboard/agents/agent_registry.hpp>
#include <switchboard/orchestrator/error.hpp>

#include "detail/compiled.hpp"
#include "detail/pointer.hpp"

#include <boost/json/object.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <utility>

namespace switchboard::orchestrator {

namespace json = boost::json;

std::string_view to_string(node_kind kind) noexcept {
  switch (kind) {
    case node_kind::agent: return "agent";
    case node_kind::parallel: return "parallel";
    case node_kind::coordinator: return "coordinator";
    case node_kind::synthesis: return "synthesis";
    case node_kind::clarify: return "clarify";
    case node_kind::end: return "end";
    case node_kind::fail: return "fail";
  }
  return "?";
}

const node_definition* workflow_definition::find(std::string_view node) const noexcept {
  for (const auto& n : nodes) {
    if (n.name == node) return &n;
  }
  return nullptr;
}

// ---------------------------------------------------------------- builder

node_definition& node_builder::definition() { return workflow_->nodes[index_]; }

node_builder& node_builder::route(condition when, std::string target) {
  definition().routes.push_back({std::move(when), std::move(target)});
  return *this;
}
node_builder& node_builder::otherwise(std::string target) {
  return route(condition::otherwise(), std::move(target));
}
node_builder& node_builder::on_error(std::string target) {
  definition().on_error = std::move(target);
  return *this;
}
node_builder& node_builder::timeout(std::chrono::milliseconds limit) {
  definition().timeout = limit;
  return *this;
}
node_builder& node_builder::retry(retry_policy policy) {
  definition().retry = policy;
  return *this;
}
node_builder& node_builder::clarification_threshold(double threshold) {
  definition().clarification_threshold = threshold;
  return *this;
}
node_builder& node_builder::no_clarification() {
  definition().clarify_on_low_confidence = false;
  return *this;
}
node_builder& node_builder::cancel_rest_on_failure(bool value) {
  definition().cancel_rest_on_failure = value;
  return *this;
}

workflow_builder::workflow_builder(std::string name) { definition_.name = std::move(name); }
workflow_builder::workflow_builder(workflow_definition definition) : definition_(std::move(definition)) {}

workflow_builder& workflow_builder::entry(std::string node) {
  definition_.entry = std::move(node);
  return *this;
}
workflow_builder& workflow_builder::clarification_threshold(double threshold) {
  definition_.clarification_threshold = threshold;
  return *this;
}
workflow_builder& workflow_builder::max_steps(int steps) {
  definition_.max_steps = steps;
  return *this;
}
workflow_builder& workflow_builder::max_clarification_rounds(int rounds) {
  definition_.max_clarification_rounds = rounds;
  return *this;
}

node_builder workflow_builder::add(node_definition node) {
  if (definition_.entry.empty()) definition_.entry = node.name;  // first node is the default entry
  definition_.nodes.push_back(std::move(node));
  return node_builder(definition_, definition_.nodes.size() - 1);
}

node_builder workflow_builder::agent(std::string node, std::string agent_name) {
  node_definition n;
  n.kind = node_kind::agent;
  n.agent = agent_name.empty() ? node : std::move(agent_name);
  n.name = std::move(node);
  return add(std::move(n));
}
node_builder workflow_builder::parallel(std::string node, std::vector<std::string> agents) {
  node_definition n;
  n.kind = node_kind::parallel;
  n.name = std::move(node);
  n.agents = std::move(agents);
  return add(std::move(n));
}
node_builder workflow_builder::coordinator(std::string node, coordinator_options options) {
  node_definition n;
  n.kind = node_kind::coordinator;
  n.name = std::move(node);
  n.coordinator = std::move(options);
  return add(std::move(n));
}
node_builder workflow_builder::synthesis(std::string node, synthesis_options options) {
  node_definition n;
  n.kind = node_kind::synthesis;
  n.name = std::move(node);
  n.synthesis = std::move(options);
  return add(std::move(n));
}
node_builder workflow_builder::clarify(std::string node) {
  node_definition n;
  n.kind = node_kind::clarify;
  n.name = std::move(node);
  return add(std::move(n));
}
node_builder workflow_builder::end(std::string node) {
  node_definition n;
  n.kind = node_kind::end;
  n.name = std::move(node);
  return add(std::move(n));
}
node_builder workflow_builder::fail(std::string node, std::string message) {
  node_definition n;
  n.kind = node_kind::fail;
  n.name = std::move(node);
  n.message = std::move(message);
  return add(std::move(n));
}
node_builder workflow_builder::node(std::string_view name) {
  for (std::size_t i = 0; i < definition_.nodes.size(); ++i) {
    if (definition_.nodes[i].name == name) return node_builder(definition_, i);
  }
  throw orchestrator_error(orchestrator_errc::invalid_workflow,
                           "workflow '" + definition_.name + "': no node named '" + std::string(name) + "'");
}

std::shared_ptr<const compiled_workflow> workflow_builder::compile(
    const agents::agent_registry& registry) const {
  return orchestrator::compile(definition_, registry);
}

// ---------------------------------------------------------------- compiled_workflow

compiled_workflow::compiled_workflow(std::unique_ptr<const impl> impl) : impl_(std::move(impl)) {}
compiled_workflow::~compiled_workflow() = default;
const std::string& compiled_workflow::name() const noexcept { return impl_->definition.name; }
const workflow_definition& compiled_workflow::definition() const noexcept { return impl_->definition; }
const std::string& compiled_workflow::fingerprint() const noexcept { return impl_->fingerprint; }

// ---------------------------------------------------------------- compile

namespace {

bool is_terminal(node_kind kind) noexcept {
  return kind == node_kind::clarify || kind == node_kind::end || kind == node_kind::fail;
}

// Collects every problem's message prefix consistently.
class checker {
 public:
  checker(const workflow_definition& definition, const agents::agent_registry& registry)
      : definition_(definition), registry_(registry) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw orchestrator_error(orchestrator_errc::invalid_workflow,
                             "workflow '" + definition_.name + "': " + what);
  }
  [[noreturn]] void fail(const node_definition& node, const std::string& what) const {
    fail("node '" + node.name + "': " + what);
  }

  agents::agent* agent(const node_definition& node, const std::string& name,
                       std::string_view role) const {
    if (name.empty()) fail(node, std::string(role) + " names no agent");
    auto* a = registry_.find(name);
    if (!a) {
      std::string known;
      for (const auto& n : registry_.names()) known += (known.empty() ? "" : ", ") + n;
      fail(node, "unknown agent '" + name + "' (" + std::string(role) + "); registered: " +
                     (known.empty() ? "none" : known));
    }
    return a;
  }

  const json::value& output_schema(const node_definition& node, const agents::agent& a) const {
    auto id = a.output_schema();
    auto schema = registry_.schemas().find(id);
    if (!schema) {
      fail(node, "agent '" + std::string(a.name()) + "' declares output schema '" + id +
                     "' which is not registered");
    }
    schemas_.push_back(*schema);  // keeps the JSON alive while we walk it
    return schemas_.back().json();
  }

 private:
  const workflow_definition& definition_;
  const agents::agent_registry& registry_;
  mutable std::vector<protocol::compiled_schema> schemas_;
};

const json::value* local_ref(const json::value& root, const json::object& schema) {
  const auto* ref = schema.if_contains("$ref");
  if (!ref || !ref->is_string()) return nullptr;
  std::string_view text = ref->get_string();
  if (text.empty() || text.front() != '#') return nullptr;
  boost::system::error_code ec;
  return root.find_pointer(text.substr(1), ec);
}

// For each (schema location, token index) explored, the shallowest depth it
// was explored at. Any success ends the whole walk, so a pair explored again
// no shallower cannot succeed: without this, a schema whose branches share
// definitions (anyOf of $refs to an anyOf of $refs, ...) costs a walk
// exponential in its depth.
using explored_pairs = std::map<std::pair<const json::value*, std::size_t>, int>;

// Whether `schema` declares the location tokens[i..] (through properties,
// items, additionalProperties, allOf/anyOf/oneOf and local $ref).
bool declares(const json::value& root, const json::value& schema, const std::vector<std::string>& tokens,
              std::size_t i, explored_pairs& explored, int depth = 0) {
  if (i == tokens.size()) return true;
  if (depth > 64 || !schema.is_object()) return false;
  const auto [seen, first_time] = explored.try_emplace({&schema, i}, depth);
  if (!first_time) {
    if (seen->second <= depth) return false;
    seen->second = depth;
  }
  const auto& object = schema.get_object();
  const auto& token = tokens[i];
  auto deeper = [&](const json::value& next, std::size_t next_token) {
    return declares(root, next, tokens, next_token, explored, depth + 1);
  };
  if (const auto* target = local_ref(root, object); target && deeper(*target, i)) return true;
  if (const auto* props = object.if_contains("properties"); props && props->is_object()) {
    if (const auto* p = props->get_object().if_contains(token); p && deeper(*p, i + 1)) return true;
  }
  if (const auto* extra = object.if_contains("additionalProperties");
      extra && extra->is_object() && deeper(*extra, i + 1)) {
    return true;
  }
  if (const auto* items = object.if_contains("items")) {
    // At most 18 digits: an index std::stoull can read (a longer one is past any tuple).
    const bool numeric = !token.empty() && token.size() <= 18 &&
                         std::all_of(token.begin(), token.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (numeric && items->is_object() && deeper(*items, i + 1)) return true;
    if (numeric && items->is_array()) {
      const auto index = std::stoull(token);
      if (index < items->get_array().size() && deeper(items->get_array()[index], i + 1)) return true;
    }
  }
  for (const char* combinator : {"allOf", "anyOf", "oneOf"}) {
    if (const auto* list = object.if_contains(combinator); list && list->is_array()) {
      for (const auto& branch : list->get_array()) {
        if (deeper(branch, i)) return true;
      }
    }
  }
  return false;
}

bool schema_declares(const json::value& schema, std::string_view pointer) {
  explored_pairs explored;
  return declares(schema, schema, detail::pointer_tokens(pointer), 0, explored);
}

void check_condition_fields(const checker& check, const node_definition& node,
                            const detail::compiled_node& compiled, std::size_t route_index,
                            const condition& when) {
  std::vector<std::string> pointers;
  when.collect_pointers(pointers);
  auto where = [&](const std::string& pointer) {
    return "route " + std::to_string(route_index + 1) + " reads data" + pointer;
  };
  for (const auto& pointer : pointers) {
    if (pointer.empty()) continue;  // the whole data object
    switch (node.kind) {
      case node_kind::agent: {
        const auto& schema = check.output_schema(node, *compiled.agent);
        if (!schema_declares(schema, pointer)) {
          check.fail(node, where(pointer) + " but the output schema '" + compiled.agent->output_schema() +
                               "' of agent '" + std::string(compiled.agent->name()) +
                               "' declares no such field");
        }
        break;
      }
      case node_kind::parallel: {
        // A group's envelope holds each member's data under its name.
        auto tokens = detail::pointer_tokens(pointer);
        auto member = std::find_if(compiled.group.begin(), compiled.group.end(),
                                   [&](const agents::agent* a) { return a->name() == tokens.front(); });
        if (member == compiled.group.end()) {
          check.fail(node, where(pointer) + " but '" + tokens.front() +
                               "' is not an agent of this parallel group (use /<agent>/<field>)");
        }
        const auto& schema = check.output_schema(node, **member);
        auto rest = pointer.substr(pointer.find('/', 1) == std::string::npos ? pointer.size()
                                                                              : pointer.find('/', 1));
        if (!schema_declares(schema, rest)) {
          check.fail(node, where(pointer) + " but the output schema '" + (*member)->output_schema() +
                               "' of agent '" + tokens.front() + "' declares no such field");
        }
        break;
      }
      case node_kind::coordinator: {
        bool any = false;
        for (const auto* candidate : compiled.group) {
          any = any || schema_declares(check.output_schema(node, *candidate), pointer);
        }
        if (!any) check.fail(node, where(pointer) + " but no candidate agent's output schema declares it");
        break;
      }
      default:
        break;  // synthesis: its data shape depends on who writes it
    }
  }
}

json::value synthesis_model_schema() {
  return json::object{
      {"type", "object"},
      {"properties",
       json::object{{"answer", json::object{{"type", "string"}}},
                    {"explanation", json::object{{"type", "string"}}},
                    {"confidence", json::object{{"type", "number"}, {"minimum", 0}, {"maximum", 1}}}}},
      {"required", json::array{"answer", "explanation", "confidence"}}};
}

void check_settings(const checker& check, const workflow_definition& d) {
  if (d.name.empty()) check.fail("the workflow has no name");
  if (d.nodes.empty()) check.fail("the workflow has no nodes");
  if (d.entry.empty()) check.fail("no entry node");
  const auto* entry = d.find(d.entry);
  if (!entry) check.fail("entry node '" + d.entry + "' does not exist");
  if (entry->kind == node_kind::clarify) check.fail(*entry, "a clarify node cannot be the entry (there is no step to ask about)");
  if (!(d.clarification_threshold >= 0 && d.clarification_threshold <= 1)) {
    check.fail("clarification_threshold must be within [0, 1]");
  }
  if (d.max_steps < 1) check.fail("max_steps must be at least 1");
  if (d.max_clarification_rounds < 0) check.fail("max_clarification_rounds must not be negative");
  std::set<std::string_view> names;
  for (const auto& n : d.nodes) {
    if (n.name.empty()) check.fail("a node has no name");
    if (!names.insert(n.name).second) check.fail(n, "defined twice");
  }
}

void compile_node_kind(const checker& check, const agents::agent_registry& registry,
                       const node_definition& n, detail::compiled_node& c) {
  switch (n.kind) {
    case node_kind::agent:
      c.agent = check.agent(n, n.agent, "agent");
      break;
    case node_kind::parallel: {
      if (n.agents.empty()) check.fail(n, "parallel group has no agents");
      std::set<std::string_view> seen;
      for (const auto& name : n.agents) {
        if (!seen.insert(name).second) check.fail(n, "agent '" + name + "' appears twice in the group");
        c.group.push_back(check.agent(n, name, "parallel group member"));
      }
      break;
    }
    case node_kind::coordinator: {
      const auto& o = n.coordinator;
      c.candidate_names = o.candidates.empty() ? registry.names() : o.candidates;
      if (c.candidate_names.empty()) check.fail(n, "the coordinator has no candidate agents");
      for (const auto& name : c.candidate_names) c.group.push_back(check.agent(n, name, "coordinator candidate"));
      c.default_agent = check.agent(n, o.default_agent, "coordinator default_agent");
      if (std::find(c.candidate_names.begin(), c.candidate_names.end(), o.default_agent) ==
          c.candidate_names.end()) {
        check.fail(n, "default_agent '" + o.default_agent + "' is not among the candidates");
      }
      if (!o.router) {
        c.model_schema = protocol::compiled_schema::compile(
            protocol::coordination_schema(c.candidate_names), "coordination_request");
      }
      break;
    }
    case node_kind::synthesis:
      if (!n.synthesis.agent.empty()) {
        c.agent = check.agent(n, n.synthesis.agent, "synthesis agent");
      } else if (!n.synthesis.model_role.empty()) {
        c.model_schema = protocol::compiled_schema::compile(synthesis_model_schema(), "synthesis_answer");
      }
      break;
    case node_kind::clarify:
    case node_kind::end:
    case node_kind::fail:
      if (!n.routes.empty()) check.fail(n, std::string(to_string(n.kind)) + " is a terminal node and cannot have routes");
      if (!n.on_error.empty()) check.fail(n, std::string(to_string(n.kind)) + " is a terminal node and cannot have on_error");
      break;
  }
}

void compile_node_policy(const checker& check, const workflow_definition& d, const node_definition& n,
                         detail::compiled_node& c) {
  c.threshold = n.clarification_threshold.value_or(d.clarification_threshold);
  c.clarify = n.clarify_on_low_confidence;
  if (!(c.threshold >= 0 && c.threshold <= 1)) check.fail(n, "clarification_threshold must be within [0, 1]");
  if (n.timeout && n.timeout->count() <= 0) check.fail(n, "timeout must be positive");
  if (n.retry.max_attempts < 1) check.fail(n, "retry max_attempts must be at least 1");
  if (n.retry.backoff.count() < 0 || !(n.retry.backoff_multiplier >= 1)) {
    check.fail(n, "retry backoff must be >= 0 and its multiplier >= 1");
  }
}

void compile_routes(const checker& check, const compiled_workflow::impl& w, const node_definition& n,
                    detail::compiled_node& c) {
  for (std::size_t r = 0; r < n.routes.size(); ++r) {
    const auto& route = n.routes[r];
    int target = w.index_of(route.target);
    if (target == detail::no_node) {
      check.fail(n, "route " + std::to_string(r + 1) + " goes to unknown node '" + route.target + "'");
    }
    if (route.when.type() == condition::kind::otherwise && r + 1 != n.routes.size()) {
      check.fail(n, "route " + std::to_string(r + 1) + " is `otherwise` but is not the last route");
    }
    check_condition_fields(check, n, c, r, route.when);
    c.routes.push_back({&route.when, target, route.when.to_string()});
  }
  if (!n.on_error.empty()) {
    c.on_error = w.index_of(n.on_error);
    if (c.on_error == detail::no_node) check.fail(n, "on_error goes to unknown node '" + n.on_error + "'");
  }
  if (!is_terminal(n.kind) && n.routes.empty()) {
    check.fail(n, "has no routes (no way out); add routes or an `otherwise`");
  }
}

std::vector<std::vector<int>> edges_of(const compiled_workflow::impl& w) {
  std::vector<std::vector<int>> edges(w.nodes.size());
  for (std::size_t i = 0; i < w.nodes.size(); ++i) {
    for (const auto& r : w.nodes[i].routes) edges[i].push_back(r.target);
    if (w.nodes[i].on_error != detail::no_node) edges[i].push_back(w.nodes[i].on_error);
  }
  return edges;
}

void check_graph(const checker& check, const compiled_workflow::impl& w) {
  auto edges = edges_of(w);
  // Forward: every node reachable from the entry.
  std::vector<bool> reached(w.nodes.size(), false);
  std::vector<int> stack{w.entry};
  reached[w.entry] = true;
  while (!stack.empty()) {
    int i = stack.back();
    stack.pop_back();
    for (int t : edges[i]) {
      if (!reached[t]) reached[t] = true, stack.push_back(t);
    }
  }
  for (std::size_t i = 0; i < w.nodes.size(); ++i) {
    if (!reached[i]) check.fail(*w.nodes[i].definition, "unreachable from the entry node '" + w.definition.entry + "'");
  }
  // Backward: every node reaches a terminal node (else a run could only end
  // by the step limit). One walk of the reversed edges from the terminals:
  // linear, where sweeping until nothing changes is quadratic on a chain.
  std::vector<std::vector<int>> predecessors(w.nodes.size());
  for (std::size_t i = 0; i < w.nodes.size(); ++i) {
    for (int t : edges[i]) predecessors[t].push_back(static_cast<int>(i));
  }
  std::vector<bool> exits(w.nodes.size(), false);
  for (std::size_t i = 0; i < w.nodes.size(); ++i) {
    if (is_terminal(w.nodes[i].kind())) exits[i] = true, stack.push_back(static_cast<int>(i));
  }
  while (!stack.empty()) {
    int i = stack.back();
    stack.pop_back();
    for (int p : predecessors[i]) {
      if (!exits[p]) exits[p] = true, stack.push_back(p);
    }
  }
  for (std::size_t i = 0; i < w.nodes.size(); ++i) {
    if (!exits[i]) check.fail(*w.nodes[i].definition, "no way out: no route from it leads to an end, fail or clarify node");
  }
}

// Feeds every field that changes what a run does into a 64-bit FNV-1a hash,
// each one length-prefixed so that no two definitions write the same text.
class fingerprint_builder {
 public:
  fingerprint_builder& add(std::string_view text) {
    add_raw(std::to_string(text.size()));
    add_raw(":");
    add_raw(text);
    return *this;
  }
  fingerprint_builder& add(double number) { return add(fmt::format("{}", number)); }
  fingerprint_builder& add(std::int64_t number) { return add(std::to_string(number)); }

  std::string text() const { return fmt::format("fnv1a64:{:016x}", hash_); }

 private:
  void add_raw(std::string_view bytes) {
    for (const unsigned char c : bytes) {
      hash_ ^= c;
      hash_ *= 0x100000001b3ULL;
    }
  }
  std::uint64_t hash_ = 0xcbf29ce484222325ULL;
};

std::string fingerprint_of(const compiled_workflow::impl& w) {
  const auto& d = w.definition;
  fingerprint_builder f;
  f.add(d.name).add(d.entry).add(d.clarification_threshold).add(std::int64_t{d.max_steps})
      .add(std::int64_t{d.max_clarification_rounds});
  for (const auto& c : w.nodes) {
    const auto& n = *c.definition;
    f.add(n.name).add(to_string(n.kind)).add(n.agent).add(std::int64_t(n.agents.size()));
    for (const auto& a : n.agents) f.add(a);
    f.add(std::int64_t{n.cancel_rest_on_failure}).add(std::int64_t(n.coordinator.candidates.size()));
    for (const auto& a : n.coordinator.candidates) f.add(a);
    f.add(n.coordinator.default_agent).add(n.coordinator.model_role).add(n.coordinator.instructions);
    f.add(std::int64_t{static_cast<bool>(n.coordinator.router)});
    f.add(n.synthesis.agent).add(n.synthesis.model_role).add(n.message);
    f.add(c.threshold).add(std::int64_t{c.clarify}).add(n.timeout ? std::int64_t{n.timeout->count()} : -1);
    f.add(std::int64_t{n.retry.max_attempts}).add(std::int64_t{n.retry.backoff.count()})
        .add(n.retry.backoff_multiplier);
    f.add(std::int64_t(c.routes.size()));
    for (const auto& r : c.routes) f.add(r.text).add(w.nodes[r.target].name());
    f.add(n.on_error);
  }
  return f.text();
}

}  // namespace

std::shared_ptr<const compiled_workflow> compile(workflow_definition definition,
                                                 const agents::agent_registry& registry) {
  auto w = std::make_unique<compiled_workflow::impl>();
  w->definition = std::move(definition);
  w->registry = &registry;
  const auto& d = w->definition;
  checker check(d, registry);
  check_settings(check, d);

  w->index.reserve(d.nodes.size());
  for (std::size_t i = 0; i < d.nodes.size(); ++i) w->index.emplace(d.nodes[i].name, static_cast<int>(i));
  w->nodes.reserve(d.nodes.size());
  for (const auto& n : d.nodes) {
    detail::compiled_node c;
    c.definition = &n;
    compile_node_kind(check, registry, n, c);
    compile_node_policy(check, d, n, c);
    w->nodes.push_back(std::move(c));
  }
  w->entry = w->index_of(d.entry);
  for (std::size_t i = 0; i < d.nodes.size(); ++i) compile_routes(check, *w, d.nodes[i], w->nodes[i]);
  check_graph(check, *w);
  w->fingerprint = fingerprint_of(*w);
  w->identity.fingerprint = w->fingerprint;
  for (const auto& n : w->nodes) w->identity.nodes.push_back(n.name());
  return std::make_shared<const compiled_workflow>(std::move(w));
}

}  // namespace switchboard::orchestrator
