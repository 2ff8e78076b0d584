// A remote A2A agent as a spoke: the step's journal keeps the remote task,
// the task's input requests become the hub's clarification pauses.
#include <switchboard/a2a/remote_agent.hpp>

#include "remote_failure.hpp"
#include "rpc_client.hpp"
#include "task_wire.hpp"

#include <switchboard/agents/tool_journal.hpp>
#include <switchboard/agents/trace_parents.hpp>
#include <switchboard/net/error.hpp>

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
// "a2a_task", "a2a_asked", "a2a_reply", "a2a_unsent"; tool_journal.hpp adds
// step and agent).
struct task_record {
  std::string sent;                    // the id of a message starting a task that went out
  std::string task_id;                 // the task that answered it
  std::string context_id;
  std::string endpoint;                // where that task lives
  std::optional<std::size_t> asked;    // the answers the run had when the task last asked
  std::optional<std::size_t> replied;  // the answer last sent back
};

std::optional<std::size_t> count_at(const json::object& record, std::string_view key) {
  // A count read back from a store is an int64; one kept in memory as it
  // was appended may be a uint64.
  const auto* v = record.if_contains(key);
  if (v && v->is_uint64()) return static_cast<std::size_t>(v->get_uint64());
  if (!v || !v->is_int64() || v->get_int64() < 0) return std::nullopt;
  return static_cast<std::size_t>(v->get_int64());
}

std::string text_at(const json::object& record, std::string_view key) {
  const auto* v = record.if_contains(key);
  return v && v->is_string() ? std::string(v->get_string()) : std::string();
}

