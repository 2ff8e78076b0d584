#include <switchboard/orchestrator/crash_point.hpp>

#include <spdlog/spdlog.h>

#include <csignal>
#include <cstdlib>
#include <string>

#include <unistd.h>

namespace switchboard::orchestrator {

namespace {

const std::string& armed_point() {
  static const std::string name = [] {
    const char* value = std::getenv("SWITCHBOARD_FAULT_KILL_AT");
    return std::string(value != nullptr ? value : "");
  }();
  return name;
}

}  // namespace

void crash_point(std::string_view name) noexcept {
  const auto& armed = armed_point();
  if (armed.empty() || armed != name) return;
  try {
    spdlog::critical("crash point '{}' reached: this process kills itself (SWITCHBOARD_FAULT_KILL_AT)", name);
    spdlog::default_logger()->flush();
  } catch (...) {
    // the kill below is what matters
  }
  ::kill(::getpid(), SIGKILL);
}

}  // namespace switchboard::orchestrator
