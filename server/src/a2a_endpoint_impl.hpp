// The A2A endpoint's internals (a2a_endpoint.hpp), shared by its two
// source files: a2a_endpoint.cpp (routes, JSON-RPC dispatch, the methods)
// and a2a_stream.cpp (SendStreamingMessage and SubscribeToTask).
#pragma once
#include "a2a_endpoint.hpp"

#include "a2a_wire.hpp"

#include <switchboard/protocol/limits.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <map>
#include <optional>
#include <mutex>
#include <random>

namespace switchboard::server {

namespace asio = boost::asio;
namespace json = boost::json;
namespace orch = switchboard::orchestrator;

namespace a2a_detail {

constexpr std::string_view well_known_card = "/.well-known/agent-card.json";
constexpr std::string_view prefix = "/a2a/";
constexpr std::size_t default_page_size = 50;
constexpr std::size_t max_page_size = 100;
// Runs the A2A clients of one server may have working at once (each a
// hub's run; returnImmediately makes them cheap to ask for).
constexpr std::size_t max_flights = 64;

using strand_type = asio::strand<asio::any_io_executor>;

// "a2a-" and 128 random bits: a run id no other process makes.
inline std::string new_task_id() {
  static std::mutex mutex;
  static std::mt19937_64 random{(std::uint64_t{std::random_device{}()} << 32) ^ std::random_device{}()};
  std::lock_guard lock(mutex);
  char text[40];
  std::snprintf(text, sizeof text, "a2a-%016llx%016llx", static_cast<unsigned long long>(random()),
                static_cast<unsigned long long>(random()));
  return text;
}

// {"statusUpdate": ...} of a task still working: one step's progress line.
inline json::object working_update(const std::string& task_id, const std::string& context_id, std::string line,
                            std::size_t n) {
  json::object message{{"messageId", task_id + "-progress-" + std::to_string(n)},
                       {"role", "ROLE_AGENT"},
                       {"taskId", task_id},
                       {"contextId", context_id},
                       {"parts", json::array{json::object{{"text", std::move(line)}}}}};
  json::object status{{"state", "TASK_STATE_WORKING"}, {"message", std::move(message)}};
  return json::object{{"statusUpdate", json::object{{"taskId", task_id},
                                                    {"contextId", context_id},
                                                    {"status", std::move(status)}}}};
}

// One task's run in this process: the mcp::tool_call workflow_tools drives
// it through (no elicitation: a pause ends the call), its progress lines
// for streams, and the signal that it ended. Members are used on `strand`.
class a2a_flight final : public mcp::tool_call, public std::enable_shared_from_this<a2a_flight> {
 public:
  a2a_flight(strand_type s, std::string task, std::string context)
      : strand(std::move(s)), task_id(std::move(task)), context_id(std::move(context)) {}

  bool can_elicit() const noexcept override { return false; }
  asio::awaitable<mcp::elicitation_reply> elicit(std::string, json::object) override {
    co_return mcp::elicitation_reply{"cancel", {}};
  }
  void progress(std::string line) override {
    asio::post(strand, [self = shared_from_this(), line = std::move(line)]() mutable {
      self->updates.push_back(working_update(self->task_id, self->context_id, std::move(line), self->updates.size() + 1));
      self->wake();
    });
  }
  void on_stop(std::function<void(mcp::stop_reason)> handler) override {
    stop_handler = std::move(handler);
    if (stopped) stop_handler(*stopped);
  }

  // From any thread: stops the run (cancelled, or interrupted at shutdown).
  void stop(mcp::stop_reason reason) {
    asio::post(strand, [self = shared_from_this(), reason] {
      self->stopped = reason;
      if (self->stop_handler) self->stop_handler(reason);
    });
  }
  // On the strand, once the call returned.
  void finish(json::object call_result) {
    result = std::move(call_result);
    finished = true;
    wake();
  }
  // On the strand: until there is something after update `seen`, or it ended.
  asio::awaitable<void> wait_beyond(std::size_t seen, std::chrono::milliseconds heartbeat) {
    if (finished || updates.size() > seen) co_return;
    auto timer = std::make_shared<asio::steady_timer>(strand, heartbeat);
    waiters.push_back(timer);
    auto waiting = timer->async_wait(asio::as_tuple(asio::use_awaitable));
    co_await std::move(waiting);
  }

  strand_type strand;
  const std::string task_id;
  const std::string context_id;
  std::vector<json::object> updates;
  bool finished = false;
  json::object result;  // the tools/call result, once finished

