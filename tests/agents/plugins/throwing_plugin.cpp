// A plugin whose registration throws: the loader reports the message and
// registers nothing, not even the agent added before the throw.
#include <switchboard/agents/plugin.hpp>

#include <stdexcept>

namespace {

class never_registered final : public switchboard::agents::agent {
 public:
  std::string_view name() const noexcept override { return "never_registered"; }
  std::string_view description() const noexcept override { return "must not appear"; }
  std::string output_schema() const override { return "never.output@1"; }
  boost::asio::awaitable<switchboard::protocol::envelope> run(switchboard::agents::agent_context&) override {
    co_return switchboard::protocol::envelope{};
  }
};

}  // namespace

SWITCHBOARD_PLUGIN(registrar) {
  registrar.add(std::make_shared<never_registered>());
  throw std::runtime_error("configuration database unreachable");
}
