// The structured-output ladder: pick a rung (native JSON Schema, strict where
// it can be, JSON-object mode, schema in the prompt), ask, parse and
// validate, re-ask with the validator's errors (the attempts' records and
// the re-ask message are in structured_attempts.cpp). Decisions
// (docs/adr/0008-structured-output-ladder-and-model-doubles.md, and
// docs/structured-outputs.md):
//  - strict schemas: sent whenever the model honours `strict` and the
//    schema's strict form exists (keywords strict mode cannot take but that
//    only narrow the answer are left out of what is sent and checked
//    locally); the value is validated against the ORIGINAL schema. Strict
//    mode turns optional properties into required nullable ones, so when the
//    value fails as is, null members at optional properties are removed and
//    it is validated again (the model used null to mean "absent").
//  - a provider rejecting the response format (format_rejection.hpp) makes
//    the ladder step down: strict json_schema → json_schema → json_object →
//    prompt (logged, recorded as an attempt with reason
//    response_format_unsupported, not counted against max_attempts). A
//    forced mode keeps its rung and only gives up strictness.
//  - how the model stopped: see structured.hpp.
//  - token budget: a re-ask is sent only when the tokens spent so far plus
//    the least the next attempt can cost (the last prompt and answer, which
//    the next prompt repeats) fit in the budget.
#include <switchboard/models/structured.hpp>

#include <switchboard/protocol/metrics.hpp>
#include <switchboard/protocol/strict_mode.hpp>
#include <switchboard/telemetry/tracer.hpp>

#include "format_rejection.hpp"
#include "strict_nulls.hpp"
#include <switchboard/models/detail/structured_ladder.hpp>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <memory>
#include <cctype>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace switchboard::models {

namespace asio = boost::asio;
namespace json = boost::json;
using protocol::compiled_schema;
using protocol::parse_result;
using protocol::validation_error;

