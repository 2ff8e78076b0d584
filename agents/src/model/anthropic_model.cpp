#include <switchboard/agents/model/anthropic_model.hpp>

#include "../http/http_client.hpp"
#include "wire_common.hpp"

#include <switchboard/agents/model/model_error.hpp>

#include <boost/json/monotonic_resource.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

#include <array>

namespace switchboard::agents {

namespace json = boost::json;

namespace {

constexpr std::string_view wrapped_key = "value";

http_options with_default_base(http_options http) {
  if (http.base_url.empty()) http.base_url = "https://api.anthropic.com";
  return http;
}

bool is_object_schema(const json::value& schema) {
  if (!schema.is_object()) return false;
  const auto* type = schema.as_object().if_contains("type");
  if (!type) return schema.as_object().contains("properties");
  return type->is_string() && type->as_string() == "object";
}

// The tool's input_schema must describe an object: any other schema (an
// array, a string, ...) is wrapped as {"value": schema} and unwrapped again.
json::value tool_input_schema(const response_format& format, bool& wrapped) {
  wrapped = false;
  if (format.type != response_format::kind::json_schema) return json::object{{"type", "object"}};
  if (is_object_schema(format.schema.json())) return format.schema.json();
  wrapped = true;
  return json::object{{"type", "object"},
                      {"properties", json::object{{wrapped_key, format.schema.json()}}},
                      {"required", json::array{wrapped_key}}};
}

}  // namespace

class anthropic_model::impl {
 public:
  explicit impl(anthropic_options options)
      : options_(std::move(options)), client_(with_default_base(options_.http), "anthropic") {}

  std::string render(const chat_request& request, bool* wrapped_out = nullptr) const {
    json::object body;
    body["model"] = detail::model_or_default(request.model, options_.model, "anthropic");
    body["max_tokens"] = request.max_tokens.value_or(options_.default_max_tokens);
    std::string system;
    json::array messages;
    messages.reserve(request.messages.size());
    for (const auto& m : request.messages) {
      if (m.role == chat_role::system) {
        if (!system.empty()) system += "\n\n";
        system += m.content;
      } else {
        messages.push_back(json::object{{"role", to_string(m.role)}, {"content", m.content}});
      }
    }
    if (!system.empty()) body["system"] = system;
    body["messages"] = std::move(messages);
    if (request.temperature) body["temperature"] = *request.temperature;
    if (!request.stop.empty()) {
      json::array stop;
      for (const auto& s : request.stop) stop.emplace_back(s);
      body["stop_sequences"] = std::move(stop);
    }
    if (request.format.type != response_format::kind::none) {
      bool wrapped = false;
      const std::string name = detail::schema_name_or_default(request.format.name);
      body["tools"] = json::array{json::object{
          {"name", name},
          {"description", "Record the answer. The input must be a JSON value matching the schema" +
                              (request.format.name.empty() ? std::string() : " '" + request.format.name + "'") + "."},
          {"input_schema", tool_input_schema(request.format, wrapped)}}};
      body["tool_choice"] = json::object{{"type", "tool"}, {"name", name}};
      if (wrapped_out) *wrapped_out = wrapped;
    }
    return json::serialize(body);
  }

  // Not a coroutine: the request is rendered at once, so the frame that
  // awaits the answer holds the body but not the request's messages.
  boost::asio::awaitable<chat_result> complete(const chat_request& request) {
    const auto started = std::chrono::steady_clock::now();
    bool wrapped = false;
    std::string body;
    try {
      body = render(request, &wrapped);
    } catch (...) {
      return detail::failed_completion(std::current_exception());
    }
    const bool forced_tool = request.format.type != response_format::kind::none;
    return send(std::move(body), started, forced_tool, wrapped, request.budget);
  }

 private:
  boost::asio::awaitable<chat_result> send(std::string body, std::chrono::steady_clock::time_point started,
                                           bool forced_tool, bool wrapped, call_budget* budget) {
    const std::array<detail::http_header, 2> headers{{{"x-api-key", options_.api_key, true},
                                                      {"anthropic-version", options_.version, false}}};
    const std::span<const detail::http_header> sent =
        options_.api_key.empty() ? std::span<const detail::http_header>(headers).subspan(1)
                                 : std::span<const detail::http_header>(headers);
    auto response = co_await client_.post_json("/v1/messages", body, sent, budget);
    co_return finish(std::move(response.body), started, forced_tool, wrapped, sent);
  }

  static chat_result finish(std::string body, std::chrono::steady_clock::time_point started, bool forced_tool,
                            bool wrapped, std::span<const detail::http_header> secrets) {
    chat_result result = parse(body, forced_tool, wrapped, secrets);
    result.latency = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - started);
    result.raw_body = std::move(body);
    return result;
  }

  static chat_result parse(const std::string& body, bool forced_tool, bool wrapped,
                           std::span<const detail::http_header> secrets) {
    unsigned char buffer[4096];  // most responses parse without touching the heap
    json::monotonic_resource arena(buffer, sizeof buffer);
    const json::object root = detail::parse_response_object(body, "anthropic", &arena, secrets);
    const auto* content = root.if_contains("content");
    if (!content || !content->is_array()) throw detail::invalid_response("anthropic", "no content array", body, secrets);
    chat_result result;
    bool found_tool = false;
    for (const auto& block : content->as_array()) {
      if (!block.is_object()) continue;
      const auto& b = block.as_object();
      const auto type = detail::string_field(b, "type");
      if (type == "tool_use" && forced_tool && !found_tool) {
        const auto* input = b.if_contains("input");
        if (!input) throw detail::invalid_response("anthropic", "tool_use block without input", body, secrets);
        const json::value* value = input;
        if (wrapped && input->is_object()) {
          if (const auto* inner = input->as_object().if_contains(wrapped_key)) value = inner;
        }
        result.text = json::serialize(*value);
        found_tool = true;
      } else if (type == "text" && !found_tool) {
        result.text += detail::string_field(b, "text");
      } else if (type == "thinking") {
        result.reasoning += detail::string_field(b, "thinking");
      }
    }
    result.finish_reason = detail::string_field(root, "stop_reason");
    result.stop = classify_finish_reason(result.finish_reason);
    // The forced tool is how structured output arrives: its tool_use stop
    // is the end of a complete answer, not a request to call a tool.
    if (found_tool && result.stop == stop_reason::tool_calls) result.stop = stop_reason::complete;
    if (result.stop == stop_reason::refusal) result.refusal = result.text;
    result.model = detail::string_field(root, "model");
    if (const auto* usage = root.if_contains("usage"); usage && usage->is_object()) {
      result.usage.prompt_tokens = detail::int_field(usage->as_object(), "input_tokens");
      result.usage.completion_tokens = detail::int_field(usage->as_object(), "output_tokens");
    }
    return result;
  }

  anthropic_options options_;
  detail::http_client client_;
};

anthropic_model::anthropic_model(anthropic_options options)
    : impl_(std::make_unique<impl>(std::move(options))) {}
anthropic_model::~anthropic_model() = default;

boost::asio::awaitable<chat_result> anthropic_model::complete(chat_request request) {
  return impl_->complete(request);
}

std::string anthropic_model::render_request(const chat_request& request) const { return impl_->render(request); }

}  // namespace switchboard::agents
