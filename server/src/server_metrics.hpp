// What GET /metrics shows of the server itself, in the Prometheus text
// format (0.0.4): HTTP requests by route and status, open streams, pauses
// waiting for a person; and the samples of the hubs', parsers' and models'
// own metrics sources that no OpenTelemetry instrument covers (routes
// taken, the clarification rate, the model cache, retries). Runs, steps,
// tool calls, parser outcomes and model tokens are the instruments' (ADR
// 0033), rendered after this page: each counted once.
//
// Thread-safety: every member function may be called from any thread.
#pragma once

#include <switchboard/protocol/metrics.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace switchboard::server {

// A path's route for a label: ids replaced by "{id}", so the label's values
// stay few whatever clients send.
std::string route_label(std::string_view path);

class server_metrics final {
 public:
  void count_request(std::string_view method, std::string_view route, int status);

  // The page; `open_streams` the event streams open now (the HTTP
  // server's count); `waiting` are the pauses waiting now by kind
  // ("clarification", "approval"); the samples of `sources` are added
  // with a label naming the workflow each belongs to, except those an
  // instrument covers.
  using labelled_source = std::pair<std::string, const protocol::metrics_source*>;
  std::string render(std::size_t open_streams, const std::map<std::string, std::int64_t>& waiting,
                     const std::vector<labelled_source>& sources) const;

 private:
  mutable std::mutex mutex_;
  std::map<std::tuple<std::string, std::string, int>, std::uint64_t> requests_;  // (method, route, status)
};

}  // namespace switchboard::server