namespace {

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

parse_result parse_answer(const std::string& text, const ladder& l, protocol::output_end end) {
  const compiled_schema& schema = l.options.schema;
  if (!l.strict) return protocol::parse_output(text, schema, l.options.metrics, end);

  // The strict path decides the outcome after normalizing, so the outcome is
  // recorded here rather than by the parser.
  parse_result result = protocol::parse_output(text, schema, nullptr, end);
  if (!result.ok() && result.stage != protocol::parse_stage::failed) {
    json::value normalized = result.value;
    if (detail::drop_optional_nulls(normalized, schema.json(), schema.json())) {
      result.errors = schema.validate(normalized);
      result.reason = reason_of(result.errors);
      result.value = std::move(normalized);
    }
  }
  if (l.options.metrics) l.options.metrics->record_outcome(result);
  return result;
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

}  // namespace

// --- how the model stopped ---------------------------------------------------

namespace {

using detail::quoted_words;

// A failed parse_result for an answer that never reached the parser.
parse_result not_an_answer(protocol::errc reason, std::string message, const chat_result& answer) {
  parse_result result;
  result.raw = answer.text;
  result.reason = reason;
  result.errors.push_back({"", std::move(message), reason});
  return result;
}

// The parser's verdict, or the reason the answer is no answer at all.
parse_result read_answer(const chat_result& answer, stop_reason stop, const ladder& l) {
  using protocol::errc;
  const bool no_text = answer.text.find_first_not_of(" \t\r\n") == std::string::npos;
  if (stop == stop_reason::refusal) {
    return not_an_answer(errc::refusal,
                         "the model refused: " + quoted_words(answer.refusal.empty() ? answer.text : answer.refusal),
                         answer);
  }
  if (stop == stop_reason::content_filter) {
    return not_an_answer(errc::content_filter, "the provider's content filter withheld the answer", answer);
  }
  if (stop == stop_reason::tool_calls && no_text) {
    return not_an_answer(errc::unexpected_tool_call,
                         "the model called a tool instead of answering; no tool is available here", answer);
  }
  if (no_text && !answer.reasoning.empty() && stop != stop_reason::truncated) {
    return not_an_answer(errc::reasoning_only, "the model returned reasoning but no answer", answer);
  }
  const auto end = stop == stop_reason::truncated ? protocol::output_end::truncated : protocol::output_end::complete;
  return parse_answer(answer.text, l, end);
}

using detail::raised_max_tokens;

std::string rung_name(const detail::rung& r) {
  return std::string(to_string(r.mode)) + (r.mode == output_mode::json_schema && r.strict ? " (strict)" : "");
}

[[noreturn]] void fail(model_errc code, const std::string& message, const ladder& l,
                       std::vector<attempt_record>& attempts, token_usage usage, std::string last_text = {}) {
  const std::string last_reason = attempts.empty() ? std::string() : attempts.back().reason;
  spdlog::warn("{}", message);
  throw structured_output_error(code, message, l.schema_id, last_reason, std::move(attempts), usage,
                                std::move(last_text));
}

}  // namespace

void apply_call_limits(const call_limits& limits, structured_options& options) {
  if (limits.max_attempts) options.max_attempts = *limits.max_attempts;
  if (limits.timeout) options.timeout = *limits.timeout;
  if (limits.force_mode) options.force_mode = *limits.force_mode;
  if (limits.metrics && !options.metrics) options.metrics = limits.metrics;
}

asio::awaitable<structured_result> complete_structured(chat_model& model, chat_request request,
                                                       structured_options options) {
  structured_result out;
  auto ladder = detail::complete_structured_into(model, std::move(request), std::move(options), out);
  co_await std::move(ladder);
  co_return out;
}

namespace {

// Ends the call when the model refused or its answer was filtered: the same
// request would only be refused again.
void fail_if_final(stop_reason stop, const chat_result& answer, const ladder& l,
                   std::vector<attempt_record>& attempts, const token_usage& usage) {
  if (stop == stop_reason::refusal) {
    fail(model_errc::structured_output_failed,
         "schema " + l.schema_id + ": the model refused to answer (refusal): " +
             quoted_words(answer.refusal.empty() ? answer.text : answer.refusal),
         l, attempts, usage, answer.text);
  }
  if (stop == stop_reason::content_filter) {
    fail(model_errc::structured_output_failed,
         "schema " + l.schema_id + ": the provider's content filter withheld the answer (content_filter)" +
             (answer.text.empty() ? std::string() : "; the text it let through: " + quoted_words(answer.text)),
         l, attempts, usage, answer.text);
  }
}


std::string attempts_text(int count) { return std::to_string(count) + " attempt" + (count == 1 ? "" : "s"); }

// Probes the provider rejected for their response format: sent, but given
// back (not counted against max_attempts, nor in "after N attempts").
int rejected_probes(const std::vector<attempt_record>& attempts) {
  return static_cast<int>(std::count_if(attempts.begin(), attempts.end(), [](const attempt_record& a) {
    return a.reason == format_rejected_reason;
  }));
}

}  // namespace

namespace {

// The request and options of a call, and the answer of the attempt in
// flight: on the heap, so that the ladder's frame stays within what Asio
// recycles (1,020 bytes) and malloc serves from its per-thread cache.
struct ladder_call {
  chat_request request;
  structured_options options;
  chat_result answer;
};

// A new attempt's record: how it was asked.
attempt_record attempt_of(output_mode mode, bool strict, const chat_request& request, int number) {
  attempt_record attempt;
  attempt.number = number;
  attempt.mode = mode;
  attempt.strict = strict;
  attempt.max_tokens = request.max_tokens;
  return attempt;
}

// What the ladder carries from one attempt to the next.
struct ladder_progress {
  std::vector<attempt_record> attempts;
  std::vector<chat_message> conversation;  // answers and re-asks so far
  token_usage usage;
  // The one count of attempts and the deadline, shared with the HTTP client.
  call_budget budget;
};

// The provider refused the response format of `rung` (a probe): the attempt
// is given back and the ladder steps down to `next`.
void step_down(const chat_model& model, ladder& l, output_mode& mode, const detail::rung& next,
               const std::string& rejection, const chat_request& request, ladder_progress& p) {
  attempt_record attempt = attempt_of(mode, l.strict, request, p.budget.attempts);
  ++p.budget.max_attempts;  // the rejected probe gives its attempt back
  spdlog::warn("schema {}: {} rejected response_format {} ({}); stepping down to {}", l.schema_id,
               model.provider(), rung_name({mode, l.strict}), rejection, rung_name(next));
  attempt.reason = format_rejected_reason;
  attempt.errors.push_back({"", "provider rejected response_format " + rung_name({mode, l.strict}) + ": " +
                                    rejection});
  p.attempts.push_back(std::move(attempt));
  mode = next.mode;
  l.strict = next.strict;
}

// Everything after an answer, outside the coroutine (whose frame g++ sizes
// for every local and temporary of its body, for as long as it waits): the
// answer read and recorded, then the result (true), or the request made
// ready to ask again (false), or the failure thrown.
bool settle_answer(ladder_call& call, output_mode mode, const ladder& l, ladder_progress& p,
                   telemetry::span& chat_span, structured_result& out) {
  chat_result& answer = call.answer;
  chat_request& request = call.request;
  const structured_options& options = call.options;
  p.usage += answer.usage;
  const stop_reason stop = stop_of(answer);
  parse_result parsed = read_answer(answer, stop, l);
  p.attempts.push_back(
      detail::record_of(parsed, answer, stop, attempt_of(mode, l.strict, request, p.budget.attempts)));
  const attempt_record& recorded = p.attempts.back();
  if (chat_span.is_recording()) {
    chat_span.set_attribute("switchboard.parser.stage", protocol::to_string(parsed.stage));
    if (!parsed.ok()) chat_span.set_attribute("switchboard.parser.reason", recorded.reason);
  }
  spdlog::debug("schema {}: attempt {} ({}, stop {}) {} {}", l.schema_id, recorded.number, to_string(mode),
                to_string(stop), protocol::to_string(parsed.stage), parsed.ok() ? "valid" : recorded.reason);

  if (parsed.ok()) {
    out = structured_result{std::move(parsed.value), std::move(p.attempts), p.usage, mode, std::move(answer)};
    return true;
  }
  fail_if_final(stop, answer, l, p.attempts, p.usage);
  const int made = p.budget.attempts - rejected_probes(p.attempts);
  if (p.budget.attempts >= p.budget.max_attempts) {
    fail(model_errc::structured_output_failed,
         "schema " + l.schema_id + ": no valid answer after " + attempts_text(made) + " (last reason: " +
             reason_with_detail(recorded) + ")",
         l, p.attempts, p.usage, answer.text);
  }
  if (p.budget.deadline && std::chrono::steady_clock::now() >= *p.budget.deadline) {
    fail(model_errc::timeout,
         "schema " + l.schema_id + ": no valid answer after " + attempts_text(made) + " within the call's " +
             std::to_string(options.timeout->count()) + " ms (last reason: " + reason_with_detail(recorded) + ")",
         l, p.attempts, p.usage, answer.text);
  }
  if (parsed.reason == protocol::errc::truncated && stop != stop_reason::complete) {
    // The same request with room to finish: the cut answer is not shown
    // back to the model, it would only cost tokens.
    const auto raised = raised_max_tokens(request, answer, options, p.usage);
    if (!raised) {
      fail(model_errc::token_budget_exhausted,
           "schema " + l.schema_id + ": the answer was cut off at the token limit (truncated) after " +
               attempts_text(made) + ", and max_tokens cannot be raised within the token budget of " +
               std::to_string(options.token_budget) + " and max_output_tokens " +
               std::to_string(options.max_output_tokens),
           l, p.attempts, p.usage, answer.text);
    }
    spdlog::info("schema {}: answer cut off at the token limit; asking again with max_tokens {}", l.schema_id,
                 *raised);
    request.max_tokens = *raised;
    return false;
  }
  const std::int64_t next_cost = answer.usage.prompt_tokens + answer.usage.completion_tokens;
  if (options.token_budget > 0 && p.usage.total() + next_cost > options.token_budget) {
    fail(model_errc::token_budget_exhausted,
         "schema " + l.schema_id + ": token budget of " + std::to_string(options.token_budget) +
             " exhausted after " + attempts_text(made) + " (" + std::to_string(p.usage.total()) +
             " tokens used, a re-ask needs at least " + std::to_string(next_cost) +
             " more; last reason: " + reason_with_detail(recorded) + ")",
         l, p.attempts, p.usage, answer.text);
  }
  if (!answer.text.empty()) p.conversation.push_back({chat_role::assistant, answer.text});
  p.conversation.push_back({chat_role::user, detail::reask_message(parsed, l.schema_id)});
  return false;
}

asio::awaitable<void> run_ladder(chat_model& model, std::unique_ptr<ladder_call> call, structured_result& out) {
  const structured_options& options = call->options;
  chat_request& request = call->request;
  if (options.max_attempts < 1)
    throw std::invalid_argument("complete_structured: max_attempts must be at least 1 (got " +
                                std::to_string(options.max_attempts) + ")");
  ladder l{options, schema_id_of(options), {}, false, nullptr};
  l.provider_name = provider_schema_name(options.schema_name.empty() ? options.schema.id()
                                                                     : options.schema_name);
  output_mode mode = options.force_mode.value_or(model.capabilities().best_mode);
  if (mode == output_mode::json_schema) l.strict = use_strict(model, l);

  ladder_progress p;
  p.budget.max_attempts = options.max_attempts;
  if (options.timeout) p.budget.deadline = std::chrono::steady_clock::now() + *options.timeout;
  request.budget = &p.budget;
  for (;;) {
    // The request's chat span, left open by a traced_model below so that the
    // parser's verdict lands on it; ends with this iteration.
    telemetry::span chat_span;
    request.chat_span = &chat_span;
    request.structured_rung = mode;
    std::optional<detail::rung> next;
    std::string rejection;
    const int sent_before = p.budget.attempts;
    try {
      call->answer = co_await ask(model, mode, request, p.conversation, l);
    } catch (const model_error& error) {
      next = detail::rung_after_rejection(error, {mode, l.strict});
      // A forced mode keeps its rung; only strictness may be given up.
      if (!next || (options.force_mode && next->mode != mode)) throw;
      rejection = error.provider_message().empty() ? error.what() : error.provider_message();
    }
    // A model that sends nothing it counts (a double, a cache hit) answered
    // in one attempt.
    if (p.budget.attempts == sent_before) ++p.budget.attempts;
    if (next) {
      step_down(model, l, mode, *next, rejection, request, p);
      continue;
    }
    if (settle_answer(*call, mode, l, p, chat_span, out)) co_return;
  }
}

}  // namespace

asio::awaitable<void> detail::complete_structured_into(chat_model& model, chat_request request,
                                                       structured_options options, structured_result& out) {
  // Aggregate-initialized in place: no temporary to move the request through again.
  return run_ladder(model, std::unique_ptr<ladder_call>(new ladder_call{std::move(request), std::move(options), {}}),
                    out);
}

}  // namespace switchboard::models
