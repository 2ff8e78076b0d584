// bench_server: a loopback OpenAI-compatible chat-completions server for the
// end-to-end load benchmark. It answers POST .../chat/completions with a
// message whose content is a JSON value valid for the schema the request
// asks for, after a configurable latency (an Asio timer: a waiting request
// costs no thread). HTTP/1.1 keep-alive, 127.0.0.1 only.
//
// It is also the OTLP/JSON collector of the benchmarks' --trace runs:
// POST .../v1/traces answers 200 {} at once (no latency) and counts the
// spans it received, printed at the end beside the answers.
//
// Which schema: response_format.json_schema (name + schema) when present,
// else the schema the client put in the prompt ("...valid against this JSON
// Schema:\n{...}\nReply with..."), so every rung of the structured-output
// ladder gets a valid answer. The value is generated from the schema (the
// first enum value, required members, minItems items, ...); a member named
// `confidence` gets --confidence, so a route on confidence takes a known
// branch. A coordination request (agent_name enum) chooses --choose when
// it is among the allowed names, else the first one. It runs on the
// network layer's server (net::http_server), as serve does.
//
//   bench_server [--port 0] [--latency-ms 0] [--threads 1] [--confidence 0.9]
//                [--choose NAME]
//
// Prints the port it listens on as the first line of stdout; stops on
// SIGINT/SIGTERM and prints what it served to stderr.
#include <switchboard/net/http_server.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

namespace asio = boost::asio;
namespace json = boost::json;
namespace net = switchboard::net;

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

struct server_options {
  unsigned short port = 0;
  std::chrono::milliseconds latency{0};
  int threads = 1;
  double confidence = 0.9;
  std::string choose;
};

struct counters {
  std::atomic<std::uint64_t> requests{0};
  std::atomic<std::uint64_t> rejected{0};
  std::atomic<std::uint64_t> trace_requests{0};
  std::atomic<std::uint64_t> spans{0};
};

// ---------------------------------------------------------------- values from schemas

const json::value* resolve_ref(const json::value& root, const json::value& node) {
  const json::value* current = &node;
  for (int hops = 0; hops < 16; ++hops) {
    const auto* object = current->if_object();
    const auto* ref = object ? object->if_contains("$ref") : nullptr;
    if (!ref || !ref->is_string()) return current;
    const std::string_view target = ref->get_string();
    if (!target.starts_with('#')) throw std::runtime_error("non-local $ref " + std::string(target));
    boost::system::error_code ec;
    current = root.find_pointer(target.substr(1), ec);
    if (!current) throw std::runtime_error("unresolvable $ref " + std::string(target));
  }
  throw std::runtime_error("$ref chain longer than 16");
}

std::string first_type(const json::object& schema) {
  const auto* type = schema.if_contains("type");
  if (!type) {
    if (schema.contains("properties")) return "object";
    if (schema.contains("items")) return "array";
    return "string";
  }
  if (type->is_string()) return std::string(type->get_string());
  if (type->is_array()) {
    for (const auto& t : type->get_array()) {
      if (t.is_string() && t.get_string() != "null") return std::string(t.get_string());
    }
    return "null";
  }
  throw std::runtime_error("\"type\" is neither a string nor an array");
}

double number_within(const json::object& schema, double preferred) {
  double value = preferred;
  if (const auto* min = schema.if_contains("minimum"); min && min->is_number()) {
    value = std::max(value, min->to_number<double>());
  }
  if (const auto* max = schema.if_contains("maximum"); max && max->is_number()) {
    value = std::min(value, max->to_number<double>());
  }
  return value;
}

json::value instance_of(const json::value& root, const json::value& node, int depth);

json::value object_instance(const json::value& root, const json::object& schema, int depth) {
  json::object out;
  const auto* properties = schema.if_contains("properties");
  const auto* required = schema.if_contains("required");
  if (!properties || !properties->is_object() || !required || !required->is_array()) return out;
  for (const auto& name : required->get_array()) {
    if (!name.is_string()) continue;
    const auto* property = properties->get_object().if_contains(name.get_string());
    out[name.get_string()] = property ? instance_of(root, *property, depth + 1) : json::value("bench");
  }
  return out;
}

