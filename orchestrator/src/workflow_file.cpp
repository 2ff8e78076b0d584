#include <switchboard/orchestrator/workflow_file.hpp>

#include <switchboard/protocol/limits.hpp>

#include <switchboard/orchestrator/error.hpp>

#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/stream_parser.hpp>

#include <algorithm>
#include <array>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <string_view>
#include <unordered_set>

namespace switchboard::orchestrator {

namespace json = boost::json;

namespace {

// Reads one JSON object of the file, naming the file, the node and the JSON
// path in every error.
class field_reader {
 public:
  field_reader(std::string_view source, std::string node, std::string path, const json::value& value)
      : source_(source), node_(std::move(node)), path_(std::move(path)) {
    if (!value.is_object()) fail("expected an object, got " + kind_name(value));
    object_ = &value.get_object();
  }

  [[noreturn]] void fail(const std::string& what, std::string_view key = {}) const {
    std::string where = std::string(source_) + ": ";
    if (!node_.empty()) where += "node '" + node_ + "': ";
    where += path_.empty() && key.empty() ? "/" : path_;
    if (!key.empty()) where += "/" + std::string(key);
    throw orchestrator_error(orchestrator_errc::invalid_workflow_file, where + ": " + what);
  }

  static std::string kind_name(const json::value& v) {
    switch (v.kind()) {
      case json::kind::null: return "null";
      case json::kind::bool_: return "a boolean";
      case json::kind::int64:
      case json::kind::uint64:
      case json::kind::double_: return "a number";
      case json::kind::string: return "a string";
      case json::kind::array: return "an array";
      case json::kind::object: return "an object";
    }
    return "?";
  }

  // Refuses keys outside `allowed` (catches typos such as "rotues").
  void only(std::initializer_list<std::string_view> allowed) const {
    for (const auto& member : *object_) {
      bool known = false;
      for (auto key : allowed) known = known || key == member.key();
      if (!known) {
        std::string list;
        for (auto key : allowed) list += (list.empty() ? "" : ", ") + std::string(key);
        fail("unknown key '" + std::string(member.key()) + "' (allowed: " + list + ")");
      }
    }
  }

  const json::value* find(std::string_view key) const { return object_->if_contains(key); }
  bool has(std::string_view key) const { return find(key) != nullptr; }

  const json::value& require(std::string_view key) const {
    const auto* v = find(key);
    if (!v) fail("missing required key '" + std::string(key) + "'");
    return *v;
  }

  std::string string(std::string_view key) const {
    const auto& v = require(key);
    if (!v.is_string()) fail("expected a string, got " + kind_name(v), key);
    return std::string(v.get_string());
  }
  std::string string_or(std::string_view key, std::string fallback) const {
    return has(key) ? string(key) : fallback;
  }
  double number(std::string_view key) const {
    const auto& v = require(key);
    if (!v.is_number()) fail("expected a number, got " + kind_name(v), key);
    return v.to_number<double>();
  }
  std::int64_t integer(std::string_view key) const {
    const auto& v = require(key);
    if (v.is_int64()) return v.get_int64();
    if (v.is_uint64() && v.get_uint64() <= std::uint64_t(INT64_MAX)) return std::int64_t(v.get_uint64());
    fail("expected an integer, got " + kind_name(v), key);
  }
  bool boolean(std::string_view key) const {
    const auto& v = require(key);
    if (!v.is_bool()) fail("expected true or false, got " + kind_name(v), key);
    return v.get_bool();
  }
  std::vector<std::string> strings(std::string_view key) const {
    const auto& v = require(key);
    if (!v.is_array()) fail("expected an array of strings, got " + kind_name(v), key);
    std::vector<std::string> out;
    for (std::size_t i = 0; i < v.get_array().size(); ++i) {
      const auto& item = v.get_array()[i];
      if (!item.is_string()) fail("expected a string, got " + kind_name(item), std::string(key) + "/" + std::to_string(i));
      out.emplace_back(item.get_string());
    }
    return out;
  }

  field_reader child(std::string_view key, const json::value& value) const {
    return field_reader(source_, node_, path_ + "/" + std::string(key), value);
  }
  const std::string& path() const noexcept { return path_; }
  std::string_view source() const noexcept { return source_; }
  const std::string& node() const noexcept { return node_; }
  const json::object& object() const noexcept { return *object_; }

