// The OTLP/JSON encoding of spans, written straight into the body: every
// exported span passes through here, and building a Boost.JSON tree first
// cost ~70,000 instructions a span, mostly allocations.
#include <switchboard/telemetry/otlp_json.hpp>

#include "otlp_span_text.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>

namespace switchboard::telemetry {
namespace {

// Whether none of the 8 bytes at `p` needs escaping (a quote, a backslash,
// a control character), tested all at once: most text needs none.
bool plain_word(const char* p) {
  constexpr std::uint64_t ones = 0x0101010101010101ULL;
  constexpr std::uint64_t high = 0x8080808080808080ULL;
  std::uint64_t word;
  std::memcpy(&word, p, sizeof word);
  const auto has_zero_byte = [](std::uint64_t v) { return (v - ones) & ~v & high; };
  const std::uint64_t below_space = (word - ones * 0x20) & ~word & high;
  return (has_zero_byte(word ^ (ones * '"')) | has_zero_byte(word ^ (ones * '\\')) | below_space) == 0;
}

bool plain_byte(unsigned char c) { return c >= 0x20 && c != '"' && c != '\\'; }

// Writes JSON text into a buffer through a pointer: the buffer is sized
// ahead and every piece is copied in place, checked against the room left
// once per piece (std::string::append's checks and calls were a third of
// the encoder's cost). Commas are the caller's (each writer below knows
// which member comes first).
class body_writer {
 public:
  // Writes from the start of `out`, whose size is the room to write in:
  // grown to `expected_size` when smaller, and never made smaller.
  body_writer(std::string& out, std::size_t expected_size) : out_(out) {
    if (out_.size() < expected_size) out_.resize(expected_size);
    at_ = out_.data();
    end_ = out_.data() + out_.size();
  }

  std::string_view written() const { return {out_.data(), static_cast<std::size_t>(at_ - out_.data())}; }

  body_writer& raw(std::string_view text) {
    room(text.size());
    std::memcpy(at_, text.data(), text.size());
    at_ += text.size();
    return *this;
  }

  // A literal (only literals are passed here): its size is known, so the
  // copy is a few moves.
  template <std::size_t N>
  body_writer& raw(const char (&literal)[N]) {
    room(N - 1);
    std::memcpy(at_, literal, N - 1);
    at_ += N - 1;
    return *this;
  }

  // A JSON string: quotes, backslashes and control characters escaped,
  // other bytes as they are (as Boost.JSON's serializer writes them).
  body_writer& string(std::string_view text) {
    room(text.size() * max_escaped_size + 2);
    *at_++ = '"';
    const char* next = text.data();
    const char* const last = next + text.size();
    while (next != last) {
      const char* const plain_from = next;
      while (last - next >= 8 && plain_word(next)) next += 8;
      while (next != last && plain_byte(static_cast<unsigned char>(*next))) ++next;
      std::memcpy(at_, plain_from, static_cast<std::size_t>(next - plain_from));
      at_ += next - plain_from;
      if (next != last) escape(static_cast<unsigned char>(*next++));
    }
    *at_++ = '"';
    return *this;
  }

  // A trace or span id as its quoted lower-case hex.
  template <std::size_t N>
  body_writer& hex_id(const std::array<std::uint8_t, N>& bytes) {
    static constexpr char digits[] = "0123456789abcdef";
    room(2 * N + 2);
    *at_++ = '"';
    for (std::uint8_t byte : bytes) {
      *at_++ = digits[byte >> 4];
      *at_++ = digits[byte & 0xf];
    }
    *at_++ = '"';
    return *this;
  }

  // "key":
  body_writer& key(std::string_view name) { return raw("\"").raw(name).raw("\":"); }

  template <class Integer>
  body_writer& integer(Integer number) {
    room(max_number_size);
    at_ = std::to_chars(at_, end_, number).ptr;
    return *this;
  }

  // proto3 JSON: 64-bit integers as decimal strings.
  template <class Integer>
  body_writer& quoted_integer(Integer number) {
    room(max_number_size + 2);
    *at_++ = '"';
    at_ = std::to_chars(at_, end_, number).ptr;
    *at_++ = '"';
    return *this;
  }

