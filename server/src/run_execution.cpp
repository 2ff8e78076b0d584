// An API run's execution (run_engine.hpp): its hub run launched (started,
// resumed or continued, whichever its record and the stored state say is
// next), its end awaited without a coroutine held meanwhile, and that end
// told to its stream, its waiters and the catalog.
#include "run_engine.hpp"
#include "run_events.hpp"

#include "interrupt_answer.hpp"
#include "json_fields.hpp"
#include "wire.hpp"

#include <switchboard/orchestrator/crash_point.hpp>
#include <switchboard/orchestrator/error.hpp>
#include <switchboard/telemetry/trace_context.hpp>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <spdlog/spdlog.h>

namespace switchboard::server {

namespace asio = boost::asio;
namespace json = boost::json;
namespace orch = switchboard::orchestrator;

namespace {

// Run and thread statuses for how a hub run stopped.
std::pair<std::string, std::string> statuses_of(orch::workflow_status s) {
  switch (s) {
    case orch::workflow_status::awaiting_clarification:
    case orch::workflow_status::awaiting_approval: return {"success", "interrupted"};
    case orch::workflow_status::completed: return {"success", "idle"};
    case orch::workflow_status::failed: return {"error", "error"};
    case orch::workflow_status::cancelled:
    case orch::workflow_status::interrupted: return {"interrupted", "idle"};
    case orch::workflow_status::running: break;
  }
  return {"running", "busy"};
}

}  // namespace

struct run_engine::execution {
  explicit execution(run_engine& e) : engine(e) {}
  execution(const execution&) = delete;
  execution& operator=(const execution&) = delete;
  ~execution() {
    std::scoped_lock lock(engine.mutex_);
    --engine.executing_;
  }

  // The record as far as its end needs it (finish): its ids, and the hub
  // run its thread goes back to when it is rolled back.
  run_record record() const {
    run_record r;
    r.run_id = run_id;
    r.thread_id = thread_id;
    r.graph_id = graph_id;
    r.workflow_run = workflow_run;
    if (previous_workflow_run) r.kwargs["previous_workflow_run"] = *previous_workflow_run;
    return r;
  }

