#include "openai_stream.hpp"

#include "tool_wire.hpp"
#include "wire_common.hpp"

#include <switchboard/models/model_error.hpp>
#include <switchboard/protocol/limits.hpp>
#include <switchboard/protocol/utf8.hpp>

#include <boost/json/monotonic_resource.hpp>
#include <boost/json/parse.hpp>

namespace switchboard::models::detail {

namespace json = boost::json;

namespace {

// One chunk: a JSON object, at most max_json_depth deep; a model's text may
// hold invalid UTF-8 (a byte-level tokenizer cut a character), kept as sent.
json::parse_options chunk_options() {
  json::parse_options options = protocol::untrusted_parse_options();
  options.allow_invalid_utf8 = true;
  return options;
}

const json::string* string_at(const json::object& object, std::string_view key) {
  const auto* value = object.if_contains(key);
  return value ? value->if_string() : nullptr;
}

// The error object's message ({"error": {"message": ...}} or {"error": "..."}).
std::string error_message(const json::value& error) {
  if (const auto* text = error.if_string()) return std::string(*text);
  if (const auto* object = error.if_object()) {
    if (const auto* message = string_at(*object, "message")) return std::string(*message);
  }
  return "(no message)";
}

}  // namespace

openai_stream::openai_stream(stream_sink* sink, std::span<const net::http_header> secrets)
    : stream_reader("openai", sink), secrets_(secrets) {}

void openai_stream::reset() {
  text_.clear();
  refusal_.clear();
  reasoning_.clear();
  finish_reason_.clear();
  model_.clear();
  prompt_tokens_ = completion_tokens_ = 0;
  calls_.clear();
  done_ = false;
}

void openai_stream::on_event(const net::sse_event& event) {
  if (done_) return;  // nothing counts after the end marker
  if (event.data == "[DONE]") {
    done_ = true;
    return;
  }
  unsigned char buffer[2048];  // a chunk parses without touching the heap
  json::monotonic_resource arena(buffer, sizeof buffer);
  boost::system::error_code ec;
  const json::value chunk = json::parse(event.data, ec, &arena, chunk_options());
  if (ec) fail("an event is not JSON (" + ec.message() + ")", event.data);
  const auto* object = chunk.if_object();
  if (!object) fail("an event is not a JSON object", event.data);
  if (const auto* error = object->if_contains("error"); error && !error->is_null()) {
    const std::string message = error_message(*error);
    throw model_error(model_errc::http_status, "openai: the stream reported an error: " + message, 0, message);
  }
  if (const auto* model = string_at(*object, "model")) model_.assign(*model);
  if (const auto* usage = object->if_contains("usage"); usage && usage->is_object()) {
    prompt_tokens_ = int_field(usage->get_object(), "prompt_tokens");
    completion_tokens_ = int_field(usage->get_object(), "completion_tokens");
  }
  const auto* choices = object->if_contains("choices");
  if (!choices || !choices->is_array()) return;
  for (const auto& element : choices->get_array()) {
    const auto* choice = element.if_object();
    if (!choice) continue;
    // Only the first choice is the answer (n = 1), as for a whole answer.
    if (const auto* index = choice->if_contains("index"); index && index->is_number() && index->to_number<double>() != 0)
      continue;
    if (const auto* delta = choice->if_contains("delta"); delta && delta->is_object())
      read_delta(delta->get_object(), event.data);
    if (const auto* finish = string_at(*choice, "finish_reason")) finish_reason_.assign(*finish);
  }
}

void openai_stream::read_delta(const json::object& delta, std::string_view data) {
  if (const auto* content = string_at(delta, "content")) {
    text_.append(*content);
    text_delta(*content);
  }
  if (const auto* refusal = string_at(delta, "refusal")) refusal_.append(*refusal);
  // vLLM and DeepSeek: reasoning_content; Ollama and OpenRouter: reasoning.
  if (const auto* reasoning = string_at(delta, "reasoning_content")) reasoning_.append(*reasoning);
  else if (const auto* other = string_at(delta, "reasoning")) reasoning_.append(*other);
  if (const auto* calls = delta.if_contains("tool_calls"); calls && calls->is_array()) {
    for (const auto& piece : calls->get_array()) read_tool_call(piece, data);
  }
}

// One piece of a call: {index, id?, type?, function: {name?, arguments?}}.
void openai_stream::read_tool_call(const json::value& piece, std::string_view data) {
  const auto* object = piece.if_object();
  if (!object) fail("a tool_calls piece is not an object", data);
  const auto* index_value = object->if_contains("index");
  const auto index = index_value ? index_value->if_int64() : nullptr;
  if (index_value && !index) fail("a tool_calls piece has an index that is not an integer", data);
  const std::int64_t at = index ? *index : 0;
  if (at < 0 || static_cast<std::size_t>(at) >= protocol::max_tool_calls_per_turn)
    fail("a tool_calls piece has index " + std::to_string(at) + ", beyond the " +
             std::to_string(protocol::max_tool_calls_per_turn) + " calls one answer may make",
         data);
  const auto slot = static_cast<std::size_t>(at);
  if (calls_.size() <= slot) calls_.resize(slot + 1);
  partial_call& call = calls_[slot];
  std::string_view new_id, new_name, arguments;
  // Some servers repeat the id and name on every piece: the first one counts.
  if (const auto* id = string_at(*object, "id"); id && !id->empty() && call.id.empty()) new_id = call.id = *id;
  if (const auto* function = object->if_contains("function"); function && function->is_object()) {
    const auto& f = function->get_object();
    if (const auto* name = string_at(f, "name"); name && !name->empty() && call.name.empty())
      new_name = call.name = *name;
    if (const auto* args = string_at(f, "arguments")) arguments = *args;
  }
  if (call.arguments.size() + arguments.size() > protocol::max_tool_arguments_bytes)
    fail(describe_tool_call(slot, call.id) + " has arguments over the limit", data);
  call.arguments.append(arguments);
  tool_call_delta(slot, new_id, new_name, arguments);
}

chat_result openai_stream::result() {
  chat_result result;
  protocol::replace_invalid_utf8(text_);
  result.text = std::move(text_);
  result.finish_reason = std::move(finish_reason_);
  result.stop = classify_finish_reason(result.finish_reason);
  if (!refusal_.empty()) {
    protocol::replace_invalid_utf8(refusal_);
    result.refusal = std::move(refusal_);
    result.stop = stop_reason::refusal;
  } else if (!calls_.empty()) {
    check_tool_call_count("openai", calls_.size(), raw_, secrets_);
    for (std::size_t i = 0; i < calls_.size(); ++i) {
      tool_call call{std::move(calls_[i].id), std::move(calls_[i].name), std::move(calls_[i].arguments)};
      protocol::replace_invalid_utf8(call.arguments);
      check_tool_call("openai", i, call, raw_, secrets_);
      result.tool_calls.push_back(std::move(call));
    }
    // As for a whole answer: "stop" beside calls still asks for the tools.
    if (result.stop == stop_reason::unknown || result.stop == stop_reason::complete)
      result.stop = stop_reason::tool_calls;
  }
  protocol::replace_invalid_utf8(reasoning_);
  result.reasoning = std::move(reasoning_);
  result.model = std::move(model_);
  result.usage.prompt_tokens = prompt_tokens_;
  result.usage.completion_tokens = completion_tokens_;
  result.raw_body = std::move(raw_);
  return result;
}

}  // namespace switchboard::models::detail
