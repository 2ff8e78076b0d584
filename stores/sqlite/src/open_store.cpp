#include <switchboard/stores/sqlite_store.hpp>

#include <string>

namespace switchboard::stores {

using orchestrator::checkpoint_error;

std::shared_ptr<orchestrator::checkpoint_store> open_checkpoint_store(std::string_view spec) {
  constexpr std::string_view sqlite_prefix = "sqlite:";
  if (spec == "memory") {
    return orchestrator::make_in_memory_checkpoint_store();
  }
  if (spec.starts_with(sqlite_prefix)) {
    const std::string_view path = spec.substr(sqlite_prefix.size());
    if (path.empty()) {
      throw checkpoint_error("checkpoint store '" + std::string(spec) + "': missing path after 'sqlite:'");
    }
    return make_sqlite_checkpoint_store(std::filesystem::path(std::string(path)));
  }
  throw checkpoint_error("unknown checkpoint store '" + std::string(spec) +
                         "': expected 'memory' or 'sqlite:PATH'");
}

}  // namespace switchboard::stores
