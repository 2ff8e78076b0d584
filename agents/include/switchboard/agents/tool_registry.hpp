// The tools a hub offers, by unique name, with where each came from
// ("builtin", "plugin:/path/libx.so", later "mcp:<server>"), beside the
// agent registry.
//
// Each tool's parameters() schema is compiled once, at registration, with
// the project's validator (protocol/validation.hpp); validate_arguments()
// turns a model's raw argument text into a value the tool may trust, or
// into errors naming JSON Pointers for the model to fix (the tool loop
// sends them back).
//
// Errors: agent_error naming the tool and origin:
//   invalid_tool    a null tool, a name that is not [A-Za-z0-9_.:/-]{1,128},
//                   or a parameters schema that does not compile or is not
//                   an object schema;
//   duplicate_tool  a name registered twice (both origins named);
//   unknown_tool    at()/validate_arguments() on a name not registered.
//
// Thread-safety: registration is for set-up time and takes an exclusive
// lock; lookups and validation may run concurrently with each other and
// with registration. Tools returned by find() live as long as the registry.
#pragma once

#include <switchboard/agents/tool.hpp>
#include <switchboard/protocol/validation.hpp>

#include <memory>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace switchboard::agents {

struct tool_info {
  std::string name;
  std::string description;
  std::string origin;  // "builtin", "plugin:<file>", "mcp:<server>"
  bool needs_approval = false;
  bool idempotent = false;
};

// The arguments of one call after validation: the parsed value when
// `errors` is empty.
struct tool_arguments {
  boost::json::value value;
  std::vector<protocol::validation_error> errors;

  bool ok() const noexcept { return errors.empty(); }
  // One error per line ("/start: expected string, got number"), prefixed
  // with the tool's name: what the model reads to correct its call.
  std::string describe(std::string_view tool_name) const;
};

class tool_registry {
 public:
  // Throws agent_error(invalid_tool or duplicate_tool) as above; nothing is
  // registered then.
  void add(std::shared_ptr<tool> t, std::string origin = "builtin");

  tool* find(std::string_view name) const;
  // As find(), sharing ownership: for a caller that must keep the tool alive
  // on its own (a call outliving a registry it does not own).
  std::shared_ptr<tool> find_shared(std::string_view name) const;
  // Throws agent_error(unknown_tool) listing the registered names.
  tool& at(std::string_view name) const;
  bool contains(std::string_view name) const { return find(name) != nullptr; }

  std::vector<tool_info> list() const;    // sorted by name
  std::vector<std::string> names() const; // sorted
  // The model-layer definitions of `names`, in that order (for
  // chat_request::tools). Throws agent_error(unknown_tool) for a missing one.
  std::vector<tool_definition> definitions(std::span<const std::string> names) const;

  // Parses `text` (the model's tool_call::arguments) under the untrusted
  // limits (protocol/limits.hpp: at most max_tool_arguments_bytes, nesting
  // at most max_json_depth, finite numbers) and validates it against the
  // tool's compiled schema. Empty or all-blank text means {} (models send
  // "" for a call without arguments). The value must be an object.
  // Throws agent_error(unknown_tool) when `name` is not registered.
  tool_arguments validate_arguments(std::string_view name, std::string_view text) const;

 private:
  struct entry {
    std::shared_ptr<agents::tool> instance;
    std::string name;
    std::string origin;
    protocol::compiled_schema schema;
  };
  const entry* find_entry(std::string_view name) const;  // caller holds the lock
  [[noreturn]] void throw_unknown(std::string_view name) const;

  mutable std::shared_mutex mutex_;
  std::vector<entry> entries_;  // sorted by name
};

}  // namespace switchboard::agents
