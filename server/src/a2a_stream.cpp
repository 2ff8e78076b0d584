// SendStreamingMessage and SubscribeToTask of the A2A server
// (a2a_endpoint.hpp): server-sent events of a task in flight.
#include "a2a_endpoint_impl.hpp"

namespace switchboard::server {

namespace asio = boost::asio;
namespace json = boost::json;
namespace orch = switchboard::orchestrator;

asio::awaitable<net::server_response> a2a_endpoint::impl::stream(const a2a_agent& agent, stream_framing framing,
                                                                 const json::object& params, bool subscribe) {
  std::shared_ptr<a2a_flight> f;
  bool continuing = false;
  json::object first;
  if (subscribe) {
    const auto* task_id = params.if_contains("id");
    auto reading = task_of_agent(agent, task_id ? *task_id : json::value());
    const auto state = co_await std::move(reading);
    if (orch::is_finished(state.status))
      throw rpc_failure{a2a::code::unsupported_operation,
                        "task '" + state.id + "' is " + std::string(a2a::task_state(state.status)) +
                            ": there is nothing to subscribe to"};
    first = a2a::task_of(state);
    f = flight_of(state.id);
    continuing = true;
  } else {
    auto beginning = begin(agent, params, continuing);
    f = co_await std::move(beginning);
    first = a2a::submitted_task(f->task_id, f->context_id);
    first["status"].as_object()["state"] = "TASK_STATE_WORKING";
  }
  net::server_response r;
  r.headers = {{"Content-Type", "text/event-stream"}, {"Cache-Control", "no-cache"}};
  r.stream = [self = shared_from_this(), f, framing = std::move(framing), first = std::move(first),
              continuing](net::response_stream& out) -> asio::awaitable<void> {
    const std::string opening = framing.event(json::object{{"task", first}});
    auto writing = out.write(opening);
    if (!co_await std::move(writing) || !f) co_return;
    std::size_t seen = 0;
    for (;;) {
      auto next = self->on_strand([f, seen, h = self->heartbeat]() -> asio::awaitable<std::pair<std::vector<json::object>, bool>> {
        auto w = f->wait_beyond(seen, h);
        co_await std::move(w);
        std::vector<json::object> fresh(f->updates.begin() + static_cast<std::ptrdiff_t>(seen), f->updates.end());
        co_return std::pair{std::move(fresh), f->finished};
      });
      auto [fresh, finished] = co_await std::move(next);
      seen += fresh.size();
      for (auto& update : fresh) {
        const std::string event = framing.event(std::move(update));
        auto w = out.write(event);
        if (!co_await std::move(w)) co_return;
      }
      if (finished) break;
      if (fresh.empty()) {
        auto w = out.write(": keep-alive\n\n");
        if (!co_await std::move(w)) co_return;
      }
    }
    std::string last;
    try {
      auto reading = self->outcome(f, f->result, continuing);
      json::object task = co_await std::move(reading);
      if (auto* artifacts = task.if_contains("artifacts"); artifacts && artifacts->is_array())
        for (auto& artifact : artifacts->as_array())
          last += framing.event(json::object{{"artifactUpdate", json::object{{"taskId", f->task_id},
                                                                             {"contextId", f->context_id},
                                                                             {"artifact", artifact},
                                                                             {"lastChunk", true}}}});
      last += framing.event(json::object{{"statusUpdate", json::object{{"taskId", f->task_id},
                                                                       {"contextId", f->context_id},
                                                                       {"status", task["status"]}}}});
    } catch (const rpc_failure& e) {
      last = framing.error(e);
    }
    auto w = out.write(last);
    co_await std::move(w);
  };
  co_return r;
}

}  // namespace switchboard::server