json::value array_instance(const json::value& root, const json::object& schema, int depth) {
  json::array out;
  std::int64_t count = 1;
  if (const auto* min = schema.if_contains("minItems"); min && min->is_number()) {
    count = std::max<std::int64_t>(count, min->to_number<std::int64_t>());
  }
  if (const auto* max = schema.if_contains("maxItems"); max && max->is_number()) {
    count = std::min<std::int64_t>(count, max->to_number<std::int64_t>());
  }
  const auto* items = schema.if_contains("items");
  for (std::int64_t i = 0; i < count; ++i) {
    out.push_back(items && items->is_object() ? instance_of(root, *items, depth + 1) : json::value("bench"));
  }
  return out;
}

json::value string_instance(const json::object& schema) {
  const auto* format = schema.if_contains("format");
  if (format && format->is_string()) {
    if (format->get_string() == "date-time") return "2026-01-05T09:00:00Z";
    if (format->get_string() == "date") return "2026-01-05";
    if (format->get_string() == "time") return "09:00:00";
  }
  std::string text = "bench answer";
  if (const auto* min = schema.if_contains("minLength"); min && min->is_number()) {
    const auto wanted = min->to_number<std::size_t>();
    if (text.size() < wanted) text.append(wanted - text.size(), 'x');
  }
  return json::value(text);
}

// A value valid against `node` for the schemas agents use: types, enum,
// const, required members, minItems, minimum/maximum, local $refs.
json::value instance_of(const json::value& root, const json::value& node, int depth) {
  if (depth > 32) throw std::runtime_error("schema nested deeper than 32 levels");
  const json::value& resolved = *resolve_ref(root, node);
  const auto* schema = resolved.if_object();
  if (!schema) return json::value("bench");  // `true` or {}: anything goes
  if (const auto* c = schema->if_contains("const")) return *c;
  if (const auto* e = schema->if_contains("enum"); e && e->is_array() && !e->get_array().empty()) {
    return e->get_array().front();
  }
  for (const char* branch : {"anyOf", "oneOf", "allOf"}) {
    if (const auto* list = schema->if_contains(branch);
        list && list->is_array() && !list->get_array().empty() && !schema->contains("type")) {
      return instance_of(root, list->get_array().front(), depth + 1);
    }
  }
  const std::string type = first_type(*schema);
  if (type == "object") return object_instance(root, *schema, depth);
  if (type == "array") return array_instance(root, *schema, depth);
  if (type == "integer") return static_cast<std::int64_t>(number_within(*schema, 1));
  if (type == "number") return number_within(*schema, 1.0);
  if (type == "boolean") return true;
  if (type == "null") return nullptr;
  return string_instance(*schema);
}

// The answer for one schema: the generated value with the benchmark's
// confidence, explanation and reasoning, and the coordinator's choice.
std::string answer_for(const json::value& schema, std::string_view name, const server_options& options) {
  json::value value = instance_of(schema, schema, 0);
  if (auto* object = value.if_object()) {
    if (object->contains("confidence")) (*object)["confidence"] = options.confidence;
    if (object->contains("explanation")) {
      (*object)["explanation"] = "The bench server answered for " + std::string(name) + ".";
    }
    if (object->contains("reasoning")) (*object)["reasoning"] = "A generated answer valid for the schema.";
    if (object->contains("answer") && (*object)["answer"].is_string()) {
      (*object)["answer"] = "The bench server's final answer.";
    }
    if (object->contains("agent_name") && !options.choose.empty()) {
      const auto* properties = schema.as_object().if_contains("properties");
      const auto* agent = properties && properties->is_object() ? properties->get_object().if_contains("agent_name")
                                                                : nullptr;
      const auto* allowed = agent && agent->is_object() ? agent->get_object().if_contains("enum") : nullptr;
      if (allowed && allowed->is_array()) {
        for (const auto& candidate : allowed->get_array()) {
          if (candidate.is_string() && candidate.get_string() == options.choose) (*object)["agent_name"] = candidate;
        }
      }
    }
  }
  return json::serialize(value);
}

