#include <switchboard/orchestrator/checkpoint_store.hpp>

namespace switchboard::orchestrator {

boost::asio::awaitable<std::vector<run_summary>> list_all(checkpoint_store& store, list_request request) {
  std::vector<run_summary> runs;
  for (;;) {
    auto page = co_await store.list(request);
    for (auto& run : page.runs) runs.push_back(std::move(run));
    if (page.next_cursor.empty()) co_return runs;
    request.cursor = std::move(page.next_cursor);
  }
}

}  // namespace switchboard::orchestrator