 private:
  void wake() {
    for (auto& w : waiters)
      if (auto t = w.lock()) t->cancel();
    waiters.clear();
  }

  std::function<void(mcp::stop_reason)> stop_handler;
  std::optional<mcp::stop_reason> stopped;
  std::vector<std::weak_ptr<asio::steady_timer>> waiters;
};

// A JSON-RPC failure of one request: answered as its error response.
struct rpc_failure {
  int code;
  std::string message;
};

inline net::server_response json_response(const json::object& body) {
  net::server_response r;
  r.headers = {{"Content-Type", "application/json"}};
  r.body = json::serialize(body);
  return r;
}

inline std::string sse(const json::object& message) { return "data: " + json::serialize(message) + "\n\n"; }

// The HTTP+JSON binding's answers: a result as it is, a failure as its HTTP
// status with a google.rpc.Status body.
inline net::server_response rest_response(const json::object& body, int status = 200) {
  net::server_response r;
  r.status = status;
  r.headers = {{"Content-Type", "application/a2a+json"}};
  r.body = json::serialize(body);
  return r;
}
inline net::server_response rest_failure(const rpc_failure& failure) {
  auto error = a2a::rest_error_of(failure.code, failure.message);
  return rest_response(error.body, error.http_status);
}

// Why `request` may not be served (its A2A-Version), or nullopt.
inline std::optional<rpc_failure> version_refused(const net::server_request& request) {
  const auto version = request.header("a2a-version");
  if (version && !version->empty() && (version->starts_with("1.") || *version == "1")) return std::nullopt;
  return rpc_failure{a2a::code::version_not_supported,
                     "A2A-Version " +
                         (version && !version->empty() ? "'" + std::string(*version) + "'" : std::string("absent (0.3)")) +
                         " is not supported: this agent speaks 1.0 (send A2A-Version: 1.0)"};
}

// How a stream frames its events: JSON-RPC responses to request `id`, or
// (the HTTP+JSON binding) the StreamResponse objects themselves.
struct stream_framing {
  json::value id;
  bool rest = false;
  std::string event(json::object update) const {
    return rest ? sse(update) : sse(a2a::result_response(id, std::move(update)));
  }
  std::string error(const rpc_failure& failure) const {
    return "event: error\n" + (rest ? sse(a2a::rest_error_of(failure.code, failure.message).body)
                                     : sse(a2a::error_response(id, failure.code, failure.message)));
  }
};

}  // namespace a2a_detail

using namespace a2a_detail;

struct a2a_endpoint::impl : std::enable_shared_from_this<a2a_endpoint::impl> {
  impl(asio::any_io_executor ex) : strand(asio::make_strand(ex)) {}

