#include <switchboard/models/openai_model.hpp>

#include <switchboard/net/http_client.hpp>
#include "json_writer.hpp"
#include "openai_response.hpp"
#include "openai_stream.hpp"
#include "wire_common.hpp"

#include <switchboard/models/model_error.hpp>

#include <boost/json/serialize.hpp>

#include <array>

namespace switchboard::models {

namespace {

// Enough for the body in one allocation: the texts plus room for the keys.
std::size_t render_reserve(const chat_request& request) {
  std::size_t size = 256 + request.model.size();
  for (const auto& m : request.messages) {
    size += m.content.size() + m.content.size() / 8 + 40;
    for (const auto& call : m.tool_calls) size += call.arguments.size() + call.arguments.size() / 8 + 96;
  }
  for (const auto& tool : request.tools) size += tool.description.size() + 256;  // schemas grow it if need be
  if (request.format.type == response_format::kind::json_schema) size += request.format.schema.text().size();
  return size;
}

http_options with_default_base(http_options http) {
  if (http.base_url.empty()) http.base_url = "https://api.openai.com/v1";
  return http;
}

void write_response_format(detail::json_writer& body, const response_format& format) {
  switch (format.type) {
    case response_format::kind::json_object:
      body.key("response_format").begin_object().key("type").string("json_object").end_object();
      return;
    case response_format::kind::json_schema:
      body.key("response_format").begin_object().key("type").string("json_schema");
      body.key("json_schema").begin_object();
      body.key("name").string(detail::schema_name_or_default(format.name));
      body.key("strict").boolean(format.strict);
      body.key("schema").raw(format.schema.text());  // serialized once per schema
      body.end_object().end_object();
      return;
    case response_format::kind::none: return;
  }
}

// An assistant turn's tool calls: [{id, type: function, function: {name,
// arguments}}], the arguments as the text they were (a JSON string).
void write_tool_calls(detail::json_writer& body, const std::vector<tool_call>& calls) {
  body.key("tool_calls").begin_array();
  for (const auto& call : calls) {
    body.begin_object().key("id").string(call.id).key("type").string("function");
    body.key("function").begin_object().key("name").string(call.name);
    body.key("arguments").string(call.arguments).end_object();
    body.end_object();
  }
  body.end_array();
}

void write_message(detail::json_writer& body, const chat_message& m) {
  body.begin_object().key("role").string(to_string(m.role));
  if (m.role == chat_role::assistant && !m.tool_calls.empty()) {
    // A turn that only calls tools has no text: null, as OpenAI sends it.
    if (m.content.empty()) body.key("content").raw("null");
    else body.key("content").string(m.content);
    write_tool_calls(body, m.tool_calls);
  } else {
    // A tool result's error flag has no OpenAI field: the content says so.
    if (m.role == chat_role::tool) body.key("tool_call_id").string(m.tool_call_id);
    body.key("content").string(m.content);
  }
  body.end_object();
}

void write_tools(detail::json_writer& body, const std::vector<tool_definition>& tools) {
  body.key("tools").begin_array();
  for (const auto& tool : tools) {
    body.begin_object().key("type").string("function").key("function").begin_object();
    body.key("name").string(tool.name);
    if (!tool.description.empty()) body.key("description").string(tool.description);
    if (!tool.parameters.is_null()) body.key("parameters").raw(boost::json::serialize(tool.parameters));
    if (tool.strict) body.key("strict").boolean(true);
    body.end_object().end_object();
  }
  body.end_array();
}

void write_tool_choice(detail::json_writer& body, const tool_choice& choice) {
  body.key("tool_choice");
  if (choice.type == tool_choice::kind::named) {
    body.begin_object().key("type").string("function");
    body.key("function").begin_object().key("name").string(choice.name).end_object();
    body.end_object();
  } else {
    body.string(to_string(choice.type));  // "auto", "none", "required"
  }
}

// Only with tools: OpenAI refuses tool_choice and parallel_tool_calls without them.
void write_tool_options(detail::json_writer& body, const chat_request& request) {
  if (request.tools.empty()) return;
  write_tools(body, request.tools);
  if (request.tool_choice) write_tool_choice(body, *request.tool_choice);
  if (request.parallel_tool_calls) body.key("parallel_tool_calls").boolean(*request.parallel_tool_calls);
}

}  // namespace

class openai_model::impl {
 public:
  explicit impl(openai_options options)
      : options_(std::move(options)),
        client_(detail::make_http_client(with_default_base(options_.http), "openai")),
        authorization_(options_.api_key.empty() ? std::string() : "Bearer " + options_.api_key) {}

