// A plugin for the server's tests: two native agents whose runs a test can
// see and hold, through files in the directory the workflow file's plugin
// config names ("dir").
//
//   count  answers at once; appends a line to DIR/count.log per call
//          (fails instead when the workflow input says "fail": true)
//   gate   appends a line to DIR/gate.log when it starts, then waits
//          (on a timer: a cancellation ends the wait) until DIR/open
//          exists, or DIR/NAME when the workflow input says "gate": NAME
//
// So a test can start a run, see that it is inside the `gate` step, shut
// the server down mid-step, and count how often each step really ran.
#include <switchboard/agents/plugin.hpp>

#include <boost/asio/error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/parse.hpp>
#include <boost/system/system_error.hpp>

#include <filesystem>
#include <fstream>

namespace {

namespace json = boost::json;
namespace fs = std::filesystem;

void append_line(const fs::path& file, const std::string& line) {
  std::ofstream out(file, std::ios::app);
  out << line << '\n';
}

class count_agent final : public switchboard::agents::agent {
 public:
  explicit count_agent(fs::path dir) : dir_(std::move(dir)) {}
  std::string_view name() const noexcept override { return "count"; }
  std::string_view description() const noexcept override { return "Counts its calls."; }
  std::string output_schema() const override { return "gate_test.output@1"; }
  boost::asio::awaitable<switchboard::protocol::envelope> run(switchboard::agents::agent_context& context) override {
    append_line(dir_ / "count.log", context.workflow_id);
    if (const auto* input = context.input.if_object())
      if (const auto* fail = input->if_contains("fail"); fail && fail->is_bool() && fail->get_bool())
        throw std::runtime_error("count: asked to fail");
    switchboard::protocol::envelope out;
    out.data = {{"counted", true}};
    out.explanation = "counted";
    out.confidence = 1.0;
    out.reasoning = "count";
    co_return out;
  }

 private:
  fs::path dir_;
};

class gate_agent final : public switchboard::agents::agent {
 public:
  explicit gate_agent(fs::path dir) : dir_(std::move(dir)) {}
  std::string_view name() const noexcept override { return "gate"; }
  std::string_view description() const noexcept override { return "Waits until the gate is open."; }
  std::string output_schema() const override { return "gate_test.output@1"; }
  boost::asio::awaitable<switchboard::protocol::envelope> run(switchboard::agents::agent_context& context) override {
    append_line(dir_ / "gate.log", context.workflow_id);
    auto gate = dir_ / "open";
    if (const auto* input = context.input.if_object())
      if (const auto* name = input->if_contains("gate"); name && name->is_string())
        gate = dir_ / std::string(name->get_string());
    boost::asio::steady_timer timer(co_await boost::asio::this_coro::executor);
    while (!fs::exists(gate)) {
      // The hub calls an agent without a deadline inline, in its run's
      // coroutine, which does not throw on a cancellation that came while
      // no operation was pending (throw_if_cancelled(false)): a stop that
      // lands between two waits cancels nothing, so look for it here.
      const auto state = co_await boost::asio::this_coro::cancellation_state;
      if (state.cancelled() != boost::asio::cancellation_type::none)
        throw boost::system::system_error(boost::asio::error::operation_aborted);
      timer.expires_after(std::chrono::milliseconds(10));
      co_await timer.async_wait(boost::asio::use_awaitable);  // throws when stopped while it waits
    }
    switchboard::protocol::envelope out;
    out.data = {{"passed", true}};
    out.explanation = "the gate was open";
    out.confidence = 1.0;
    out.reasoning = "gate";
    co_return out;
  }

 private:
  fs::path dir_;
};

}  // namespace

SWITCHBOARD_PLUGIN(registrar) {
  const auto& host = registrar.host();
  const auto* dir = host.config.if_contains("dir");
  if (!dir || !dir->is_string()) throw std::runtime_error("gate plugin: config.dir (a directory) is required");
  const fs::path d{std::string(dir->get_string())};
  registrar.add_schema("gate_test.output@1", json::parse(R"({"type": "object"})"));
  registrar.add(std::make_shared<count_agent>(d));
  registrar.add(std::make_shared<gate_agent>(d));
}
