// A plugin that brings an agent and a tool. Its configuration steers the
// failure cases the loader tests need:
//   {"throw": true}       init throws after adding both: nothing may register;
//   {"bad_schema": true}  the tool's schema does not compile: nothing may register;
//   {"stamp_file": PATH}  also "plugin.stamp", which needs approval and appends
//                         its text to PATH (the approval tests count the lines).
#include <switchboard/agents/function_tool.hpp>
#include <switchboard/agents/plugin.hpp>

#include <boost/json/parse.hpp>

#include <fstream>
#include <stdexcept>

namespace {

namespace json = boost::json;

class tool_plugin_agent final : public switchboard::agents::agent {
 public:
  std::string_view name() const noexcept override { return "tool_plugin_agent"; }
  std::string_view description() const noexcept override { return "Comes with a tool."; }
  std::string output_schema() const override { return "tool_plugin.output@1"; }
  boost::asio::awaitable<switchboard::protocol::envelope> run(switchboard::agents::agent_context&) override {
    co_return switchboard::protocol::envelope{};
  }
};

struct shout_args {
  std::string text;
};
BOOST_DESCRIBE_STRUCT(shout_args, (), (text))

struct stamp_args {
  std::string text;
};
BOOST_DESCRIBE_STRUCT(stamp_args, (), (text))

}  // namespace

SWITCHBOARD_PLUGIN(registrar) {
  const auto& config = registrar.host().config;
  registrar.add_schema("tool_plugin.output@1", json::parse(R"({"type": "object"})"));
  registrar.add(std::make_shared<tool_plugin_agent>());
  json::object schema = switchboard::agents::schema_of<shout_args>();
  if (config.contains("bad_schema")) schema["properties"] = json::parse(R"({"text": {"pattern": "(a)\\1"}})");
  registrar.add_tool(switchboard::agents::make_function_tool<shout_args>(
      "plugin.shout", "Upper-cases a text.", std::move(schema),
      [](shout_args a) -> json::value {
        for (auto& c : a.text) c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
        return json::value(a.text);
      },
      {.needs_approval = false, .idempotent = true}));
  if (const auto* file = config.if_contains("stamp_file"); file && file->is_string()) {
    registrar.add_tool(switchboard::agents::make_function_tool<stamp_args>(
        "plugin.stamp", "Appends a line to the stamp file.", switchboard::agents::schema_of<stamp_args>(),
        [path = std::string(file->get_string())](stamp_args a) -> json::value {
          std::ofstream(path, std::ios::app) << a.text << "\n";
          return json::value("stamped");
        },
        {.needs_approval = true, .idempotent = false}));
  }
  if (config.contains("throw")) throw std::runtime_error("tool backend unreachable");
}
