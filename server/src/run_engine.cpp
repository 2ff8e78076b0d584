// Posting runs on a thread (run_engine.hpp): creating a run under its
// multitask strategy, taking back one whose write failed, a thread's state.
// A run's execution is in run_execution.cpp.
#include "run_engine.hpp"
#include "run_events.hpp"

#include "ids.hpp"
#include "interrupt_answer.hpp"
#include "json_fields.hpp"
#include "wire.hpp"

#include <switchboard/orchestrator/crash_point.hpp>
#include <switchboard/orchestrator/error.hpp>
#include <switchboard/telemetry/trace_context.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/serialize.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>

namespace switchboard::server {

namespace asio = boost::asio;
namespace json = boost::json;
namespace orch = switchboard::orchestrator;

stream_record split_record(std::string_view text) {
  const auto newline = text.find('\n');
  if (newline == std::string_view::npos) return {text, {}};
  return {text.substr(0, newline), text.substr(newline + 1)};
}

run_engine::run_engine(asio::any_io_executor executor, catalog& records, std::shared_ptr<orch::event_feed> feed,
                       std::vector<served_workflow*> workflows)
    : executor_(std::move(executor)),
      records_(records),
      feed_(std::move(feed)),
      workflows_(std::move(workflows)),
      observer_(std::make_shared<observer>(*this)),
      loops_(asio::make_strand(executor_)),
      ends_(asio::make_strand(executor_)) {
  for (auto* w : workflows_) w->hub->add_observer(observer_);
}

run_engine::~run_engine() = default;

served_workflow& run_engine::workflow_of(const std::string& assistant_id) const {
  for (auto* w : workflows_)
    if (w->graph_id == assistant_id || system_assistant_id(w->graph_id) == assistant_id) return *w;
  if (const auto a = records_.assistant(assistant_id))
    for (auto* w : workflows_)
      if (w->graph_id == a->graph_id) return *w;
  throw api_error(404, "No assistant found for \"" + assistant_id +
                           "\". Make sure the assistant ID is for a valid assistant or a valid graph ID.");
}

bool run_engine::thread_active(const std::string& thread_id) const {
  if (shares_runs()) {  // its runs may be on any server: the catalog knows
    const auto runs = records_.runs_of(thread_id);
    return std::ranges::any_of(runs, [](const run_record& r) { return r.status == "pending" || r.status == "running"; });
  }
  std::scoped_lock lock(mutex_);
  const auto it = threads_.find(thread_id);
  return it != threads_.end() && (!it->second.active.empty() || !it->second.waiting.empty());
}

std::shared_ptr<run_engine::sink> run_engine::open_sink(const run_record& run, json::object values) {
  auto s = std::make_shared<sink>(*this, run.run_id, run.thread_id, std::move(values));
  std::scoped_lock lock(mutex_);
  if (const auto it = claimed_.find(run.thread_id); it != claimed_.end()) s->since = it->second.since;
  sinks_[run.workflow_run] = s;
  return s;
}

boost::asio::awaitable<run_record> run_engine::create(std::string thread_id, json::object body, std::string traceparent,
                                                      std::string tracestate) {
  const auto assistant = text_field(body, "assistant_id");
  if (assistant.empty()) throw api_error(422, "assistant_id is required");
  auto& workflow = workflow_of(assistant);

  const auto* input = member(body, "input");
  if (input && !input->is_object()) throw api_error(422, "input must be a JSON object (the workflow's input)");
  json::value resume = nullptr;
  if (const auto* command = member(body, "command")) {
    if (!command->is_object()) throw api_error(422, "command must be an object");
    if (const auto* r = member(command->get_object(), "resume")) resume = *r;
    if (member(command->get_object(), "goto") || member(command->get_object(), "update"))
      throw api_error(422, "command.goto and command.update are not supported; use command.resume");
  }
  if (input && !resume.is_null()) throw api_error(422, "give input or command.resume, not both");
  auto strategy = text_field(body, "multitask_strategy");
  if (strategy.empty()) strategy = "enqueue";
  if (strategy != "reject" && strategy != "enqueue" && strategy != "interrupt" && strategy != "rollback")
    throw api_error(422, "multitask_strategy must be reject, enqueue, interrupt or rollback");

  // Sharing runs, the route read what the other servers did (langgraph_api::route).
  auto thread = records_.thread(thread_id);
  if (!thread) {
    if (text_field(body, "if_not_exists") != "create") throw api_error(404, "Thread " + thread_id + " not found");
    if (!is_uuid(thread_id)) throw api_error(422, "thread_id must be a UUID");
    thread_record fresh;
    fresh.thread_id = thread_id;
    fresh.created_at = fresh.updated_at = now_iso8601();
    co_await records_.save(fresh);
    thread = std::move(fresh);
  }
  if (!input && !thread->graph_id.empty() && thread->graph_id != workflow.graph_id)
    throw api_error(409, "thread " + thread_id + " holds a run of " + thread->graph_id + ", not " + workflow.graph_id);

  run_record run;
  run.run_id = time_ordered_uuid();
  run.thread_id = thread_id;
  run.assistant_id = system_assistant_id(workflow.graph_id);
  run.graph_id = workflow.graph_id;
  run.created_at = run.updated_at = now_iso8601();
  run.multitask_strategy = strategy;
  if (const auto* m = member(body, "metadata"); m && m->is_object()) run.metadata = m->get_object();
  for (const auto* key : {"stream_mode", "config", "context", "stream_resumable", "on_disconnect"})
    if (const auto* v = member(body, key)) run.kwargs[key] = *v;
  run.kwargs["previous_workflow_run"] = thread->workflow_run;

  std::string displaced;  // the run an interrupt/rollback strategy stops
  bool start_now = false;
  {
    std::scoped_lock lock(mutex_);
    if (shutting_down_) throw api_error(503, "the server is shutting down");
    if (updating_.contains(thread_id)) throw api_error(409, "Thread " + thread_id + " is busy: its state is being updated");
    // Sharing runs, the queue orders a thread's runs: no slot here. A slot
    // is made only for a run it takes (a refused request leaves none).
    static const thread_slot no_slot;
    const auto found = shares_runs() ? threads_.end() : threads_.find(thread_id);
    const auto& slot = found == threads_.end() ? no_slot : found->second;
    const auto current = records_.thread(thread_id);
    if (!current) throw api_error(404, "Thread " + thread_id + " not found");
    // Sharing runs, the thread may be busy on another server: its record
    // says so (and the queue decides a race, reserve_thread).
    const bool busy = shares_runs() ? current->status == "busy" : !slot.active.empty() || !slot.waiting.empty();
    if (!resume.is_null()) {
      if (busy) throw api_error(409, "Thread " + thread_id + " is busy: its run is being answered or still running");
      resume = checked_resume(*current, std::move(resume));
      run.kwargs["command"] = json::object{{"resume", resume}};
      const auto* step = current->values.is_object() ? current->values.get_object().if_contains("step") : nullptr;
      run.kwargs["resume_from_step"] = step ? *step : json::value(0);
      run.workflow_run = current->workflow_run;
    } else if (input) {
      if (busy && strategy == "reject")
        throw api_error(409, "Thread is already running a task. Wait for it to finish or choose a different "
                             "multitask strategy.");
      run.kwargs["input"] = *input;
      run.workflow_run = run.run_id;
      // The caller's trace, kept with the run that starts the hub run: its
      // resumes (other requests, a restarted server) find it here.
      if (const auto caller = telemetry::parse_traceparent(traceparent, tracestate)) {
        run.kwargs["traceparent"] = telemetry::format_traceparent(*caller);
        if (!caller->trace_state.empty()) run.kwargs["tracestate"] = caller->trace_state;
      }
    } else {
      if (current->workflow_run.empty()) throw api_error(422, "a run needs input or command.resume");
      run.workflow_run = current->workflow_run;  // continue an interrupted run
    }
    if (busy && (strategy == "interrupt" || strategy == "rollback")) {
      // Sharing runs, request_cancel asks whichever server executes it.
      displaced = shares_runs() ? running_run_of(thread_id) : slot.active;
    }
    if (shares_runs()) {
      // Started by whichever server claims the thread (offer_run).
    } else if (!busy) {
      threads_[thread_id].active = run.run_id;
      start_now = true;
    } else {
      threads_[thread_id].waiting.push_back(run.run_id);
    }
  }

  const bool exclusive = !resume.is_null() || strategy == "reject";
  if (shares_runs() && exclusive) co_await reserve_thread(run, workflow);
  run = records_.keep(std::move(run));
  std::optional<thread_record> thread_before;
  const auto busy_thread = records_.change_thread(thread_id, [&](thread_record& t) {
    thread_before = t;
    t.status = "busy";
    t.graph_id = workflow.graph_id;
    if (input) t.workflow_run = run.workflow_run;
    t.metadata["graph_id"] = workflow.graph_id;
    t.metadata["assistant_id"] = run.assistant_id;
    return true;
  });
  try {
    co_await records_.write(run, busy_thread);  // one write for both
  } catch (...) {
    unpost(run, busy_thread, thread_before);  // the caller is told it failed: nothing of it stays
    throw;
  }
  // Journaled, the run executes whatever follows (another server's sweep
  // finds it): a failure to keep its stream's first record must not tell
  // the caller otherwise (a client retrying would post a second run), and
  // is not retried either (the run may have ended meanwhile: a late first
  // record would follow its end).
  json::object metadata{{"run_id", run.run_id}, {"thread_id", thread_id}, {"attempt", 1}};
  std::string first_record = "metadata\n" + json::serialize(metadata);  // g++ 12: named before co_await
  try {
    co_await feed_->append(run.run_id, std::move(first_record));
  } catch (const std::exception& e) {
    spdlog::warn("serve: run {}: its stream's first record (metadata) could not be kept: {}", run.run_id, e.what());
  }
  if (shares_runs()) {
    if (!resume.is_null()) orch::crash_point("serve.answer_journaled");
    if (!displaced.empty()) co_await request_cancel(displaced, strategy);
    co_await offer_run(run);
    co_return run;
  }
  if (!displaced.empty()) {
    std::optional<orch::workflow_handle> handle;
    {
      std::scoped_lock lock(mutex_);
      // Recorded now the new run is written: the displaced run, still
      // starting (no handle yet), finds it when it gets one (heed_cancel_requests).
      if (const auto slot = threads_.find(thread_id); slot != threads_.end() && slot->second.active == displaced)
        cancel_actions_[displaced] = strategy;
      if (const auto it = handles_.find(displaced); it != handles_.end()) handle = it->second;
    }
    if (handle) {
      if (strategy == "rollback") handle->cancel();
      else handle->interrupt();
    }
  }
  if (start_now) execute_detached(run.run_id);
  co_return run;
}

// A run whose journal write failed, taken back: out of the catalog and of
// its thread's slot, its thread as it was (catalog::forget_unwritten) —
// unless it started meanwhile (the run before it ended during the write:
// its start wrote it again), in which case it goes on.
void run_engine::unpost(const run_record& run, const std::optional<thread_record>& thread_written,
                        const std::optional<thread_record>& thread_before) {
  if (!records_.forget_unwritten(run, thread_written, thread_before)) return;
  if (shares_runs()) return;
  {
    std::scoped_lock lock(mutex_);
    cancel_actions_.erase(run.run_id);
    auto& slot = threads_[run.thread_id];
    if (slot.active == run.run_id) slot.active.clear();
    std::erase(slot.waiting, run.run_id);
  }
  start_next(run.thread_id);  // runs posted behind it meanwhile
}

boost::asio::awaitable<std::optional<orch::workflow_state>> run_engine::state_of(const thread_record& thread) {
  if (thread.workflow_run.empty() || thread.graph_id.empty()) co_return std::nullopt;
  auto& workflow = workflow_of(thread.graph_id);
  co_return co_await workflow.hub->find(thread.workflow_run);
}

}  // namespace switchboard::server
