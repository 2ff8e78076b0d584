// Why a call of a remote agent failed, as the step's error record will say
// it: a type (remote_agent_unreachable, remote_error, invalid_remote_response,
// ...), a message naming what was wrong, and whether another attempt may
// succeed. Internal.
#pragma once

#include <stdexcept>
#include <string>

namespace switchboard::a2a {

class remote_failure : public std::runtime_error {
 public:
  remote_failure(std::string type, const std::string& message, bool retryable = false)
      : std::runtime_error(message), type_(std::move(type)), retryable_(retryable) {}
  const std::string& type() const noexcept { return type_; }
  bool retryable() const noexcept { return retryable_; }

 private:
  std::string type_;
  bool retryable_;
};

}  // namespace switchboard::a2a
