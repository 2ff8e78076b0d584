// file_cache_store: one file per key, written whole or not at all, read as
// untrusted. An entry:
//
//   switchboard.cache_entry/1 <key> <created unix seconds> <body bytes> <body sha256>\n
//   <body: the chat_result as a JSON object>
//
// The header's key must be the file's and the one asked for, the length and
// digest must match the body, and the body must parse (within the protocol's
// depth limit) into the expected members, or the entry is a miss.
#include <switchboard/models/file_cache_store.hpp>

#include <switchboard/protocol/limits.hpp>

#include <boost/json/array.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <openssl/evp.h>
#include <spdlog/spdlog.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <sstream>
#include <stdexcept>

namespace switchboard::models {

namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

constexpr std::string_view format_tag = "switchboard.cache_entry/1";
constexpr std::size_t max_header_bytes = 256;

std::string sha256_hex(std::string_view data) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int size = 0;
  if (EVP_Digest(data.data(), data.size(), digest.data(), &size, EVP_sha256(), nullptr) != 1) return {};
  static constexpr char digits[] = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < size; ++i) {
    hex.push_back(digits[digest[i] >> 4]);
    hex.push_back(digits[digest[i] & 0x0f]);
  }
  return hex;
}

// request_hash() values only: 64 lower-case hex digits, so a key can never
// name a path outside the directory.
bool valid_key(std::string_view key) {
  return key.size() == 64 &&
         key.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

std::optional<stop_reason> stop_from(std::string_view text) {
  for (auto r : {stop_reason::unknown, stop_reason::complete, stop_reason::truncated, stop_reason::refusal,
                 stop_reason::content_filter, stop_reason::tool_calls}) {
    if (to_string(r) == text) return r;
  }
  return std::nullopt;
}

std::string body_of(const chat_result& r) {
  json::object o{{"text", r.text},
                 {"finish_reason", r.finish_reason},
                 {"stop", to_string(r.stop)},
                 {"refusal", r.refusal},
                 {"reasoning", r.reasoning},
                 {"prompt_tokens", r.usage.prompt_tokens},
                 {"completion_tokens", r.usage.completion_tokens},
                 {"model", r.model},
                 {"latency_us", r.latency.count()},
                 {"raw_body", r.raw_body}};
  // Only when present: entries without tool calls keep their old form.
  if (!r.tool_calls.empty()) {
    json::array calls;
    for (const auto& call : r.tool_calls)
      calls.push_back(json::object{{"id", call.id}, {"name", call.name}, {"arguments", call.arguments}});
    o["tool_calls"] = std::move(calls);
  }
  return json::serialize(o);
}

// The tool calls of an entry (none when absent), held to the checks a
// provider's answer passes; false when they are not well formed.
bool tool_calls_of(const json::object& o, std::vector<tool_call>& out) {
  const auto* m = o.if_contains("tool_calls");
  if (!m) return true;
  if (!m->is_array() || m->get_array().size() > protocol::max_tool_calls_per_turn) return false;
  for (const auto& element : m->get_array()) {
    const auto* call = element.if_object();
    if (!call) return false;
    const auto* id = call->if_contains("id");
    const auto* name = call->if_contains("name");
    const auto* arguments = call->if_contains("arguments");
    if (!id || !id->is_string() || id->get_string().empty() || !name || !name->is_string() ||
        !is_valid_tool_name(name->get_string()) || !arguments || !arguments->is_string() ||
        arguments->get_string().size() > protocol::max_tool_arguments_bytes)
      return false;
    out.push_back({std::string(id->get_string()), std::string(name->get_string()),
                   std::string(arguments->get_string())});
  }
  return true;
}

// The chat_result a body holds, or why not.
std::optional<chat_result> result_of(std::string_view body, std::string& why) {
  boost::system::error_code ec;
  const json::value v = json::parse(body, ec, {}, protocol::untrusted_parse_options());
  const json::object* o = ec ? nullptr : v.if_object();
  if (!o) {
    why = "the body is not a JSON object";
    return std::nullopt;
  }
  const auto text = [&](std::string_view name, std::string& out) {
    const auto* m = o->if_contains(name);
    if (!m || !m->is_string()) return false;
    out = m->get_string();
    return true;
  };
  const auto integer = [&](std::string_view name, std::int64_t& out) {
    const auto* m = o->if_contains(name);
    if (!m || !m->is_int64() || m->get_int64() < 0) return false;
    out = m->get_int64();
    return true;
  };
  chat_result r;
  std::string stop;
  std::int64_t latency = 0;
  if (!text("text", r.text) || !text("finish_reason", r.finish_reason) || !text("stop", stop) ||
      !text("refusal", r.refusal) || !text("reasoning", r.reasoning) || !text("model", r.model) ||
      !text("raw_body", r.raw_body) || !integer("prompt_tokens", r.usage.prompt_tokens) ||
      !integer("completion_tokens", r.usage.completion_tokens) || !integer("latency_us", latency) ||
      !tool_calls_of(*o, r.tool_calls)) {
    why = "a member is missing or has the wrong type";
    return std::nullopt;
  }
  const auto reason = stop_from(stop);
  if (!reason) {
    why = "unknown stop reason";
    return std::nullopt;
  }
  r.stop = *reason;
  r.latency = std::chrono::microseconds(latency);
  return r;
}

struct header {
  std::string key;
  std::int64_t created = 0;
  std::size_t bytes = 0;
  std::string digest;
};

std::optional<header> parse_header(std::string_view line) {
  std::istringstream in{std::string(line)};
  std::string tag;
  header h;
  if (!(in >> tag >> h.key >> h.created >> h.bytes >> h.digest) || tag != format_tag) return std::nullopt;
  std::string extra;
  if (in >> extra) return std::nullopt;
  return h;
}

bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

std::int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

file_cache_store::file_cache_store(file_cache_options options) : options_(std::move(options)) {
  const fs::path& dir = options_.directory;
  if (dir.empty()) throw std::runtime_error("model cache: no directory given");
  std::error_code ec;
  if (!fs::exists(dir, ec)) {
    if (dir.has_parent_path() && !dir.parent_path().empty()) fs::create_directories(dir.parent_path(), ec);
    // Answers may quote the user's data: only the user may read them.
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
      throw std::runtime_error("model cache: cannot create directory '" + dir.string() +
                               "': " + std::strerror(errno));
    }
  }
  if (!fs::is_directory(dir, ec)) {
    throw std::runtime_error("model cache: '" + dir.string() + "' is not a directory");
  }
}

