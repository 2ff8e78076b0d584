// The OTLP/JSON encoding of spans, written straight into the body: every
// exported span passes through here, and building a Boost.JSON tree first
// cost ~70,000 instructions a span, mostly allocations.
#include <switchboard/telemetry/otlp_json.hpp>

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

// Appends JSON text; commas are the caller's (each writer below knows
// which member comes first).
class body_writer {
 public:
  explicit body_writer(std::string& out) : out_(out) {}

  body_writer& raw(std::string_view text) {
    out_ += text;
    return *this;
  }

  // A JSON string: quotes, backslashes and control characters escaped,
  // other bytes as they are (as Boost.JSON's serializer writes them).
  body_writer& string(std::string_view text) {
    out_ += '"';
    std::size_t plain_from = 0;
    for (std::size_t i = 0; i < text.size(); ++i) {
      while (i + 8 <= text.size() && plain_word(text.data() + i)) i += 8;
      if (i == text.size()) break;
      const auto c = static_cast<unsigned char>(text[i]);
      if (c >= 0x20 && c != '"' && c != '\\') continue;
      out_.append(text.data() + plain_from, i - plain_from);
      escape(c);
      plain_from = i + 1;
    }
    out_.append(text.data() + plain_from, text.size() - plain_from);
    out_ += '"';
    return *this;
  }

  // A trace or span id as its quoted lower-case hex, written in place.
  template <std::size_t N>
  body_writer& hex_id(const std::array<std::uint8_t, N>& bytes) {
    static constexpr char digits[] = "0123456789abcdef";
    char text[2 * N + 2];
    text[0] = '"';
    for (std::size_t i = 0; i < N; ++i) {
      text[1 + 2 * i] = digits[bytes[i] >> 4];
      text[2 + 2 * i] = digits[bytes[i] & 0xf];
    }
    text[2 * N + 1] = '"';
    out_.append(text, sizeof text);
    return *this;
  }

  // "key":
  body_writer& key(std::string_view name) {
    out_ += '"';
    out_ += name;
    out_ += "\":";
    return *this;
  }

  template <class Integer>
  body_writer& integer(Integer number) {
    char digits[24];
    const auto end = std::to_chars(digits, digits + sizeof digits, number).ptr;
    out_.append(digits, end);
    return *this;
  }

  // proto3 JSON: 64-bit integers as decimal strings.
  template <class Integer>
  body_writer& quoted_integer(Integer number) {
    out_ += '"';
    integer(number);
    out_ += '"';
    return *this;
  }

  // Shortest round-trip form; the proto3 JSON strings for the others.
  body_writer& number(double value) {
    if (std::isnan(value)) return raw("\"NaN\"");
    if (std::isinf(value)) return raw(value > 0 ? "\"Infinity\"" : "\"-Infinity\"");
    char digits[32];
    const auto end = std::to_chars(digits, digits + sizeof digits, value).ptr;
    out_.append(digits, end);
    return *this;
  }

 private:
  void escape(unsigned char c) {
    switch (c) {
      case '"': out_ += "\\\""; return;
      case '\\': out_ += "\\\\"; return;
      case '\b': out_ += "\\b"; return;
      case '\f': out_ += "\\f"; return;
      case '\n': out_ += "\\n"; return;
      case '\r': out_ += "\\r"; return;
      case '\t': out_ += "\\t"; return;
      default: {
        static constexpr char hex[] = "0123456789abcdef";
        const char escaped[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 0xf]};
        out_.append(escaped, sizeof escaped);
      }
    }
  }

  std::string& out_;
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
          w.raw("{\"boolValue\":").raw(held ? "true" : "false").raw("}");
        } else {
          w.raw("{\"arrayValue\":").raw("{\"values\":").raw("[");
          for (std::size_t i = 0; i < held.size(); ++i) {
            w.raw(i == 0 ? "{\"stringValue\":" : ",{\"stringValue\":").string(held[i]).raw("}");
          }
          w.raw("]}}");
        }
      },
      value);
}

void write_attributes(body_writer& w, const attributes& list) {
  w.raw("[");
  for (std::size_t i = 0; i < list.size(); ++i) {
    w.raw(i == 0 ? "{\"key\":" : ",{\"key\":").string(list[i].key).raw(",\"value\":");
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

}  // namespace

std::string encode_otlp_traces(const resource& emitter, const instrumentation_scope& scope,
                               std::span<const span_data> spans) {
  std::string body;
  body.reserve(512 + spans.size() * 1024);
  body_writer w(body);
  w.raw("{\"resourceSpans\":").raw("[{\"resource\":").raw("{\"attributes\":");
  write_attributes(w, emitter.attributes);
  w.raw("},\"scopeSpans\":").raw("[{\"scope\":").raw("{\"name\":").string(scope.name);
  if (!scope.version.empty()) w.raw(",\"version\":").string(scope.version);
  w.raw("},\"spans\":").raw("[");
  for (std::size_t i = 0; i < spans.size(); ++i) {
    if (i != 0) w.raw(",");
    write_span(w, spans[i]);
  }
  w.raw("]}]}]}");
  return body;
}

}  // namespace switchboard::telemetry
