// Runs of the API on the hubs: creating a run on a thread (a new hub run,
// or a resume of the thread's paused one), the multitask strategies, the
// events each run streams (kept in the store's event feed, keyed by the
// API's run id, so any stream can be replayed from any position), cancel,
// and carrying on after a restart.
//
// A thread runs one API run at a time; the others wait as `pending` in
// creation order. Whether a run may start, and whether a resume is the one
// that answers a pause, is decided under one lock, so of two resumes posted
// at once exactly one is accepted (the other gets 409), and the hub's own
// claim keeps it so across processes.
//
// Thread-safety: every member function may be called from any thread.
#pragma once

#include "catalog.hpp"

#include <switchboard/host/opened_workflow.hpp>
#include <switchboard/host/workflow_tracing.hpp>
#include <switchboard/orchestrator/event_feed.hpp>
#include <switchboard/orchestrator/hub.hpp>
#include <switchboard/orchestrator/run_queue.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/json/object.hpp>

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <set>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace switchboard::server {

// A caller's mistake: answered with `status` and {"detail": what()}.
class api_error : public std::runtime_error {
 public:
  api_error(int status, const std::string& detail) : std::runtime_error(detail), status_(status) {}
  int status() const noexcept { return status_; }

 private:
  int status_;
};

// How a server shares runs with the other servers of one store
// (PostgreSQL; ADR 0036): a thread with work to do is in the run queue, and
// whichever server claims it runs the thread's runs in order, keeping the
// claim alive, then hands it back.
struct fleet_settings {
  std::shared_ptr<orchestrator::run_queue> queue;
  std::string owner;                                   // this server's claims
  std::chrono::milliseconds lease{30'000};             // renewed every third of it
  std::size_t max_threads = 256;                       // threads served at once
  std::chrono::milliseconds idle_poll{1'000};          // between claims when the queue is quiet
};

struct served_workflow {
  std::string graph_id;
  host::opened_workflow opened;
  std::unique_ptr<orchestrator::hub> hub;
};

// The feed record that ends a run's stream (never sent to a client).
inline constexpr std::string_view end_of_run = "__end__";

// One record of a run's stream: "name\n{json}" in the feed.
struct stream_record {
  std::string_view name;
  std::string_view data;
};
stream_record split_record(std::string_view text);

class run_engine {
 public:
  run_engine(boost::asio::any_io_executor executor, catalog& records, std::shared_ptr<orchestrator::event_feed> feed,
             std::vector<served_workflow*> workflows);
  ~run_engine();

  // The workflow an assistant id (a UUID, or a graph id) names; api_error 404.
  served_workflow& workflow_of(const std::string& assistant_id) const;
  const std::vector<served_workflow*>& workflows() const noexcept { return workflows_; }

  // Creates a run on `thread_id` from a RunCreate body; api_error for a
  // caller's mistake (404 unknown thread or assistant, 409 busy or not
  // waiting for input, 422 a malformed body). The run is journaled before
  // this completes.
  // `traceparent` / `tracestate`: the caller's W3C headers (may be empty).
  // A valid traceparent on the request that starts a hub run is kept with
  // the run (kwargs "traceparent", "tracestate"), so that its spans, and
  // those of every later resume — after a restart too — continue the
  // caller's trace.
  boost::asio::awaitable<run_record> create(std::string thread_id, boost::json::object body,
                                            std::string traceparent = {}, std::string tracestate = {});

  // Spans of the runs (null: tracing off). Set before the first run.
  void trace_with(std::shared_ptr<host::workflow_tracer> tracing) { tracing_ = std::move(tracing); }

  // Cancels a pending or running run (action "interrupt" or "rollback");
  // with `wait`, completes when it has ended. api_error 404 / 409.
  boost::asio::awaitable<void> cancel(std::string thread_id, std::string run_id, std::string action, bool wait);

  // Completes when the run's stream has ended (its feed holds end_of_run);
  // `tick` is called every `interval` while waiting (keep-alives) and
  // stops the wait when it returns false.
  boost::asio::awaitable<bool> wait_for_end(std::string run_id, std::chrono::milliseconds interval,
                                            std::function<boost::asio::awaitable<bool>()> tick);

  // POST /threads/{id}/state: a person's answer in place of a node's agent
  // on the thread's paused or interrupted hub run (`values` the answer's
  // data, `as_node` the node, default where the run stopped;
  // hub::update_stored_run). The next run without input continues from
  // where that node routes. Returns {"checkpoint": ...}. api_error 404; 409
  // busy, finished, no run yet, or moved on since the `checkpoint_id`
  // given; 422 values the agent's schema refuses, not an agent node, no
  // route matches (thread_update.cpp).
  boost::asio::awaitable<boost::json::object> update_state(std::string thread_id, boost::json::object body);

  // A thread's hub run, as stored.
  boost::asio::awaitable<std::optional<orchestrator::workflow_state>> state_of(const thread_record& thread);

  // Whether a run of the thread is pending or running.
  bool thread_active(const std::string& thread_id) const;

  // At start-up: runs that were running continue, pending ones start.
  boost::asio::awaitable<void> recover();
  // Stops starting runs; waits up to `grace` for running ones to finish,
  // then interrupts the rest (they stay `running` in the journal and
  // continue at the next start).
  boost::asio::awaitable<void> shutdown(std::chrono::milliseconds grace);

  orchestrator::event_feed& feed() const { return *feed_; }

  // Finished runs older than `retention` (by their last change) are removed
  // with their streams, checked every tenth of it (at most once a minute);
  // their threads stay, with their values. Call before recover().
  void keep_runs_for(std::chrono::seconds retention) { retention_ = retention; }

  // Shares runs with the other servers of the store through `settings.queue`
  // (call before recover()): a run is executed by whichever server claims
  // its thread, not by the one it was posted to.
  void share_runs(fleet_settings settings);
  bool shares_runs() const noexcept { return fleet_.queue != nullptr; }

  struct sink;

 private:
  class observer;
  struct thread_slot {
    std::string active;                 // the run executing ("" none)
    std::vector<std::string> waiting;   // pending runs, oldest first
  };

  // A run under way: the sink of its events, and the hub run to await or,
  // when none could start, the state it ends with.
  struct launched {
    std::shared_ptr<sink> events;
    std::optional<orchestrator::workflow_handle> handle;
    std::unique_ptr<orchestrator::workflow_state> ended;
  };

  // A run from its launch to its end: what its end needs, counted in
  // executing_ for as long as it lives.
  struct execution;
  boost::asio::awaitable<void> execute(std::string run_id);
  void execute_detached(std::string run_id);
  boost::asio::awaitable<void> launch_detached(std::string run_id);
  boost::asio::awaitable<std::unique_ptr<execution>> begin_execution(std::string run_id);
  boost::asio::awaitable<void> conclude(std::unique_ptr<execution> run);
  boost::asio::awaitable<launched> launch(const run_record& run);
  void continue_callers_trace(const run_record& run);
  boost::asio::awaitable<std::unique_ptr<orchestrator::workflow_state>> final_state_of(execution& run);
  void heed_cancel_requests(const run_record& run, const orchestrator::workflow_handle& handle);
  boost::asio::awaitable<std::unique_ptr<orchestrator::workflow_state>> stored_state(const run_record& run);
  boost::asio::awaitable<void> finish(const run_record& run, const orchestrator::workflow_state& state,
                                      bool ended_before = false);
  boost::asio::awaitable<bool> stream_has_end(const std::string& run_id);
  boost::asio::awaitable<bool> end_stream(const run_record& run, const sink* executed_by = nullptr);
  boost::asio::awaitable<bool> append_to_stream(const std::string& run_id, const std::string& thread_id,
                                                std::vector<std::string> records, const sink* executed_by);
  std::int64_t fence_for(const std::string& thread_id, const sink* executed_by) const;
  boost::asio::awaitable<bool> keep_trying(std::string_view subject, std::string_view what,
                                           const std::function<boost::asio::awaitable<void>()>& write);
  boost::asio::awaitable<void> withdraw(const run_record& run, const std::string& action);
  void unpost(const run_record& run, const std::optional<thread_record>& thread_written,
              const std::optional<thread_record>& thread_before);
  bool executes_here(const std::string& run_id) const;
  bool ended_without_end_record(const std::string& run_id) const;
  boost::asio::awaitable<void> wait_for_end_signal(std::string run_id, std::chrono::milliseconds timeout);
  void tell_end(const std::string& run_id);
  void start_next(const std::string& thread_id);
  std::shared_ptr<sink> open_sink(const run_record& run, boost::json::object values);
  void on_event(const orchestrator::event& e);

  // Sharing runs (run_fleet.cpp).
  bool stopping() const;
  void spawn_counted(boost::asio::awaitable<void> task);
  static boost::asio::awaitable<void> counted(run_engine* engine, boost::asio::awaitable<void> task);
  boost::asio::awaitable<void> reserve_thread(const run_record& run, served_workflow& workflow);
  boost::asio::awaitable<void> offer_run(const run_record& run);
  boost::asio::awaitable<bool> offer_thread(std::string thread_id, orchestrator::ready_reason why,
                                            std::string run_id = {});
  boost::asio::awaitable<void> offer_threads_with_work();
  boost::asio::awaitable<bool> claim_one();
  boost::asio::awaitable<void> claim_soon();
  boost::asio::awaitable<void> claim_threads();
  boost::asio::awaitable<void> renew_claims();
  std::optional<run_record> next_run_of(const std::string& thread_id) const;
  std::string running_run_of(const std::string& thread_id) const;
  boost::asio::awaitable<void> serve_thread(std::string thread_id, std::string awaited, bool taken_over);
  boost::asio::awaitable<void> end_stream_left_open(const std::string& thread_id);
  boost::asio::awaitable<void> end_stream_if_held(const run_record& run);
  boost::asio::awaitable<void> let_go_if_idle(const std::string& thread_id);
  boost::asio::awaitable<void> release_thread(const std::string& thread_id);
  boost::asio::awaitable<bool> left_to_another_server(const run_record& run, const orchestrator::workflow_state& state);
  boost::asio::awaitable<void> request_cancel(std::string run_id, std::string action);
  void on_cancel_read(const std::string& run_id, const std::string& action);
  boost::asio::awaitable<std::optional<orchestrator::workflow_state>> settled_state(served_workflow& workflow,
                                                                                    const std::string& hub_run);
  boost::asio::awaitable<void> recover_shared();
  boost::asio::awaitable<void> follow_catalog();
  boost::asio::awaitable<void> prune_runs();
  boost::asio::awaitable<std::size_t> prune_runs_once();

  boost::asio::any_io_executor executor_;
  catalog& records_;
  std::shared_ptr<orchestrator::event_feed> feed_;
  std::vector<served_workflow*> workflows_;
  std::shared_ptr<observer> observer_;
  std::shared_ptr<host::workflow_tracer> tracing_;

  mutable std::mutex mutex_;
  std::map<std::string, thread_slot> threads_;                   // by thread id, while it has a run active or waiting
  std::map<std::string, std::shared_ptr<sink>> sinks_;           // by hub run id
  std::map<std::string, orchestrator::workflow_handle> handles_;  // by API run id
  std::map<std::string, std::string> cancel_actions_;            // by API run id
  std::set<std::string> updating_;  // threads whose state is being updated: no run starts on them
  fleet_settings fleet_;                       // queue null: runs are not shared
  std::optional<std::chrono::seconds> retention_;
  // A thread this server holds: its claim's fence, and the fence its
  // unbroken hold began with (the same across claims this server took
  // again when nobody held the thread in between: its runs go on under them).
  struct held_claim {
    std::int64_t fence = 0;
    std::int64_t since = 0;
  };
  std::map<std::string, held_claim> claimed_;  // by thread id
  int background_tasks_ = 0;  // claim, renew, follow, prune and serve_thread coroutines running
  // Counts a background coroutine while it runs: shutdown() waits for them.
  struct background_task {
    explicit background_task(run_engine& e) : engine(e) {
      std::scoped_lock lock(engine.mutex_);
      ++engine.background_tasks_;
    }
    ~background_task() {
      std::scoped_lock lock(engine.mutex_);
      --engine.background_tasks_;
    }
    background_task(const background_task&) = delete;
    background_task& operator=(const background_task&) = delete;
    run_engine& engine;
  };
  // The background loops run on this strand, so that shutdown can cut
  // their idle waits short (stop_loops) rather than wait them out.
  boost::asio::strand<boost::asio::any_io_executor> loops_;
  // The ends of runs executed here, told to their waiters (on ends_ only).
  boost::asio::strand<boost::asio::any_io_executor> ends_;
  std::multimap<std::string, std::shared_ptr<boost::asio::steady_timer>> end_waiters_;
  std::set<std::string> ended_;         // the last runs that ended here
  std::deque<std::string> ended_order_;  // oldest first, to forget them
  boost::asio::cancellation_signal stop_claiming_, stop_renewing_, stop_following_, stop_pruning_;
  void stop_loops();
  bool shutting_down_ = false;   // no run starts any more
  bool interrupting_ = false;    // the grace is over: running runs stop between steps
  int executing_ = 0;            // executions alive (execute(), execute_detached())
};

}  // namespace switchboard::server
