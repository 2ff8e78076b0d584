#include <switchboard/telemetry/trace_context.hpp>

#include <cstddef>

namespace switchboard::telemetry {
namespace {

constexpr std::size_t traceparent_v00_length = 55;  // 2+1+32+1+16+1+2
constexpr std::size_t max_tracestate_members = 32;
constexpr std::size_t max_tracestate_bytes = 8 * 1024;
constexpr std::size_t max_tracestate_value = 256;

// Lower-case hex only: the spec's HEXDIGLC.
int lower_hex_value(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

template <std::size_t N>
bool read_hex(std::string_view text, std::array<std::uint8_t, N>& out) noexcept {
  if (text.size() != N * 2) return false;
  for (std::size_t i = 0; i < N; ++i) {
    const int high = lower_hex_value(text[2 * i]);
    const int low = lower_hex_value(text[2 * i + 1]);
    if (high < 0 || low < 0) return false;
    out[i] = static_cast<std::uint8_t>(high * 16 + low);
  }
  return true;
}

bool is_key_char(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '*' || c == '/';
}

// key = simple-key / multi-tenant-key (tenant-id "@" system-id).
bool valid_tracestate_key(std::string_view key) noexcept {
  const std::size_t at = key.find('@');
  if (at == std::string_view::npos) {
    if (key.empty() || key.size() > 256 || key[0] < 'a' || key[0] > 'z') return false;
  } else {
    const std::string_view tenant = key.substr(0, at);
    const std::string_view system = key.substr(at + 1);
    if (tenant.empty() || tenant.size() > 241 || system.empty() || system.size() > 14) return false;
    if (!((tenant[0] >= 'a' && tenant[0] <= 'z') || (tenant[0] >= '0' && tenant[0] <= '9'))) return false;
    if (system[0] < 'a' || system[0] > 'z') return false;
    key = tenant;  // its characters checked below, then the system's
    for (char c : system)
      if (!is_key_char(c)) return false;
  }
  for (char c : key)
    if (!is_key_char(c)) return false;
  return true;
}

// value = 0*255(chr) nblk-chr; chr = %x20 / nblk-chr; nblk-chr = %x21-2B / %x2D-3C / %x3E-7E
bool valid_tracestate_value(std::string_view value) noexcept {
  if (value.empty() || value.size() > max_tracestate_value || value.back() == ' ') return false;
  for (char c : value)
    if (c < 0x20 || c > 0x7e || c == ',' || c == '=') return false;
  return true;
}

std::string_view trim_optional_whitespace(std::string_view text) noexcept {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

}  // namespace

std::optional<span_context> parse_traceparent(std::string_view traceparent, std::string_view tracestate) {
  if (traceparent.size() < traceparent_v00_length) return std::nullopt;
  std::array<std::uint8_t, 1> version{};
  if (!read_hex(traceparent.substr(0, 2), version) || version[0] == 0xff) return std::nullopt;
  if (traceparent[2] != '-' || traceparent[35] != '-' || traceparent[52] != '-') return std::nullopt;
  if (version[0] == 0x00 && traceparent.size() != traceparent_v00_length) return std::nullopt;
  // A later version may append fields; they start with '-'.
  if (traceparent.size() > traceparent_v00_length && traceparent[traceparent_v00_length] != '-') return std::nullopt;

  span_context context;
  std::array<std::uint8_t, 1> flags{};
  if (!read_hex(traceparent.substr(3, 32), context.trace_id.bytes) ||
      !read_hex(traceparent.substr(36, 16), context.span_id.bytes) || !read_hex(traceparent.substr(53, 2), flags))
    return std::nullopt;
  if (!context.valid()) return std::nullopt;
  context.trace_flags = flags[0];
  context.is_remote = true;
  if (!tracestate.empty())
    if (auto kept = parse_tracestate(tracestate)) context.trace_state = std::move(*kept);
  return context;
}

std::string format_traceparent(const span_context& context) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out = "00-";
  out.reserve(traceparent_v00_length);
  out += context.trace_id.hex();
  out += '-';
  out += context.span_id.hex();
  out += '-';
  out.push_back(digits[context.trace_flags >> 4]);
  out.push_back(digits[context.trace_flags & 0x0f]);
  return out;
}

std::optional<std::string> parse_tracestate(std::string_view tracestate) {
  if (tracestate.size() > max_tracestate_bytes) return std::nullopt;
  std::string normalized;
  std::size_t members = 0;
  while (true) {
    const std::size_t comma = tracestate.find(',');
    const std::string_view member = trim_optional_whitespace(tracestate.substr(0, comma));
    if (!member.empty()) {
      const std::size_t equals = member.find('=');
      if (equals == std::string_view::npos) return std::nullopt;
      if (!valid_tracestate_key(member.substr(0, equals)) || !valid_tracestate_value(member.substr(equals + 1)))
        return std::nullopt;
      if (++members > max_tracestate_members) return std::nullopt;
      if (!normalized.empty()) normalized += ',';
      normalized += member;
    }
    if (comma == std::string_view::npos) break;
    tracestate.remove_prefix(comma + 1);
  }
  return normalized;
}

}  // namespace switchboard::telemetry
