#include <switchboard/models/replay_model.hpp>

#include <switchboard/models/model_error.hpp>
#include <switchboard/models/request_hash.hpp>
#include <switchboard/protocol/limits.hpp>

#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <utility>

#include <fcntl.h>
#include <unistd.h>

namespace switchboard::models {

namespace asio = boost::asio;
namespace json = boost::json;

namespace {

json::value response_to_json(const chat_result& result) {
  json::object out{
      {"text", result.text},
      {"finish_reason", result.finish_reason},
      {"model", result.model},
      {"usage", json::object{{"prompt_tokens", result.usage.prompt_tokens},
                             {"completion_tokens", result.usage.completion_tokens}}},
      {"latency_us", result.latency.count()},
      {"raw_body", result.raw_body},
  };
  // Written only when there is something to say, so answers without tool
  // calls are recorded exactly as before.
  if (result.stop != stop_reason::unknown) out["stop"] = to_string(result.stop);
  if (!result.tool_calls.empty()) {
    json::array calls;
    for (const auto& call : result.tool_calls)
      calls.push_back(json::object{{"id", call.id}, {"name", call.name}, {"arguments", call.arguments}});
    out["tool_calls"] = std::move(calls);
  }
  return out;
}

std::optional<stop_reason> stop_named(std::string_view text) {
  for (auto r : {stop_reason::unknown, stop_reason::complete, stop_reason::truncated, stop_reason::refusal,
                 stop_reason::content_filter, stop_reason::tool_calls}) {
    if (to_string(r) == text) return r;
  }
  return std::nullopt;
}

// Reads recordings strictly: a damaged file must fail loudly, not replay a
// partial set of answers.
class line_reader {
 public:
  line_reader(const std::filesystem::path& file, std::size_t line) : file_(file), line_(line) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw model_error(model_errc::invalid_response,
                      "replay file " + file_.string() + " line " + std::to_string(line_) + ": " + what);
  }

  const json::object& object_at(const json::object& parent, std::string_view key) const {
    const auto* found = parent.if_contains(key);
    if (!found || !found->is_object()) fail("'" + std::string(key) + "' must be an object");
    return found->get_object();
  }

  std::string string_at(const json::object& parent, std::string_view key) const {
    const auto* found = parent.if_contains(key);
    if (!found || !found->is_string()) fail("'" + std::string(key) + "' must be a string");
    return std::string(found->get_string());
  }

  std::int64_t integer_at(const json::object& parent, std::string_view key) const {
    const auto* found = parent.if_contains(key);
    if (!found) return 0;  // optional counters
    if (auto as_int = found->if_int64()) return *as_int;
    if (auto as_uint = found->if_uint64(); as_uint && *as_uint <= INT64_MAX)
      return static_cast<std::int64_t>(*as_uint);
    fail("'" + std::string(key) + "' must be an integer");
  }

  chat_result response(const json::object& line) const {
    const auto& response = object_at(line, "response");
    chat_result result;
    result.text = string_at(response, "text");
    if (response.contains("finish_reason")) result.finish_reason = string_at(response, "finish_reason");
    if (response.contains("model")) result.model = string_at(response, "model");
    if (response.contains("raw_body")) result.raw_body = string_at(response, "raw_body");
    if (response.contains("usage")) {
      const auto& usage = object_at(response, "usage");
      result.usage.prompt_tokens = integer_at(usage, "prompt_tokens");
      result.usage.completion_tokens = integer_at(usage, "completion_tokens");
    }
    result.latency = std::chrono::microseconds(integer_at(response, "latency_us"));
    if (response.contains("stop")) {
      const auto stop = stop_named(string_at(response, "stop"));
      if (!stop) fail("'stop' is not a stop reason");
      result.stop = *stop;
    }
    if (response.contains("tool_calls")) result.tool_calls = tool_calls(response);
    return result;
  }

