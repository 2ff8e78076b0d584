// The one asynchronous interface every chat model implements: the
// OpenAI-compatible and Anthropic HTTP clients, the caching decorator, and
// the scripted and replay doubles for tests and offline runs.
//
// complete() suspends the calling coroutine until the model answered.
// Completion: returns the chat_result, or throws model_error (see
// model_error.hpp) naming the provider, the HTTP status and the provider's
// own message. Cancellation: honours the cancellation slot of the awaiting
// coroutine (asio::this_coro::cancellation_state); a cancelled request throws
// model_error(model_errc::cancelled) promptly and frees its connection.
// Lifetime: the model must outlive every pending complete().
//
// Tool calling (tool_call.hpp, docs/models.md "Tool calls"): a request may
// offer tools; the model may answer with tool calls instead of (or beside)
// text, and later requests carry those calls and their results back. This
// interface only transports them; the tool loop runs the tools.
//
// Thread-safety: implementations are safe to call concurrently from many
// coroutines, on one or several threads.
#pragma once

#include <switchboard/models/tool_call.hpp>
#include <switchboard/net/request_budget.hpp>
#include <switchboard/protocol/json_document.hpp>
#include <switchboard/telemetry/span_data.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/json/value.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace switchboard::telemetry { class span; }

namespace switchboard::models {

// `tool`: the result of one tool call (OpenAI role "tool"; Anthropic a
// tool_result block in a user turn).
enum class chat_role { system, user, assistant, tool };
std::string_view to_string(chat_role role) noexcept;

// One turn of the conversation. The tool members are `{}`-initialized so
// that `{role, content}` stays the whole of an ordinary message.
struct chat_message {
  chat_role role = chat_role::user;
  // assistant: its text (may be empty beside tool calls); tool: the result
  // as text (a JSON text is fine); others: the message.
  std::string content;
  // assistant: the calls the model made in this turn, in its order.
  std::vector<tool_call> tool_calls{};
  // tool: the id of the call this result answers.
  std::string tool_call_id{};
  // tool: the call failed; content says why. Anthropic: is_error: true.
  // OpenAI has no such flag: say so in content.
  bool is_error{};
};

// What the provider is asked to return.
struct response_format {
  enum class kind { none, json_object, json_schema };
  kind type = kind::none;
  std::string name;            // json_schema: the schema's name
  bool strict = false;         // json_schema: provider enforces the schema
  // json_schema: the schema itself. A json_document so that the schema an
  // agent sends with every request is shared and serialized only once.
  protocol::json_document schema;
};

// The rungs of the structured-output ladder, best first.
enum class output_mode {
  json_schema,    // native JSON Schema (strict where the provider supports it)
  json_object,    // JSON-object mode, schema in the prompt
  prompt_schema,  // plain text mode, schema and instructions in the prompt
};
std::string_view to_string(output_mode mode) noexcept;

// The attempts and the time one call may spend, shared by every request the
// call sends, so that attempts are counted once, in one place, and one
// deadline bounds them all (docs/models.md, "Attempts and deadlines"):
//
//  - the HTTP clients count every request they send, transport retries
//    included, and retry (429, 5xx, timeouts, lost connections) only while
//    `attempts < max_attempts` and the deadline has not passed; each attempt
//    is bounded by the time left, and a retry never waits past the deadline;
//  - complete_structured makes one budget per call, re-asks only while
//    attempts are left, and counts a complete() that sent nothing it could
//    count (a double, a cache hit) as one attempt.
//
// The network layer's request budget (net/request_budget.hpp): not
// thread-safe, one call uses it from one coroutine at a time.
using call_budget = net::request_budget;

// Receives an answer while the model writes it (docs/models.md,
// "Streaming"). A request opts in with chat_request::stream; the HTTP
// clients then ask the provider for a stream (OpenAI `stream: true` with
// usage, Anthropic message stream events) and hand its pieces here as they
// arrive. complete() still returns the whole chat_result, the same as
// without a sink: the sink sees the answer early, never instead.
//
// What the sink sees:
//  - on_text: the next piece of the answer's text, whole UTF-8 characters
//    only (a character cut between two network reads is held back until it
//    is whole; ill-formed bytes arrive as U+FFFD). For a structured answer
//    this is the JSON as the model writes it (Anthropic: the forced tool's
//    input, so the final text may differ in spacing or carry the
//    {"value": ...} wrapper of a non-object schema).
//  - on_tool_call: the next piece of one tool call; `index` is the call's
//    place in the answer (0-based), `id` and `name` are set on its first
//    piece, `arguments` is the next piece of its argument text.
//  - on_restart: the attempt that delivered the pieces so far failed (a
//    stall, a lost connection, a truncated stream) and the client retries:
//    forget everything delivered since the last on_restart (or the start);
//    the retry's pieces follow. Not called when nothing was delivered.
// Deltas are untrusted model output: escape them before showing them.
//
// Thread and lifetime: called on the executor of the coroutine awaiting
// complete() (the client's, a strand when that is one), never
// concurrently for one request, and never after complete() returned or
// threw. Not owned: it must outlive complete(). A callback must not
// block; an exception it throws fails the request with that exception.
// The doubles (scripted, replay, caching hits) deliver a whole answer as one
// piece of text and one piece per tool call (deliver_whole).
class stream_sink {
 public:
  struct tool_call_delta {
    std::size_t index = 0;
    std::string_view id;         // first piece of the call only
    std::string_view name;       // first piece of the call only
    std::string_view arguments;  // the next piece of the arguments' text; may be empty
  };

  virtual void on_text(std::string_view delta) = 0;
  virtual void on_tool_call(const tool_call_delta& delta) = 0;
  virtual void on_restart() {}

