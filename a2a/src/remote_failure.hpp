// Why a call of a remote agent failed, as the step's error record will say
// it: a type (remote_agent_unreachable, remote_error, invalid_remote_response,
// ...), a message naming what was wrong, whether another attempt may
// succeed, and what became of the request. Internal.
#pragma once

#include <stdexcept>
#include <string>

namespace switchboard::a2a {

// What the remote did with the request that failed.
enum class delivery {
  refused,  // it answered, refusing it (an HTTP error status, a JSON-RPC error, an answer it cannot mean)
  unsent,   // it never got it (no connection, or 429/503: not acted on)
  unknown,  // it may have acted on it (a timeout, a connection lost after the request went out)
};

class remote_failure : public std::runtime_error {
 public:
  remote_failure(std::string type, const std::string& message, bool retryable = false,
                 a2a::delivery delivery = a2a::delivery::refused)
      : std::runtime_error(message), type_(std::move(type)), retryable_(retryable), delivery_(delivery) {}
  const std::string& type() const noexcept { return type_; }
  bool retryable() const noexcept { return retryable_; }
  a2a::delivery delivery() const noexcept { return delivery_; }

 private:
  std::string type_;
  bool retryable_;
  a2a::delivery delivery_;
};

}  // namespace switchboard::a2a
