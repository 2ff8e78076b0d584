// A span processor that keeps every span it is given, for tests that look
// at what a tracer recorded without exporting it.
#pragma once

#include <switchboard/telemetry/tracer.hpp>

#include <mutex>
#include <vector>

namespace switchboard::testing {

class collecting_processor final : public telemetry::span_processor {
 public:
  void on_end(telemetry::span_data&& finished) noexcept override {
    std::scoped_lock lock(mutex_);
    spans_.push_back(std::move(finished));
  }
  std::vector<telemetry::span_data> spans() const {
    std::scoped_lock lock(mutex_);
    return spans_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<telemetry::span_data> spans_;
};

}  // namespace switchboard::testing