task_record read_journal(const std::vector<json::object>& records) {
  task_record r;
  for (const auto& record : records) {
    const auto kind = text_at(record, "kind");
    if (kind == "a2a_send") r.sent = text_at(record, "message");
    if (kind == "a2a_task") {
      r.task_id = text_at(record, "task");
      r.context_id = text_at(record, "context");
      r.endpoint = text_at(record, "endpoint");
    }
    if (kind == "a2a_asked") r.asked = count_at(record, "answers");
    if (kind == "a2a_reply") r.replied = count_at(record, "answer");
    // The last send never reached the remote: it may be sent again.
    if (kind == "a2a_unsent") {
      if (r.task_id.empty()) r.sent.clear();
      r.replied.reset();
    }
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

protocol::envelope failed(const remote_failure& f, const std::string& task_id) {
  std::string message = f.what();
  // Every failure names the task it happened on, when there is one.
  if (!task_id.empty() && message.find("'" + task_id + "'") == std::string::npos)
    message += " (task '" + task_id + "')";
  protocol::envelope e;
  e.error = protocol::error_record{f.type(), std::move(message), f.retryable(), {}};
  return e;
}

// Journal records and request parameters, built outside the coroutines
// (g++ 12 miscompiles braced initializer lists inside them).
json::object journal_record(std::string_view kind, std::string_view key, json::value value) {
  return json::object{{"kind", kind}, {key, std::move(value)}};
}
json::object task_record_of(const task_view& task, const std::string& endpoint) {
  return json::object{{"kind", "a2a_task"}, {"task", task.id}, {"context", task.context_id}, {"endpoint", endpoint}};
}
json::object asked_record(std::size_t answers, const std::string& question) {
  return json::object{{"kind", "a2a_asked"}, {"answers", static_cast<std::int64_t>(answers)}, {"question", question}};
}
json::object send_params(json::object message, bool return_immediately) {
  json::object params{{"message", std::move(message)}};
  if (return_immediately) params["configuration"] = json::object{{"returnImmediately", true}};
  return params;
}
json::object task_params(std::string_view id) { return json::object{{"id", id}, {"historyLength", 0}}; }

asio::awaitable<void> sleep_for(std::chrono::milliseconds delay) {
  asio::steady_timer timer(co_await asio::this_coro::executor, delay);
  co_await timer.async_wait(asio::use_awaitable);
}

// One run of the step, given the journal; `task_id` names the remote task
// as soon as it is known, for the error messages.
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
    const auto record = read_journal(journal_.records());
    std::optional<task_view> task;
    if (record.task_id.empty()) {
      if (!record.sent.empty()) co_return unknown_outcome(record.sent);
      task = co_await start_task();
      if (task->id.empty()) co_return outcome_of(*task, config_);  // a direct answer: no task to keep
    } else {
      task_id_ = record.task_id;
      check_endpoint(record);
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
      const auto asked = asked_record(context_.clarification_answers.size(), question);
      co_await journal_.append(asked);
      throw agents::clarification_required(std::move(question));
    }
    co_return outcome_of(*task, config_);
  }

 private:
  std::string who() const { return "remote agent '" + config_.name + "'"; }

  protocol::envelope unknown_outcome(const std::string& message_id) const {
    return failed(remote_failure("unknown_outcome",
                                 who() + ": the message '" + message_id +
                                     "' that starts its task was sent, but no answer naming the task was recorded "
                                     "(the process stopped, or the answer was lost); it is not sent again, so that "
                                     "the remote agent does not do the work twice: check its tasks"),
                  {});
  }

  // A task is continued only where it was started: a workflow file that
  // now names another endpoint does not get the task's id or the answer.
  void check_endpoint(const task_record& record) const {
    if (record.endpoint.empty() || record.endpoint == rpc_->url()) return;
    throw remote_failure("endpoint_changed", who() + ": task '" + record.task_id + "' was started at " +
                                                 record.endpoint + ", and the workflow now names " + rpc_->url() +
                                                 "; it is not continued elsewhere");
  }

  // Sends a message once: a repeat could start a second task, or answer
  // twice. One the remote never got is marked so, so that the step's next
  // attempt sends it again. The failure, if any, is the caller's to judge.
  asio::awaitable<std::optional<remote_failure>> send_once(json::object params, json::value& result) {
    std::optional<remote_failure> failure;
    try {
      result = co_await rpc_->call("SendMessage", std::move(params), config_.request_timeout,
                                   net::retry_scope::unprocessed, trace_);
    } catch (const remote_failure& f) {
      failure = f;
    }
    if (failure && failure->delivery() == delivery::unsent) {
      const auto unsent = journal_record("a2a_unsent", "message", json::value(nullptr));
      co_await journal_.append(unsent);
    }
    co_return failure;
  }

  // Sends the input; the task is recorded before anything waits on it.
  asio::awaitable<task_view> start_task() {
    const auto message_id = new_message_id();
    const auto sending = journal_record("a2a_send", "message", json::value(message_id));
    co_await journal_.append(sending);
    auto params = send_params(new_message(message_id, context_.input, context_.additional_instructions), true);
    json::value result;
    const auto failure = co_await send_once(std::move(params), result);
    if (failure) throw *failure;
    auto task = read_send_result(result, config_);
    if (!task.id.empty()) {
      task_id_ = task.id;
      const auto started = task_record_of(task, rpc_->url());
      co_await journal_.append(started);
      context_.logger->info("{}: task '{}' started", who(), task.id);
    }
    co_return task;
  }

  // The user's answer, on the same task. A blocking send: the remote
  // answers once the task stopped again (a non-blocking one could still
  // show the question just answered).
  asio::awaitable<task_view> reply(const task_record& record, const std::string& answer, std::size_t index) {
    const auto replying = journal_record("a2a_reply", "answer", json::value(static_cast<std::int64_t>(index)));
    co_await journal_.append(replying);
    auto params = send_params(reply_message(new_message_id(), record.task_id, record.context_id, answer), false);
    json::value result;
    const auto failure = co_await send_once(std::move(params), result);
    // Refused or never sent: the step fails, saying why. Sent, but its
    // answer lost (a timeout): the task is looked at, the reply not sent again.
    if (failure && failure->delivery() != delivery::unknown) throw *failure;
    if (failure) {
      context_.logger->warn("{}: {}; looking at task '{}'", who(), failure->what(), record.task_id);
      co_return co_await get_task(record.task_id);
    }
    auto task = read_send_result(result, config_);
    if (!task.id.empty() && task.id != record.task_id) {
      throw remote_failure("invalid_remote_response", who() + ": the answer to task '" + record.task_id +
                                                          "' came back as task '" + task.id + "'");
    }
    co_return task;
  }

  asio::awaitable<task_view> get_task(const std::string& id) {
    auto params = task_params(id);
    auto result = co_await rpc_->call("GetTask", std::move(params), config_.request_timeout,
                                      net::retry_scope::transient, trace_);
    auto task = read_task(result, config_);
    if (task.id != id) {
      throw remote_failure("invalid_remote_response",
                           who() + ": GetTask for task '" + id + "' answered task '" + task.id + "'");
    }
    co_return task;
  }

  // Polled until it stops; the node's timeout_ms bounds the wait.
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
  std::string task_id;
  protocol::envelope answer;
  // Cancelled (the node's deadline, the run cancelled or interrupted), the
  // call unwinds and the remote task is left as it is: the step's next run
  // (a retry, a resume) continues it from the journal.
  try {
    auto rpc = co_await endpoint();
    step_call call(config_, context, *journal, std::move(rpc), task_id);
    answer = co_await call.run();
  } catch (const remote_failure& f) {
    answer = failed(f, task_id);
  }
  co_return answer;
}

}  // namespace switchboard::a2a
