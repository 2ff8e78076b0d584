// What both providers' stream readers share: the event-stream framing
// (sse_parser.hpp), the sink's deltas in whole UTF-8 characters, a restart
// notice when a retry follows delivered deltas, and the rule that a stream
// without its end marker is not an answer. Internal.
//
// A reader is the http_client's body_stream for one request: begin() starts
// (or restarts) an attempt's stream, data() takes its bytes, end() says
// whether it was whole; result() then builds the chat_result.
//
// Thread-safety: none; used by the coroutine of one request.
#pragma once

#include <switchboard/net/http_client.hpp>
#include <switchboard/net/sse_parser.hpp>

#include <switchboard/models/chat_model.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace switchboard::models::detail {

// Holds back the bytes of a UTF-8 character cut at the end of a piece, so
// that what is passed on ends on a character boundary; ill-formed bytes
// become U+FFFD.
class utf8_joiner {
 public:
  // The whole characters of held bytes + `piece`; keeps the cut one back.
  // The view is valid until the next call.
  std::string_view take(std::string_view piece);
  // Whatever is held (an unfinished character: U+FFFD), and forget it.
  std::string_view flush();
  void clear() noexcept { held_.clear(); }

 private:
  std::string held_;
  std::string out_;
};

class stream_reader : public net::body_stream, protected net::sse_handler {
 public:
  stream_reader(std::string_view provider, stream_sink* sink);

  void begin() final;
  void data(std::string_view bytes) final;
  std::optional<std::string> end() final;

 protected:
  ~stream_reader() = default;

  // A new attempt: forget the last one's answer.
  virtual void reset() = 0;
  // The provider's end marker arrived ([DONE], message_stop).
  virtual bool complete() const noexcept = 0;
  // The name of the end marker, for the truncation message.
  virtual std::string_view end_marker() const noexcept = 0;

  // Pass on text (kept whole-character) and a tool call's piece.
  void text_delta(std::string_view piece);
  void tool_call_delta(std::size_t index, std::string_view id, std::string_view name, std::string_view arguments);

  // model_error(invalid_response) naming the provider and quoting `data`.
  [[noreturn]] void fail(std::string_view what, std::string_view data) const;

  std::string_view provider_;
  stream_sink* sink_;
  std::string raw_;  // the stream as received, for chat_result::raw_body

 private:
  net::sse_parser parser_;
  utf8_joiner text_;
  std::vector<utf8_joiner> arguments_;  // per tool call
  bool delivered_ = false;              // something reached the sink in this attempt
};

}  // namespace switchboard::models::detail
