// tool: the result type's accessors and the model-layer definition.
#include <switchboard/agents/tool.hpp>

#include <stdexcept>

namespace switchboard::agents {

const boost::json::value& tool_result::value() const {
  if (const auto* v = std::get_if<boost::json::value>(&outcome_)) return *v;
  throw std::logic_error("tool_result::value() on an error result (" + std::get<tool_error>(outcome_).code +
                         ")");
}

const tool_error& tool_result::error() const {
  if (const auto* e = std::get_if<tool_error>(&outcome_)) return *e;
  throw std::logic_error("tool_result::error() on a successful result");
}

boost::json::value tool_result::to_json() const {
  if (ok()) return value();
  const auto& e = error();
  return boost::json::object{
      {"error", boost::json::object{{"code", e.code}, {"message", e.message}, {"retryable", e.retryable}}}};
}

tool_definition to_definition(const tool& t) {
  tool_definition d;
  d.name = std::string(t.name());
  d.description = std::string(t.description());
  d.parameters = t.parameters();
  return d;
}

}  // namespace switchboard::agents
