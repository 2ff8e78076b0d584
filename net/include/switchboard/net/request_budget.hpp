// request_budget: what one logical call may spend across HTTP requests — a
// deadline and a number of attempts — shared by every request the call makes
// (transport retries, and the re-asks of the model layer above, which calls
// it request_budget). http_client counts each attempt in it, starts no attempt
// and waits for no retry past its deadline, and ends each attempt by it.
//
// Not thread-safe: one call uses it from one coroutine at a time.
#pragma once

#include <chrono>
#include <optional>

namespace switchboard::net {

struct request_budget {
  // Beyond it no attempt starts and no retry waits; nullopt: none (each
  // attempt still has the client's request_timeout).
  std::optional<std::chrono::steady_clock::time_point> deadline;
  int max_attempts = 0;  // requests in total; 0: the client's own retry policy decides
  int attempts = 0;      // requests sent so far
};

}  // namespace switchboard::net
