// One tool call, made at most once: what the tool loop runs for each call
// of a turn, and call_tool for a native agent's call.
#include "tool_calls.hpp"

#include <switchboard/agents/call_tool.hpp>
#include <switchboard/agents/tool_registry.hpp>

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
#include <stdexcept>

namespace switchboard::agents::detail {

namespace asio = boost::asio;
namespace json = boost::json;
using clock = std::chrono::steady_clock;

// A call is named by its round and id: some models reuse ids across turns.
std::string call_key(int round, std::string_view id) { return std::to_string(round) + "/" + std::string(id); }

[[noreturn]] void malformed(const std::string& agent, const std::string& what) {
  throw std::runtime_error("agent '" + agent + "': a record of its tool journal is malformed (" + what +
                           "); the step cannot be replayed safely");
}

const json::value& field(const json::object& record, std::string_view key, const std::string& agent) {
  const auto* v = record.if_contains(key);
  if (v == nullptr) malformed(agent, "no '" + std::string(key) + "'");
  return *v;
}

std::string string_field(const json::object& record, std::string_view key, const std::string& agent) {
  const auto& v = field(record, key, agent);
  if (!v.is_string()) malformed(agent, "'" + std::string(key) + "' is not a string");
  return std::string(v.get_string());
}

int round_field(const json::object& record, const std::string& agent) {
  const auto& v = field(record, "round", agent);
  if (!v.is_int64() || v.get_int64() < 1 || v.get_int64() > 1'000'000) malformed(agent, "bad 'round'");
  return static_cast<int>(v.get_int64());
}

replay_index::replay_index(std::vector<json::object> records, const std::string& agent)
    : records_(std::move(records)) {
  for (const auto& r : records_) {
    const std::string kind = string_field(r, "kind", agent);
    const int round = round_field(r, agent);
    if (kind == "turn") {
      turns_[round] = &r;
      continue;
    }
    const std::string key = call_key(round, string_field(r, "id", agent));
    if (kind == "started") started_.insert(key);
    else if (kind == "result") results_[key] = &r;
    else if (kind == "approval") approvals_[key] = &r;
    else malformed(agent, "unknown kind '" + kind + "'");
  }
}

namespace {





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
    const std::string what = "tool '" + std::string(t.name()) + "' did not answer within " + std::to_string(ms) +
                             " ms; it was cancelled";
    // It may have acted before it was cut off: only an idempotent call may simply be tried again.
    if (!t.idempotent()) {
      co_return tool_result::failure("unknown_outcome", what + ", so whether it took effect is unknown. Check its "
                                                               "effect before calling it again");
    }
    co_return tool_result::failure("timeout", what, true);
  }
  co_return std::get<0>(std::move(winner));
}

// The slot as a recorded result left it: nothing runs again.
void replay_result(const json::object& record, const std::string& agent, call_slot& slot) {
  slot.message.role = chat_role::tool;
  slot.message.content = string_field(record, "content", agent);
  slot.message.tool_call_id = slot.call->id;
  const auto& is_error = field(record, "is_error", agent);
  if (!is_error.is_bool()) malformed(agent, "'is_error' is not a boolean");
  slot.message.is_error = is_error.get_bool();
  const auto& kept = field(record, "record", agent);
  if (!kept.is_object()) malformed(agent, "'record' is not an object");
  slot.record = kept.get_object();
  slot.record["replayed"] = true;
}

// Fills the slot from `result` and keeps it in the journal.
asio::awaitable<void> record_result(const loop_scope& scope, int round, const tool_result& result, double ms,
                                    call_slot& slot) {
  const tool_call& call = *slot.call;
  bool cut = false;
  const json::value answer = result.to_json();
  slot.message.role = chat_role::tool;
  slot.message.content = result_text(answer, scope.settings.max_result_bytes, cut);
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
  // g++ 12: named before co_await (README, "Development").
  json::object kept{{"kind", "result"},
                    {"round", round},
                    {"id", call.id},
                    {"content", slot.message.content},
                    {"is_error", slot.message.is_error},
                    {"record", slot.record}};
  co_await scope.journal.append(std::move(kept));
  scope.context.logger->debug("agent {}: round {} tool {} (call {}): {} in {:.1f} ms", scope.settings.agent, round,
                              call.name, call.id, result.ok() ? std::string("ok") : "error " + result.error().code,
                              ms);
}

