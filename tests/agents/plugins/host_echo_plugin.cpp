// A plugin that shows what the host told it: its agent `host_echo` answers
// with the plugin_host it was loaded with (config, base directory, state
// directory, model and reset flags), and it leaves a notice. The loader and
// `switchboard run` tests check that a workflow's plugin configuration
// arrives intact.
#include <switchboard/agents/plugin.hpp>

#include <boost/json/parse.hpp>

namespace {

namespace json = boost::json;

class host_echo final : public switchboard::agents::agent {
 public:
  explicit host_echo(json::object seen) : seen_(std::move(seen)) {}
  std::string_view name() const noexcept override { return "host_echo"; }
  std::string_view description() const noexcept override { return "Answers with what its host told it."; }
  std::string output_schema() const override { return "host_echo.output@1"; }
  boost::asio::awaitable<switchboard::protocol::envelope> run(switchboard::agents::agent_context& context) override {
    switchboard::protocol::envelope out;
    out.data = seen_;
    out.data["workflow_id"] = context.workflow_id;
    out.explanation = "The host's settings, as the plugin saw them.";
    out.confidence = 0.9;
    out.reasoning = "echo";
    co_return out;
  }

 private:
  json::object seen_;
};

}  // namespace

SWITCHBOARD_PLUGIN(registrar) {
  const auto& host = registrar.host();
  json::object seen{{"config", host.config},
                    {"base_dir", host.base_dir.string()},
                    {"state_dir", host.state_dir.string()},
                    {"model_configured", host.model_configured},
                    {"reset_state", host.reset_state},
                    {"has_schemas", host.schemas != nullptr}};
  registrar.add_schema("host_echo.output@1", json::parse(R"({"type": "object"})"));
  registrar.add(std::make_shared<host_echo>(std::move(seen)));
  registrar.notice("host_echo: loaded with " + std::to_string(host.config.size()) + " config keys");
}
