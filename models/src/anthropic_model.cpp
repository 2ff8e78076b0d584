#include <switchboard/models/anthropic_model.hpp>

#include <switchboard/net/http_client.hpp>
#include "anthropic_stream.hpp"
#include "tool_wire.hpp"
#include "wire_common.hpp"

#include <switchboard/models/model_error.hpp>
#include <switchboard/protocol/limits.hpp>

#include <boost/json/monotonic_resource.hpp>
#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <algorithm>
#include <array>
#include <stdexcept>

namespace switchboard::models {

namespace json = boost::json;

namespace {

constexpr std::string_view wrapped_key = detail::anthropic_wrapped_key;

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

// --- tool calls in requests -------------------------------------------------

// A tool_use block's input: the call's arguments, which must be a JSON
// object (empty arguments, as some models send for a tool without
// parameters, stand for {}). Arguments from another provider's model that
// are not an object cannot be sent back here: the request fails, naming the call.
json::value tool_use_input(const tool_call& call) {
  if (call.arguments.find_first_not_of(" \t\r\n") == std::string::npos) return json::object{};
  boost::system::error_code ec;
  json::value input = json::parse(call.arguments, ec, {}, protocol::untrusted_parse_options());
  if (ec || !input.is_object())
    throw std::invalid_argument("anthropic: the arguments of tool call '" + call.id +
                                "' are not a JSON object; the messages API needs an object as tool_use.input");
  return input;
}

json::object assistant_turn(const chat_message& m) {
  json::array blocks;
  if (!m.content.empty()) blocks.push_back(json::object{{"type", "text"}, {"text", m.content}});
  for (const auto& call : m.tool_calls) {
    blocks.push_back(json::object{
        {"type", "tool_use"}, {"id", call.id}, {"name", call.name}, {"input", tool_use_input(call)}});
  }
  return json::object{{"role", "assistant"}, {"content", std::move(blocks)}};
}

json::object tool_result_block(const chat_message& m) {
  json::object block{{"type", "tool_result"}, {"tool_use_id", m.tool_call_id}, {"content", m.content}};
  if (m.is_error) block["is_error"] = true;
  return block;
}

// The last message when it is a user turn of content blocks (only tool
// results make one), else nullptr.
json::array* open_block_turn(json::array& messages) {
  if (messages.empty()) return nullptr;
  auto& last = messages.back().as_object();
  if (last.at("role") != "user" || !last.at("content").is_array()) return nullptr;
  return &last.at("content").as_array();
}

// Tool results go back as tool_result blocks of a user turn; consecutive
// results share one turn, and a user message right after them joins it as
// a text block (the API wants the results of one assistant turn together,
// first in the next user turn).
void append_message(json::array& messages, const chat_message& m) {
  if (m.role == chat_role::tool) {
    if (auto* blocks = open_block_turn(messages)) blocks->push_back(tool_result_block(m));
    else messages.push_back(json::object{{"role", "user"}, {"content", json::array{tool_result_block(m)}}});
  } else if (m.role == chat_role::assistant && !m.tool_calls.empty()) {
    messages.push_back(assistant_turn(m));
  } else if (auto* blocks = m.role == chat_role::user ? open_block_turn(messages) : nullptr) {
    blocks->push_back(json::object{{"type", "text"}, {"text", m.content}});
  } else {
    messages.push_back(json::object{{"role", to_string(m.role)}, {"content", m.content}});
  }
}

json::object tool_object(const tool_definition& tool) {
  json::object out{{"name", tool.name}};
  if (!tool.description.empty()) out["description"] = tool.description;
  // input_schema is required; `strict` is OpenAI's and not sent.
  out["input_schema"] = tool.parameters.is_null() ? json::value(json::object{{"type", "object"}}) : tool.parameters;
  return out;
}

json::object tool_choice_object(const chat_request& request) {
  const tool_choice choice = request.tool_choice.value_or(tool_choice{});
  json::object out;
  switch (choice.type) {
    case tool_choice::kind::auto_: out["type"] = "auto"; break;
    case tool_choice::kind::none: out["type"] = "none"; break;
    case tool_choice::kind::required: out["type"] = "any"; break;
    case tool_choice::kind::named: out["type"] = "tool"; out["name"] = choice.name; break;
  }
  // Not with "none": the API has no parallelism to restrict there.
  if (request.parallel_tool_calls == false && choice.type != tool_choice::kind::none)
    out["disable_parallel_tool_use"] = true;
  return out;
}

// --- tool calls in answers ---------------------------------------------------

tool_call read_tool_use(const json::object& block, std::size_t index, std::string_view body,
                        std::span<const net::http_header> secrets) {
  tool_call call;
  call.id = detail::string_field(block, "id");
  call.name = detail::string_field(block, "name");
  const auto* input = block.if_contains("input");
  if (!input || !input->is_object()) {
    throw detail::invalid_response("anthropic",
                                   detail::describe_tool_call(index, call.id) +
                                       (input ? " has an input that is not an object" : " has no input"),
                                   body, secrets);
  }
  call.arguments = json::serialize(*input);
  detail::check_tool_call("anthropic", index, call, body, secrets);
  return call;
}

std::size_t count_tool_uses(const json::array& content) {
  return static_cast<std::size_t>(std::count_if(content.begin(), content.end(), [](const json::value& block) {
    return block.is_object() && detail::string_field(block.get_object(), "type") == "tool_use";
  }));
}

}  // namespace

class anthropic_model::impl {
 public:
  explicit impl(anthropic_options options)
      : options_(std::move(options)), client_(detail::make_http_client(with_default_base(options_.http), "anthropic")) {}

