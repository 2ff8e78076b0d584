#include "openai_response.hpp"

#include "tool_wire.hpp"
#include "wire_common.hpp"

#include <switchboard/models/model_error.hpp>

#include <boost/json/basic_parser_impl.hpp>
#include <boost/json/monotonic_resource.hpp>
#include <boost/json/object.hpp>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace switchboard::models::detail {

namespace {

namespace json = boost::json;
using boost::system::error_code;

// The fields of a response that a chat_result needs, as the parser saw them.
// As in a parsed document, a key given twice keeps its last value.
struct completion_fields {
  bool root_is_object = false;
  bool first_choice_is_object = false;   // choices is an array whose first element is an object
  bool message_is_object = false;        // choices[0].message
  std::optional<std::string> content;    // choices[0].message.content: a string, or its text parts joined
  std::optional<std::string> refusal;    // choices[0].message.refusal (or refusal parts), when a string
  std::string reasoning;                 // choices[0].message.reasoning_content / reasoning
  bool tool_calls = false;               // choices[0].message.tool_calls is a non-empty array
  std::string finish_reason;             // choices[0].finish_reason, when a string
  std::string model;                     // model, when a string
  std::int64_t prompt_tokens = 0;        // usage.*, when integers
  std::int64_t completion_tokens = 0;
};

// The objects and arrays whose members matter.
enum class place : std::uint8_t { other, root, choices, first_choice, message, usage, parts, part, tool_calls };
enum class kind : std::uint8_t { object, array, scalar };

// The event handler for json::basic_parser: tracks where each value sits
// (its parent's place and key) and keeps the values of completion_fields.
class completion_handler {
 public:
  static constexpr std::size_t max_object_size = std::size_t(-1);
  static constexpr std::size_t max_array_size = std::size_t(-1);
  static constexpr std::size_t max_key_size = std::size_t(-1);
  static constexpr std::size_t max_string_size = std::size_t(-1);

  completion_fields fields;

  bool on_document_begin(error_code&) { return true; }
  bool on_document_end(error_code&) { return true; }
  bool on_object_begin(error_code&) { return open(kind::object); }
  bool on_object_end(std::size_t, error_code&) { return close(); }
  bool on_array_begin(error_code&) { return open(kind::array); }
  bool on_array_end(std::size_t size, error_code&) {
    if (parent_is(place::tool_calls) && size > 0) fields.tool_calls = true;
    return close();
  }

  bool on_key_part(std::string_view part, std::size_t, error_code&) {
    key(part);
    return true;
  }
  bool on_key(std::string_view part, std::size_t, error_code&) {
    key(part);
    key_complete_ = true;
    return true;
  }

  bool on_string_part(std::string_view part, std::size_t, error_code&) {
    if (!in_string_) {
      in_string_ = true;
      string_ = string_slot(begin_value(kind::scalar).field);
    }
    if (string_ != nullptr) string_->append(part);
    return true;
  }
  bool on_string(std::string_view part, std::size_t total, error_code& ec) {
    on_string_part(part, total, ec);
    in_string_ = false;
    string_ = nullptr;
    return true;
  }

  bool on_number_part(std::string_view, error_code&) { return true; }
  bool on_int64(std::int64_t value, std::string_view, error_code&) {
    if (auto* tokens = token_slot(begin_value(kind::scalar).field)) *tokens = value;
    return true;
  }
  bool on_uint64(std::uint64_t value, std::string_view, error_code&) {
    if (auto* tokens = token_slot(begin_value(kind::scalar).field)) *tokens = static_cast<std::int64_t>(value);
    return true;
  }
  bool on_double(double, std::string_view, error_code&) { return scalar(); }
  bool on_bool(bool, error_code&) { return scalar(); }
  bool on_null(error_code&) { return scalar(); }
  bool on_comment_part(std::string_view, error_code&) { return true; }
  bool on_comment(std::string_view, error_code&) { return true; }

 private:
  // The field a value sets, from its parent's place and key.
  enum class slot : std::uint8_t {
    none, model, finish_reason, content, refusal, reasoning, part_type, part_text, prompt_tokens, completion_tokens
  };

  void key(std::string_view part) {
    if (key_complete_) {
      key_.clear();
      key_complete_ = false;
    }
    key_.append(part);
  }

  bool open(kind k) {
    const place p = begin_value(k).where;
    if (depth_ < places_.size()) places_[depth_] = p;
    ++depth_;
    return true;
  }
  bool close() {
    if (parent_is(place::part)) finish_part();
    --depth_;
    return true;
  }

  bool parent_is(place p) const { return parent() == p; }

