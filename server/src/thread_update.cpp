// POST /threads/{id}/state: a person sets a node's answer instead of its
// agent ("edit, then continue"), on a thread whose hub run is paused or
// interrupted. The hub checks the answer against the agent's schema and
// routes on it (hub::update_stored_run); here the thread is kept free of
// runs while that happens, and its record is brought up to date.
#include "run_engine.hpp"
#include "wire.hpp"

#include <switchboard/orchestrator/error.hpp>

namespace switchboard::server {

namespace json = boost::json;
namespace orch = switchboard::orchestrator;

namespace {

// The body of a state update: {"values": {...}, "as_node": "...",
// "checkpoint_id" | "checkpoint": {"checkpoint_id": ...}}.
struct update_request {
  orch::state_update update;
  std::string checkpoint_id;  // "" = whatever the current one is
};

std::string text_of(const json::object& o, std::string_view key, std::string_view what) {
  const auto* v = o.if_contains(key);
  if (!v || v->is_null()) return {};
  if (!v->is_string()) throw api_error(422, std::string(what) + " must be a string");
  return std::string(v->get_string());
}

update_request read_update(const json::object& body) {
  update_request out;
  const auto* values = body.if_contains("values");
  if (!values || !values->is_object())
    throw api_error(422, "values must be a JSON object: the answer's data for the node named by as_node");
  out.update.data = values->get_object();
  out.update.node = text_of(body, "as_node", "as_node");
  out.checkpoint_id = text_of(body, "checkpoint_id", "checkpoint_id");
  if (const auto* cp = body.if_contains("checkpoint"); cp && !cp->is_null()) {
    if (!cp->is_object()) throw api_error(422, "checkpoint must be an object with a checkpoint_id");
    if (auto id = text_of(cp->get_object(), "checkpoint_id", "checkpoint.checkpoint_id"); !id.empty())
      out.checkpoint_id = std::move(id);
  }
  return out;
}

// The hub's refusals as the API answers them.
[[noreturn]] void answer_refusal(const orch::orchestrator_error& e, const std::string& thread_id) {
  switch (e.errc()) {
    case orch::orchestrator_errc::invalid_update:
      throw api_error(422, e.what());
    case orch::orchestrator_errc::unknown_workflow:
    case orch::orchestrator_errc::run_owned:
    case orch::orchestrator_errc::not_awaiting_clarification:
    case orch::orchestrator_errc::workflow_mismatch:
    case orch::orchestrator_errc::run_moved_on:
    case orch::orchestrator_errc::lost_ownership:
      throw api_error(409, "Thread " + thread_id + ": " + e.what());
    default:
      throw;
  }
}

}  // namespace

boost::asio::awaitable<json::object> run_engine::update_state(std::string thread_id, json::object body) {
  auto request = read_update(body);
  // Sharing runs, the route read what the other servers did (langgraph_api::route).
  const auto thread = records_.thread(thread_id);
  if (!thread) throw api_error(404, "Thread " + thread_id + " not found");
  if (thread->workflow_run.empty() || thread->graph_id.empty())
    throw api_error(409, "Thread " + thread_id + " has no state to update yet: start a run on it first");
  auto& workflow = workflow_of(thread->graph_id);
  {
    std::scoped_lock lock(mutex_);
    const auto slot = threads_.find(thread_id);
    const bool busy = thread->status == "busy" ||
                      (slot != threads_.end() && (!slot->second.active.empty() || !slot->second.waiting.empty()));
    if (busy || !updating_.insert(thread_id).second)
      throw api_error(409, "Thread " + thread_id + " is busy: update its state once its run has stopped");
  }
  // No run starts on the thread here until the update is saved (create);
  // across servers the hub's claim on the run decides.
  struct updating_guard {
    run_engine& engine;
    std::string thread_id;
    ~updating_guard() {
      std::scoped_lock lock(engine.mutex_);
      engine.updating_.erase(thread_id);
    }
  } guard{*this, thread_id};

  if (!request.checkpoint_id.empty()) {
    const auto current = co_await state_of(*thread);
    const auto seen = current ? server::thread_state(*thread, current).at("checkpoint") : json::value(nullptr);
    const auto* id = seen.is_object() ? seen.get_object().if_contains("checkpoint_id") : nullptr;
    if (!id || *id != json::value(request.checkpoint_id))
      throw api_error(409, "Thread " + thread_id + " moved on since checkpoint " + request.checkpoint_id +
                               ": read its state again (only its current checkpoint can be updated)");
    // And not after it, by another server, before the hub claims the run.
    request.update.expected_step = current->step;
  }
  orch::workflow_state state;
  try {
    state = co_await workflow.hub->update_stored_run(workflow.opened.workflow, thread->workflow_run,
                                                     std::move(request.update));
  } catch (const orch::orchestrator_error& e) {
    answer_refusal(e, thread_id);
  }
  const auto values = values_of(state);
  const auto updated = records_.change_thread(thread_id, [&](thread_record& t) {
    // A run posted since (on another server) is the thread's news: busy stays.
    if (t.status != "busy") t.status = "idle";
    t.values = values;
    t.interrupts.clear();
    return true;
  });
  if (updated) {
    // The hub has the update: its thread's record must say so (a pause it
    // dropped may not be answered).
    const std::function<boost::asio::awaitable<void>()> write = [&]() -> boost::asio::awaitable<void> {
      co_await records_.write(*updated);
    };
    const auto subject = "thread " + thread_id;  // g++ 12: named before co_await
    co_await keep_trying(subject, "its state after an update", write);
  }
  co_return json::object{{"checkpoint", server::thread_state(updated ? *updated : *thread, state).at("checkpoint")}};
}

}  // namespace switchboard::server
