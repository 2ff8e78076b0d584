#include "sse_parser.hpp"

#include <charconv>

namespace switchboard::agents::mcp::detail {

bool sse_parser::feed(std::string_view bytes) {
  for (const char c : bytes) {
    // A line ends with CR, LF or CRLF; the LF of a CRLF split across two
    // reads is not a second (empty) line.
    if (c == '\n' && after_cr_) {
      after_cr_ = false;
      continue;
    }
    after_cr_ = c == '\r';
    if (c == '\r' || c == '\n') {
      line(line_);
      line_.clear();
      if (data_.size() > max_message_bytes) return false;
      continue;
    }
    line_.push_back(c);
    if (line_.size() > max_message_bytes) return false;
  }
  return true;
}

void sse_parser::line(std::string_view text) {
  if (text.empty()) {
    dispatch();
    return;
  }
  if (text.front() == ':') return;  // a comment (keep-alive)
  const auto colon = text.find(':');
  const std::string_view field = text.substr(0, colon);
  std::string_view value = colon == std::string_view::npos ? std::string_view{} : text.substr(colon + 1);
  if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  if (field == "data") {
    data_.append(value);
    data_.push_back('\n');
    has_data_ = true;
  } else if (field == "event") {
    event_ = std::string(value);
  } else if (field == "id") {
    if (value.find('\0') == std::string_view::npos && value.size() <= 1024) last_id_ = std::string(value);
  } else if (field == "retry") {
    long ms = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), ms);
    if (ec == std::errc{} && end == value.data() + value.size()) retry_ = ms;
  }
}

void sse_parser::dispatch() {
  if (has_data_ && (event_.empty() || event_ == "message")) {
    std::string_view data(data_);
    data.remove_suffix(1);  // the last line's newline
    if (!data.empty() && on_event_) on_event_(data);
  }
  data_.clear();
  event_.clear();
  has_data_ = false;
}

}  // namespace switchboard::agents::mcp::detail
