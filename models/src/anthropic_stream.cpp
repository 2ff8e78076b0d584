#include "anthropic_stream.hpp"

#include "tool_wire.hpp"
#include "wire_common.hpp"

#include <switchboard/models/model_error.hpp>
#include <switchboard/net/error.hpp>
#include <switchboard/protocol/limits.hpp>
#include <switchboard/protocol/utf8.hpp>

#include <boost/json/monotonic_resource.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

namespace switchboard::models::detail {

namespace json = boost::json;

namespace {

constexpr std::size_t max_blocks = 4 * protocol::max_tool_calls_per_turn;

json::parse_options event_options() {
  json::parse_options options = protocol::untrusted_parse_options();
  options.allow_invalid_utf8 = true;
  return options;
}

const json::string* string_at(const json::object& object, std::string_view key) {
  const auto* value = object.if_contains(key);
  return value ? value->if_string() : nullptr;
}

const json::object* object_at(const json::object& object, std::string_view key) {
  const auto* value = object.if_contains(key);
  return value ? value->if_object() : nullptr;
}

// An error event: {"type": "error", "error": {"type": "overloaded_error", "message": "..."}}.
[[noreturn]] void stream_error(const json::object& event) {
  std::string type = "error", message = "(no message)";
  if (const auto* error = object_at(event, "error")) {
    if (const auto* t = string_at(*error, "type")) type = std::string(*t);
    if (const auto* m = string_at(*error, "message")) message = std::string(*m);
  }
  // Overloaded and internal errors are the server's passing state: retried.
  const bool transient = type == "overloaded_error" || type == "api_error";
  const int status = type == "overloaded_error" ? 529 : type == "api_error" ? 500 : 0;
  const std::string what = "anthropic: the stream reported " + type + ": " + message;
  // A transient one fails the attempt for the network layer to retry.
  if (transient) throw net::net_error(net::net_errc::http_status, what, status, message, true);
  throw model_error(model_errc::http_status, what, status, message);
}

}  // namespace

anthropic_stream::anthropic_stream(stream_sink* sink, anthropic_reading how, std::span<const net::http_header> secrets)
    : stream_reader("anthropic", sink), how_(std::move(how)), secrets_(secrets) {}

void anthropic_stream::reset() {
  blocks_.clear();
  calls_.clear();
  text_.clear();
  answer_.clear();
  reasoning_.clear();
  finish_reason_.clear();
  model_.clear();
  prompt_tokens_ = completion_tokens_ = 0;
  tool_uses_ = 0;
  found_answer_ = false;
  done_ = false;
}

void anthropic_stream::on_event(const net::sse_event& event) {
  if (done_) return;
  unsigned char buffer[2048];
  json::monotonic_resource arena(buffer, sizeof buffer);
  boost::system::error_code ec;
  const json::value parsed = json::parse(event.data, ec, &arena, event_options());
  if (ec) fail("an event is not JSON (" + ec.message() + ")", event.data);
  const auto* object = parsed.if_object();
  if (!object) fail("an event is not a JSON object", event.data);
  const auto* type_field = string_at(*object, "type");
  const std::string_view type = type_field ? std::string_view(*type_field) : event.type;
  if (type == "content_block_delta") {
    block_delta(*object, event.data);
  } else if (type == "content_block_start") {
    start_block(*object, event.data);
  } else if (type == "content_block_stop") {
    stop_block(*object, event.data);
  } else if (type == "message_start") {
    if (const auto* message = object_at(*object, "message")) {
      if (const auto* model = string_at(*message, "model")) model_.assign(*model);
      if (const auto* usage = object_at(*message, "usage")) {
        prompt_tokens_ = int_field(*usage, "input_tokens");
        completion_tokens_ = int_field(*usage, "output_tokens");
      }
    }
  } else if (type == "message_delta") {
    message_delta(*object);
  } else if (type == "message_stop") {
    done_ = true;
  } else if (type == "error") {
    stream_error(*object);
  }  // ping and event types added later: nothing to read
}

anthropic_stream::block& anthropic_stream::find_block(const json::object& event, std::string_view data) {
  const auto* index = event.if_contains("index");
  const auto* value = index ? index->if_int64() : nullptr;
  if (!value) fail("a content block event has no integer index", data);
  for (auto it = blocks_.rbegin(); it != blocks_.rend(); ++it)
    if (it->index == *value) return *it;
  fail("an event names content block " + std::to_string(*value) + ", which never started", data);
}

void anthropic_stream::start_block(const json::object& event, std::string_view data) {
  const auto* index = event.if_contains("index");
  if (!index || !index->is_int64()) fail("a content_block_start has no integer index", data);
  if (blocks_.size() >= max_blocks) fail("more than " + std::to_string(max_blocks) + " content blocks", data);
  const auto* content = object_at(event, "content_block");
  if (!content) fail("a content_block_start has no content_block", data);
  block b;
  b.index = index->get_int64();
  const auto* type = string_at(*content, "type");
  const std::string_view kind = type ? std::string_view(*type) : std::string_view();
  if (kind == "text" && !found_answer_) {
    b.kind = block_kind::text;
    if (const auto* text = string_at(*content, "text")) {
      text_.append(*text);
      text_delta(*text);
    }
  } else if (kind == "thinking") {
    b.kind = block_kind::thinking;
    if (const auto* thinking = string_at(*content, "thinking")) reasoning_.append(*thinking);
  } else if (kind == "tool_use") {
    if (++tool_uses_ > protocol::max_tool_calls_per_turn) check_tool_call_count("anthropic", tool_uses_, data, secrets_);
    const auto* id = string_at(*content, "id");
    const auto* name = string_at(*content, "name");
    const std::string_view name_text = name ? std::string_view(*name) : std::string_view();
    if (const auto* input = content->if_contains("input")) b.start_input = json::serialize(*input);
    if (is_forced_answer(how_, name_text, found_answer_)) {
      found_answer_ = true;
      b.kind = block_kind::answer;
    } else {
      b.kind = block_kind::tool;
      b.call = calls_.size();
      calls_.push_back({id ? std::string(*id) : std::string(), std::string(name_text), {}});
      tool_call_delta(b.call, calls_.back().id, calls_.back().name, {});
    }
  }
  blocks_.push_back(std::move(b));
}

void anthropic_stream::block_delta(const json::object& event, std::string_view data) {
  block& b = find_block(event, data);
  const auto* delta = object_at(event, "delta");
  if (!delta || b.stopped) return;
  const auto* type = string_at(*delta, "type");
  if (!type) return;
  if (*type == "text_delta" && b.kind == block_kind::text) {
    if (const auto* text = string_at(*delta, "text")) {
      text_.append(*text);
      text_delta(*text);
    }
  } else if (*type == "input_json_delta" && (b.kind == block_kind::tool || b.kind == block_kind::answer)) {
    const auto* partial = string_at(*delta, "partial_json");
    if (!partial) return;
    if (b.kind == block_kind::tool && b.input.size() + partial->size() > protocol::max_tool_arguments_bytes)
      fail(describe_tool_call(b.call, calls_[b.call].id) + " has arguments over the limit", data);
    b.input.append(*partial);
    // The structured answer is the forced tool's input: its JSON is the text the model writes.
    if (b.kind == block_kind::answer) text_delta(*partial);
    else tool_call_delta(b.call, {}, {}, *partial);
  } else if (*type == "thinking_delta" && b.kind == block_kind::thinking) {
    if (const auto* thinking = string_at(*delta, "thinking")) reasoning_.append(*thinking);
  }
}

// The input of a tool_use block: its pieces joined (none: the input it
// started with, else {}), parsed.
json::value anthropic_stream::parse_input(const block& b, std::string_view data) const {
  const std::string& text = b.input.find_first_not_of(" \t\r\n") != std::string::npos ? b.input : b.start_input;
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) return json::object{};
  std::string repaired = text;
  protocol::replace_invalid_utf8(repaired);  // as a whole answer's body is repaired before parsing
  boost::system::error_code ec;
  json::value input = json::parse(repaired, ec, {}, protocol::untrusted_parse_options());
  if (ec) {
    const std::string who = b.kind == block_kind::answer ? "the structured answer's tool_use block"
                                                         : describe_tool_call(b.call, calls_[b.call].id);
    fail(who + " has an input that is not JSON (" + ec.message() + ")", data);
  }
  return input;
}