fs::path file_cache_store::path_of(const std::string& key) const {
  return options_.directory / (key + ".entry");
}

std::optional<chat_result> file_cache_store::load(const std::string& key) {
  if (!valid_key(key)) return std::nullopt;
  const fs::path file = path_of(key);
  const auto miss = [&](const std::string& why) -> std::optional<chat_result> {
    spdlog::warn("model cache: ignoring entry {}: {}", file.string(), why);
    return std::nullopt;
  };
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    if (errno == ENOENT) return std::nullopt;
    return miss(std::string("cannot open it: ") + std::strerror(errno));
  }
  struct stat info {};
  std::string data;
  bool read_ok = ::fstat(fd, &info) == 0 && S_ISREG(info.st_mode) &&
                 static_cast<std::uint64_t>(info.st_size) <= options_.max_entry_bytes + max_header_bytes;
  if (read_ok) {
    data.resize(static_cast<std::size_t>(info.st_size));
    std::size_t got = 0;
    while (got < data.size()) {
      const ssize_t n = ::read(fd, data.data() + got, data.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<std::size_t>(n);
    }
    data.resize(got);
  }
  ::close(fd);
  if (!read_ok) return miss("not a regular file, or larger than " + std::to_string(options_.max_entry_bytes) + " bytes");

  const auto newline = data.find('\n');
  if (newline == std::string::npos || newline > max_header_bytes) return miss("no header (truncated?)");
  const auto h = parse_header(std::string_view(data).substr(0, newline));
  if (!h) return miss("malformed header");
  if (h->key != key) return miss("it holds another request's answer");
  const std::string_view body = std::string_view(data).substr(newline + 1);
  if (body.size() != h->bytes) {
    return miss("truncated or padded: " + std::to_string(body.size()) + " bytes where the header says " +
                std::to_string(h->bytes));
  }
  if (sha256_hex(body) != h->digest) return miss("its content does not match its checksum");
  if (options_.ttl.count() > 0 && unix_now() - h->created > options_.ttl.count()) return std::nullopt;
  std::string why;
  auto result = result_of(body, why);
  if (!result) return miss(why);
  return result;
}

void file_cache_store::save(const std::string& key, const chat_result& result) {
  if (!valid_key(key)) return;
  const std::string body = body_of(result);
  if (body.size() > options_.max_entry_bytes) {
    spdlog::warn("model cache: not keeping an answer of {} bytes (the limit is {})", body.size(),
                 options_.max_entry_bytes);
    return;
  }
  const std::string head = std::string(format_tag) + " " + key + " " + std::to_string(unix_now()) + " " +
                           std::to_string(body.size()) + " " + sha256_hex(body) + "\n";
  static std::atomic<unsigned> sequence{0};
  const fs::path final_path = path_of(key);
  const fs::path temp = options_.directory / (key + ".tmp." + std::to_string(::getpid()) + "." +
                                              std::to_string(sequence.fetch_add(1)));
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    spdlog::warn("model cache: cannot write {}: {}", temp.string(), std::strerror(errno));
    return;
  }
  const bool written = write_all(fd, head) && write_all(fd, body);
  const bool closed = ::close(fd) == 0;
  // Renamed only when whole: a reader sees the old entry or this one.
  if (!written || !closed || ::rename(temp.c_str(), final_path.c_str()) != 0) {
    spdlog::warn("model cache: cannot write {}: {}", final_path.string(), std::strerror(errno));
    ::unlink(temp.c_str());
  }
}

}  // namespace switchboard::models
