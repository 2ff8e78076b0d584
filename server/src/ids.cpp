#include "ids.hpp"

#include <openssl/sha.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <random>

namespace switchboard::server {

namespace {

constexpr std::string_view graph_namespace = "6ba7b821-9dad-11d1-80b4-00c04fd430c8";

using uuid_bytes = std::array<std::uint8_t, 16>;

std::string format(const uuid_bytes& b) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(36);
  for (std::size_t i = 0; i < b.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out.push_back('-');
    out.push_back(hex[b[i] >> 4]);
    out.push_back(hex[b[i] & 0x0f]);
  }
  return out;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

uuid_bytes parse(std::string_view text) {
  uuid_bytes b{};
  std::size_t n = 0;
  for (std::size_t i = 0; i + 1 < text.size() && n < b.size();) {
    if (text[i] == '-') {
      ++i;
      continue;
    }
    b[n++] = static_cast<std::uint8_t>(hex_value(text[i]) << 4 | hex_value(text[i + 1]));
    i += 2;
  }
  return b;
}

void mark(uuid_bytes& b, int version) {
  b[6] = static_cast<std::uint8_t>((b[6] & 0x0f) | (version << 4));
  b[8] = static_cast<std::uint8_t>((b[8] & 0x3f) | 0x80);  // RFC 9562 variant
}

uuid_bytes random_bytes() {
  thread_local std::mt19937_64 engine{std::random_device{}()};
  uuid_bytes b;
  for (std::size_t i = 0; i < b.size(); i += 8) {
    const auto r = engine();
    for (std::size_t j = 0; j < 8; ++j) b[i + j] = static_cast<std::uint8_t>(r >> (8 * j));
  }
  return b;
}

}  // namespace

std::string random_uuid() {
  auto b = random_bytes();
  mark(b, 4);
  return format(b);
}

std::string time_ordered_uuid() {
  // RFC 9562, 6.2, method 1: the 12 bits after the version are a counter,
  // so ids made within one millisecond (or after the clock stepped back)
  // still sort as they were made; a counter that runs out borrows the next
  // millisecond. It starts at a random value below 2048 each millisecond.
  static std::mutex mutex;
  static std::uint64_t last_ms = 0;
  static std::uint16_t counter = 0;
  auto b = random_bytes();
  const auto start = static_cast<std::uint16_t>((b[6] << 8 | b[7]) & 0x07ff);
  auto ms = static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                           std::chrono::system_clock::now().time_since_epoch())
                                           .count());
  std::uint16_t sequence = 0;
  {
    std::scoped_lock lock(mutex);
    if (ms > last_ms) {
      last_ms = ms;
      counter = start;
    } else if (++counter > 0x0fff) {
      ++last_ms;
      counter = start;
    }
    ms = last_ms;
    sequence = counter;
  }
  for (int i = 0; i < 6; ++i) b[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(ms >> (8 * (5 - i)));
  b[6] = static_cast<std::uint8_t>(sequence >> 8);
  b[7] = static_cast<std::uint8_t>(sequence & 0xff);
  mark(b, 7);
  return format(b);
}

std::string name_uuid(std::string_view namespace_uuid, std::string_view name) {
  const auto ns = parse(namespace_uuid);
  std::string input(reinterpret_cast<const char*>(ns.data()), ns.size());
  input.append(name);
  std::array<unsigned char, SHA_DIGEST_LENGTH> digest{};
  SHA1(reinterpret_cast<const unsigned char*>(input.data()), input.size(), digest.data());
  uuid_bytes b;
  std::copy_n(digest.begin(), b.size(), b.begin());
  mark(b, 5);
  return format(b);
}

std::string system_assistant_id(std::string_view graph_id) { return name_uuid(graph_namespace, graph_id); }

bool is_uuid(std::string_view text) {
  if (text.size() != 36) return false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? text[i] != '-' : hex_value(text[i]) < 0) return false;
  }
  return true;
}

}  // namespace switchboard::server
