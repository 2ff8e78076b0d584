// The agents a hub can call, by unique name, with where each came from
// ("builtin", "prompt:prompts/nl_parser.v2.json", "plugin:/path/libx.so").
//
// The registry also validates what agents return: validate() checks an
// envelope against the agent's declared output schema (from the schema
// registry) so agents cannot skip it.
//
// Thread-safety: registration is for set-up time and takes an exclusive
// lock; lookups may run concurrently with each other and with registration.
// Agents returned by find() live as long as the registry.
#pragma once

#include <switchboard/agents/agent.hpp>
#include <switchboard/protocol/schema_registry.hpp>

#include <boost/system/error_code.hpp>

#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

namespace switchboard::agents {

enum class agent_errc {
  duplicate_agent = 1,    // a name registered twice
  unknown_agent,          // no agent by that name
  invalid_envelope,       // an agent returned an envelope its schema refuses
  unknown_output_schema,  // the agent declares a schema the registry lacks
  plugin_load_failed,     // dlopen failed
  plugin_missing_entry,   // the entry point symbol is absent
  plugin_abi_mismatch,    // built against another plugin ABI version
  plugin_init_failed,     // the entry point reported failure
  prompt_file_invalid,    // a prompt file is malformed
  template_variable_unknown,  // a {{variable}} cannot be resolved
  unknown_prompt_version,     // a run asked for a prompt version that is not loaded
  duplicate_tool,             // a tool name registered twice
  unknown_tool,               // no tool by that name
  invalid_tool,               // a tool with a bad name or an unusable parameters schema
};
std::string_view to_string(agent_errc code) noexcept;
const boost::system::error_category& agent_category() noexcept;
inline boost::system::error_code make_error_code(agent_errc code) noexcept {
  return {static_cast<int>(code), agent_category()};
}

class agent_error : public boost::system::system_error {
 public:
  agent_error(agent_errc code, const std::string& message)
      : boost::system::system_error(make_error_code(code), message) {}
};

struct agent_info {
  std::string name;
  std::string description;
  std::string output_schema;
  std::string origin;  // "builtin", "prompt:<file>", "plugin:<file>"
};

class agent_registry {
 public:
  explicit agent_registry(std::shared_ptr<protocol::schema_registry> schemas);

  // Throws agent_error(duplicate_agent) naming the agent and both origins.
  void add(std::shared_ptr<agent> a, std::string origin = "builtin");

  agent* find(std::string_view name) const;
  // Throws agent_error(unknown_agent) listing the registered names.
  agent& at(std::string_view name) const;

  std::vector<agent_info> list() const;       // sorted by name
  std::vector<std::string> names() const;     // sorted

  // Errors of `value` against the output schema `a` declares; paths inside
  // the envelope ("/data/slots/0/start: expected string, got number").
  // A failed envelope (error record set) is checked as an envelope only:
  // its data is whatever the agent salvaged, usually {}, and need not
  // satisfy the agent's schema.
  // Throws agent_error(unknown_output_schema) when the schema is missing.
  std::vector<protocol::validation_error> validate(const agent& a,
                                                   const protocol::envelope& value) const;

  protocol::schema_registry& schemas() const noexcept { return *schemas_; }
  std::shared_ptr<protocol::schema_registry> schemas_ptr() const noexcept { return schemas_; }

 private:
  struct entry {
    std::shared_ptr<agents::agent> instance;
    std::string origin;
  };
  std::shared_ptr<protocol::schema_registry> schemas_;
  mutable std::shared_mutex mutex_;
  std::vector<entry> entries_;  // sorted by name
};

}  // namespace switchboard::agents

template <>
struct boost::system::is_error_code_enum<switchboard::agents::agent_errc> : std::true_type {};