  // A recording is a file from outside: its calls pass the same checks as
  // a provider's (protocol/limits.hpp).
  std::vector<tool_call> tool_calls(const json::object& response) const {
    const auto& found = response.at("tool_calls");
    if (!found.is_array()) fail("'tool_calls' must be an array");
    if (found.get_array().size() > protocol::max_tool_calls_per_turn)
      fail("more than " + std::to_string(protocol::max_tool_calls_per_turn) + " tool calls");
    std::vector<tool_call> calls;
    for (const auto& element : found.get_array()) {
      if (!element.is_object()) fail("a tool call must be an object");
      tool_call call{string_at(element.get_object(), "id"), string_at(element.get_object(), "name"),
                     string_at(element.get_object(), "arguments")};
      if (call.id.empty()) fail("a tool call has an empty id");
      if (!is_valid_tool_name(call.name)) fail("a tool call's name is not a valid tool name");
      if (call.arguments.size() > protocol::max_tool_arguments_bytes) fail("a tool call's arguments are too long");
      calls.push_back(std::move(call));
    }
    return calls;
  }

 private:
  const std::filesystem::path& file_;
  std::size_t line_;
};

bool is_blank(std::string_view text) {
  return text.find_first_not_of(" \t\r") == std::string_view::npos;
}

}  // namespace

// --- record_model ---------------------------------------------------------

record_model::record_model(chat_model& inner, std::filesystem::path file)
    : inner_(inner), file_(std::move(file)) {
  fd_ = ::open(file_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0)
    throw model_error(model_errc::not_configured,
                      "record file " + file_.string() + ": cannot open for appending: " +
                          std::strerror(errno));
}

record_model::~record_model() {
  if (fd_ >= 0) ::close(fd_);
}

asio::awaitable<chat_result> record_model::complete(chat_request request) {
  json::object line;
  line["hash"] = request_hash(request);
  line["request"] = canonical_request(request);
  chat_result result = co_await inner_.complete(std::move(request));
  line["response"] = response_to_json(result);
  append(json::serialize(line) + "\n");
  co_return result;
}

void record_model::append(const std::string& line) {
  std::lock_guard lock(mutex_);
  // One write() per line: with O_APPEND the kernel positions each write at
  // the end, so lines from several writers never interleave.
  std::size_t written = 0;
  while (written < line.size()) {
    const auto n = ::write(fd_, line.data() + written, line.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      throw model_error(model_errc::invalid_response,
                        "record file " + file_.string() + ": write failed: " + std::strerror(errno));
    written += static_cast<std::size_t>(n);
  }
}

// --- replay_model ---------------------------------------------------------

replay_model::replay_model(std::filesystem::path file, replay_options options)
    : file_(std::move(file)), options_(std::move(options)) {
  std::ifstream in(file_, std::ios::binary);
  if (!in)
    throw model_error(model_errc::not_configured,
                      "replay file " + file_.string() + ": cannot open: " + std::strerror(errno));
  std::string text;
  for (std::size_t number = 1; std::getline(in, text); ++number) {
    if (is_blank(text)) continue;
    const line_reader reader(file_, number);
    boost::system::error_code ec;
    json::value parsed = json::parse(text, ec);
    if (ec) reader.fail("not JSON (" + ec.message() + ")");
    if (!parsed.is_object()) reader.fail("a recording must be a JSON object");
    const auto& line = parsed.get_object();
    std::string hash = reader.string_at(line, "hash");
    if (hash.size() != 64) reader.fail("'hash' must be a 64-character SHA-256");
    recordings_.insert_or_assign(std::move(hash), reader.response(line));
  }
  spdlog::debug("replay: {} recording(s) loaded from {}", recordings_.size(), file_.string());
}

asio::awaitable<chat_result> replay_model::complete(chat_request request) {
  const std::string hash = request_hash(request);
  const auto found = recordings_.find(hash);
  if (found == recordings_.end())
    throw model_error(model_errc::unknown_request,
                      "replay file " + file_.string() + " has no recording for request " + hash +
                          " (" + request_summary(request) + ")");
  deliver_whole(request.stream, found->second);  // a streamed request: the recording as one piece
  co_return found->second;
}

}  // namespace switchboard::models
