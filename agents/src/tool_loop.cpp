// The tool loop of an llm_agent: model -> tool calls -> results -> model ...
#include "tool_loop.hpp"

#include <switchboard/agents/tool_registry.hpp>
#include <switchboard/protocol/metrics.hpp>
#include <switchboard/protocol/output_parser.hpp>

#include "model/structured_ladder.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/serialize.hpp>
#include <spdlog/logger.h>

#include <algorithm>
#include <optional>

namespace switchboard::agents::detail {

namespace asio = boost::asio;
namespace json = boost::json;
using clock = std::chrono::steady_clock;

namespace {

// One call of a turn: the model's call, the tool message answering it and
// its record for context.tool_calls. Written by that call's coroutine only.
struct call_slot {
  const tool_call* call = nullptr;
  chat_message message;
  json::object record;
};

std::string allowed_list(const std::vector<std::string>& allowed) {
  std::string out;
  for (const auto& name : allowed) out += (out.empty() ? "" : ", ") + name;
  return out.empty() ? "(none)" : out;
}

// The tool's answer as the text sent to the model, cut to `max` bytes (on a
// UTF-8 boundary) with a note saying so.
std::string result_text(const json::value& value, std::size_t max, bool& cut) {
  std::string text = json::serialize(value);
  cut = text.size() > max;
  if (!cut) return text;
  std::size_t n = max;
  while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;
  const std::size_t total = text.size();
  text.resize(n);
  text += "\n[cut: the tool's result was " + std::to_string(total) + " bytes; only the first " +
          std::to_string(n) + " are shown]";
  return text;
}

// The tool's call; an exception becomes an error result naming the tool
// (awaitable_operators' || waits for a success, so nothing may escape).
asio::awaitable<tool_result> guarded_call(tool& t, tool_context& context, const json::value& arguments) {
  tool_result result;
  try {
    result = co_await t.call(context, arguments);
  } catch (const std::exception& e) {
    result = tool_result::failure("tool_failed", "tool '" + std::string(t.name()) + "' failed: " + e.what());
  } catch (...) {
    result = tool_result::failure("tool_failed",
                                  "tool '" + std::string(t.name()) + "' failed with an unknown exception");
  }
  co_return result;
}

// The tool's call, ended by `timeout` (an error result, the call cancelled).
asio::awaitable<tool_result> call_with_timeout(tool& t, tool_context& context, const json::value& arguments,
                                               clock::duration timeout) {
  using namespace asio::experimental::awaitable_operators;
  asio::steady_timer timer(co_await asio::this_coro::executor, timeout);
  auto winner = co_await (guarded_call(t, context, arguments) || timer.async_wait(asio::use_awaitable));
  if (winner.index() == 1) {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count();
    co_return tool_result::failure("timeout", "tool '" + std::string(t.name()) + "' did not answer within " +
                                                  std::to_string(ms) + " ms; it was cancelled", true);
  }
  co_return std::get<0>(std::move(winner));
}

// Validates and runs one call; never throws for what the tool or the model did.
asio::awaitable<void> run_one(const tool_loop_settings& s, agent_context& context, int round,
                              clock::duration timeout, call_slot& slot) {
  const tool_call& call = *slot.call;
  const auto started = clock::now();
  tool_result result;
  const bool allowed = std::ranges::find(*s.allowed, call.name) != s.allowed->end();
  try {
    if (!allowed || !s.tools->contains(call.name)) {
      result = tool_result::failure("unknown_tool", "there is no tool '" + call.name +
                                                        "' here; the tools you may call: " + allowed_list(*s.allowed));
    } else if (auto arguments = s.tools->validate_arguments(call.name, call.arguments); !arguments.ok()) {
      result = tool_result::failure("invalid_arguments", arguments.describe(call.name));
    } else {
      auto t = s.tools->find_shared(call.name);
      tool_context tc{context.logger, context.workflow_id, call.id, s.agent};
      result = co_await call_with_timeout(*t, tc, arguments.value, timeout);
    }
  } catch (const std::exception& e) {
    result = tool_result::failure("tool_failed", "tool '" + call.name + "' failed: " + e.what());
  } catch (...) {
    result = tool_result::failure("tool_failed", "tool '" + call.name + "' failed with an unknown exception");
  }
  const double ms = std::chrono::duration<double, std::milli>(clock::now() - started).count();

  bool cut = false;
  const json::value answer = result.to_json();
  slot.message.role = chat_role::tool;
  slot.message.content = result_text(answer, s.max_result_bytes, cut);
  slot.message.tool_call_id = call.id;
  slot.message.is_error = !result.ok();
  slot.record = {{"round", round},     {"id", call.id},          {"tool", call.name},
                 {"arguments", call.arguments}, {"is_error", !result.ok()}, {"duration_ms", ms}};
  if (!result.ok()) {
    slot.record["error"] = answer.at("error");
  } else {
    slot.record["result"] = cut ? json::value(slot.message.content) : answer;
  }
  if (cut) slot.record["cut"] = true;
  context.logger->debug("agent {}: round {} tool {} (call {}): {} in {:.1f} ms", s.agent, round, call.name, call.id,
                        result.ok() ? std::string("ok") : "error " + result.error().code, ms);
}

// Runs the calls of one turn concurrently and waits for all of them.
asio::awaitable<void> run_calls(const tool_loop_settings& s, agent_context& context, int round,
                                clock::duration timeout, std::vector<call_slot>& slots) {
  auto executor = co_await asio::this_coro::executor;
  using op_type = decltype(asio::co_spawn(executor, std::declval<asio::awaitable<void>>(), asio::deferred));
  std::vector<op_type> ops;
  ops.reserve(slots.size());
  for (auto& slot : slots) ops.push_back(asio::co_spawn(executor, run_one(s, context, round, timeout, slot), asio::deferred));
  auto [order, errors] = co_await asio::experimental::make_parallel_group(std::move(ops))
                             .async_wait(asio::experimental::wait_for_all(), asio::use_awaitable);
  (void)order;
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);  // run_one catches all but bad_alloc and the like
  }
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
// valid value; false otherwise (the ladder then asks).
bool take_final(chat_result& turn, const chat_request& request, const structured_options& options,
                structured_result& out) {
  const stop_reason stop = stop_of(turn);
  if ((stop != stop_reason::complete && stop != stop_reason::unknown) || !turn.refusal.empty()) return false;
  auto parsed = protocol::parse_output(turn.text, options.schema, nullptr, protocol::output_end::complete);
  if (!parsed.ok()) return false;
  if (options.metrics) options.metrics->record_outcome(parsed);
  attempt_record attempt;
  attempt.number = 1;
  attempt.mode = output_mode::prompt_schema;
  attempt.max_tokens = request.max_tokens;
  out.attempts = {detail::record_of(parsed, turn, stop, std::move(attempt))};
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

void check_time(const std::optional<clock::time_point>& deadline, const tool_loop_settings& s,
                const structured_options& options) {
  if (deadline && clock::now() >= *deadline) {
    fail(model_errc::timeout, "agent '" + s.agent + "': the call's time ran out during the tool loop", options,
         "timeout");
  }
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
  call_budget budget;  // the deadline across the loop; attempts: the client's policy per turn
  budget.deadline = deadline;
  token_usage used;

  for (int round = 1;; ++round) {
    check_time(deadline, s, options);
    request.budget = &budget;
    chat_result turn = co_await model.complete(request);
    if (turn.tool_calls.empty() && take_final(turn, request, options, out)) co_return;
    context.usage += turn.usage;
    used += turn.usage;
    if (turn.tool_calls.empty()) break;
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

    chat_message assistant{chat_role::assistant, std::move(turn.text)};
    assistant.tool_calls = std::move(turn.tool_calls);
    request.messages.push_back(assistant);
    conversation.push_back(std::move(assistant));
    const auto& calls = conversation.back().tool_calls;
    std::vector<call_slot> slots(calls.size());
    for (std::size_t i = 0; i < calls.size(); ++i) slots[i].call = &calls[i];

    clock::duration timeout = s.tool_timeout;
    if (deadline) timeout = std::clamp<clock::duration>(*deadline - clock::now(), clock::duration::zero(), timeout);
    bool aborted = false;
    try {
      co_await run_calls(s, context, round, timeout, slots);
    } catch (const boost::system::system_error& e) {
      if (e.code() != asio::error::operation_aborted) throw;
      aborted = true;
    }
    for (auto& slot : slots) {
      request.messages.push_back(slot.message);
      conversation.push_back(std::move(slot.message));
      context.tool_calls.push_back(std::move(slot.record));
    }
    const auto state = co_await asio::this_coro::cancellation_state;
    if (aborted || state.cancelled() != asio::cancellation_type::none) {
      throw model_error(model_errc::cancelled, "agent '" + s.agent + "': cancelled while its tools ran");
    }
  }

  // The last turn was no valid answer: the ladder asks on the whole conversation.
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
  co_await complete_structured_into(model, std::move(request), std::move(options), out);
}

}  // namespace switchboard::agents::detail