  // Shortest round-trip form; the proto3 JSON strings for the others.
  body_writer& number(double value) {
    if (std::isnan(value)) return raw("\"NaN\"");
    if (std::isinf(value)) return raw(value > 0 ? "\"Infinity\"" : "\"-Infinity\"");
    room(max_number_size);
    at_ = std::to_chars(at_, end_, value).ptr;
    return *this;
  }

 private:
  static constexpr std::size_t max_escaped_size = 6;  // \u00XX
  static constexpr std::size_t max_number_size = 32;  // a double's shortest form is at most 24

  void room(std::size_t size) {
    if (static_cast<std::size_t>(end_ - at_) < size) grow(size);
  }

  void grow(std::size_t size) {
    const auto used = static_cast<std::size_t>(at_ - out_.data());
    out_.resize(std::max(out_.size() * 2, used + size));
    at_ = out_.data() + used;
    end_ = out_.data() + out_.size();
  }

  void escape(unsigned char c) {
    switch (c) {
      case '"': raw("\\\""); return;
      case '\\': raw("\\\\"); return;
      case '\b': raw("\\b"); return;
      case '\f': raw("\\f"); return;
      case '\n': raw("\\n"); return;
      case '\r': raw("\\r"); return;
      case '\t': raw("\\t"); return;
      default: {
        static constexpr char hex[] = "0123456789abcdef";
        const char escaped[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 0xf]};
        raw(std::string_view(escaped, sizeof escaped));
      }
    }
  }

  std::string& out_;
  char* at_;
  char* end_;
};

// AnyValue: one of its fields, named for the kind.
void write_any_value(body_writer& w, const attribute_value& value) {
  std::visit(
      [&w](const auto& held) {
        using held_type = std::decay_t<decltype(held)>;
        if constexpr (std::is_same_v<held_type, std::string>) {
          w.raw("{\"stringValue\":").string(held).raw("}");
        } else if constexpr (std::is_same_v<held_type, std::int64_t>) {
          w.raw("{\"intValue\":").quoted_integer(held).raw("}");
        } else if constexpr (std::is_same_v<held_type, double>) {
          w.raw("{\"doubleValue\":").number(held).raw("}");
        } else if constexpr (std::is_same_v<held_type, bool>) {
          if (held) {
            w.raw("{\"boolValue\":true}");
          } else {
            w.raw("{\"boolValue\":false}");
          }
        } else {
          w.raw("{\"arrayValue\":{\"values\":[");
          for (std::size_t i = 0; i < held.size(); ++i) {
            if (i != 0) w.raw(",");
            w.raw("{\"stringValue\":").string(held[i]).raw("}");
          }
          w.raw("]}}");
        }
      },
      value);
}

void write_attributes(body_writer& w, const attributes& list) {
  w.raw("[");
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (i != 0) w.raw(",");
    const attribute_key& key = list[i].key;
    w.raw("{\"key\":");
    if (key.plain()) {
      w.raw("\"").raw(key.view()).raw("\"");
    } else {
      w.string(key);
    }
    w.raw(",\"value\":");
    write_any_value(w, list[i].value);
    w.raw("}");
  }
  w.raw("]");
}

// Span.flags and Link.flags (OTLP 1.1+): the W3C trace flags in bits 0-7;
// bit 8 says whether the other bit is known, bit 9 that the parent (for a
// span) or the linked span (for a link) is in another process.
constexpr std::uint32_t remoteness_known = 0x100;
constexpr std::uint32_t remote = 0x200;

std::uint32_t wire_flags(std::uint8_t trace_flags, bool is_remote) {
  return static_cast<std::uint32_t>(trace_flags) | remoteness_known | (is_remote ? remote : 0);
}

void write_link(body_writer& w, const span_link& link) {
  w.raw("{\"traceId\":").hex_id(link.context.trace_id.bytes);
  w.raw(",\"spanId\":").hex_id(link.context.span_id.bytes);
  if (!link.context.trace_state.empty()) w.raw(",\"traceState\":").string(link.context.trace_state);
  if (!link.attributes.empty()) {
    w.raw(",\"attributes\":");
    write_attributes(w, link.attributes);
  }
  w.raw(",\"flags\":").integer(wire_flags(link.context.trace_flags, link.context.is_remote)).raw("}");
}