// Whether the user must approve this call before it is made.
bool approval_needed(const loop_scope& scope, const tool& t, const json::value& arguments) {
  if (scope.context.needs_approval != nullptr && *scope.context.needs_approval) {
    return (*scope.context.needs_approval)(scope.settings.agent, t, arguments);
  }
  return t.needs_approval();
}

// What the user decided for a call waiting for approval: nullopt when it
// may run, an error result when it was rejected.
std::optional<tool_result> refusal(const json::object& approval, const std::string& agent, std::string_view tool) {
  const auto& approved = field(approval, "approved", agent);
  if (!approved.is_bool()) malformed(agent, "'approved' is not a boolean");
  if (approved.get_bool()) return std::nullopt;
  std::string reason;
  if (const auto* r = approval.if_contains("reason"); r && r->is_string()) reason = std::string(r->get_string());
  return tool_result::failure("rejected", "the user rejected this call of '" + std::string(tool) + "'" +
                                              (reason.empty() ? "" : ": " + reason) + "; it was not made");
}

// A non-idempotent call that started and never recorded a result: the
// process died while it ran. Running it again could do twice what it does.
tool_result unknown_outcome(std::string_view tool) {
  return tool_result::failure("unknown_outcome",
                              "the process running this call of '" + std::string(tool) +
                                  "' stopped before its result was recorded, so whether it took effect is "
                                  "unknown; it was not repeated. Check its effect before calling it again");
}

json::object started_record(int round, const std::string& id) {
  return {{"kind", "started"}, {"round", round}, {"id", id}};
}

// Runs one call: checks, approval, replay, execution. Never throws for what
// the tool or the model did; throws when the journal cannot keep a record.
asio::awaitable<void> run_one(const loop_scope& scope, int round, clock::duration timeout, call_slot& slot) {
  const auto& s = scope.settings;
  const tool_call& call = *slot.call;
  const std::string key = call_key(round, call.id);
  if (const auto* recorded = scope.replay.result(key)) {
    replay_result(*recorded, s.agent, slot);
    co_return;
  }
  const auto started = clock::now();
  std::optional<tool_result> early;  // a result without running the tool
  std::shared_ptr<tool> t;
  json::value arguments;
  const bool allowed = std::ranges::find(*s.allowed, call.name) != s.allowed->end();
  if (!allowed || !s.tools->contains(call.name)) {
    early = tool_result::failure("unknown_tool", "there is no tool '" + call.name +
                                                     "' here; the tools you may call: " + allowed_list(*s.allowed));
  } else if (auto checked = s.tools->validate_arguments(call.name, call.arguments); !checked.ok()) {
    early = tool_result::failure("invalid_arguments", checked.describe(call.name));
  } else {
    t = s.tools->find_shared(call.name);
    arguments = std::move(checked.value);
  }
  if (!early && approval_needed(scope, *t, arguments)) {
    const auto* decision = scope.replay.approval(key);
    if (decision == nullptr) {
      slot.pending = pending_tool_call{s.agent, round, call.id, call.name, std::move(arguments),
                                       std::string(t->description())};
      co_return;
    }
    early = refusal(*decision, s.agent, call.name);
  }
  if (!early && scope.replay.started(key) && !t->idempotent()) early = unknown_outcome(call.name);

  tool_result result;
  if (early) {
    result = std::move(*early);
  } else {
    // Marked first: a crash during the call must not leave it looking unmade.
    if (!t->idempotent()) {
      auto mark = started_record(round, call.id);
      co_await scope.journal.append(std::move(mark));
    }
    tool_context tc{scope.context.logger, scope.context.workflow_id, call.id, s.agent};
    if (scope.context.traces) tc.trace = scope.context.traces->tool_span(scope.context.workflow_id, call.id);
    result = co_await call_with_timeout(*t, tc, arguments, timeout);
  }
  const double ms = std::chrono::duration<double, std::milli>(clock::now() - started).count();
  co_await record_result(scope, round, result, ms, slot);
}

}  // namespace

