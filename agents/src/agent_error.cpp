// agent_errc: the agents module's error category.
#include <switchboard/agents/agent_registry.hpp>

namespace switchboard::agents {

std::string_view to_string(agent_errc code) noexcept {
  switch (code) {
    case agent_errc::duplicate_agent: return "duplicate_agent";
    case agent_errc::unknown_agent: return "unknown_agent";
    case agent_errc::invalid_envelope: return "invalid_envelope";
    case agent_errc::unknown_output_schema: return "unknown_output_schema";
    case agent_errc::plugin_load_failed: return "plugin_load_failed";
    case agent_errc::plugin_missing_entry: return "plugin_missing_entry";
    case agent_errc::plugin_abi_mismatch: return "plugin_abi_mismatch";
    case agent_errc::plugin_init_failed: return "plugin_init_failed";
    case agent_errc::prompt_file_invalid: return "prompt_file_invalid";
    case agent_errc::template_variable_unknown: return "template_variable_unknown";
    case agent_errc::unknown_prompt_version: return "unknown_prompt_version";
    case agent_errc::duplicate_tool: return "duplicate_tool";
    case agent_errc::unknown_tool: return "unknown_tool";
    case agent_errc::invalid_tool: return "invalid_tool";
  }
  return "unknown_error";
}

namespace {

class agent_category_impl final : public boost::system::error_category {
 public:
  const char* name() const noexcept override { return "switchboard.agents"; }
  std::string message(int value) const override {
    return std::string(to_string(static_cast<agent_errc>(value)));
  }
};

}  // namespace

const boost::system::error_category& agent_category() noexcept {
  static const agent_category_impl category;
  return category;
}

}  // namespace switchboard::agents
