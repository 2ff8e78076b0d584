#include "model_stream.hpp"

#include "wire_common.hpp"

#include <switchboard/models/model_error.hpp>
#include <switchboard/protocol/limits.hpp>
#include <switchboard/protocol/utf8.hpp>

namespace switchboard::models::detail {

namespace {

// How many bytes at the end of `text` start a UTF-8 character that is not
// complete yet (0 when it ends on a boundary or with ill-formed bytes that
// no further byte could complete).
std::size_t cut_tail(std::string_view text) {
  const std::size_t n = text.size();
  for (std::size_t back = 1; back <= 3 && back <= n; ++back) {
    const auto byte = static_cast<unsigned char>(text[n - back]);
    if ((byte & 0xC0) == 0x80) continue;  // a continuation byte: look further back
    const std::size_t need = byte >= 0xF0 ? 4 : byte >= 0xE0 ? 3 : byte >= 0xC0 ? 2 : 1;
    return need > back ? back : 0;
  }
  return 0;
}

bool is_ascii(std::string_view text) {
  for (char c : text)
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  return true;
}

}  // namespace

std::string_view utf8_joiner::take(std::string_view piece) {
  if (held_.empty() && is_ascii(piece)) return piece;  // the common case: nothing to join, nothing to check
  held_.append(piece);
  const std::size_t keep = cut_tail(held_);
  out_.assign(held_, 0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  protocol::replace_invalid_utf8(out_);
  return out_;
}

std::string_view utf8_joiner::flush() {
  out_ = std::move(held_);
  held_.clear();
  protocol::replace_invalid_utf8(out_);
  return out_;
}

stream_reader::stream_reader(std::string_view provider, stream_sink* sink) : provider_(provider), sink_(sink) {}

void stream_reader::begin() {
  if (delivered_ && sink_) sink_->on_restart();
  delivered_ = false;
  parser_.reset();
  text_.clear();
  arguments_.clear();
  raw_.clear();
  reset();
}

void stream_reader::data(std::string_view bytes) {
  raw_.append(bytes);
  const net::sse_status status = parser_.feed(bytes, *this);
  if (status != net::sse_status::ok) fail(to_string(status), {});
}

std::optional<std::string> stream_reader::end() {
  if (!complete()) return "no " + std::string(end_marker()) + " (a truncated answer)";
  // Whatever a joiner still holds is an unfinished character: say so (U+FFFD).
  if (sink_) {
    if (const auto rest = text_.flush(); !rest.empty()) sink_->on_text(rest);
    for (std::size_t i = 0; i < arguments_.size(); ++i) {
      if (const auto rest = arguments_[i].flush(); !rest.empty()) sink_->on_tool_call({i, {}, {}, rest});
    }
  }
  return std::nullopt;
}

void stream_reader::text_delta(std::string_view piece) {
  if (!sink_ || piece.empty()) return;
  const std::string_view whole = text_.take(piece);
  if (whole.empty()) return;
  delivered_ = true;
  sink_->on_text(whole);
}

void stream_reader::tool_call_delta(std::size_t index, std::string_view id, std::string_view name,
                                    std::string_view arguments) {
  if (!sink_) return;
  if (index >= protocol::max_tool_calls_per_turn) return;  // the reader refuses the answer itself
  if (arguments_.size() <= index) arguments_.resize(index + 1);
  const std::string_view whole = arguments.empty() ? arguments : arguments_[index].take(arguments);
  if (whole.empty() && id.empty() && name.empty()) return;
  delivered_ = true;
  sink_->on_tool_call({index, id, name, whole});
}

void stream_reader::fail(std::string_view what, std::string_view data) const {
  throw invalid_response(provider_, "in the event stream: " + std::string(what), data);
}

}  // namespace switchboard::models::detail
