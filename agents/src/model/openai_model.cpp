#include <switchboard/agents/model/openai_model.hpp>

#include "../http/http_client.hpp"
#include "wire_common.hpp"

#include <switchboard/agents/model/model_error.hpp>

#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

#include <array>

namespace switchboard::agents {

namespace json = boost::json;

namespace {

http_options with_default_base(http_options http) {
  if (http.base_url.empty()) http.base_url = "https://api.openai.com/v1";
  return http;
}

json::value render_response_format(const response_format& format) {
  switch (format.type) {
    case response_format::kind::json_object:
      return json::object{{"type", "json_object"}};
    case response_format::kind::json_schema:
      return json::object{{"type", "json_schema"},
                          {"json_schema", json::object{{"name", detail::schema_name_or_default(format.name)},
                                                       {"strict", format.strict},
                                                       {"schema", format.schema}}}};
    case response_format::kind::none: break;
  }
  return nullptr;
}

}  // namespace

class openai_model::impl {
 public:
  explicit impl(openai_options options)
      : options_(std::move(options)),
        client_(with_default_base(options_.http), "openai"),
        authorization_(options_.api_key.empty() ? std::string() : "Bearer " + options_.api_key) {}

  std::string render(const chat_request& request) const {
    json::object body;
    body["model"] = detail::model_or_default(request.model, options_.model, "openai");
    json::array messages;
    messages.reserve(request.messages.size());
    for (const auto& m : request.messages) {
      messages.push_back(json::object{{"role", to_string(m.role)}, {"content", m.content}});
    }
    body["messages"] = std::move(messages);
    if (request.temperature) body["temperature"] = *request.temperature;
    if (request.max_tokens) body["max_tokens"] = *request.max_tokens;
    if (request.seed) body["seed"] = *request.seed;
    if (!request.stop.empty()) {
      json::array stop;
      for (const auto& s : request.stop) stop.emplace_back(s);
      body["stop"] = std::move(stop);
    }
    if (auto format = render_response_format(request.format); !format.is_null()) {
      body["response_format"] = std::move(format);
    }
    return json::serialize(body);
  }

  boost::asio::awaitable<chat_result> complete(chat_request request) {
    const auto started = std::chrono::steady_clock::now();
    const std::string body = render(request);
    std::array<detail::http_header, 1> headers{{{"Authorization", authorization_, true}}};
    const std::span<const detail::http_header> sent(headers.data(), authorization_.empty() ? 0 : 1);
    auto response = co_await client_.post_json("/chat/completions", body, sent);
    chat_result result = parse(response.body);
    result.latency = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - started);
    result.raw_body = std::move(response.body);
    co_return result;
  }

  const openai_options& options() const noexcept { return options_; }

 private:
  static chat_result parse(const std::string& body) {
    const json::object root = detail::parse_response_object(body, "openai");
    chat_result result;
    const auto* choices = root.if_contains("choices");
    if (!choices || !choices->is_array() || choices->as_array().empty() || !choices->as_array()[0].is_object()) {
      throw detail::invalid_response("openai", "no choices[0] in the response", body);
    }
    const auto& choice = choices->as_array()[0].as_object();
    const auto* message = choice.if_contains("message");
    if (!message || !message->is_object()) throw detail::invalid_response("openai", "no choices[0].message", body);
    const auto& msg = message->as_object();
    if (const auto* content = msg.if_contains("content"); content && content->is_string()) {
      result.text = std::string(content->as_string());
    } else if (const auto* refusal = msg.if_contains("refusal"); refusal && refusal->is_string()) {
      throw model_error(model_errc::invalid_response,
                        "openai: the model refused: " + std::string(refusal->as_string()));
    }
    result.finish_reason = detail::string_field(choice, "finish_reason");
    result.model = detail::string_field(root, "model");
    if (const auto* usage = root.if_contains("usage"); usage && usage->is_object()) {
      result.usage.prompt_tokens = detail::int_field(usage->as_object(), "prompt_tokens");
      result.usage.completion_tokens = detail::int_field(usage->as_object(), "completion_tokens");
    }
    return result;
  }

  openai_options options_;
  detail::http_client client_;
  std::string authorization_;
};

openai_model::openai_model(openai_options options) : impl_(std::make_unique<impl>(std::move(options))) {}
openai_model::~openai_model() = default;

boost::asio::awaitable<chat_result> openai_model::complete(chat_request request) {
  return impl_->complete(std::move(request));
}

model_capabilities openai_model::capabilities() const noexcept { return impl_->options().capabilities; }

std::string openai_model::render_request(const chat_request& request) const { return impl_->render(request); }

}  // namespace switchboard::agents
