#include <switchboard/telemetry/span_data.hpp>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>

namespace switchboard::telemetry {
namespace {

template <std::size_t N>
bool any_nonzero(const std::array<std::uint8_t, N>& bytes) noexcept {
  return std::any_of(bytes.begin(), bytes.end(), [](std::uint8_t byte) { return byte != 0; });
}

template <std::size_t N>
std::string to_hex(const std::array<std::uint8_t, N>& bytes) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(N * 2);
  for (std::uint8_t byte : bytes) {
    out.push_back(digits[byte >> 4]);
    out.push_back(digits[byte & 0x0f]);
  }
  return out;
}

// One generator per thread, seeded from the system's entropy: ids must not
// collide across processes, and a lock here would serialise every span.
std::mt19937_64& generator() {
  thread_local std::mt19937_64 engine{[] {
    std::random_device entropy;
    std::seed_seq seed{entropy(), entropy(), entropy(), entropy()};
    return std::mt19937_64(seed);
  }()};
  return engine;
}

template <std::size_t N>
void fill_random_nonzero(std::array<std::uint8_t, N>& bytes) {
  do {
    for (std::size_t i = 0; i < N; i += 8) {
      std::uint64_t word = generator()();
      for (std::size_t j = i; j < std::min(N, i + 8); ++j, word >>= 8) bytes[j] = static_cast<std::uint8_t>(word);
    }
  } while (!any_nonzero(bytes));
}

}  // namespace

void attribute_key::copy(std::string_view name) {
  char* text = new char[name.size() + 1];
  if (!name.empty()) std::memcpy(text, name.data(), name.size());
  text[name.size()] = '\0';
  data_ = text;
  size_ = name.size();
  plain_ = false;  // not checked: escaped when written
  owned_ = true;
}

bool trace_id::valid() const noexcept { return any_nonzero(bytes); }
std::string trace_id::hex() const { return to_hex(bytes); }
bool span_id::valid() const noexcept { return any_nonzero(bytes); }
std::string span_id::hex() const { return to_hex(bytes); }

trace_id random_trace_id() {
  trace_id id;
  fill_random_nonzero(id.bytes);
  return id;
}

span_id random_span_id() {
  span_id id;
  fill_random_nonzero(id.bytes);
  return id;
}

std::uint64_t now_unix_nano() noexcept {
  const auto since_epoch = std::chrono::system_clock::now().time_since_epoch();
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(since_epoch).count());
}

}  // namespace switchboard::telemetry