void write_event(body_writer& w, const span_event& event) {
  w.raw("{\"timeUnixNano\":").quoted_integer(event.time_unix_nano);
  w.raw(",\"name\":").string(event.name);
  if (!event.attributes.empty()) {
    w.raw(",\"attributes\":");
    write_attributes(w, event.attributes);
  }
  w.raw("}");
}

void write_status(body_writer& w, const span_data& finished) {
  w.raw("{\"code\":").integer(static_cast<int>(finished.status));
  if (finished.status == status_code::error && !finished.status_message.empty()) {
    w.raw(",\"message\":").string(finished.status_message);
  }
  w.raw("}");
}

template <class List, class Write>
void write_list(body_writer& w, std::string_view name, const List& list, Write write_one) {
  if (list.empty()) return;
  w.raw(",").key(name).raw("[");
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (i != 0) w.raw(",");
    write_one(w, list[i]);
  }
  w.raw("]");
}

void write_span(body_writer& w, const span_data& finished) {
  w.raw("{\"traceId\":").hex_id(finished.context.trace_id.bytes);
  w.raw(",\"spanId\":").hex_id(finished.context.span_id.bytes);
  if (!finished.context.trace_state.empty()) w.raw(",\"traceState\":").string(finished.context.trace_state);
  if (finished.parent_span_id.valid()) w.raw(",\"parentSpanId\":").hex_id(finished.parent_span_id.bytes);
  w.raw(",\"flags\":").integer(wire_flags(finished.context.trace_flags, finished.parent_is_remote));
  w.raw(",\"name\":").string(finished.name);
  w.raw(",\"kind\":").integer(static_cast<int>(finished.kind));
  w.raw(",\"startTimeUnixNano\":").quoted_integer(finished.start_time_unix_nano);
  w.raw(",\"endTimeUnixNano\":").quoted_integer(finished.end_time_unix_nano);
  w.raw(",\"attributes\":");
  write_attributes(w, finished.attributes);
  if (finished.dropped_attributes != 0) w.raw(",\"droppedAttributesCount\":").integer(finished.dropped_attributes);
  write_list(w, "events", finished.events, write_event);
  if (finished.dropped_events != 0) w.raw(",\"droppedEventsCount\":").integer(finished.dropped_events);
  write_list(w, "links", finished.links, write_link);
  if (finished.dropped_links != 0) w.raw(",\"droppedLinksCount\":").integer(finished.dropped_links);
  w.raw(",\"status\":");
  write_status(w, finished);
  w.raw("}");
}

void write_prefix(body_writer& w, const resource& emitter, const instrumentation_scope& scope) {
  w.raw("{\"resourceSpans\":[{\"resource\":{\"attributes\":");
  write_attributes(w, emitter.attributes);
  w.raw("},\"scopeSpans\":[{\"scope\":{\"name\":").string(scope.name);
  if (!scope.version.empty()) w.raw(",\"version\":").string(scope.version);
  w.raw("},\"spans\":[");
}

}  // namespace

std::string encode_otlp_traces(const resource& emitter, const instrumentation_scope& scope,
                               std::span<const span_data> spans) {
  std::string body;
  body_writer w(body, 1024 + spans.size() * 1536);
  write_prefix(w, emitter, scope);
  for (std::size_t i = 0; i < spans.size(); ++i) {
    if (i != 0) w.raw(",");
    write_span(w, spans[i]);
  }
  w.raw(detail::otlp_traces_suffix);
  body.resize(w.written().size());
  return body;
}

namespace detail {

std::string otlp_traces_prefix(const resource& emitter, const instrumentation_scope& scope) {
  std::string prefix;
  body_writer w(prefix, 1024);
  write_prefix(w, emitter, scope);
  prefix.resize(w.written().size());
  return prefix;
}

std::string_view write_otlp_span(std::string& buffer, const span_data& finished) {
  // A hub's span is about 1 KiB of JSON.
  body_writer w(buffer, 2048);
  write_span(w, finished);
  return w.written();
}

}  // namespace detail
}  // namespace switchboard::telemetry