// ---------------------------------------------------------------- requests

struct reply {
  int status = 200;
  std::string body;
};

reply error_reply(int status, std::string_view message) {
  json::object body{{"error", json::object{{"message", "bench server: " + std::string(message)},
                                           {"type", "invalid_request_error"}}}};
  return {status, json::serialize(body)};
}

// The response body around `content`, with token counts derived from sizes.
std::string completion_body(const std::string& escaped_content, std::size_t request_bytes,
                            std::size_t content_bytes) {
  const std::size_t prompt_tokens = request_bytes / 4;
  const std::size_t completion_tokens = content_bytes / 4 + 1;
  std::string body;
  body.reserve(escaped_content.size() + 256);
  body += R"({"id":"chatcmpl-bench","object":"chat.completion","created":0,"model":"bench",)";
  body += R"("choices":[{"index":0,"message":{"role":"assistant","content":)";
  body += escaped_content;
  body += R"(},"finish_reason":"stop"}],"usage":{"prompt_tokens":)";
  body += std::to_string(prompt_tokens);
  body += R"(,"completion_tokens":)";
  body += std::to_string(completion_tokens);
  body += R"(,"total_tokens":)";
  body += std::to_string(prompt_tokens + completion_tokens);
  body += "}}";
  return body;
}

// A name and schema found in the request, for the answer cache.
struct wanted_schema {
  std::string key;
  std::string name;
  json::value schema;
};

std::optional<wanted_schema> schema_in_prompt(const json::object& request) {
  static constexpr std::string_view start_marker = "valid against this JSON Schema:\n";
  static constexpr std::string_view end_marker = "\nReply with";
  const auto* messages = request.if_contains("messages");
  if (!messages || !messages->is_array()) return std::nullopt;
  for (const auto& m : messages->get_array()) {
    const auto* content = m.is_object() ? m.get_object().if_contains("content") : nullptr;
    if (!content || !content->is_string()) continue;
    const std::string_view text = content->get_string();
    const auto start = text.find(start_marker);
    if (start == std::string_view::npos) continue;
    const auto from = start + start_marker.size();
    const auto end = text.find(end_marker, from);
    const std::string_view schema_text = text.substr(from, end == std::string_view::npos ? end : end - from);
    boost::system::error_code ec;
    auto schema = json::parse(schema_text, ec);
    if (ec) continue;
    return wanted_schema{std::string(schema_text), "prompt schema", std::move(schema)};
  }
  return std::nullopt;
}

std::optional<wanted_schema> schema_of(const json::object& request) {
  const auto* format = request.if_contains("response_format");
  const auto* format_object = format ? format->if_object() : nullptr;
  const auto* spec = format_object ? format_object->if_contains("json_schema") : nullptr;
  if (spec && spec->is_object()) {
    const auto* name = spec->get_object().if_contains("name");
    const auto* schema = spec->get_object().if_contains("schema");
    if (name && name->is_string() && schema && schema->is_object()) {
      return wanted_schema{std::string(name->get_string()), std::string(name->get_string()), *schema};
    }
  }
  return schema_in_prompt(request);
}

// The json_schema name without parsing the body. Boost.JSON and most
// clients write {"type":"json_schema","json_schema":{"name":"..."; inside a
// message the quotes would be escaped, so the marker cannot occur there.
std::optional<std::string_view> fast_schema_name(std::string_view body) {
  static constexpr std::string_view marker = R"("json_schema":{"name":")";
  const auto at = body.find(marker);
  if (at == std::string_view::npos) return std::nullopt;
  const auto from = at + marker.size();
  const auto end = body.find('"', from);
  if (end == std::string_view::npos) return std::nullopt;
  return body.substr(from, end - from);
}

