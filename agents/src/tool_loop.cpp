// The tool loop of an llm_agent: model -> tool calls -> results -> model ...
#include "tool_loop.hpp"
#include "tool_calls.hpp"

#include <switchboard/agents/tool_journal.hpp>
#include <switchboard/agents/tool_registry.hpp>
#include <switchboard/protocol/metrics.hpp>
#include <switchboard/protocol/output_parser.hpp>

#include <switchboard/models/detail/structured_ladder.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <spdlog/logger.h>

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>

namespace switchboard::agents::detail {

namespace asio = boost::asio;
namespace json = boost::json;
using clock = std::chrono::steady_clock;

namespace {

// Ids the calls of one turn can be told apart by: an empty or repeated id
// (some models and servers send them) becomes "call_<round>_<index>", in the
// turn the conversation and the journal keep alike.
void distinct_ids(int round, std::vector<tool_call>& calls) {
  std::set<std::string, std::less<>> seen;
  for (std::size_t i = 0; i < calls.size(); ++i) {
    if (calls[i].id.empty() || seen.contains(calls[i].id)) {
      calls[i].id = "call_" + std::to_string(round) + "_" + std::to_string(i);
    }
    seen.insert(calls[i].id);
  }
}

// The model's turn as the journal keeps it, and back.
json::object turn_record(int round, const chat_message& assistant) {
  json::array calls;
  for (const auto& c : assistant.tool_calls) {
    calls.push_back(json::object{{"id", c.id}, {"name", c.name}, {"arguments", c.arguments}});
  }
  return {{"kind", "turn"}, {"round", round}, {"text", assistant.content}, {"calls", std::move(calls)}};
}

chat_message replayed_turn(const json::object& record, const std::string& agent) {
  chat_message assistant{chat_role::assistant, string_field(record, "text", agent)};
  const auto& calls = field(record, "calls", agent);
  if (!calls.is_array() || calls.get_array().empty()) malformed(agent, "a turn without calls");
  for (const auto& c : calls.get_array()) {
    if (!c.is_object()) malformed(agent, "a call that is not an object");
    const auto& o = c.get_object();
    assistant.tool_calls.push_back(
        tool_call{string_field(o, "id", agent), string_field(o, "name", agent), string_field(o, "arguments", agent)});
  }
  return assistant;
}

// Asks the model to end with the envelope, so that its last turn can be taken as it is.
void add_answer_instructions(std::vector<chat_message>& messages, const structured_options& options) {
  const std::string text =
      "When you have what you need, answer without calling a tool: reply with one JSON value valid against "
      "this JSON Schema, and nothing else:\n" +
      json::serialize(options.schema.json());
  if (!messages.empty() && messages.front().role == chat_role::system) {
    messages.front().content += "\n\n" + text;
  } else {
    messages.insert(messages.begin(), chat_message{chat_role::system, text});
  }
}

// The model's final turn as the ladder's result, when it is a complete,
// valid value; false otherwise (the ladder then asks), with `rejected` set
// to the parser's verdict when the turn was complete but invalid.
bool take_final(chat_result& turn, const chat_request& request, const structured_options& options,
                structured_result& out, std::optional<protocol::parse_result>& rejected) {
  const stop_reason stop = stop_of(turn);
  if ((stop != stop_reason::complete && stop != stop_reason::unknown) || !turn.refusal.empty()) return false;
  auto parsed = protocol::parse_output(turn.text, options.schema, nullptr, protocol::output_end::complete);
  if (!parsed.ok()) {
    rejected = std::move(parsed);
    return false;
  }
  if (options.metrics) options.metrics->record_outcome(parsed);
  attempt_record attempt;
  attempt.number = 1;
  attempt.mode = output_mode::prompt_schema;
  attempt.max_tokens = request.max_tokens;
  out.attempts = {models::detail::record_of(parsed, turn, stop, std::move(attempt))};
  out.value = std::move(parsed.value);
  out.usage = turn.usage;
  out.mode = output_mode::prompt_schema;
  out.last = std::move(turn);
  return true;
}

[[noreturn]] void fail(model_errc code, const std::string& message, const structured_options& options,
                       std::string reason) {
  throw structured_output_error(code, message, options.schema.id(), std::move(reason), {}, {});
}

// Ends the call on a final turn that was refused or filtered, with that
// turn as the call's attempt (for the step's audit entry), as the ladder
// does.
[[noreturn]] void fail_final(const chat_result& last, stop_reason stop, const chat_request& request,
                             const structured_options& options, const token_usage& used, const std::string& message) {
  attempt_record attempt;
  attempt.number = 1;
  attempt.mode = output_mode::prompt_schema;
  attempt.max_tokens = request.max_tokens;
  attempt.stage = protocol::parse_stage::failed;
  attempt.reason = stop == stop_reason::refusal ? "refusal" : "content_filter";
  attempt.stop = stop;
  attempt.finish_reason = last.finish_reason;
  attempt.usage = last.usage;
  std::string reason = attempt.reason;
  throw structured_output_error(model_errc::structured_output_failed, message, options.schema.id(), std::move(reason),
                                {std::move(attempt)}, used, last.text);
}

void check_time(const std::optional<clock::time_point>& deadline, const tool_loop_settings& s,
                const structured_options& options) {
  if (deadline && clock::now() >= *deadline) {
    fail(model_errc::timeout, "agent '" + s.agent + "': the call's time ran out during the tool loop", options,
         "timeout");
  }
}

// The model's next turn: replayed from the journal when an earlier run of
// the step recorded it (the model is not asked again), else asked and, when
// it calls tools, recorded before any of them runs.
asio::awaitable<std::optional<chat_message>> next_turn(chat_model& model, const chat_request& request,
                                                       const loop_scope& scope, int round, chat_result& fresh) {
  if (const auto* recorded = scope.replay.turn(round)) co_return replayed_turn(*recorded, scope.settings.agent);
  fresh = co_await model.complete(request);
  co_return std::nullopt;
}

// Throws approval_required for the calls of a turn that wait for the user.
void ask_approval(std::vector<call_slot>& slots) {
  std::vector<pending_tool_call> pending;
  for (auto& slot : slots) {
    if (slot.pending) pending.push_back(std::move(*slot.pending));
  }
  if (!pending.empty()) throw approval_required(std::move(pending));
}

}  // namespace

asio::awaitable<void> run_tool_loop(chat_model& model, chat_request request, structured_options options,
                                    tool_loop_settings s, agent_context& context, structured_result& out) {
  std::optional<clock::time_point> deadline;
  if (options.timeout) deadline = clock::now() + *options.timeout;
  std::vector<chat_message> base = request.messages;  // for the ladder, which adds its own instructions
  std::vector<chat_message> conversation;             // assistant turns and tool results
  add_answer_instructions(request.messages, options);
  request.tools = s.tools->definitions(*s.allowed);
  request.tool_choice = tool_choice::automatic();
  // A turn may be the answer, asked for with the schema in the prompt: the
  // ladder's last rung, as a trace shows it.
  request.structured_rung = output_mode::prompt_schema;
  call_budget budget;  // the deadline across the loop; attempts: the client's policy per turn
  budget.deadline = deadline;
  token_usage used;
  std::shared_ptr<tool_journal> journal = context.journal;
  if (!journal) journal = std::make_shared<memory_tool_journal>();
  const replay_index replay(journal->records(), s.agent);
  const loop_scope scope{s, context, *journal, replay};

  chat_result last;  // the model's last turn, when it was no valid answer
  std::optional<protocol::parse_result> rejected;  // why, when it was complete
  for (int round = 1;; ++round) {
    check_time(deadline, s, options);
    request.budget = &budget;
    chat_result turn;
    auto replayed = co_await next_turn(model, request, scope, round, turn);
    if (!replayed) {
      if (turn.tool_calls.empty() && take_final(turn, request, options, out, rejected)) co_return;
      context.usage += turn.usage;
      used += turn.usage;
      if (turn.tool_calls.empty()) {
        last = std::move(turn);
        break;
      }
      if (round > s.max_rounds) {
        fail(model_errc::structured_output_failed,
             "agent '" + s.agent + "': the model still called tools after max_tool_rounds (" +
                 std::to_string(s.max_rounds) + ") rounds",
             options, "tool_rounds_exhausted");
      }
      if (options.token_budget > 0 && used.total() >= options.token_budget) {
        fail(model_errc::token_budget_exhausted,
             "agent '" + s.agent + "': the token budget (" + std::to_string(options.token_budget) +
                 ") was spent during the tool loop (" + std::to_string(used.total()) + " tokens)",
             options, "token_budget_exhausted");
      }
      replayed.emplace(chat_role::assistant, std::move(turn.text));
      replayed->tool_calls = std::move(turn.tool_calls);
      distinct_ids(round, replayed->tool_calls);
      auto record = turn_record(round, *replayed);
      co_await journal->append(std::move(record));
    }

    request.messages.push_back(*replayed);
    conversation.push_back(std::move(*replayed));
    const auto& calls = conversation.back().tool_calls;
    std::vector<call_slot> slots(calls.size());
    for (std::size_t i = 0; i < calls.size(); ++i) slots[i].call = &calls[i];

    clock::duration timeout = s.tool_timeout;
    if (deadline) timeout = std::clamp<clock::duration>(*deadline - clock::now(), clock::duration::zero(), timeout);
    bool aborted = false;
    try {
      co_await run_calls(scope, round, timeout, slots);
    } catch (const boost::system::system_error& e) {
      if (e.code() != asio::error::operation_aborted) throw;
      aborted = true;
    }
    for (auto& slot : slots) {
      if (slot.pending) continue;
      request.messages.push_back(slot.message);
      conversation.push_back(std::move(slot.message));
      context.tool_calls.push_back(std::move(slot.record));
    }
    const auto state = co_await asio::this_coro::cancellation_state;
    if (aborted || state.cancelled() != asio::cancellation_type::none) {
      throw model_error(model_errc::cancelled, "agent '" + s.agent + "': cancelled while its tools ran");
    }
    ask_approval(slots);
  }

  // The last turn was no valid answer. A refusal or a filtered answer ends
  // the call, as in the ladder: the same conversation would be refused
  // again. Otherwise the ladder asks on the whole conversation, with room
  // to finish when the answer was cut off at the token limit.
  const stop_reason last_stop = stop_of(last);
  if (last_stop == stop_reason::refusal || !last.refusal.empty()) {
    fail_final(last, stop_reason::refusal, request, options, used,
               "agent '" + s.agent + "': the model refused to answer (refusal): " +
                   models::detail::quoted_words(last.refusal.empty() ? last.text : last.refusal));
  }
  if (last_stop == stop_reason::content_filter) {
    fail_final(last, last_stop, request, options, used,
               "agent '" + s.agent + "': the provider's content filter withheld the answer (content_filter)" +
                   (last.text.empty() ? std::string() : "; the text it let through: " + models::detail::quoted_words(last.text)));
  }
  if (last_stop == stop_reason::truncated) {
    if (const auto raised = models::detail::raised_max_tokens(request, last, options, used)) request.max_tokens = *raised;
  }
  // That turn was the call's first answer attempt; an invalid one is shown
  // back with the validator's errors, as the ladder's re-asks do.
  options.max_attempts = std::max(1, options.max_attempts - 1);
  if (rejected && !last.text.empty()) {
    conversation.emplace_back(chat_role::assistant, std::move(last.text));
    conversation.emplace_back(chat_role::user, models::detail::reask_message(*rejected, options.schema.id()));
  }
  request.messages = std::move(base);
  request.messages.insert(request.messages.end(), std::make_move_iterator(conversation.begin()),
                          std::make_move_iterator(conversation.end()));
  request.tool_choice = tool_choice::no_tools();
  request.budget = nullptr;
  if (options.token_budget > 0) {
    const std::int64_t left = options.token_budget - used.total();
    if (left <= 0) {
      fail(model_errc::token_budget_exhausted,
           "agent '" + s.agent + "': the token budget (" + std::to_string(options.token_budget) +
               ") was spent during the tool loop",
           options, "token_budget_exhausted");
    }
    options.token_budget = left;
  }
  if (deadline) {
    check_time(deadline, s, options);
    options.timeout = std::chrono::ceil<std::chrono::milliseconds>(*deadline - clock::now());
  }
  co_await models::detail::complete_structured_into(model, std::move(request), std::move(options), out);
}

}  // namespace switchboard::agents::detail
