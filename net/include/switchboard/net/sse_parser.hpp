// An incremental parser for server-sent events (text/event-stream, the
// WHATWG HTML "event stream" format): the framing of both providers'
// streamed answers and of MCP's Streamable HTTP responses. Internal.
//
// Bytes may arrive cut anywhere — inside a line, between the CR and LF of a
// line end, inside a UTF-8 sequence — and each complete event is handed to
// the handler once its blank line arrives. Lines end with CRLF, LF or CR;
// a line starting with ':' is a comment (keep-alive) and is ignored; a
// UTF-8 byte order mark before the first line is skipped; fields other than
// data, event, id and retry are ignored; an event without data is not dispatched.
// An event still open when the input ends is not dispatched (the caller
// decides whether the stream was complete).
//
// Bounded: a line longer than max_line_bytes or an event whose data exceeds
// max_event_bytes stops the parser with an error (feed returns it); the
// memory held is at most about those two limits.
//
// Thread-safety: none; one parser per stream.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace switchboard::net {

struct sse_event {
  std::string_view type;  // the "event:" field; "" when none was given (the spec's "message")
  std::string_view data;  // the "data:" lines joined with '\n'
  std::string_view id;    // the "id:" field of this event, "" when none
};

class sse_handler {
 public:
  // May throw: the exception leaves feed(), and the parser must not be fed again.
  virtual void on_event(const sse_event& event) = 0;

 protected:
  ~sse_handler() = default;
};

struct sse_limits {
  std::size_t max_line_bytes = std::size_t{4} << 20;   // 4 MiB
  std::size_t max_event_bytes = std::size_t{4} << 20;  // data of one event
};

enum class sse_status { ok, line_too_long, event_too_large };

class sse_parser {
 public:
  explicit sse_parser(sse_limits limits = {}) : limits_(limits) {}

  // Parses `bytes`, calling handler.on_event for every event they complete.
  // After an error status the parser stays failed (reset() to reuse it).
  sse_status feed(std::string_view bytes, sse_handler& handler);

  // Forgets everything, for a new stream.
  void reset();

  // The last "id:" seen (what a reconnection sends as Last-Event-ID; ids
  // holding NUL or longer than 1 KiB are ignored), and the last "retry:"
  // in milliseconds.
  const std::string& last_event_id() const noexcept { return last_id_; }
  std::optional<long> retry_ms() const noexcept { return retry_; }

  // An event or a line has begun and not yet ended.
  bool mid_event() const noexcept { return !line_.empty() || !prefix_.empty() || has_data_ || !type_.empty(); }

 private:
  sse_status feed_lines(std::string_view bytes, sse_handler& handler);
  sse_status line(std::string_view text, sse_handler& handler);
  sse_status fail(sse_status status) noexcept { return failed_ = status; }
  sse_status field(std::string_view name, std::string_view value);
  void dispatch(sse_handler& handler);

  sse_limits limits_;
  std::string prefix_;          // the first bytes, until it is known whether they are a byte order mark
  std::string line_;            // a line cut by the end of the input so far
  std::string data_, type_, id_;
  std::string last_id_;
  std::optional<long> retry_;
  bool has_data_ = false;
  bool skip_lf_ = false;        // the last line ended with CR: a following LF belongs to it
  bool started_ = false;        // past a possible byte order mark
  sse_status failed_ = sse_status::ok;
};

std::string_view to_string(sse_status status) noexcept;

}  // namespace switchboard::net
