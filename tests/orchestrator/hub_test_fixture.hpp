// The fixture of the hub's tests (hub_test.cpp, hub_resume_test.cpp): a
// registry, a hub on a private io_context, an observer recording events,
// and run/resume helpers that drive the io_context to completion.
#pragma once

#include <switchboard/orchestrator/hub.hpp>

#include "orchestrator_test_support.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/logger.h>

#include <mutex>

namespace switchboard::orchestrator::hub_testing {

using ::testing::HasSubstr;
using testing::constant_agent;
using testing::fn_agent;
using testing::make_envelope;
namespace asio = boost::asio;
namespace json = boost::json;
using namespace std::chrono_literals;

inline std::shared_ptr<spdlog::logger> silent_logger() { return std::make_shared<spdlog::logger>("hub-test"); }

// Records every event kind (thread-safe).
class recording_observer final : public observer {
 public:
  void on_event(const event& e) noexcept override {
    std::lock_guard lock(mutex_);
    kinds_.push_back(e.kind);
    if (e.kind == event_kind::routed) routes_.push_back(std::string(e.node) + "->" + std::string(e.target));
  }
  std::vector<event_kind> kinds() const {
    std::lock_guard lock(mutex_);
    return kinds_;
  }
  std::vector<std::string> routes() const {
    std::lock_guard lock(mutex_);
    return routes_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<event_kind> kinds_;
  std::vector<std::string> routes_;
};

class hub_test : public ::testing::Test {
 protected:
  hub_test() : registry_(testing::test_schemas()) {}

  std::shared_ptr<fn_agent> add(std::shared_ptr<fn_agent> a) {
    registry_.add(a);
    return a;
  }

  hub& make_hub(hub_options options = {}) {
    if (!options.logger) options.logger = silent_logger();
    hub_ = std::make_unique<hub>(io_.get_executor(), registry_, std::move(options));
    hub_->add_observer(observer_);
    return *hub_;
  }

  template <class T>
  T sync(asio::awaitable<T> operation) {
    auto result = asio::co_spawn(io_, std::move(operation), asio::use_future);
    io_.restart();
    io_.run();
    return result.get();
  }

  workflow_state run(const workflow_builder& b, json::value input = json::object{}) {
    if (!hub_) make_hub();
    return sync(hub_->run(b.compile(registry_), std::move(input)));
  }

  workflow_state resume(const workflow_builder& b, const std::string& id, std::string answer) {
    return sync(hub_->resume(b.compile(registry_), id, std::move(answer)));
  }

  asio::io_context io_;
  agents::agent_registry registry_;
  std::unique_ptr<hub> hub_;
  std::shared_ptr<recording_observer> observer_ = std::make_shared<recording_observer>();
};

// Confidence 0.3 until the user answered; then 0.95, echoing the answers.
inline std::shared_ptr<fn_agent> unsure_until_answered(std::string name, json::object data = {}) {
  return std::make_shared<fn_agent>(std::move(name), [data](agents::agent_context& c, int) {
    auto d = data;
    if (c.clarification_answers.empty()) return make_envelope(d, 0.3, "I cannot tell which day you mean.");
    d["status"] = c.clarification_answers.back();
    return make_envelope(d, 0.95, "Got it.");
  });
}


}  // namespace switchboard::orchestrator::hub_testing