  std::string render(const chat_request& request) const {
    std::string text;
    text.reserve(render_reserve(request));
    detail::json_writer body(text);
    body.begin_object();
    body.key("model").string(detail::model_or_default(request.model, options_.model, "openai"));
    body.key("messages").begin_array();
    for (const auto& m : request.messages) write_message(body, m);
    body.end_array();
    if (request.temperature) body.key("temperature").number(*request.temperature);
    if (request.max_tokens) body.key("max_tokens").number(std::int64_t{*request.max_tokens});
    if (request.seed) body.key("seed").number(*request.seed);
    if (!request.stop.empty()) {
      body.key("stop").begin_array();
      for (const auto& s : request.stop) body.string(s);
      body.end_array();
    }
    write_response_format(body, request.format);
    write_tool_options(body, request);
    if (request.stream) {
      // The usage arrives in a last chunk of its own, before [DONE].
      body.key("stream").boolean(true);
      body.key("stream_options").begin_object().key("include_usage").boolean(true).end_object();
    }
    body.end_object();
    return text;
  }

  // Not a coroutine: the request is rendered at once, so the frame that
  // awaits the answer holds the body but not the request's messages.
  boost::asio::awaitable<chat_result> complete(const chat_request& request) {
    const auto started = std::chrono::steady_clock::now();
    std::string body;
    try {
      body = render(request);
    } catch (...) {
      return detail::failed_completion(std::current_exception());
    }
    if (request.stream) return send_streamed(std::move(body), started, request.budget, request.stream, request.trace);
    return send(std::move(body), started, request.budget, request.trace);
  }

  const openai_options& options() const noexcept { return options_; }

 private:
  boost::asio::awaitable<chat_result> send(std::string body, std::chrono::steady_clock::time_point started,
                                           call_budget* budget, telemetry::span_context trace) {
    std::array<net::http_header, 1> headers{{{"Authorization", authorization_, true}}};
    detail::trace_headers traced;
    const std::span<const net::http_header> sent =
        detail::with_trace(std::span<const net::http_header>(headers.data(), authorization_.empty() ? 0 : 1), trace, traced);
    net::http_response response;
    try {
      response = co_await client_.post_json("/chat/completions", body, sent, budget);
    } catch (const net::net_error& e) {
      throw detail::model_error_of(e);
    }
    co_return finish(std::move(response.body), started, sent);
  }

  // A streamed request: the answer's pieces go to `sink` as they arrive. A
  // server that answers with a whole JSON body instead is read as usual and
  // its answer delivered as one piece.
  boost::asio::awaitable<chat_result> send_streamed(std::string body, std::chrono::steady_clock::time_point started,
                                                    call_budget* budget, stream_sink* sink, telemetry::span_context trace) {
    std::array<net::http_header, 2> headers{{{"Accept", "text/event-stream", false},
                                                {"Authorization", authorization_, true}}};
    detail::trace_headers traced;
    const std::span<const net::http_header> sent =
        detail::with_trace(std::span<const net::http_header>(headers.data(), authorization_.empty() ? 1 : 2), trace, traced);
    detail::openai_stream reader(sink, sent);
    net::http_response response;
    try {
      response = co_await client_.post_json("/chat/completions", body, sent, budget, &reader);
    } catch (const net::net_error& e) {
      throw detail::model_error_of(e);
    }
    if (!response.streamed) {
      reader.begin();  // a retry's whole answer: void what an earlier attempt streamed
      chat_result result = finish(std::move(response.body), started, sent);
      deliver_whole(sink, result);
      co_return result;
    }
    chat_result result = reader.result();
    result.latency = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - started);
    co_return result;
  }

  static chat_result finish(std::string body, std::chrono::steady_clock::time_point started,
                            std::span<const net::http_header> secrets) {
    chat_result result = detail::read_openai_completion(body, secrets);
    result.latency = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - started);
    result.raw_body = std::move(body);
    return result;
  }

  openai_options options_;
  net::http_client client_;
  std::string authorization_;
};

openai_model::openai_model(openai_options options) : impl_(std::make_unique<impl>(std::move(options))) {}
openai_model::~openai_model() = default;

boost::asio::awaitable<chat_result> openai_model::complete(chat_request request) {
  return impl_->complete(request);
}

model_capabilities openai_model::capabilities() const noexcept { return impl_->options().capabilities; }

std::string openai_model::render_request(const chat_request& request) const { return impl_->render(request); }

}  // namespace switchboard::models
