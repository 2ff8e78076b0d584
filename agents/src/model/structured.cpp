// The structured-output ladder: pick a rung (native JSON Schema, JSON-object
// mode, schema in the prompt), ask, parse and validate, re-ask with the
// validator's errors. Decisions (docs/adr/0008-structured-output-ladder-and-model-doubles.md):
//  - strict schemas: sent only when the model says it honours `strict` and
//    the schema uses no keyword the provider's strict mode rejects; the value
//    is validated against the ORIGINAL schema. Strict mode turns optional
//    properties into required nullable ones, so when the value fails as is,
//    null members at optional properties are removed and it is validated
//    again (the model used null to mean "absent").
//  - a provider answering HTTP 400 about response_format on a rung it was
//    configured for makes the ladder step down one rung (logged, recorded as
//    an attempt with reason response_format_unsupported, not counted against
//    max_attempts: at most two extra requests). Never when the mode is forced.
//  - token budget: a re-ask is sent only when the tokens spent so far plus
//    the least the next attempt can cost (the last prompt and answer, which
//    the next prompt repeats) fit in the budget.
#include <switchboard/agents/model/structured.hpp>

#include <switchboard/protocol/metrics.hpp>
#include <switchboard/protocol/strict_mode.hpp>

#include "structured_ladder.hpp"

#include <boost/json/object.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace switchboard::agents {

namespace asio = boost::asio;
namespace json = boost::json;
using protocol::compiled_schema;
using protocol::parse_result;
using protocol::validation_error;