// Runs the calls of one turn concurrently and waits for all of them.
asio::awaitable<void> run_calls(const loop_scope& scope, int round, clock::duration timeout,
                                std::vector<call_slot>& slots) {
  auto executor = co_await asio::this_coro::executor;
  using op_type = decltype(asio::co_spawn(executor, std::declval<asio::awaitable<void>>(), asio::deferred));
  std::vector<op_type> ops;
  ops.reserve(slots.size());
  for (auto& slot : slots) ops.push_back(asio::co_spawn(executor, run_one(scope, round, timeout, slot), asio::deferred));
  auto [order, errors] = co_await asio::experimental::make_parallel_group(std::move(ops))
                             .async_wait(asio::experimental::wait_for_all(), asio::use_awaitable);
  (void)order;
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);  // a journal that could not keep a record, or bad_alloc and the like
  }
}

}  // namespace switchboard::agents::detail

namespace switchboard::agents {

namespace asio = boost::asio;
namespace json = boost::json;

namespace {

// The result a recorded call gave, as the tool gave it.
tool_result result_of(const boost::json::object& record) {
  if (const auto* error = record.if_contains("error"); error && error->is_object()) {
    const auto& e = error->get_object();
    auto text = [&](std::string_view key) {
      const auto* v = e.if_contains(key);
      return v && v->is_string() ? std::string(v->get_string()) : std::string{};
    };
    const auto* retryable = e.if_contains("retryable");
    return tool_error{text("code"), text("message"), retryable && retryable->is_bool() && retryable->get_bool()};
  }
  const auto* value = record.if_contains("result");
  return value ? tool_result(*value) : tool_result(boost::json::value(nullptr));
}

// Whether a recorded result is for `tool` with `arguments`: an id used
// again for another call must not get the first call's result.
bool recorded_for(const boost::json::object& recorded, std::string_view tool, const json::value& arguments) {
  const auto* kept = recorded.if_contains("record");
  const auto* name = kept && kept->is_object() ? kept->get_object().if_contains("tool") : nullptr;
  const auto* text = kept && kept->is_object() ? kept->get_object().if_contains("arguments") : nullptr;
  if (!name || !name->is_string() || name->get_string() != tool || !text || !text->is_string()) return false;
  boost::system::error_code ec;
  const json::value recorded_arguments = json::parse(text->get_string(), ec);
  return !ec && recorded_arguments == arguments;
}

}  // namespace

asio::awaitable<tool_result> call_tool(agent_context& context, std::string_view agent, const tool_registry& tools,
                                       std::string_view tool_name, json::value arguments, std::string call_id,
                                       std::chrono::milliseconds timeout) {
  // One call of round 1 of a loop that offers this one tool: the same
  // checks, approval, journal and replay as a model's call.
  const std::vector<std::string> allowed{std::string(tool_name)};
  detail::tool_loop_settings settings;
  settings.tools = &tools;
  settings.allowed = &allowed;
  settings.agent = std::string(agent);
  settings.max_result_bytes = std::numeric_limits<std::size_t>::max();  // a C++ caller reads it whole
  std::shared_ptr<tool_journal> journal = context.journal;
  if (!journal) journal = std::make_shared<memory_tool_journal>();
  const detail::replay_index replay(journal->records(), settings.agent);
  const detail::loop_scope scope{settings, context, *journal, replay};
  const tool_call call{std::move(call_id), std::string(tool_name), json::serialize(arguments)};
  if (const auto* recorded = replay.result(detail::call_key(1, call.id));
      recorded && !recorded_for(*recorded, tool_name, arguments)) {
    std::string message = "agent '" + settings.agent + "': call id '" + call.id +
                          "' is recorded for another call in this step; this call of '" + call.name +
                          "' was not made";
    co_return tool_result::failure("call_id_conflict", std::move(message));
  }
  detail::call_slot slot;
  slot.call = &call;
  co_await detail::run_one(scope, 1, timeout, slot);
  if (slot.pending) throw approval_required({std::move(*slot.pending)});
  tool_result result = result_of(slot.record);
  context.tool_calls.push_back(std::move(slot.record));
  co_return result;
}

}  // namespace switchboard::agents