class answerer {
 public:
  explicit answerer(const server_options& options) : options_(options) {}

  reply answer(const net::server_request& request) {
    if (request.method != "POST") return error_reply(405, "POST only");
    if (!std::string_view(request.target).ends_with("/chat/completions")) {
      return error_reply(404, "unknown path " + request.target);
    }
    const std::string& body = request.body;
    if (auto name = fast_schema_name(body)) {
      if (auto* cached = find(*name)) return {200, completion_body(cached->first, body.size(), cached->second)};
    }
    boost::system::error_code ec;
    auto parsed = json::parse(body, ec);
    if (ec || !parsed.is_object()) return error_reply(400, "the body is not a JSON object");
    auto wanted = schema_of(parsed.get_object());
    if (!wanted) {
      return error_reply(400, "no response_format json_schema and no JSON Schema in the prompt: nothing to answer");
    }
    if (auto* cached = find(wanted->key)) return {200, completion_body(cached->first, body.size(), cached->second)};
    std::string content;
    try {
      content = answer_for(wanted->schema, wanted->name, options_);
    } catch (const std::exception& e) {
      return error_reply(400, "cannot answer schema " + wanted->name + ": " + e.what());
    }
    auto& entry = cache_[wanted->key];
    entry = {json::serialize(json::value(content)), content.size()};
    return {200, completion_body(entry.first, body.size(), entry.second)};
  }

 private:
  // key -> (content as an escaped JSON string, content length)
  using entry = std::pair<std::string, std::size_t>;
  entry* find(std::string_view key) {
    auto it = cache_.find(std::string(key));
    return it == cache_.end() ? nullptr : &it->second;
  }

  const server_options& options_;
  std::unordered_map<std::string, entry> cache_;
};

// Per thread, so answering takes no lock.
answerer& thread_answerer(const server_options& options) {
  thread_local answerer instance(options);
  return instance;
}

// ---------------------------------------------------------------- requests on the server

bool is_traces_export(const net::server_request& request) {
  return request.method == "POST" && std::string_view(request.target).ends_with("/v1/traces");
}

// The spans of an OTLP/JSON export request: resourceSpans[].scopeSpans[].spans[].
std::optional<std::uint64_t> spans_in_export(std::string_view body) {
  boost::system::error_code ec;
  const json::value parsed = json::parse(body, ec);
  const auto* resources = !ec && parsed.is_object() ? parsed.get_object().if_contains("resourceSpans") : nullptr;
  if (!resources || !resources->is_array()) return std::nullopt;
  std::uint64_t count = 0;
  for (const auto& resource : resources->get_array()) {
    const auto* scopes = resource.is_object() ? resource.get_object().if_contains("scopeSpans") : nullptr;
    if (!scopes || !scopes->is_array()) return std::nullopt;
    for (const auto& scope : scopes->get_array()) {
      const auto* spans = scope.is_object() ? scope.get_object().if_contains("spans") : nullptr;
      if (!spans || !spans->is_array()) return std::nullopt;
      count += spans->get_array().size();
    }
  }
  return count;
}

// A --trace run's export: 200 {} with its spans counted, or 400 naming
// what was wrong (the exporter then counts the spans as failed).
net::server_response collect_traces(const net::server_request& request, counters& stats) {
  net::server_response answer;
  const auto spans = spans_in_export(request.body);
  if (!spans) {
    answer.status = 400;
    answer.body = R"({"error":"bench server: not an OTLP/JSON ExportTraceServiceRequest"})";
    stats.rejected.fetch_add(1, std::memory_order_relaxed);
    std::cerr << "bench_server: 400 on " << request.target << ": not an OTLP/JSON export request\n";
    return answer;
  }
  stats.trace_requests.fetch_add(1, std::memory_order_relaxed);
  stats.spans.fetch_add(*spans, std::memory_order_relaxed);
  answer.body = "{}";
  return answer;
}