namespace {

constexpr std::size_t max_errors_in_reask = 10;
constexpr std::size_t provider_name_limit = 64;  // OpenAI: ^[a-zA-Z0-9_-]{1,64}$
constexpr std::string_view format_rejected_reason = "response_format_unsupported";

// What one call of complete_structured works with.
struct ladder {
  const structured_options& options;
  std::string schema_id;      // names the schema in errors and logs
  std::string provider_name;  // the name sent in response_format
  bool strict = false;        // send the strict form with strict: true
  const protocol::strict_form* strict_schema = nullptr;  // set when strict; owned by options.schema
};

std::string schema_id_of(const structured_options& options) {
  if (!options.schema.id().empty()) return options.schema.id();
  return options.schema_name.empty() ? std::string("(unnamed)") : options.schema_name;
}

// Providers restrict the schema name's alphabet; ids such as
// "scheduling.output@1" are mapped to "scheduling_output_1".
std::string provider_schema_name(std::string_view name) {
  std::string out;
  for (char c : name.substr(0, provider_name_limit)) {
    const bool allowed = std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
    out.push_back(allowed ? c : '_');
  }
  return out.empty() ? std::string("output") : out;
}

// True the first time a schema goes non-strict to a provider: the reason is
// the same on every request, so it is logged once, not once per call.
bool first_report(std::string_view schema_id, std::string_view provider) {
  if (!spdlog::should_log(spdlog::level::info)) return false;
  static std::mutex mutex;
  static std::set<std::string, std::less<>> reported;
  std::string key = std::string(schema_id) + '\n' + std::string(provider);
  std::lock_guard lock(mutex);
  return reported.insert(std::move(key)).second;
}

bool use_strict(const chat_model& model, ladder& l) {
  if (!model.capabilities().strict_schema) return false;
  const auto provider = model.provider() == "anthropic" ? protocol::strict_provider::anthropic
                                                        : protocol::strict_provider::openai;
  // Computed once per compiled schema: make_strict and the keyword check
  // walk and copy the whole schema.
  const auto& form = l.options.schema.strict_form(provider);
  const auto& unsupported = form.unsupported;
  if (unsupported.empty()) {
    l.strict_schema = &form;
    return true;
  }
  if (first_report(l.schema_id, model.provider())) {
    spdlog::info("schema {}: sending a non-strict json_schema to {}: {}{}", l.schema_id,
                 model.provider(), unsupported.front().to_string(),
                 unsupported.size() > 1 ? " (and more)" : "");
  }
  return false;
}

std::string schema_instructions(const ladder& l) {
  return "Answer with a single JSON value that is valid against this JSON Schema:\n" +
         l.options.schema.document().text() +
         "\nReply with the JSON value only: no prose, no Markdown code fences.";
}

void add_system_instructions(std::vector<chat_message>& messages, const std::string& text) {
  if (!messages.empty() && messages.front().role == chat_role::system) {
    messages.front().content += "\n\n" + text;
  } else {
    messages.insert(messages.begin(), chat_message{chat_role::system, text});
  }
}

// Plain-text models often follow the last user turn best; append there.
void add_user_instructions(std::vector<chat_message>& messages, const std::string& text) {
  auto last_user = std::find_if(messages.rbegin(), messages.rend(),
                                [](const chat_message& m) { return m.role == chat_role::user; });
  if (last_user != messages.rend()) {
    last_user->content += "\n\n" + text;
  } else {
    messages.push_back(chat_message{chat_role::user, text});
  }
}

chat_request request_for(output_mode mode, const chat_request& base,
                         const std::vector<chat_message>& conversation, const ladder& l) {
  chat_request request = base;
  request.format = {};
  switch (mode) {
    case output_mode::json_schema:
      request.format.type = response_format::kind::json_schema;
      request.format.name = l.provider_name;
      request.format.strict = l.strict;
      request.format.schema = l.strict ? l.strict_schema->schema : l.options.schema.document();
      break;
    case output_mode::json_object:
      request.format.type = response_format::kind::json_object;
      add_system_instructions(request.messages, schema_instructions(l));
      break;
    case output_mode::prompt_schema:
      add_user_instructions(request.messages, schema_instructions(l));
      break;
  }
  request.messages.insert(request.messages.end(), conversation.begin(), conversation.end());
  return request;
}

// Starts the model call. Not a coroutine: the request it builds is moved
// into the model's frame, so complete_structured's frame (alive for the
// whole call) needs no slot for it.
asio::awaitable<chat_result> ask(chat_model& model, output_mode mode, const chat_request& base,
                                 const std::vector<chat_message>& conversation, const ladder& l) {
  return model.complete(request_for(mode, base, conversation, l));
}

// --- strict-mode nulls -------------------------------------------------------

const json::value* resolve_local_ref(const json::value& root, const json::value& schema) {
  const json::value* node = &schema;
  for (int hops = 0; hops < 16; ++hops) {
    const auto* object = node->if_object();
    const auto* ref = object ? object->if_contains("$ref") : nullptr;
    if (!ref || !ref->is_string()) return node;
    const std::string_view target = ref->get_string();
    if (!target.starts_with('#')) return nullptr;
    boost::system::error_code ec;
    node = root.find_pointer(target.substr(1), ec);
    if (!node) return nullptr;
  }
  return nullptr;
}

bool is_required(const json::object& schema, std::string_view key) {
  const auto* required = schema.if_contains("required");
  if (!required || !required->is_array()) return false;
  const auto& list = required->get_array();
  return std::any_of(list.begin(), list.end(),
                     [&](const json::value& name) { return name.is_string() && name.get_string() == key; });
}

// Removes null members at optional properties, following properties, items
// and local $refs of the original schema. Returns whether anything changed.
bool drop_optional_nulls(json::value& value, const json::value& schema_node, const json::value& root) {
  const json::value* resolved = resolve_local_ref(root, schema_node);
  const auto* schema = resolved ? resolved->if_object() : nullptr;
  if (!schema) return false;
  bool changed = false;
  if (auto* object = value.if_object()) {
    const auto* properties = schema->if_contains("properties");
    if (!properties || !properties->is_object()) return false;
    std::vector<std::string> nulls;
    for (auto& member : *object) {
      const auto* property = properties->get_object().if_contains(member.key());
      if (!property) continue;
      if (member.value().is_null() && !is_required(*schema, member.key()))
        nulls.emplace_back(member.key());
      else
        changed |= drop_optional_nulls(member.value(), *property, root);
    }
    for (const auto& key : nulls) object->erase(key);
    return changed || !nulls.empty();
  }
  if (auto* array = value.if_array()) {
    const auto* items = schema->if_contains("items");
    if (!items) return false;
    for (std::size_t i = 0; i < array->size(); ++i) {
      if (items->is_array()) {
        if (i < items->get_array().size())
          changed |= drop_optional_nulls((*array)[i], items->get_array()[i], root);
      } else {
        changed |= drop_optional_nulls((*array)[i], *items, root);
      }
    }
  }
  return changed;
}

// --- parsing -----------------------------------------------------------------

// The same rule as parse_output: the most basic problem names the failure
// (a missing field explains later type errors better than they do).
std::optional<protocol::errc> reason_of(const std::vector<validation_error>& errors) {
  using protocol::errc;
  if (errors.empty()) return std::nullopt;
  for (const errc kind : {errc::schema_missing_field, errc::schema_type_error,
                          errc::schema_violation, errc::invariant_violation}) {
    for (const auto& error : errors)
      if (error.kind == kind) return kind;
  }
  return errors.front().kind;
}

parse_result parse_answer(const std::string& text, const ladder& l) {
  const compiled_schema& schema = l.options.schema;
  if (!l.strict) return protocol::parse_output(text, schema, l.options.metrics);

  // The strict path decides the outcome after normalizing, so the outcome is
  // recorded here rather than by the parser.
  parse_result result = protocol::parse_output(text, schema, nullptr);
  if (!result.ok() && result.stage != protocol::parse_stage::failed) {
    json::value normalized = result.value;
    if (drop_optional_nulls(normalized, schema.json(), schema.json())) {
      result.errors = schema.validate(normalized);
      result.reason = reason_of(result.errors);
      result.value = std::move(normalized);
    }
  }
  if (l.options.metrics) l.options.metrics->record_outcome(result);
  return result;
}

// --- messages ----------------------------------------------------------------

std::string reask_message(const parse_result& parsed, const ladder& l) {
  const bool json_failed = parsed.stage == protocol::parse_stage::failed;
  std::string text = json_failed
      ? "Your previous answer could not be read as JSON (" + std::string(parsed.reason_code()) + ")"
      : "Your previous answer is not valid against the JSON Schema \"" + l.schema_id + "\" (" +
            std::string(parsed.reason_code()) + ")";
  text += parsed.errors.empty() ? "." : ":";
  const std::size_t shown = std::min(parsed.errors.size(), max_errors_in_reask);
  for (std::size_t i = 0; i < shown; ++i) text += "\n- " + parsed.errors[i].to_string();
  if (parsed.errors.size() > shown)
    text += "\n- ... and " + std::to_string(parsed.errors.size() - shown) + " more";
  text += "\nReply with the corrected, complete JSON value only: no prose, no Markdown code fences.";
  return text;
}

// "schema_type_error: /data/x: expected number, got string": the reason and
// the first error of that kind.
std::string reason_with_detail(const attempt_record& attempt) {
  if (attempt.errors.empty()) return attempt.reason;
  auto match = std::find_if(attempt.errors.begin(), attempt.errors.end(), [&](const validation_error& e) {
    return protocol::to_string(e.kind) == attempt.reason;
  });
  if (match == attempt.errors.end()) match = attempt.errors.begin();
  return attempt.reason + ": " + match->to_string();
}

// --- the ladder --------------------------------------------------------------

// A 400 whose message names response_format (or the mode) means the rung
// itself is unsupported, not the request content.
bool is_format_rejection(const model_error& error) {
  if (error.errc() != model_errc::http_status || error.http_status() != 400) return false;
  std::string text = error.provider_message() + " " + error.what();
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (std::string_view needle : {"response_format", "json_schema", "json_object"})
    if (text.find(needle) != std::string::npos) return true;
  return false;
}

output_mode next_rung(output_mode mode) {
  return mode == output_mode::json_schema ? output_mode::json_object : output_mode::prompt_schema;
}

[[noreturn]] void fail(model_errc code, const std::string& message, const ladder& l,
                       std::vector<attempt_record>& attempts, token_usage usage) {
  const std::string last_reason = attempts.empty() ? std::string() : attempts.back().reason;
  spdlog::warn("{}", message);
  throw structured_output_error(code, message, l.schema_id, last_reason, std::move(attempts), usage);
}

}  // namespace