 private:
  std::string_view source_;
  std::string node_;
  std::string path_;
  const json::object* object_ = nullptr;
};

std::optional<comparison> comparison_key(std::string_view key) {
  for (auto op : {comparison::lt, comparison::le, comparison::gt, comparison::ge}) {
    if (to_string(op) == key) return op;
  }
  return std::nullopt;
}

condition parse_condition(const field_reader& parent, std::string_view key, const json::value& value);

std::vector<condition> parse_condition_list(const field_reader& r, std::string_view key) {
  const auto& list = r.require(key);
  if (!list.is_array() || list.get_array().empty()) r.fail("expected a non-empty array of conditions", key);
  std::vector<condition> out;
  for (std::size_t i = 0; i < list.get_array().size(); ++i) {
    out.push_back(parse_condition(r, std::string(key) + "/" + std::to_string(i), list.get_array()[i]));
  }
  return out;
}

condition parse_data_condition(const field_reader& r) {
  auto pointer = r.string("path");
  if (!pointer.empty() && pointer.front() != '/') {
    r.fail("'" + pointer + "' is not a JSON Pointer into data (expected \"/field\")", "path");
  }
  std::optional<condition> result;
  for (const auto& member : r.object()) {
    std::string_view key = member.key();
    if (key == "path") continue;
    if (result) r.fail("a condition tests one thing; found another test '" + std::string(key) + "'");
    const auto& v = member.value();
    if (key == "equals") {
      result = condition::equals(pointer, v);
    } else if (key == "in") {
      if (!v.is_array()) r.fail("expected an array, got " + field_reader::kind_name(v), key);
      result = condition::in(pointer, v.get_array());
    } else if (key == "exists" || key == "non_empty") {
      if (!v.is_bool()) r.fail("expected true or false, got " + field_reader::kind_name(v), key);
      result = key == "exists" ? condition::exists(pointer) : condition::non_empty(pointer);
      if (!v.get_bool()) result = condition::negate(*result);
    } else if (auto op = comparison_key(key)) {
      if (!v.is_number()) r.fail("expected a number, got " + field_reader::kind_name(v), key);
      result = condition::compare(pointer, *op, v.to_number<double>());
    } else {
      r.fail("unknown condition key '" + std::string(key) +
             "' (expected equals, in, exists, non_empty, lt, le, gt or ge)");
    }
  }
  if (!result) r.fail("'path' needs a test: equals, in, exists, non_empty, lt, le, gt or ge");
  return *result;
}

condition parse_condition(const field_reader& parent, std::string_view key, const json::value& value) {
  if (value.is_string()) {
    if (value.get_string() == "otherwise") return condition::otherwise();
    parent.fail("expected a condition object or \"otherwise\", got \"" + std::string(value.get_string()) + "\"", key);
  }
  auto r = parent.child(key, value);
  if (r.object().size() == 1) {
    const auto& [name, inner] = *r.object().begin();
    if (name == "all") return condition::all(parse_condition_list(r, "all"));
    if (name == "any") return condition::any(parse_condition_list(r, "any"));
    if (name == "not") return condition::negate(parse_condition(r, "not", inner));
    if (name == "confidence") {
      auto c = r.child("confidence", inner);
      if (c.object().size() != 1) c.fail("expected exactly one of lt, le, gt, ge");
      const auto& [op_key, threshold] = *c.object().begin();
      auto op = comparison_key(op_key);
      if (!op) c.fail("unknown comparison '" + std::string(op_key) + "' (expected lt, le, gt or ge)");
      if (!threshold.is_number()) c.fail("expected a number, got " + field_reader::kind_name(threshold), op_key);
      return condition::confidence(*op, threshold.to_number<double>());
    }
  }
  if (!r.has("path")) {
    std::string first = r.object().empty() ? "" : std::string(r.object().begin()->key());
    r.fail(first.empty() ? "empty condition"
                         : "unknown condition key '" + first +
                               "' (expected confidence, path, all, any or not, or \"otherwise\")");
  }
  return parse_data_condition(r);
}

std::optional<node_kind> node_kind_from(std::string_view text) {
  for (auto k : {node_kind::agent, node_kind::parallel, node_kind::coordinator, node_kind::synthesis,
                 node_kind::clarify, node_kind::end, node_kind::fail}) {
    if (to_string(k) == text) return k;
  }
  return std::nullopt;
}

void parse_routes(const field_reader& r, node_definition& node) {
  const auto& routes = r.require("routes");
  if (!routes.is_array()) r.fail("expected an array of routes", "routes");
  for (std::size_t i = 0; i < routes.get_array().size(); ++i) {
    auto route_reader = r.child("routes/" + std::to_string(i), routes.get_array()[i]);
    route_reader.only({"when", "to"});
    node.routes.push_back({parse_condition(route_reader, "when", route_reader.require("when")),
                           route_reader.string("to")});
  }
}

void parse_policies(const field_reader& r, node_definition& node) {
  if (r.has("timeout_ms")) {
    auto ms = r.integer("timeout_ms");
    if (ms <= 0) r.fail("must be positive", "timeout_ms");
    node.timeout = std::chrono::milliseconds(ms);
  }
  if (const auto* retry = r.find("retry")) {
    auto rr = r.child("retry", *retry);
    rr.only({"max_attempts", "backoff_ms", "backoff_multiplier"});
    if (rr.has("max_attempts")) node.retry.max_attempts = static_cast<int>(rr.integer("max_attempts"));
    if (rr.has("backoff_ms")) node.retry.backoff = std::chrono::milliseconds(rr.integer("backoff_ms"));
    if (rr.has("backoff_multiplier")) node.retry.backoff_multiplier = rr.number("backoff_multiplier");
  }
  if (r.has("clarification_threshold")) node.clarification_threshold = r.number("clarification_threshold");
  if (r.has("clarify_on_low_confidence")) node.clarify_on_low_confidence = r.boolean("clarify_on_low_confidence");
  if (r.has("on_error")) node.on_error = r.string("on_error");
  if (r.has("routes")) parse_routes(r, node);
}

node_definition parse_node(std::string_view source, const std::string& name, const json::value& value) {
  field_reader r(source, name, "/nodes/" + name, value);
  node_definition node;
  node.name = name;
  auto type = r.string("type");
  auto kind = node_kind_from(type);
  if (!kind) {
    r.fail("unknown node type '" + type + "' (expected agent, parallel, coordinator, synthesis, clarify, end or fail)",
           "type");
  }
  node.kind = *kind;
  static const std::array<std::string_view, 7> common = {
      "type", "timeout_ms", "retry", "clarification_threshold", "clarify_on_low_confidence", "on_error", "routes"};
  auto with = [](std::initializer_list<std::string_view> extra) {
    std::vector<std::string_view> keys(common.begin(), common.end());
    keys.insert(keys.end(), extra);
    return keys;
  };
  auto only = [&](const std::vector<std::string_view>& keys) {
    for (const auto& member : r.object()) {
      if (std::find(keys.begin(), keys.end(), member.key()) == keys.end()) {
        std::string list;
        for (auto k : keys) list += (list.empty() ? "" : ", ") + std::string(k);
        r.fail("unknown key '" + std::string(member.key()) + "' for a " + type + " node (allowed: " + list + ")");
      }
    }
  };
  switch (node.kind) {
    case node_kind::agent:
      only(with({"agent"}));
      node.agent = r.string_or("agent", name);
      break;
    case node_kind::parallel:
      only(with({"agents", "cancel_rest_on_failure"}));
      node.agents = r.strings("agents");
      if (r.has("cancel_rest_on_failure")) node.cancel_rest_on_failure = r.boolean("cancel_rest_on_failure");
      break;
    case node_kind::coordinator:
      only(with({"candidates", "default_agent", "model_role", "instructions"}));
      if (r.has("candidates")) node.coordinator.candidates = r.strings("candidates");
      node.coordinator.default_agent = r.string("default_agent");
      node.coordinator.model_role = r.string_or("model_role", "coordinator");
      node.coordinator.instructions = r.string_or("instructions", "");
      break;
    case node_kind::synthesis:
      only(with({"agent", "model_role"}));
      node.synthesis.agent = r.string_or("agent", "");
      node.synthesis.model_role = r.string_or("model_role", "");
      break;
    case node_kind::fail:
      only({"type", "message"});
      node.message = r.string_or("message", "");
      break;
    case node_kind::clarify:
    case node_kind::end:
      only({"type"});
      break;
  }
  parse_policies(r, node);
  return node;
}

// "mcp_servers": {"files": {"command": [...], "env": {...}}, "remote": {"url": "...", "headers": {...}}}
// The entry's own checks are mcp::from_json's; errors name the file
// and the field (/mcp_servers/files/command/0: expected a string).
std::vector<mcp::server_config> parse_mcp_servers(const field_reader& r) {
  const auto& servers = r.require("mcp_servers");
  if (!servers.is_object()) r.fail("expected an object of MCP servers by name", "mcp_servers");
  std::vector<mcp::server_config> out;
  for (const auto& [name, entry] : servers.get_object()) {
    try {
      out.push_back(mcp::from_json(std::string(name), entry));
    } catch (const std::invalid_argument& e) {
      r.fail(e.what(), "mcp_servers/" + std::string(name));
    }
  }
  std::ranges::sort(out, {}, &mcp::server_config::name);
  return out;
}

// "a2a_agents": {"booker": {"card": "https://host/.well-known/agent-card.json", "output_schema": "x@1"}}
// The entry's own checks are a2a::from_json's, named as for MCP servers.
std::vector<a2a::remote_agent_config> parse_a2a_agents(const field_reader& r) {
  const auto& agents = r.require("a2a_agents");
  if (!agents.is_object()) r.fail("expected an object of remote A2A agents by name", "a2a_agents");
  std::vector<a2a::remote_agent_config> out;
  for (const auto& [name, entry] : agents.get_object()) {
    try {
      out.push_back(a2a::from_json(std::string(name), entry));
    } catch (const std::invalid_argument& e) {
      r.fail(e.what(), "a2a_agents/" + std::string(name));
    }
  }
  std::ranges::sort(out, {}, &a2a::remote_agent_config::name);
  return out;
}

// "plugins": ["name", {"name": "name", "config": {...}}, ...]
std::vector<plugin_reference> parse_plugins(const field_reader& r) {
  const auto& list = r.require("plugins");
  if (!list.is_array()) r.fail("expected an array of plugin names or {\"name\", \"config\"} objects", "plugins");
  std::vector<plugin_reference> out;
  for (std::size_t i = 0; i < list.get_array().size(); ++i) {
    const auto& item = list.get_array()[i];
    const std::string key = "plugins/" + std::to_string(i);
    if (item.is_string()) {
      out.push_back({std::string(item.get_string()), {}});
      continue;
    }
    const auto entry = r.child(key, item);
    entry.only({"name", "config"});
    plugin_reference plugin{entry.string("name"), {}};
    if (entry.has("config")) {
      const auto& config = entry.require("config");
      if (!config.is_object()) entry.fail("expected an object, got " + field_reader::kind_name(config), "config");
      plugin.config = config.get_object();
    }
    out.push_back(std::move(plugin));
  }
  for (std::size_t i = 0; i < out.size(); ++i)
    if (out[i].name.empty()) r.fail("a plugin needs a name or a path", "plugins/" + std::to_string(i));
  return out;
}

// "line 3, column 14" for a byte offset into `text`.
std::string position_of(std::string_view text, std::size_t offset) {
  std::size_t line = 1, column = 1;
  for (std::size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

}  // namespace

workflow_definition parse_workflow(const json::value& value, std::string_view source) {
  field_reader r(source, "", "", value);
  r.only({"name", "description", "entry", "clarification_threshold", "max_steps", "max_clarification_rounds",
          "schemas", "plugins", "prompts", "mcp_servers", "a2a_agents", "nodes"});
  workflow_definition d;
  d.name = r.string("name");
  if (d.name.empty()) r.fail("must not be empty", "name");
  if (r.has("clarification_threshold")) d.clarification_threshold = r.number("clarification_threshold");
  if (r.has("max_steps")) d.max_steps = static_cast<int>(r.integer("max_steps"));
  if (r.has("max_clarification_rounds")) d.max_clarification_rounds = static_cast<int>(r.integer("max_clarification_rounds"));
  if (r.has("schemas")) d.schema_dirs = r.strings("schemas");
  if (r.has("plugins")) d.plugins = parse_plugins(r);
  if (r.has("prompts")) d.prompt_dirs = r.strings("prompts");
  if (r.has("mcp_servers")) d.mcp_servers = parse_mcp_servers(r);
  if (r.has("a2a_agents")) d.a2a_agents = parse_a2a_agents(r);
  const auto& nodes = r.require("nodes");
  if (!nodes.is_object() || nodes.get_object().empty()) r.fail("expected a non-empty object of nodes", "nodes");
  d.nodes.reserve(nodes.get_object().size());
  for (const auto& member : nodes.get_object()) {
    d.nodes.push_back(parse_node(source, std::string(member.key()), member.value()));
  }
  // A set of the names, not workflow_definition::find (a scan) per route:
  // checking the routes stays linear in the size of the file.
  std::unordered_set<std::string_view> names;
  names.reserve(d.nodes.size());
  for (const auto& node : d.nodes) names.insert(node.name);
  d.entry = r.has("entry") ? r.string("entry") : d.nodes.front().name;
  if (!names.contains(d.entry)) r.fail("names node '" + d.entry + "', which is not defined under /nodes", "entry");
  for (const auto& node : d.nodes) {
    for (std::size_t i = 0; i < node.routes.size(); ++i) {
      if (!names.contains(node.routes[i].target)) {
        throw orchestrator_error(orchestrator_errc::invalid_workflow_file,
                                 std::string(source) + ": node '" + node.name + "': /nodes/" + node.name + "/routes/" +
                                     std::to_string(i) + "/to: unknown node '" + node.routes[i].target + "'");
      }
    }
  }
  return d;
}

workflow_definition parse_workflow_text(std::string_view text, std::string_view source) {
  json::stream_parser parser({}, protocol::untrusted_parse_options());
  boost::system::error_code ec;
  std::size_t consumed = parser.write_some(text.data(), text.size(), ec);
  if (!ec) parser.finish(ec);
  if (ec) {
    throw orchestrator_error(orchestrator_errc::invalid_workflow_file,
                             std::string(source) + ": " + position_of(text, consumed) +
                                 ": not valid JSON (" + ec.message() + ")");
  }
  return parse_workflow(parser.release(), source);
}

workflow_definition load_workflow_file(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    throw orchestrator_error(orchestrator_errc::invalid_workflow_file,
                             file.string() + ": cannot open the workflow file");
  }
  std::ostringstream text;
  text << in.rdbuf();
  return parse_workflow_text(text.str(), file.string());
}

json::value to_json(const workflow_definition& d) {
  json::object nodes;
  for (const auto& n : d.nodes) {
    json::object node{{"type", to_string(n.kind)}};
    switch (n.kind) {
      case node_kind::agent: node["agent"] = n.agent; break;
      case node_kind::parallel:
        node["agents"] = json::value_from(n.agents);
        if (n.cancel_rest_on_failure) node["cancel_rest_on_failure"] = true;
        break;
      case node_kind::coordinator:
        if (!n.coordinator.candidates.empty()) node["candidates"] = json::value_from(n.coordinator.candidates);
        node["default_agent"] = n.coordinator.default_agent;
        node["model_role"] = n.coordinator.model_role;
        if (!n.coordinator.instructions.empty()) node["instructions"] = n.coordinator.instructions;
        break;
      case node_kind::synthesis:
        if (!n.synthesis.agent.empty()) node["agent"] = n.synthesis.agent;
        if (!n.synthesis.model_role.empty()) node["model_role"] = n.synthesis.model_role;
        break;
      case node_kind::fail:
        if (!n.message.empty()) node["message"] = n.message;
        break;
      default: break;
    }
    if (n.timeout) node["timeout_ms"] = n.timeout->count();
    if (n.retry != retry_policy{}) {
      node["retry"] = {{"max_attempts", n.retry.max_attempts},
                       {"backoff_ms", n.retry.backoff.count()},
                       {"backoff_multiplier", n.retry.backoff_multiplier}};
    }
    if (n.clarification_threshold) node["clarification_threshold"] = *n.clarification_threshold;
    if (!n.clarify_on_low_confidence) node["clarify_on_low_confidence"] = false;
    if (!n.on_error.empty()) node["on_error"] = n.on_error;
    if (!n.routes.empty()) {
      json::array routes;
      for (const auto& r : n.routes) routes.push_back(json::object{{"when", r.when.to_json()}, {"to", r.target}});
      node["routes"] = std::move(routes);
    }
    nodes[n.name] = std::move(node);
  }
  json::object out{{"name", d.name},
                   {"entry", d.entry},
                   {"clarification_threshold", d.clarification_threshold},
                   {"max_steps", d.max_steps},
                   {"max_clarification_rounds", d.max_clarification_rounds}};
  if (!d.schema_dirs.empty()) out["schemas"] = json::value_from(d.schema_dirs);
  if (!d.plugins.empty()) {
    json::array plugins;
    for (const auto& p : d.plugins) {
      if (p.config.empty()) plugins.push_back(json::string(p.name));
      else plugins.push_back(json::object{{"name", p.name}, {"config", p.config}});
    }
    out["plugins"] = std::move(plugins);
  }
  if (!d.prompt_dirs.empty()) out["prompts"] = json::value_from(d.prompt_dirs);
  if (!d.mcp_servers.empty()) {
    json::object servers;
    for (const auto& server : d.mcp_servers) servers[server.name] = mcp::to_json(server);
    out["mcp_servers"] = std::move(servers);
  }
  if (!d.a2a_agents.empty()) {
    json::object agents;
    for (const auto& agent : d.a2a_agents) agents[agent.name] = a2a::to_json(agent);
    out["a2a_agents"] = std::move(agents);
  }
  out["nodes"] = std::move(nodes);
  return out;
}

}  // namespace switchboard::orchestrator