  // A content part ends: its text joins the content or the refusal, by its
  // type ("text", "output_text"; "refusal"); other types (images) are skipped.
  void finish_part() {
    if (part_type_ == "text" || part_type_ == "output_text") {
      if (!fields.content) fields.content.emplace();
      fields.content->append(part_text_);
    } else if (part_type_ == "refusal") {
      if (!fields.refusal) fields.refusal.emplace();
      fields.refusal->append(part_text_);
    }
    part_type_.clear();
    part_text_.clear();
  }
  bool scalar() {
    begin_value(kind::scalar);
    return true;
  }

  place parent() const {
    if (depth_ == 0 || depth_ > places_.size()) return place::other;
    return places_[depth_ - 1];
  }

  struct value_start {
    slot field;   // the field this value sets, if any
    place where;  // for an object or array: its place
  };

  // Called once at the start of every value: clears the field the value
  // replaces (a later duplicate key wins, whatever its type) and records
  // the shape facts.
  value_start begin_value(kind k) {
    const slot s = slot_of(parent());
    if (s == slot::content) fields.content.reset();
    if (s == slot::refusal) fields.refusal.reset();
    if (s == slot::model) fields.model.clear();
    if (s == slot::finish_reason) fields.finish_reason.clear();
    if (s == slot::prompt_tokens) fields.prompt_tokens = 0;
    if (s == slot::completion_tokens) fields.completion_tokens = 0;
    return {s, begin_place(k)};
  }

  // The place of a new value (`other` for scalars), and the shape facts.
  place begin_place(kind k) {
    if (depth_ == 0) {
      fields.root_is_object = k == kind::object;
      return k == kind::object ? place::root : place::other;
    }
    switch (parent()) {
      case place::root:
        if (key_ == "choices") {
          fields.first_choice_is_object = false;
          choices_seen_ = 0;
          return k == kind::array ? place::choices : place::other;
        }
        if (key_ == "usage") return k == kind::object ? place::usage : place::other;
        return place::other;
      case place::choices:
        if (choices_seen_++ > 0) return place::other;
        fields.first_choice_is_object = k == kind::object;
        return k == kind::object ? place::first_choice : place::other;
      case place::first_choice:
        if (key_ == "message") {
          fields.message_is_object = k == kind::object;
          return k == kind::object ? place::message : place::other;
        }
        return place::other;
      case place::message:
        // Some compatible servers send content as a list of typed parts.
        if (key_ == "content" && k == kind::array) return place::parts;
        if (key_ == "tool_calls") {
          fields.tool_calls = false;
          return k == kind::array ? place::tool_calls : place::other;
        }
        return place::other;
      case place::parts:
        return k == kind::object ? place::part : place::other;
      default:
        return place::other;
    }
  }

  slot slot_of(place p) const {
    switch (p) {
      case place::root:
        return key_ == "model" ? slot::model : slot::none;
      case place::first_choice:
        return key_ == "finish_reason" ? slot::finish_reason : slot::none;
      case place::message:
        if (key_ == "content") return slot::content;
        if (key_ == "refusal") return slot::refusal;
        // vLLM and DeepSeek: reasoning_content; Ollama and OpenRouter: reasoning.
        return key_ == "reasoning_content" || key_ == "reasoning" ? slot::reasoning : slot::none;
      case place::part:
        if (key_ == "type") return slot::part_type;
        return key_ == "text" || key_ == "refusal" ? slot::part_text : slot::none;
      case place::usage:
        if (key_ == "prompt_tokens") return slot::prompt_tokens;
        return key_ == "completion_tokens" ? slot::completion_tokens : slot::none;
      default:
        return slot::none;
    }
  }

  std::string* string_slot(slot s) {
    switch (s) {
      case slot::model: return &fields.model;
      case slot::finish_reason: return &fields.finish_reason;
      case slot::content: return &fields.content.emplace();
      case slot::refusal: return &fields.refusal.emplace();
      case slot::reasoning: fields.reasoning.clear(); return &fields.reasoning;
      case slot::part_type: part_type_.clear(); return &part_type_;
      case slot::part_text: part_text_.clear(); return &part_text_;
      default: return nullptr;
    }
  }

  std::int64_t* token_slot(slot s) {
    if (s == slot::prompt_tokens) return &fields.prompt_tokens;
    if (s == slot::completion_tokens) return &fields.completion_tokens;
    return nullptr;
  }