asio::awaitable<structured_result> complete_structured(chat_model& model, chat_request request,
                                                       structured_options options) {
  structured_result out;
  auto ladder = detail::complete_structured_into(model, std::move(request), std::move(options), out);
  co_await std::move(ladder);
  co_return out;
}

asio::awaitable<void> detail::complete_structured_into(chat_model& model, chat_request request,
                                                       structured_options options, structured_result& out) {
  if (options.max_attempts < 1)
    throw std::invalid_argument("complete_structured: max_attempts must be at least 1 (got " +
                                std::to_string(options.max_attempts) + ")");
  ladder l{options, schema_id_of(options), {}, false, nullptr};
  l.provider_name = provider_schema_name(options.schema_name.empty() ? options.schema.id()
                                                                     : options.schema_name);
  output_mode mode = options.force_mode.value_or(model.capabilities().best_mode);
  if (mode == output_mode::json_schema) l.strict = use_strict(model, l);

  std::vector<attempt_record> attempts;
  std::vector<chat_message> conversation;  // answers and re-asks so far
  token_usage usage;
  int answers = 0;
  for (;;) {
    attempt_record attempt;
    attempt.number = static_cast<int>(attempts.size()) + 1;
    attempt.mode = mode;

    std::optional<std::string> rejection;
    chat_result answer;
    try {
      answer = co_await ask(model, mode, request, conversation, l);
    } catch (const model_error& error) {
      if (options.force_mode || mode == output_mode::prompt_schema || !is_format_rejection(error))
        throw;
      rejection = error.provider_message().empty() ? error.what() : error.provider_message();
    }
    if (rejection) {
      spdlog::warn("schema {}: {} rejected response_format {} ({}); stepping down to {}",
                   l.schema_id, model.provider(), to_string(mode), *rejection,
                   to_string(next_rung(mode)));
      attempt.reason = format_rejected_reason;
      attempt.errors.push_back({"", "provider rejected response_format " +
                                        std::string(to_string(mode)) + ": " + *rejection});
      attempts.push_back(std::move(attempt));
      mode = next_rung(mode);
      l.strict = false;
      continue;
    }

    ++answers;
    usage += answer.usage;
    parse_result parsed = parse_answer(answer.text, l);
    attempt.stage = parsed.stage;
    attempt.reason = std::string(parsed.reason_code());
    attempt.errors = parsed.errors;
    attempt.usage = answer.usage;
    attempts.push_back(attempt);
    spdlog::debug("schema {}: attempt {} ({}) {} {}", l.schema_id, attempt.number, to_string(mode),
                  protocol::to_string(parsed.stage), parsed.ok() ? "valid" : attempt.reason);

    if (parsed.ok()) {
      out = structured_result{std::move(parsed.value), std::move(attempts), usage, mode, std::move(answer)};
      co_return;
    }
    if (answers >= options.max_attempts) {
      fail(model_errc::structured_output_failed,
           "schema " + l.schema_id + ": no valid answer after " + std::to_string(answers) +
               " attempt" + (answers == 1 ? "" : "s") + " (last reason: " +
               reason_with_detail(attempt) + ")",
           l, attempts, usage);
    }
    const std::int64_t next_cost = answer.usage.prompt_tokens + answer.usage.completion_tokens;
    if (options.token_budget > 0 && usage.total() + next_cost > options.token_budget) {
      fail(model_errc::token_budget_exhausted,
           "schema " + l.schema_id + ": token budget of " + std::to_string(options.token_budget) +
               " exhausted after " + std::to_string(answers) + " attempt" +
               (answers == 1 ? "" : "s") + " (" + std::to_string(usage.total()) +
               " tokens used, a re-ask needs at least " + std::to_string(next_cost) +
               " more; last reason: " + reason_with_detail(attempt) + ")",
           l, attempts, usage);
    }
    conversation.push_back({chat_role::assistant, answer.text});
    conversation.push_back({chat_role::user, reask_message(parsed, l)});
  }
}

}  // namespace switchboard::agents