  // `forced_out`: the name of the structured-output tool it forces, if any.
  std::string render(const chat_request& request, bool* wrapped_out = nullptr,
                     std::string* forced_out = nullptr) const {
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
        append_message(messages, m);
      }
    }
    if (!system.empty()) body["system"] = system;
    body["messages"] = std::move(messages);
    if (request.temperature) body["temperature"] = *request.temperature;
    if (request.stream) body["stream"] = true;
    if (!request.stop.empty()) {
      json::array stop;
      for (const auto& s : request.stop) stop.emplace_back(s);
      body["stop_sequences"] = std::move(stop);
    }
    json::array tools;
    for (const auto& tool : request.tools) tools.push_back(tool_object(tool));
    if (request.format.type != response_format::kind::none) {
      bool wrapped = false;
      const std::string name = detail::schema_name_or_default(request.format.name);
      if (std::any_of(request.tools.begin(), request.tools.end(), [&](const auto& t) { return t.name == name; }))
        throw std::invalid_argument("anthropic: a tool is named '" + name +
                                    "' like the structured-output tool of the response format; rename one");
      tools.push_back(json::object{
          {"name", name},
          {"description", "Record the answer. The input must be a JSON value matching the schema" +
                              (request.format.name.empty() ? std::string() : " '" + request.format.name + "'") + "."},
          {"input_schema", tool_input_schema(request.format, wrapped)}});
      body["tools"] = std::move(tools);
      body["tool_choice"] = json::object{{"type", "tool"}, {"name", name}};
      if (wrapped_out) *wrapped_out = wrapped;
      if (forced_out) *forced_out = name;
    } else if (!tools.empty()) {
      body["tools"] = std::move(tools);
      if (request.tool_choice || request.parallel_tool_calls) body["tool_choice"] = tool_choice_object(request);
    }
    return json::serialize(body);
  }

  // Not a coroutine: the request is rendered at once, so the frame that
  // awaits the answer holds the body but not the request's messages.
  boost::asio::awaitable<chat_result> complete(const chat_request& request) {
    const auto started = std::chrono::steady_clock::now();
    reading how;
    std::string body;
    try {
      body = render(request, &how.wrapped, &how.forced_tool);
    } catch (...) {
      return detail::failed_completion(std::current_exception());
    }
    how.offers_tools = !request.tools.empty();
    if (request.stream)
      return send_streamed(std::move(body), started, std::move(how), request.budget, request.stream, request.trace);
    return send(std::move(body), started, std::move(how), request.budget, request.trace);
  }

 private:
  // What reading the answer needs to know of the request.
  using reading = detail::anthropic_reading;

  // A streamed request: the answer's pieces go to `sink` as they arrive; a
  // whole JSON answer instead is read as usual and delivered as one piece.
  boost::asio::awaitable<chat_result> send_streamed(std::string body, std::chrono::steady_clock::time_point started,
                                                    reading how, call_budget* budget, stream_sink* sink,
                                                    telemetry::span_context trace) {
    const std::array<net::http_header, 3> headers{{{"Accept", "text/event-stream", false},
                                                      {"anthropic-version", options_.version, false},
                                                      {"x-api-key", options_.api_key, true}}};
    detail::trace_headers traced;
    const std::span<const net::http_header> sent = detail::with_trace(
        std::span<const net::http_header>(headers.data(), options_.api_key.empty() ? 2 : 3), trace, traced);
    detail::anthropic_stream reader(sink, how, sent);
    net::http_response response;
    try {
      response = co_await client_.post_json("/v1/messages", body, sent, budget, &reader);
    } catch (const net::net_error& e) {
      throw detail::model_error_of(e);
    }
    if (!response.streamed) {
      reader.begin();  // a retry's whole answer: void what an earlier attempt streamed
      chat_result result = finish(std::move(response.body), started, how, sent);
      deliver_whole(sink, result);
      co_return result;
    }
    chat_result result = reader.result();
    result.latency = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - started);
    co_return result;
  }

  boost::asio::awaitable<chat_result> send(std::string body, std::chrono::steady_clock::time_point started,
                                           reading how, call_budget* budget, telemetry::span_context trace) {
    const std::array<net::http_header, 2> headers{{{"x-api-key", options_.api_key, true},
                                                      {"anthropic-version", options_.version, false}}};
    detail::trace_headers traced;
    const std::span<const net::http_header> sent =
        detail::with_trace(options_.api_key.empty() ? std::span<const net::http_header>(headers).subspan(1)
                                                    : std::span<const net::http_header>(headers),
                           trace, traced);
    net::http_response response;
    try {
      response = co_await client_.post_json("/v1/messages", body, sent, budget);
    } catch (const net::net_error& e) {
      throw detail::model_error_of(e);
    }
    co_return finish(std::move(response.body), started, how, sent);
  }

  static chat_result finish(std::string body, std::chrono::steady_clock::time_point started, const reading& how,
                            std::span<const net::http_header> secrets) {
    chat_result result = parse(body, how, secrets);
    result.latency = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - started);
    result.raw_body = std::move(body);
    return result;
  }

  // The forced tool's tool_use block is the structured answer; every other
  // tool_use block is a tool call. Without tools of the request's own, the
  // first tool_use is the answer whatever its name (as before tools existed).
  static bool is_forced_answer(const reading& how, std::string_view name, bool found) {
    return detail::is_forced_answer(how, name, found);
  }

  static chat_result parse(const std::string& body, const reading& how,
                           std::span<const net::http_header> secrets) {
    unsigned char buffer[4096];  // most responses parse without touching the heap
    json::monotonic_resource arena(buffer, sizeof buffer);
    const json::object root = detail::parse_response_object(body, "anthropic", &arena, secrets);
    const auto* content = root.if_contains("content");
    if (!content || !content->is_array()) throw detail::invalid_response("anthropic", "no content array", body, secrets);
    chat_result result;
    detail::check_tool_call_count("anthropic", count_tool_uses(content->as_array()), body, secrets);
    bool found_tool = false;
    for (const auto& block : content->as_array()) {
      if (!block.is_object()) continue;
      const auto& b = block.as_object();
      const auto type = detail::string_field(b, "type");
      if (type == "tool_use" && is_forced_answer(how, detail::string_field(b, "name"), found_tool)) {
        const auto* input = b.if_contains("input");
        if (!input) throw detail::invalid_response("anthropic", "tool_use block without input", body, secrets);
        const json::value* value = input;
        if (how.wrapped && input->is_object()) {
          if (const auto* inner = input->as_object().if_contains(wrapped_key)) value = inner;
        }
        result.text = json::serialize(*value);
        found_tool = true;
      } else if (type == "tool_use") {
        result.tool_calls.push_back(read_tool_use(b, result.tool_calls.size(), body, secrets));
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
    else if (!result.tool_calls.empty() && result.stop == stop_reason::unknown) result.stop = stop_reason::tool_calls;
    if (result.stop == stop_reason::refusal) result.refusal = result.text;
    result.model = detail::string_field(root, "model");
    if (const auto* usage = root.if_contains("usage"); usage && usage->is_object()) {
      result.usage.prompt_tokens = detail::int_field(usage->as_object(), "input_tokens");
      result.usage.completion_tokens = detail::int_field(usage->as_object(), "output_tokens");
    }
    return result;
  }

  anthropic_options options_;
  net::http_client client_;
};

anthropic_model::anthropic_model(anthropic_options options)
    : impl_(std::make_unique<impl>(std::move(options))) {}
anthropic_model::~anthropic_model() = default;

boost::asio::awaitable<chat_result> anthropic_model::complete(chat_request request) {
  return impl_->complete(request);
}

std::string anthropic_model::render_request(const chat_request& request) const { return impl_->render(request); }

}  // namespace switchboard::models