  // Places of the open objects and arrays; deeper ones are all `other`.
  std::array<place, 16> places_{};
  std::size_t depth_ = 0;
  std::string key_;  // the current key of the innermost open object
  bool key_complete_ = false;
  bool in_string_ = false;
  std::string* string_ = nullptr;  // where the current string's parts go
  std::size_t choices_seen_ = 0;   // elements of choices begun so far
  std::string part_type_, part_text_;  // of the content part being read
};

// The string member `key` of a tool call's object: "" when absent; a value
// of another type fails, naming the call.
std::string string_member(const json::object& object, std::string_view key, std::size_t index,
                          std::string_view body, std::span<const net::http_header> secrets) {
  const auto* member = object.if_contains(key);
  if (!member || member->is_null()) return {};
  if (!member->is_string()) {
    throw invalid_response("openai",
                           describe_tool_call(index, {}) + " has a non-string '" + std::string(key) + "'",
                           body, secrets);
  }
  return std::string(member->get_string());
}

// One element of message.tool_calls: {id, type: "function", function: {name, arguments}}.
tool_call read_tool_call(const json::value& element, std::size_t index, std::string_view body,
                         std::span<const net::http_header> secrets) {
  const auto fail = [&](std::string_view id, const std::string& what) {
    throw invalid_response("openai", describe_tool_call(index, id) + " " + what, body, secrets);
  };
  if (!element.is_object()) fail({}, "is not an object");
  const auto& object = element.get_object();
  tool_call call;
  call.id = string_member(object, "id", index, body, secrets);
  const std::string type = string_member(object, "type", index, body, secrets);
  if (!type.empty() && type != "function") fail(call.id, "has type '" + type.substr(0, 64) + "', not 'function'");
  const auto* function = object.if_contains("function");
  if (!function || !function->is_object()) fail(call.id, "has no function object");
  call.name = string_member(function->get_object(), "name", index, body, secrets);
  const auto* arguments = function->get_object().if_contains("arguments");
  if (!arguments) fail(call.id, "has no arguments");
  // OpenAI sends the arguments as a JSON text inside a string; an object
  // here is another wire format, not something to guess at.
  if (!arguments->is_string()) fail(call.id, "has arguments that are not a string (a JSON text in a string)");
  call.arguments = std::string(arguments->get_string());
  check_tool_call("openai", index, call, body, secrets);
  return call;
}

// Tool calls are rare and small beside a text answer: they are read from a
// document of the body, built only when the stream saw a non-empty
// choices[0].message.tool_calls, so plain answers keep the streaming path.
std::vector<tool_call> read_tool_calls(std::string_view body, std::span<const net::http_header> secrets) {
  unsigned char buffer[4096];
  json::monotonic_resource arena(buffer, sizeof buffer);
  const json::object root = parse_response_object(body, "openai", &arena, secrets);
  const json::value* calls = nullptr;
  if (const auto* choices = root.if_contains("choices"); choices && choices->is_array() && !choices->get_array().empty()) {
    if (const auto* choice = choices->get_array()[0].if_object()) {
      if (const auto* message = choice->if_contains("message"); message && message->is_object())
        calls = message->get_object().if_contains("tool_calls");
    }
  }
  std::vector<tool_call> out;
  if (!calls || !calls->is_array()) return out;
  const auto& array = calls->get_array();
  check_tool_call_count("openai", array.size(), body, secrets);
  out.reserve(array.size());
  for (std::size_t i = 0; i < array.size(); ++i) out.push_back(read_tool_call(array[i], i, body, secrets));
  return out;
}

}  // namespace

chat_result read_openai_completion(std::string_view body, std::span<const net::http_header> secrets) {
  // A model's text may hold invalid UTF-8 (a byte-level tokenizer cut a
  // character); it is kept as sent rather than failing the whole response.
  json::parse_options options;
  options.allow_invalid_utf8 = true;
  json::basic_parser<completion_handler> parser(options);
  error_code ec;
  const std::size_t used = parser.write_some(false, body.data(), body.size(), ec);
  if (!ec && used < body.size()) ec = json::error::extra_data;
  if (ec) throw invalid_response("openai", "the body is not JSON (" + ec.message() + ")", body, secrets);

  completion_fields& f = parser.handler().fields;
  if (!f.root_is_object) throw invalid_response("openai", "the body is not a JSON object", body, secrets);
  if (!f.first_choice_is_object) throw invalid_response("openai", "no choices[0] in the response", body, secrets);
  if (!f.message_is_object) throw invalid_response("openai", "no choices[0].message", body, secrets);
  chat_result result;
  if (f.content) result.text = std::move(*f.content);
  result.finish_reason = std::move(f.finish_reason);
  result.stop = classify_finish_reason(result.finish_reason);
  if (f.refusal && !f.refusal->empty()) {
    result.refusal = std::move(*f.refusal);
    result.stop = stop_reason::refusal;
  } else if (f.tool_calls) {
    result.tool_calls = read_tool_calls(body, secrets);
    // Some compatible servers say "stop" beside their calls (older Ollama,
    // llama.cpp): the turn still asks for the tools to run.
    if (result.stop == stop_reason::unknown || result.stop == stop_reason::complete)
      result.stop = stop_reason::tool_calls;
  }
  result.reasoning = std::move(f.reasoning);
  result.model = std::move(f.model);
  result.usage.prompt_tokens = f.prompt_tokens;
  result.usage.completion_tokens = f.completion_tokens;
  return result;
}

}  // namespace switchboard::models::detail
