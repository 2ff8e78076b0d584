#include "run_engine.hpp"
#include "run_events.hpp"

#include "ids.hpp"
#include "interrupt_answer.hpp"
#include "json_fields.hpp"
#include "wire.hpp"

#include <switchboard/orchestrator/crash_point.hpp>
#include <switchboard/orchestrator/error.hpp>
#include <switchboard/telemetry/trace_context.hpp>
#include <switchboard/orchestrator/event_json.hpp>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value_from.hpp>
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

namespace {

const json::value* member(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && !v->is_null() ? v : nullptr;
}

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
