// The span model: what one finished span records, as the exporter sends it.
// Ids have W3C sizes (16-byte trace id, 8-byte span id); times are the
// system clock in nanoseconds since the Unix epoch, as OTLP carries them.
//
// Thread-safety: value types; copy and move freely.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace switchboard::telemetry {

struct trace_id {
  std::array<std::uint8_t, 16> bytes{};
  bool valid() const noexcept;  // not all zero
  std::string hex() const;      // 32 lower-case hex digits
  friend bool operator==(const trace_id&, const trace_id&) = default;
};

struct span_id {
  std::array<std::uint8_t, 8> bytes{};
  bool valid() const noexcept;  // not all zero
  std::string hex() const;      // 16 lower-case hex digits
  friend bool operator==(const span_id&, const span_id&) = default;
};

// Random, never all zero. Thread-safe (a generator per thread).
trace_id random_trace_id();
span_id random_span_id();

// An attribute's value: the OTLP AnyValue kinds Switchboard emits.
using attribute_value = std::variant<std::string, std::int64_t, double, bool, std::vector<std::string>>;

// An attribute's key. A name spelled in the code (a string literal) is
// kept as a view of the literal and never copied: a span of the hub sets a
// dozen such keys, and copying each was a third of what recording it cost.
// A key made at run time is copied.
//
//   span.set_attribute("gen_ai.agent.name", name);         // not copied
//   span.set_attribute(std::string_view(made), value);     // copied
class attribute_key {
 public:
  // consteval: only an array with static storage (a literal) gets here
  // without a copy; a local array does not compile.
  template <std::size_t N>
  consteval attribute_key(const char (&literal)[N])
      : data_(literal), size_(N - 1), plain_(needs_no_escaping(literal, N - 1)) {
    // A literal ends with its only NUL; another array (a fixed-size buffer,
    // one without a terminator) does not compile.
    for (std::size_t i = 0; i + 1 < N; ++i)
      if (literal[i] == '\0') throw "attribute_key: not a string literal";
    if (literal[N - 1] != '\0') throw "attribute_key: not a string literal";
  }
  attribute_key(std::string_view name) { copy(name); }
  attribute_key(const std::string& name) { copy(name); }
  attribute_key(const attribute_key& other) {
    if (other.owned_) {
      copy(other.view());
    } else {
      data_ = other.data_;
      size_ = other.size_;
      plain_ = other.plain_;
    }
  }
  attribute_key(attribute_key&& other) noexcept
      : data_(std::exchange(other.data_, "")), size_(std::exchange(other.size_, 0)),
        plain_(std::exchange(other.plain_, true)), owned_(std::exchange(other.owned_, false)) {}
  attribute_key& operator=(attribute_key other) noexcept {
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
    std::swap(plain_, other.plain_);
    std::swap(owned_, other.owned_);
    return *this;
  }
  constexpr ~attribute_key() {
    if (owned_) delete[] data_;
  }

  std::string_view view() const noexcept { return {data_, size_}; }
  // A literal without a quote, backslash or control character: JSON text
  // as it is (checked when the code was compiled).
  constexpr bool plain() const noexcept { return plain_; }
  operator std::string_view() const noexcept { return view(); }
  friend bool operator==(const attribute_key& key, std::string_view name) noexcept { return key.view() == name; }

 private:
  void copy(std::string_view name);  // owns a copy of `name`

  static constexpr bool needs_no_escaping(const char* text, std::size_t size) noexcept {
    for (std::size_t i = 0; i < size; ++i) {
      const auto c = static_cast<unsigned char>(text[i]);
      if (c < 0x20 || c == '"' || c == '\\') return false;
    }
    return true;
  }

  const char* data_ = "";
  std::size_t size_ = 0;
  bool plain_ = true;   // the empty key too
  bool owned_ = false;
};

struct attribute {
  attribute_key key;
  attribute_value value;
};

using attributes = std::vector<attribute>;

// OTLP's SpanKind, with its wire numbers.
enum class span_kind : int { internal = 1, server = 2, client = 3, producer = 4, consumer = 5 };

// OTLP's Status.code, with its wire numbers.
enum class status_code : int { unset = 0, ok = 1, error = 2 };

// W3C trace-flags: bit 0 is "sampled".
inline constexpr std::uint8_t sampled_flag = 0x01;

// Where a span sits in a trace: what a traceparent carries, plus tracestate.
struct span_context {
  telemetry::trace_id trace_id;
  telemetry::span_id span_id;
  std::uint8_t trace_flags = 0;
  std::string trace_state;  // forwarded unchanged, never interpreted
  bool is_remote = false;   // came from another process (a traceparent)

  bool valid() const noexcept { return trace_id.valid() && span_id.valid(); }
  bool sampled() const noexcept { return (trace_flags & sampled_flag) != 0; }
};

struct span_link {
  span_context context;
  telemetry::attributes attributes;
};

struct span_event {
  std::string name;
  std::uint64_t time_unix_nano = 0;
  telemetry::attributes attributes;
};

struct span_data {
  span_context context;
  telemetry::span_id parent_span_id;  // all zero for a root span
  bool parent_is_remote = false;      // the parent came from another process (a traceparent)
  std::string name;
  span_kind kind = span_kind::internal;
  std::uint64_t start_time_unix_nano = 0;
  std::uint64_t end_time_unix_nano = 0;
  telemetry::attributes attributes;
  std::vector<span_link> links;
  std::vector<span_event> events;
  status_code status = status_code::unset;
  std::string status_message;  // sent only with status_code::error
  // What the span limits (span_limits in tracer.hpp) kept out, as OTLP's
  // dropped*Count fields report it.
  std::uint32_t dropped_attributes = 0;
  std::uint32_t dropped_events = 0;
  std::uint32_t dropped_links = 0;
};

// Who emits: the OTLP resource (service.name, service.version, ...).
struct resource {
  telemetry::attributes attributes;
};

// Now, on the system clock, in nanoseconds since the Unix epoch.
std::uint64_t now_unix_nano() noexcept;

}  // namespace switchboard::telemetry