void anthropic_stream::stop_block(const json::object& event, std::string_view data) {
  block& b = find_block(event, data);
  if (b.stopped) return;
  b.stopped = true;
  if (b.kind == block_kind::answer) {
    const json::value input = parse_input(b, data);
    const json::value* value = &input;
    if (how_.wrapped && input.is_object()) {
      if (const auto* inner = input.get_object().if_contains(anthropic_wrapped_key)) value = inner;
    }
    answer_ = json::serialize(*value);
  } else if (b.kind == block_kind::tool) {
    const json::value input = parse_input(b, data);
    tool_call& call = calls_[b.call];
    if (!input.is_object())
      fail(describe_tool_call(b.call, call.id) + " has an input that is not an object", data);
    call.arguments = json::serialize(input);
    check_tool_call("anthropic", b.call, call, data, secrets_);
  }
}

void anthropic_stream::message_delta(const json::object& event) {
  if (const auto* delta = object_at(event, "delta")) {
    if (const auto* stop = string_at(*delta, "stop_reason")) finish_reason_.assign(*stop);
  }
  // Usage in message_delta is cumulative: the latest counts replace earlier ones.
  if (const auto* usage = object_at(event, "usage")) {
    if (usage->contains("output_tokens")) completion_tokens_ = int_field(*usage, "output_tokens");
    if (usage->contains("input_tokens")) prompt_tokens_ = int_field(*usage, "input_tokens");
  }
}

chat_result anthropic_stream::result() {
  for (const auto& b : blocks_) {
    if (!b.stopped && (b.kind == block_kind::tool || b.kind == block_kind::answer))
      fail("a tool_use block never ended (no content_block_stop)", {});
  }
  chat_result result;
  result.text = found_answer_ ? std::move(answer_) : std::move(text_);
  protocol::replace_invalid_utf8(result.text);
  result.tool_calls = std::move(calls_);
  result.finish_reason = std::move(finish_reason_);
  result.stop = classify_finish_reason(result.finish_reason);
  // The forced tool is how structured output arrives: its tool_use stop
  // is the end of a complete answer, not a request to call a tool.
  if (found_answer_ && result.stop == stop_reason::tool_calls) result.stop = stop_reason::complete;
  else if (!result.tool_calls.empty() && result.stop == stop_reason::unknown) result.stop = stop_reason::tool_calls;
  if (result.stop == stop_reason::refusal) result.refusal = result.text;
  protocol::replace_invalid_utf8(reasoning_);
  result.reasoning = std::move(reasoning_);
  result.model = std::move(model_);
  result.usage.prompt_tokens = prompt_tokens_;
  result.usage.completion_tokens = completion_tokens_;
  result.raw_body = std::move(raw_);
  return result;
}

}  // namespace switchboard::models::detail
