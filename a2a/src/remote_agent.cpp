// A remote A2A agent as a spoke: the step's journal keeps the remote task,
// the task's input requests become the hub's clarification pauses.
#include <switchboard/a2a/remote_agent.hpp>

#include "remote_failure.hpp"
#include "rpc_client.hpp"
#include "task_wire.hpp"

#include <switchboard/agents/tool_journal.hpp>
#include <switchboard/agents/trace_parents.hpp>
#include <switchboard/net/error.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/serialize.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <random>

namespace switchboard::a2a {

namespace asio = boost::asio;
namespace json = boost::json;

namespace {

// What the step's journal says of the remote task (kinds "a2a_send",
// "a2a_task", "a2a_asked", "a2a_reply"; tool_journal.hpp adds step and agent).
struct task_record {
  bool sent = false;                  // a message starting a task went out
  std::string task_id;                // and this task answered it
  std::string context_id;
  std::optional<std::size_t> asked;   // the answers the user had given when the task last asked
  std::optional<std::size_t> replied; // the answer last sent back
};

task_record read_journal(const std::vector<json::object>& records) {
  task_record r;
  for (const auto& record : records) {
    const auto* kind = record.if_contains("kind");
    if (!kind || !kind->is_string()) continue;
    const auto number = [&](std::string_view key) -> std::optional<std::size_t> {
      // A count read back from a store is an int64; one kept in memory as
      // it was appended may be a uint64.
      const auto* v = record.if_contains(key);
      if (v && v->is_uint64()) return static_cast<std::size_t>(v->get_uint64());
      if (!v || !v->is_int64() || v->get_int64() < 0) return std::nullopt;
      return static_cast<std::size_t>(v->get_int64());
    };
    const auto text = [&](std::string_view key) {
      const auto* v = record.if_contains(key);
      return v && v->is_string() ? std::string(v->get_string()) : std::string();
    };
    if (kind->get_string() == "a2a_send") r.sent = true;
    if (kind->get_string() == "a2a_task") {
      r.task_id = text("task");
      r.context_id = text("context");
    }
    if (kind->get_string() == "a2a_asked") r.asked = number("answers");
    if (kind->get_string() == "a2a_reply") r.replied = number("answer");
  }
  return r;
}

std::string new_message_id() {
  thread_local std::mt19937_64 random{std::random_device{}()};
  static constexpr char hex[] = "0123456789abcdef";
  std::string id = "sb-";
  for (int i = 0; i < 2; ++i) {
    auto bits = random();
    for (int j = 0; j < 16; ++j, bits >>= 4) id += hex[bits & 0xF];
  }
  return id;
}

protocol::envelope failed(const remote_failure& f) {
  protocol::envelope e;
  e.error = protocol::error_record{f.type(), f.what(), f.retryable(), {}};
  return e;
}

// Journal records and request parameters, built outside the coroutines
// (g++ 12 miscompiles braced initializer lists inside them).
json::object journal_record(std::string_view kind, std::string_view key, json::value value) {
  return json::object{{"kind", kind}, {key, std::move(value)}};
}
json::object task_record_of(const task_view& task) {
  return json::object{{"kind", "a2a_task"}, {"task", task.id}, {"context", task.context_id}};
}
json::object asked_record(std::size_t answers, const std::string& question) {
  return json::object{{"kind", "a2a_asked"}, {"answers", static_cast<std::int64_t>(answers)}, {"question", question}};
}
json::object send_params(json::object message, bool return_immediately) {
  json::object params{{"message", std::move(message)}};
  if (return_immediately) params["configuration"] = json::object{{"returnImmediately", true}};
  return params;
}
json::object task_params(std::string_view id, bool without_history) {
  json::object params{{"id", id}};
  if (without_history) params["historyLength"] = 0;
  return params;
}

asio::awaitable<void> sleep_for(std::chrono::milliseconds delay) {
  asio::steady_timer timer(co_await asio::this_coro::executor, delay);
  co_await timer.async_wait(asio::use_awaitable);
}

// Best effort, after the step was cancelled: the remote task stops too.
asio::awaitable<void> cancel_remote_task(std::shared_ptr<rpc_client> rpc, std::string task_id,
                                         std::shared_ptr<spdlog::logger> logger) {
  // g++ 12: no temporaries in a co_await's expression (README, "Development").
  const telemetry::span_context untraced;
  try {
    co_await rpc->call("CancelTask", task_params(task_id, false), std::chrono::seconds(5),
                       net::retry_scope::unprocessed, untraced);
    logger->info("remote task '{}' cancelled", task_id);
  } catch (const std::exception& e) {
    logger->warn("remote task '{}' could not be cancelled: {}", task_id, e.what());
  }
}

// One run of the step, given the journal; `task_id` names the remote task
// as soon as it is known, for a cancel.
class step_call {
 public:
  step_call(const remote_agent_config& config, agents::agent_context& context, agents::tool_journal& journal,
            std::shared_ptr<rpc_client> rpc, std::string& task_id)
      : config_(config),
        context_(context),
        journal_(journal),
        rpc_(std::move(rpc)),
        task_id_(task_id),
        trace_(context.traces ? context.traces->step_span(context.workflow_id) : telemetry::span_context{}) {}