  run_engine& engine;
  std::string run_id, thread_id, graph_id, workflow_run;
  std::optional<json::value> previous_workflow_run;
  launched started;
  // Its hub run had stopped already (ended or paused): a run continued by
  // another server after this one's record of its end was lost (a cut
  // session), whose stream may hold its end already (finish).
  bool ended_before = false;
};

// Starts, resumes or continues the run's hub run, whichever its record and
// the stored state say is next (after a restart too), and awaits its end.
// For a caller that has to wait for it (serve_thread); the others use
// execute_detached.
boost::asio::awaitable<void> run_engine::execute(std::string run_id) {
  auto run = co_await begin_execution(std::move(run_id));
  if (!run) co_return;
  if (run->started.handle) {
    const auto handle = *run->started.handle;
    co_await handle.async_done();
  }
  co_await conclude(std::move(run));
}

// As execute, without a coroutine held while the run goes: a run may wait
// for hours (a held model call, a person), and a waiting coroutine keeps
// its frames and the co_spawn that carries them (≈ 1.1 KiB). The run's end
// is concluded in a coroutine spawned when the hub run stops.
void run_engine::execute_detached(std::string run_id) {
  asio::co_spawn(executor_, launch_detached(std::move(run_id)), asio::detached);
}

boost::asio::awaitable<void> run_engine::launch_detached(std::string run_id) {
  auto run = co_await begin_execution(std::move(run_id));
  if (!run) co_return;
  if (!run->started.handle) {
    co_await conclude(std::move(run));
    co_return;
  }
  const auto handle = *run->started.handle;
  handle.on_done(asio::bind_executor(executor_, [this, run = std::move(run)]() mutable {
    asio::co_spawn(executor_, conclude(std::move(run)), asio::detached);
  }));
}

// The run launched, with what its end needs; none when the server is
// shutting down (the run stays `running` or `pending`: the next start
// carries it on) or the run is not in the catalog.
boost::asio::awaitable<std::unique_ptr<run_engine::execution>> run_engine::begin_execution(std::string run_id) {
  {
    std::scoped_lock lock(mutex_);
    if (shutting_down_) co_return nullptr;
    ++executing_;
  }
  // Counted until it is destroyed, so a shutdown waits for every run that
  // began, whether or not its hub run has a handle yet.
  auto execution = std::make_unique<run_engine::execution>(*this);
  auto run = records_.run(run_id);
  if (!run) co_return nullptr;
  execution->started = co_await launch(*run);
  const auto& started = execution->started;
  execution->ended_before = !started.handle && started.ended && !started.ended->id.empty() &&
                            started.ended->status != orch::workflow_status::running;
  if (started.handle) heed_cancel_requests(*run, *started.handle);
  execution->run_id = std::move(run->run_id);
  execution->thread_id = std::move(run->thread_id);
  execution->graph_id = std::move(run->graph_id);
  execution->workflow_run = std::move(run->workflow_run);
  if (const auto* previous = run->kwargs.if_contains("previous_workflow_run"))
    execution->previous_workflow_run = *previous;
  co_return execution;
}

// Once its hub run stopped: the run's end, told to its stream, its waiters
// and the catalog.
boost::asio::awaitable<void> run_engine::conclude(std::unique_ptr<execution> run) {
  auto final_state = co_await final_state_of(*run);
  const auto record = run->record();
  co_await finish(record, *final_state, run->ended_before);
}

// The trace the hub run continues: the traceparent kept by the run that
// started it (create), if its caller sent one; otherwise the tracer derives
// the trace from the hub run's id.
void run_engine::continue_callers_trace(const run_record& run) {
  const auto starter = run.run_id == run.workflow_run ? std::optional<run_record>(run) : records_.run(run.workflow_run);
  if (!starter) return;
  const auto traceparent = text_field(starter->kwargs, "traceparent");
  const auto tracestate = text_field(starter->kwargs, "tracestate");
  if (traceparent.empty()) return;
  if (const auto caller = telemetry::parse_traceparent(traceparent, tracestate))
    tracing_->continue_trace(run.workflow_run, *caller);
}

boost::asio::awaitable<run_engine::launched> run_engine::launch(const run_record& run) {
  auto& workflow = workflow_of(run.graph_id);
  const auto running = records_.change_run(run.run_id, [](run_record& r) {
    r.status = "running";
    return true;
  });
  // Busy again when it follows a run that ended (which left the thread
  // idle or interrupted).
  // Its state is this run's hub run (the request that posted it set that
  // too, unless a later post of another input moved it on).
  const auto busy_thread = records_.change_thread(run.thread_id, [&](thread_record& t) {
    if (t.status == "busy" && t.workflow_run == run.workflow_run && t.graph_id == run.graph_id) return false;
    t.status = "busy";
    t.workflow_run = run.workflow_run;
    t.graph_id = run.graph_id;
    return true;
  });
  const std::function<asio::awaitable<void>()> write_start = [&]() -> asio::awaitable<void> {
    co_await records_.write(running, busy_thread);  // one write for both
  };
  const auto subject = "run " + run.run_id;  // g++ 12: named before co_await
  // Not kept after the retries: the run still executes (its end is
  // written again later), logged by keep_trying.
  co_await keep_trying(subject, "its start in the catalog", write_start);

  std::optional<orch::workflow_state> existing;
  try {
    if (shares_runs()) existing = co_await settled_state(workflow, run.workflow_run);
    else existing = co_await workflow.hub->find(run.workflow_run);
  } catch (const std::exception& e) {
    spdlog::error("serve: run {}: its stored state cannot be read: {}", run.run_id, e.what());
  }
  const auto* input = member(run.kwargs, "input");
  const auto* command = member(run.kwargs, "command");
  json::object values = existing ? values_of(*existing) : json::object{{"input", input ? *input : json::value()},
                                                                       {"outputs", json::object{}},
                                                                       {"status", "running"},
                                                                       {"step", 0},
                                                                       {"result", nullptr}};
  values.erase("__interrupt__");
  values["status"] = "running";
  launched started;
  started.events = open_sink(run, std::move(values));

  if (tracing_) continue_callers_trace(run);
  try {
    if (!existing && input) {
      started.handle = workflow.hub->start(workflow.opened.workflow, *input, {.workflow_id = run.workflow_run});
    } else if (existing && !orch::is_finished(existing->status)) {
      auto options = host::resume_options_for(*existing);
      const auto* from = member(run.kwargs, "resume_from_step");
      // A resume cut off (its server died) after the hub saved its answer
      // leaves the run interrupted with no question or approval standing:
      // the answer is in, and the run continues without it.
      const bool pause_stands = existing->status != orch::workflow_status::interrupted ||
                                existing->clarification || existing->approval;
      const bool answers_this_pause =
          command && from && from->is_int64() && from->get_int64() == existing->step && pause_stands;
      if (answers_this_pause) apply_resume(options, command->get_object().at("resume"));
      if (answers_this_pause || existing->status == orch::workflow_status::interrupted)
        started.handle = workflow.hub->start_resume(workflow.opened.workflow, run.workflow_run, std::move(options));
    }
  } catch (const std::exception& e) {
    spdlog::warn("serve: run {} could not start: {}", run.run_id, e.what());
  }
  if (!started.handle) {
    started.ended = std::make_unique<orch::workflow_state>();
    if (existing) {
      *started.ended = std::move(*existing);
    } else {
      started.events->push("error",
                           json::object{{"error", "RunError"}, {"message", "the run has nothing to start from"}});
      started.ended->status = orch::workflow_status::failed;
    }
  }
  co_return std::move(started);  // move-only
}

// The state its hub run stopped with (on the heap: it outlives the
// coroutine that reads it), or, for a run the hub refused, the stored one.
boost::asio::awaitable<std::unique_ptr<orch::workflow_state>> run_engine::final_state_of(execution& run) {
  auto& started = run.started;
  if (!started.handle) co_return std::move(started.ended);
  bool refused = false;
  auto final_state = std::unique_ptr<orch::workflow_state>();
  try {
    final_state = std::make_unique<orch::workflow_state>(started.handle->result());
  } catch (const orch::orchestrator_error& e) {
    // Refused by the hub (another process answered first, the run moved
    // on): the run ends with what is stored.
    spdlog::warn("serve: run {}: {}", run.run_id, e.what());
    started.events->push("error", json::object{{"error", std::string(to_string(e.errc()))}, {"message", e.what()}});
    refused = true;
  } catch (const std::exception& e) {
    started.events->push("error", json::object{{"error", "RunError"}, {"message", e.what()}});
    final_state = std::make_unique<orch::workflow_state>();
    final_state->status = orch::workflow_status::failed;
  }
  if (refused) {
    const auto record = run.record();
    final_state = co_await stored_state(record);
  }
  std::scoped_lock lock(mutex_);
  handles_.erase(run.run_id);
  co_return final_state;
}

// Registers the run's handle, and applies a cancel asked for before it had
// one (or, sharing runs, before this server held the thread).
void run_engine::heed_cancel_requests(const run_record& run, const orch::workflow_handle& handle) {
  std::string pending_action;
  bool stopping = false;
  {
    std::scoped_lock lock(mutex_);
    handles_.insert_or_assign(run.run_id, handle);
    if (const auto it = cancel_actions_.find(run.run_id); it != cancel_actions_.end()) pending_action = it->second;
    stopping = interrupting_;
  }
  if (pending_action.empty() && shares_runs()) {
    pending_action = records_.cancel_requested(run.run_id);
    std::scoped_lock lock(mutex_);
    if (!pending_action.empty()) cancel_actions_.try_emplace(run.run_id, pending_action);
  }
  if (pending_action == "rollback") handle.cancel();
  else if (!pending_action.empty() || stopping) handle.interrupt();
}

// The hub run as stored (an empty state when there is none).
boost::asio::awaitable<std::unique_ptr<orch::workflow_state>> run_engine::stored_state(const run_record& run) {
  auto state = std::make_unique<orch::workflow_state>();
  auto& workflow = workflow_of(run.graph_id);
  if (auto stored = co_await workflow.hub->find(run.workflow_run)) *state = std::move(*stored);
  co_return state;
}

boost::asio::awaitable<void> run_engine::finish(const run_record& run, const orch::workflow_state& state,
                                                bool ended_before) {
  std::shared_ptr<sink> s;
  bool leave_for_restart = false;
  std::string action;
  {
    std::scoped_lock lock(mutex_);
    if (const auto it = sinks_.find(run.workflow_run); it != sinks_.end()) s = it->second;
    sinks_.erase(run.workflow_run);
    if (const auto it = cancel_actions_.find(run.run_id); it != cancel_actions_.end()) action = it->second;
    cancel_actions_.erase(run.run_id);
    leave_for_restart = shutting_down_ && state.status == orch::workflow_status::interrupted && action.empty();
  }
  if (leave_for_restart) {
    if (s) co_await s->flushed();
    co_return;  // still `running` in the journal: the next start continues it
  }
  if (shares_runs() && co_await left_to_another_server(run, state)) {
    if (s) co_await s->flushed();
    co_return;
  }
  if (orch::is_paused(state.status)) orch::crash_point("serve.pause_saved");
  if (state.status == orch::workflow_status::completed) orch::crash_point("serve.completion_saved");
  auto [run_status, thread_status] = statuses_of(state.status);
  json::value values = state.id.empty() ? json::value(nullptr) : json::value(values_of(state));
  // Ended before, with its stream ended too: the stream is told nothing
  // twice (its readers stop at the first end).
  const bool stream_ended = ended_before && shares_runs() && co_await stream_has_end(run.run_id);
  if (s && !stream_ended) {
    if (!values.is_null()) s->push("values", values);
    if (orch::is_paused(state.status)) s->push("updates", json::object{{"__interrupt__", interrupts_of(state)}});
    if (state.status == orch::workflow_status::failed) {
      const auto* error = state.first_error();
      s->push("error", json::object{{"error", error ? error->type : "RunError"},
                                    {"message", error ? error->message : "the run failed"}});
    }
    co_await s->flushed();
  }
  json::value result = values;
  if (state.status == orch::workflow_status::failed) {
    const auto* error = state.first_error();
    result = json::object{{"__error__", json::object{{"error", error ? error->type : "RunError"},
                                                     {"message", error ? error->message : "the run failed"}}}};
  }
  auto ended = records_.change_run(run.run_id, [&](run_record& r) {
    r.status = run_status;
    r.result = result;
    return true;
  });
  if (action == "rollback") {  // the run goes: nothing of its end to keep
    ended.reset();
    co_await records_.erase_run(run.run_id);
  }
  const auto thread_after = records_.change_thread(run.thread_id, [&](thread_record& t) {
    if (action == "rollback") {
      t.workflow_run = text_field(run.kwargs, "previous_workflow_run");
      t.status = "idle";
      return true;
    }
    t.status = thread_status;
    t.values = values;
    t.interrupts.clear();
    if (!state.id.empty() && orch::is_paused(state.status)) t.interrupts[task_id_of(state)] = interrupts_of(state);
    return true;
  });
  const std::function<asio::awaitable<void>()> write_end = [&]() -> asio::awaitable<void> {
    co_await records_.write(ended, thread_after);  // one write for both
  };
  const auto subject = "run " + run.run_id;  // g++ 12: named before co_await
  co_await keep_trying(subject, "its end in the catalog", write_end);
  if (shares_runs()) {
    // The stream ends while the thread is still held here: a server dying
    // before the end is written leaves the thread to one that writes it
    // (end_stream_left_open). An answer posted the moment a wait returns
    // waits out the moment this server takes to let go (reserve_thread).
    if (!stream_ended && !co_await end_stream(run, s.get())) co_await end_stream_if_held(run);
    co_await let_go_if_idle(run.thread_id);
  } else {
    // The thread is free before anyone learns that the run ended: a caller
    // that answers as soon as its wait returns must not find it busy.
    {
      std::scoped_lock lock(mutex_);
      auto& slot = threads_[run.thread_id];
      if (slot.active == run.run_id) slot.active.clear();
    }
    start_next(run.thread_id);
    co_await end_stream(run);
  }
  if (action == "rollback") co_await feed_->erase(run.run_id);
}
}  // namespace switchboard::server
