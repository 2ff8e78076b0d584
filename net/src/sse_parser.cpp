#include <switchboard/net/sse_parser.hpp>

#include <charconv>

#include <algorithm>

namespace switchboard::net {

namespace {

constexpr std::string_view byte_order_mark = "\xEF\xBB\xBF";

}  // namespace

std::string_view to_string(sse_status status) noexcept {
  switch (status) {
    case sse_status::ok: return "ok";
    case sse_status::line_too_long: return "a line of the event stream is longer than the limit";
    case sse_status::event_too_large: return "an event of the event stream is larger than the limit";
  }
  return "?";
}

void sse_parser::reset() {
  prefix_.clear();
  line_.clear();
  data_.clear();
  type_.clear();
  id_.clear();
  last_id_.clear();
  retry_.reset();
  has_data_ = false;
  skip_lf_ = false;
  started_ = false;
  failed_ = sse_status::ok;
}

sse_status sse_parser::feed(std::string_view bytes, sse_handler& handler) {
  if (failed_ != sse_status::ok) return failed_;
  if (!started_) {
    // The mark may itself arrive cut: hold the first bytes until they are
    // three, or cannot be the start of a mark.
    const std::size_t take = std::min(bytes.size(), byte_order_mark.size() - prefix_.size());
    prefix_.append(bytes.substr(0, take));
    bytes.remove_prefix(take);
    if (prefix_.size() < byte_order_mark.size() && byte_order_mark.starts_with(prefix_)) return sse_status::ok;
    started_ = true;
    const std::string head = std::move(prefix_);
    prefix_.clear();
    const sse_status status = feed_lines(head == byte_order_mark ? std::string_view() : head, handler);
    if (status != sse_status::ok) return status;
  }
  return feed_lines(bytes, handler);
}

sse_status sse_parser::feed_lines(std::string_view bytes, sse_handler& handler) {
  while (!bytes.empty()) {
    if (skip_lf_) {
      skip_lf_ = false;
      if (bytes.front() == '\n') {
        bytes.remove_prefix(1);
        continue;
      }
    }
    const std::size_t end = bytes.find_first_of("\r\n");
    const std::string_view text = bytes.substr(0, end);
    if (line_.size() + text.size() > limits_.max_line_bytes) return fail(sse_status::line_too_long);
    if (end == std::string_view::npos) {
      line_.append(bytes);  // the line goes on in the next bytes
      return sse_status::ok;
    }
    skip_lf_ = bytes[end] == '\r';
    bytes.remove_prefix(end + 1);
    sse_status status = sse_status::ok;
    if (line_.empty()) {
      status = line(text, handler);  // the common case: the whole line is in this read
    } else {
      line_.append(text);
      status = line(line_, handler);
      line_.clear();
    }
    if (status != sse_status::ok) return fail(status);
  }
  return sse_status::ok;
}

sse_status sse_parser::line(std::string_view text, sse_handler& handler) {
  if (text.empty()) {
    dispatch(handler);
    return sse_status::ok;
  }
  if (text.front() == ':') return sse_status::ok;  // a comment: keep-alives
  const std::size_t colon = text.find(':');
  const std::string_view name = text.substr(0, colon);
  std::string_view value = colon == std::string_view::npos ? std::string_view() : text.substr(colon + 1);
  if (value.starts_with(' ')) value.remove_prefix(1);
  return field(name, value);
}

sse_status sse_parser::field(std::string_view name, std::string_view value) {
  if (name == "data") {
    if (data_.size() + value.size() + 1 > limits_.max_event_bytes) return sse_status::event_too_large;
    if (has_data_) data_ += '\n';
    data_.append(value);
    has_data_ = true;
  } else if (name == "event") {
    type_.assign(value);
  } else if (name == "id") {
    if (value.find('\0') == std::string_view::npos) id_.assign(value);
    if (value.find('\0') == std::string_view::npos && value.size() <= 1024) last_id_.assign(value);
  } else if (name == "retry") {
    long ms = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), ms);
    if (ec == std::errc{} && end == value.data() + value.size() && ms >= 0) retry_ = ms;
  }
  return sse_status::ok;  // unknown fields: ignored
}

void sse_parser::dispatch(sse_handler& handler) {
  if (has_data_) {
    // Cleared after the handler ran, even when it throws: the event is over.
    struct clear_on_exit {
      sse_parser& p;
      ~clear_on_exit() {
        p.data_.clear();
        p.type_.clear();
        p.id_.clear();
        p.has_data_ = false;
      }
    } clear{*this};
    handler.on_event({type_, data_, id_});
    return;
  }
  type_.clear();
  id_.clear();
}

}  // namespace switchboard::net
