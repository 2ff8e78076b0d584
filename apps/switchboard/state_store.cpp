#include "state_store.hpp"

#include <switchboard/host/fault_injection.hpp>
#include <switchboard/host/store.hpp>

#include <cstdlib>

namespace switchboard::cli {

std::shared_ptr<orchestrator::checkpoint_store> open_state_store(const std::string& url) {
  auto store = host::open_store(url);
  if (const char* kill = std::getenv("SWITCHBOARD_FAULT_KILL_AFTER_WRITES"); kill && *kill) {
    const long writes = std::strtol(kill, nullptr, 10);
    if (writes > 0) store = host::kill_after_writes(std::move(store), writes);
  }
  return store;
}

}  // namespace switchboard::cli