  virtual ~stream_sink() = default;
};

struct chat_result;

// Hands a whole answer to `sink` (may be null: nothing happens): its text as
// one on_text (when not empty) and each tool call as one on_tool_call. For
// models that have the answer at once (doubles, caches).
void deliver_whole(stream_sink* sink, const chat_result& result);

struct chat_request {
  std::vector<chat_message> messages;
  std::string model;                     // empty: the client's default model
  std::optional<double> temperature;
  std::optional<int> max_tokens;
  std::optional<std::int64_t> seed;
  std::vector<std::string> stop;
  response_format format;
  // Version of the prompt template that produced the messages; part of
  // every cache key and trace. Not sent to the provider.
  std::string prompt_version;
  // The call this request belongs to (see call_budget); nullptr: a call of
  // its own under the client's retry policy. Not sent, not part of the
  // cache key; must outlive complete().
  call_budget* budget = nullptr;
  // Tools the model may call (tool_call.hpp). Empty: none offered, and
  // neither tools nor tool_choice nor parallel_tool_calls is sent. With a
  // json_schema `format`, the Anthropic client adds its own forced
  // structured-output tool to these and forces it (tool_choice is then
  // ignored): that request asks for the final answer, not for a call.
  std::vector<tool_definition> tools{};
  // How the model may choose; nullopt: the provider's default (auto).
  std::optional<models::tool_choice> tool_choice{};
  // Whether the model may make several calls in one turn; nullopt: the
  // provider's default (yes). OpenAI: parallel_tool_calls; Anthropic:
  // tool_choice.disable_parallel_tool_use.
  std::optional<bool> parallel_tool_calls{};
  // Stream the answer to this sink as it arrives (see stream_sink); nullptr:
  // no streaming. Not owned, not sent, not part of the cache key or the
  // request hash; must outlive complete().
  stream_sink* stream = nullptr;
  // --- tracing (docs/observability.md, ADR 0034) ---
  // The span this request belongs to: the step's invoke_agent span (set by
  // the agent from agent_context::traces), or, below a traced_model, the
  // request's own chat span. When valid, the HTTP clients send it as W3C
  // traceparent (and tracestate) on every attempt; invalid (the default,
  // tracing off): nothing is added. Not part of the cache key or the hash.
  telemetry::span_context trace{};
  // The structured-output ladder's rung this request is on (set by
  // complete_structured); nullopt: not a structured request. For traces only.
  std::optional<output_mode> structured_rung{};
  // Where a traced_model leaves the request's chat span open instead of
  // ending it, so that the caller can add what only it knows (the parser
  // stage) and end it; null: the decorator ends the span. Not owned.
  telemetry::span* chat_span = nullptr;
};

struct token_usage {
  std::int64_t prompt_tokens = 0;
  std::int64_t completion_tokens = 0;
  std::int64_t total() const noexcept { return prompt_tokens + completion_tokens; }
  token_usage& operator+=(const token_usage& other) noexcept {
    prompt_tokens += other.prompt_tokens;
    completion_tokens += other.completion_tokens;
    return *this;
  }
};

// Why the model stopped, in the providers' common terms. The structured
// ladder never accepts a `truncated` answer as complete, and ends at once
// (without re-asking) on `refusal` and `content_filter`.
enum class stop_reason {
  unknown,         // not reported, or a value this library does not know
  complete,        // the model finished its answer (OpenAI stop, Anthropic end_turn)
  truncated,       // cut off at the token limit (length, max_tokens)
  refusal,         // the model declined (OpenAI message.refusal, Anthropic refusal)
  content_filter,  // the provider withheld or cut the answer
  tool_calls,      // the model asked to call a tool instead of answering
};
std::string_view to_string(stop_reason reason) noexcept;  // "complete", "truncated", ...

// The stop_reason a provider's finish/stop reason string stands for, in the
// OpenAI and Anthropic vocabularies ("stop", "length", "max_tokens",
// "content_filter", "refusal", "tool_calls", ...); unknown otherwise.
stop_reason classify_finish_reason(std::string_view finish_reason) noexcept;

struct chat_result {
  std::string text;
  std::string finish_reason;  // as the provider said it: "stop", "length", "tool_use", ...
  // The provider's stop reason mapped; unknown: derive it from
  // finish_reason (stop_of below). Set by the HTTP clients.
  stop_reason stop = stop_reason::unknown;
  std::string refusal;        // the model's own words when it refused
  // Reasoning the model returned beside its answer (reasoning_content,
  // Anthropic thinking blocks). Kept for the record; never parsed as the answer.
  std::string reasoning;
  token_usage usage;
  std::string model;          // as reported by the provider
  std::chrono::microseconds latency{0};
  std::string raw_body;       // the provider's response body, unmodified
  // The tools the model asked to call in this turn, in its order (several
  // when it calls them in parallel); stop is then `tool_calls`. At most
  // max_tool_calls_per_turn, each with an id and a valid name; arguments
  // unparsed (tool_call.hpp). `text` may hold words said beside them.
  std::vector<tool_call> tool_calls{};
};

// `result.stop`, or when that is unknown the classification of its finish_reason.
stop_reason stop_of(const chat_result& result) noexcept;

// What a model supports, so complete_structured can pick the ladder's rung.
struct model_capabilities {
  output_mode best_mode = output_mode::prompt_schema;
  bool strict_schema = false;  // honours strict: true
};

class chat_model {
 public:
  virtual ~chat_model() = default;

  virtual boost::asio::awaitable<chat_result> complete(chat_request request) = 0;

  // Provider name for logs and errors: "openai", "anthropic", "scripted", ...
  virtual std::string_view provider() const noexcept = 0;
  virtual model_capabilities capabilities() const noexcept { return {}; }
};

}  // namespace switchboard::models
