// An incremental parser of a text/event-stream body (the WHATWG
// server-sent events format) for the Streamable HTTP transport. Internal.
//
// Bounded: a line or an event's data longer than max_message_bytes is an
// error (the stream is then abandoned). Thread-safety: one stream's state.
#pragma once

#include <switchboard/agents/mcp/server_config.hpp>

#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace switchboard::agents::mcp::detail {

class sse_parser {
 public:
  // Called for each complete event of type "message" (or untyped) with
  // non-empty data.
  using event_fn = std::function<void(std::string_view data)>;

  explicit sse_parser(event_fn on_event) : on_event_(std::move(on_event)) {}

  // Feeds bytes; false when a bound was passed (the stream must be dropped).
  bool feed(std::string_view bytes);

  // The last "id:" seen (what Last-Event-ID resumes from), and the last
  // "retry:" in milliseconds.
  const std::string& last_event_id() const noexcept { return last_id_; }
  std::optional<long> retry_ms() const noexcept { return retry_; }

 private:
  void line(std::string_view text);
  void dispatch();

  event_fn on_event_;
  std::string line_;
  bool after_cr_ = false;
  std::string data_;
  std::string event_;
  bool has_data_ = false;
  std::string last_id_;
  std::optional<long> retry_;
};

}  // namespace switchboard::agents::mcp::detail