  strand_type strand;
  std::shared_ptr<host::workflow_tools> tools;
  std::vector<a2a_agent> agents;
  std::shared_ptr<orch::checkpoint_store> store;
  bool bearer_auth = false;
  bool tls = false;
  std::chrono::milliseconds heartbeat{15'000};
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<a2a_flight>> flights;  // by task id

  // Runs `f` (an awaitable-returning callable) on the strand and returns its result.
  template <class F>
  auto on_strand(F f) -> decltype(f()) {
    auto spawning = asio::co_spawn(strand, std::move(f), asio::use_awaitable);
    co_return co_await std::move(spawning);
  }

  const a2a_agent* agent_named(std::string_view name) const {
    for (const auto& a : agents)
      if (a.workflow == name) return &a;
    return nullptr;
  }

  std::shared_ptr<a2a_flight> flight_of(const std::string& task_id) {
    std::lock_guard lock(mutex);
    const auto it = flights.find(task_id);
    return it == flights.end() ? nullptr : it->second;
  }

  // A new flight for the task, or null when one is already under way: the
  // message that registers first continues the task.
  std::shared_ptr<a2a_flight> claim_flight(const std::string& task_id, const std::string& context_id) {
    std::lock_guard lock(mutex);
    if (flights.size() >= max_flights)
      throw rpc_failure{a2a::code::internal_error, "too many tasks in flight on this server (" +
                                                       std::to_string(max_flights) + "): try again later"};
    auto f = std::make_shared<a2a_flight>(strand, task_id, context_id);
    return flights.emplace(task_id, f).second ? f : nullptr;
  }

  asio::awaitable<std::optional<orch::workflow_state>> find(std::string task_id) {
    auto self = shared_from_this();
    auto finding = on_strand([self, task_id]() -> asio::awaitable<std::optional<orch::workflow_state>> {
      auto f = self->tools->find_run(task_id);
      co_return co_await std::move(f);
    });
    co_return co_await std::move(finding);
  }

  // The task the agent serves, or TaskNotFound.
  asio::awaitable<orch::workflow_state> task_of_agent(const a2a_agent& agent, json::value id_value) {
    if (!id_value.is_string() || id_value.get_string().empty())
      throw rpc_failure{a2a::code::invalid_params, "params.id must be a task id (a string)"};
    const std::string task_id(id_value.get_string());
    auto finding = find(task_id);
    auto state = co_await std::move(finding);
    if (!state) {
      // Started a moment ago (returnImmediately) and not stored yet: working.
      if (const auto f = flight_of(task_id); f && f->context_id == agent.workflow) {
        state.emplace();
        state->id = task_id;
        state->workflow_name = agent.workflow;
      }
    }
    if (!state || state->workflow_name != agent.workflow)
      throw rpc_failure{a2a::code::task_not_found, "no task '" + task_id + "' for agent '" + agent.workflow + "'"};
    co_return std::move(*state);
  }

  // Starts the call of `f` on the strand; it ends the flight when it returns.
  void launch(std::shared_ptr<a2a_flight> f, std::function<asio::awaitable<json::object>(a2a_flight&)> call) {
    auto self = shared_from_this();
    asio::co_spawn(
        strand,
        [self, f, call = std::move(call)]() -> asio::awaitable<void> {
          json::object result;
          try {
            auto calling = call(*f);
            result = co_await std::move(calling);
          } catch (const std::exception& e) {
            result = mcp::text_result(std::string("the run failed: ") + e.what(), true);
          }
          {
            std::lock_guard lock(self->mutex);
            self->flights.erase(f->task_id);
          }
          f->finish(std::move(result));
        },
        asio::detached);
  }

  // Until the flight ended; its tools/call result.
  asio::awaitable<json::object> wait(std::shared_ptr<a2a_flight> f) {
    auto waiting = on_strand([f, h = heartbeat]() -> asio::awaitable<json::object> {
      while (!f->finished) {
        auto w = f->wait_beyond(std::numeric_limits<std::size_t>::max(), h);
        co_await std::move(w);
      }
      co_return f->result;
    });
    co_return co_await std::move(waiting);
  }

  // The Task once a flight ended: the stored run, or the call's error.
  asio::awaitable<json::object> outcome(const std::shared_ptr<a2a_flight>& f, const json::object& call_result,
                                        bool continuing) {
    const auto* structured = call_result.if_contains("structuredContent");
    const auto* is_error = call_result.if_contains("isError");
    if (!structured && is_error && is_error->is_bool() && is_error->get_bool()) {
      std::string text;
      if (const auto* content = call_result.if_contains("content"); content && content->is_array())
        for (const auto& c : content->get_array())
          if (const auto* t = c.is_object() ? c.get_object().if_contains("text") : nullptr; t && t->is_string())
            text += t->get_string();
      // A reply that lost to another in another process, or a store failure.
      throw rpc_failure{continuing ? a2a::code::unsupported_operation : a2a::code::internal_error, text};
    }
    auto finding = find(f->task_id);
    auto state = co_await std::move(finding);
    if (!state) throw rpc_failure{a2a::code::internal_error, "task '" + f->task_id + "' is not in the store"};
    co_return a2a::task_of(*state);
  }

  // SendMessage / SendStreamingMessage up to the flight that carries it.
  asio::awaitable<std::shared_ptr<a2a_flight>> begin(const a2a_agent& agent, const json::object& params,
                                                     bool& continuing) {
    std::string error;
    const auto message = a2a::read_message(params, error);
    if (!message) throw rpc_failure{a2a::code::invalid_params, error};
    continuing = !message->task_id.empty();
    if (!continuing) {
      json::object input = a2a::workflow_input(*message);
      if (auto problem = tools->check_arguments(agent.workflow, input))
        throw rpc_failure{a2a::code::invalid_params, "the message is no input of '" + agent.workflow + "': " + *problem};
      auto f = claim_flight(new_task_id(), agent.workflow);
      spdlog::info("A2A: task {} of agent '{}' started", f->task_id, agent.workflow);
      launch(f, [self = shared_from_this(), name = agent.workflow, input = std::move(input)](a2a_flight& call) mutable {
        return self->tools->start_run(name, std::move(input), call.task_id, call);
      });
      co_return f;
    }
    auto reading = task_of_agent(agent, json::value(message->task_id));
    const auto state = co_await std::move(reading);
    if (!message->context_id.empty() && message->context_id != state.workflow_name)
      throw rpc_failure{a2a::code::invalid_params, "message.contextId '" + message->context_id +
                                                       "' is not the task's ('" + state.workflow_name + "')"};
    if (orch::is_finished(state.status))
      throw rpc_failure{a2a::code::unsupported_operation,
                        "task '" + state.id + "' is " + std::string(a2a::task_state(state.status)) +
                            ": a terminal task takes no more messages (start a new task)"};
    if (state.status == orch::workflow_status::running || flight_of(state.id))
      throw rpc_failure{a2a::code::unsupported_operation, "task '" + state.id + "' is working on an earlier message"};
    auto arguments = a2a::resume_arguments(state, *message, error);
    if (!arguments) throw rpc_failure{a2a::code::invalid_params, error};
    auto f = claim_flight(state.id, state.workflow_name);
    if (!f) throw rpc_failure{a2a::code::unsupported_operation, "task '" + state.id + "' is working on another message"};
    spdlog::info("A2A: task {} of agent '{}' continued", f->task_id, agent.workflow);
    launch(f, [self = shared_from_this(), args = std::move(*arguments)](a2a_flight& call) mutable {
      return self->tools->call_tool(std::string(host::resume_tool_name), std::move(args), call);
    });
    co_return f;
  }

  asio::awaitable<json::value> send(const a2a_agent& agent, const json::object& params) {
    bool continuing = false;
    auto beginning = begin(agent, params, continuing);
    auto f = co_await std::move(beginning);
    const auto* configuration = params.if_contains("configuration");
    const auto* immediately = configuration && configuration->is_object()
                                  ? configuration->get_object().if_contains("returnImmediately")
                                  : nullptr;
    if (immediately && immediately->is_bool() && immediately->get_bool()) {
      json::object task = a2a::submitted_task(f->task_id, f->context_id);
      task["status"].as_object()["state"] = "TASK_STATE_WORKING";
      co_return json::object{{"task", std::move(task)}};
    }
    auto waiting = wait(f);
    const json::object result = co_await std::move(waiting);
    auto reading = outcome(f, result, continuing);
    json::object task = co_await std::move(reading);
    json::object response;
    response["task"] = std::move(task);
    co_return response;
  }

  asio::awaitable<json::value> get(const a2a_agent& agent, const json::object& params) {
    const auto* id = params.if_contains("id");
    auto reading = task_of_agent(agent, id ? *id : json::value());
    const auto state = co_await std::move(reading);
    const auto* history = params.if_contains("historyLength");
    const bool with_history = !(history && history->is_number() && history->to_number<double>() == 0);
    co_return a2a::task_of(state, with_history);
  }

  asio::awaitable<json::value> cancel(const a2a_agent& agent, const json::object& params) {
    const auto* id = params.if_contains("id");
    auto reading = task_of_agent(agent, id ? *id : json::value());
    const auto state = co_await std::move(reading);
    if (orch::is_finished(state.status))
      throw rpc_failure{a2a::code::task_not_cancelable,
                        "task '" + state.id + "' is " + std::string(a2a::task_state(state.status))};
    if (auto f = flight_of(state.id)) {
      f->stop(mcp::stop_reason::cancelled);
      auto waiting = wait(f);
      co_await std::move(waiting);
    } else {
      std::string problem;
      auto self = shared_from_this();
      auto cancelling = on_strand([self, id = state.id]() -> asio::awaitable<std::string> {
        try {
          auto c = self->tools->cancel_stored_run(id);
          co_await std::move(c);
        } catch (const std::exception& e) {
          co_return std::string(e.what());
        }
        co_return std::string{};
      });
      problem = co_await std::move(cancelling);
      if (!problem.empty()) throw rpc_failure{a2a::code::task_not_cancelable, problem};
    }
    auto finding = task_of_agent(agent, json::value(state.id));
    const auto final_state = co_await std::move(finding);
    co_return a2a::task_of(final_state);
  }

  asio::awaitable<json::value> list(const a2a_agent& agent, const json::object& params);
  asio::awaitable<net::server_response> stream(const a2a_agent& agent, stream_framing framing,
                                               const json::object& params, bool subscribe);
  asio::awaitable<net::server_response> rpc(const a2a_agent& agent, net::server_request& request);
  // The HTTP+JSON binding: `route` is the path after /a2a/{workflow}.
  asio::awaitable<net::server_response> rest(const a2a_agent& agent, net::server_request& request,
                                             std::string_view route);
  net::server_response card(const a2a_agent& agent, const net::server_request& request) const;
};

}  // namespace switchboard::server