  asio::awaitable<protocol::envelope> run() {
    auto record = read_journal(journal_.records());
    std::optional<task_view> task;
    if (record.task_id.empty()) {
      if (record.sent) co_return unknown_outcome();
      task = co_await start_task();
      if (task->id.empty()) co_return outcome_of(*task, config_);  // a direct answer: no task to keep
    } else {
      task_id_ = record.task_id;
      const auto& answers = context_.clarification_answers;
      const bool answered = record.asked && *record.asked < answers.size();
      if (answered && record.replied != record.asked) {
        task = co_await reply(record, answers[*record.asked], *record.asked);
      } else {
        task = co_await get_task(record.task_id);
      }
    }
    task = co_await wait_while_working(std::move(*task));
    if (task->state == state_input_required) {
      auto question = question_of(*task, config_);
      co_await journal_.append(asked_record(context_.clarification_answers.size(), question));
      throw agents::clarification_required(std::move(question));
    }
    co_return outcome_of(*task, config_);
  }

 private:
  std::string who() const { return "remote agent '" + config_.name + "'"; }

  protocol::envelope unknown_outcome() const {
    return failed(remote_failure(
        "unknown_outcome",
        who() + ": a message starting a task was sent, but the process stopped before the task it started was "
                "recorded; it is not sent again, so that the remote agent does not do the work twice: check its "
                "tasks"));
  }

  // Sends the input; the task is recorded before anything waits on it.
  asio::awaitable<task_view> start_task() {
    const auto message_id = new_message_id();
    co_await journal_.append(journal_record("a2a_send", "message", json::value(message_id)));
    auto params = send_params(new_message(message_id, context_.input, context_.additional_instructions), true);
    // Sent once: a repeat could start a second task.
    auto result = co_await rpc_->call("SendMessage", std::move(params), config_.request_timeout,
                                      net::retry_scope::unprocessed, trace_);
    auto task = read_send_result(result, config_);
    if (!task.id.empty()) {
      task_id_ = task.id;
      co_await journal_.append(task_record_of(task));
    }
    context_.logger->info("{}: task '{}' started", who(), task.id);
    co_return task;
  }

  // The user's answer, on the same task. A blocking send: the remote
  // answers once the task stopped again (a non-blocking one could still
  // show the question just answered).
  asio::awaitable<task_view> reply(const task_record& record, const std::string& answer, std::size_t index) {
    co_await journal_.append(journal_record("a2a_reply", "answer", json::value(static_cast<std::int64_t>(index))));
    auto params = send_params(reply_message(new_message_id(), record.task_id, record.context_id, answer), false);
    std::optional<remote_failure> slow;
    try {
      auto result = co_await rpc_->call("SendMessage", std::move(params), config_.request_timeout,
                                        net::retry_scope::unprocessed, trace_);
      co_return read_send_result(result, config_);
    } catch (const remote_failure& f) {
      // The answer is recorded as sent: a task that is still working after
      // the request's deadline is polled, never answered twice.
      if (f.type() != "remote_agent_unreachable") throw;
      slow = f;
    }
    context_.logger->warn("{}: {}; polling task '{}'", who(), slow->what(), record.task_id);
    co_return co_await get_task(record.task_id);
  }

  asio::awaitable<task_view> get_task(const std::string& id) {
    auto result = co_await rpc_->call("GetTask", task_params(id, true), config_.request_timeout,
                                      net::retry_scope::transient, trace_);
    auto task = read_task(result, config_);
    if (task.id != id) {
      throw remote_failure("invalid_remote_response",
                           who() + ": GetTask for task '" + id + "' answered task '" + task.id + "'");
    }
    co_return task;
  }

  asio::awaitable<task_view> wait_while_working(task_view task) {
    auto delay = std::min(std::chrono::milliseconds(50), config_.poll_interval);
    while (task.state == state_submitted || task.state == state_working) {
      co_await sleep_for(delay);
      delay = std::min(delay * 2, config_.poll_interval);
      task = co_await get_task(task.id);
    }
    co_return task;
  }

  const remote_agent_config& config_;
  agents::agent_context& context_;
  agents::tool_journal& journal_;
  std::shared_ptr<rpc_client> rpc_;
  std::string& task_id_;
  telemetry::span_context trace_;  // the step's span, sent as traceparent (invalid: not traced)
};

}  // namespace

remote_agent::remote_agent(remote_agent_config config)
    : config_(std::move(config)),
      description_(config_.description.empty() ? "remote A2A agent " + config_.name : config_.description) {}

remote_agent::~remote_agent() = default;

asio::awaitable<std::shared_ptr<rpc_client>> remote_agent::endpoint() {
  {
    std::lock_guard lock(mutex_);
    if (endpoint_) co_return endpoint_;
  }
  std::string url = config_.url;
  if (url.empty()) url = co_await interface_from_card(config_);
  auto client = std::make_shared<rpc_client>(std::move(url), config_);
  std::lock_guard lock(mutex_);
  if (!endpoint_) endpoint_ = std::move(client);
  co_return endpoint_;
}

asio::awaitable<protocol::envelope> remote_agent::run(agents::agent_context& context) {
  // Outside a hub: a journal for this call only.
  auto journal = context.journal ? context.journal : std::make_shared<agents::memory_tool_journal>();
  const auto executor = co_await asio::this_coro::executor;
  std::shared_ptr<rpc_client> rpc;
  std::string task_id;
  std::exception_ptr failure;
  protocol::envelope answer;
  try {
    rpc = co_await endpoint();
    step_call call(config_, context, *journal, rpc, task_id);
    answer = co_await call.run();
  } catch (const remote_failure& f) {
    answer = failed(f);
  } catch (...) {
    failure = std::current_exception();
  }
  if (!failure) co_return answer;
  // g++ 12: no co_await inside a catch block (README, "Development").
  const auto cancellation = co_await asio::this_coro::cancellation_state;
  if (cancellation.cancelled() != asio::cancellation_type::none && rpc && !task_id.empty()) {
    asio::co_spawn(executor, cancel_remote_task(rpc, task_id, context.logger), asio::detached);
  }
  std::rethrow_exception(failure);
}

}  // namespace switchboard::a2a