// One request: the answer, counted (a rejection also printed), after the
// latency. The server writes it with Content-Type application/json and
// keeps the connection as the client asks.
asio::awaitable<net::server_response> serve(net::server_request& request, const server_options& options,
                                            counters& stats) {
  if (is_traces_export(request)) co_return collect_traces(request, stats);
  reply r = thread_answerer(options).answer(request);
  if (r.status == 200) {
    stats.requests.fetch_add(1, std::memory_order_relaxed);
  } else {
    stats.rejected.fetch_add(1, std::memory_order_relaxed);
    std::cerr << "bench_server: " << r.status << " " << r.body << "\n";
  }
  if (options.latency.count() > 0) {
    asio::steady_timer timer(co_await asio::this_coro::executor, options.latency);
    co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
  }
  net::server_response answer;
  answer.status = r.status;
  answer.body = std::move(r.body);
  co_return answer;
}

// As many connections as the load program opens (10,000 in case 4),
// request bodies up to 64 MiB, and small answers sent at once.
net::server_options network_options(const server_options& options) {
  net::server_options o;
  o.address = "127.0.0.1";
  o.port = options.port;
  o.max_connections = std::numeric_limits<std::size_t>::max();
  o.max_body_bytes = 64 * 1024 * 1024;
  return o;
}

// ---------------------------------------------------------------- command line

[[noreturn]] void usage(const std::string& problem) {
  std::cerr << "bench_server: " << problem << "\n"
            << "usage: bench_server [--port N] [--latency-ms N] [--threads N] [--confidence X] [--choose AGENT]\n";
  std::exit(2);
}

template <class T>
T number_arg(std::string_view flag, std::string_view text) {
  T value{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size()) {
    usage(std::string(flag) + ": '" + std::string(text) + "' is not a number");
  }
  return value;
}

server_options parse_args(int argc, char** argv) {
  server_options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (flag == "--help" || flag == "-h") usage("help");
    if (i + 1 >= argc) usage(std::string(flag) + " needs a value");
    const std::string_view value = argv[++i];
    if (flag == "--port") {
      o.port = number_arg<unsigned short>(flag, value);
    } else if (flag == "--latency-ms") {
      o.latency = std::chrono::milliseconds(number_arg<long>(flag, value));
    } else if (flag == "--threads") {
      o.threads = number_arg<int>(flag, value);
      if (o.threads < 1) usage("--threads must be at least 1");
    } else if (flag == "--confidence") {
      o.confidence = number_arg<double>(flag, value);
      if (o.confidence < 0 || o.confidence > 1) usage("--confidence must be within [0, 1]");
    } else if (flag == "--choose") {
      o.choose = value;
    } else {
      usage("unknown option " + std::string(flag));
    }
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  const server_options options = parse_args(argc, argv);
  // The server's own messages (an accept that failed) to stderr: stdout carries the port only.
  spdlog::set_default_logger(spdlog::stderr_logger_mt("bench_server"));
  spdlog::set_pattern("bench_server: %v");
  asio::io_context io(options.threads);
  counters stats;
  std::optional<net::http_server> server;
  try {
    server.emplace(io.get_executor(), network_options(options),
                   [&](net::server_request& request) { return serve(request, options, stats); });
  } catch (const std::exception& e) {
    std::cerr << "bench_server: " << e.what() << "\n";
    return 1;
  }
  std::cout << server->port() << std::endl;

  asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code&, int) { io.stop(); });
  server->start();

  std::vector<std::thread> threads;
  for (int i = 1; i < options.threads; ++i) threads.emplace_back([&] { io.run(); });
  io.run();
  for (auto& t : threads) t.join();
  std::cerr << "bench_server: " << stats.requests.load() << " answers, " << stats.rejected.load()
            << " rejected requests, " << server->accepted_connections() << " connections, "
            << stats.spans.load() << " spans in " << stats.trace_requests.load() << " trace exports\n";
  return stats.rejected.load() == 0 ? 0 : 1;
}
