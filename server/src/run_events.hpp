// The run engine's two halves of an API run's events: the observer the
// hubs call for every event, and the sink that keeps one run's events, in
// order, in the store's event feed (where every stream of the run reads
// them). Internal to server/.
#pragma once

#include "run_engine.hpp"

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace switchboard::server {

// Where one API run's events go: kept in order in the feed under the run's
// id. Events arrive on the workflow's strand; appends happen on a
// coroutine of their own, a batch at a time, so the feed's order is the
// events' order.
struct run_engine::sink : std::enable_shared_from_this<run_engine::sink> {
  sink(run_engine& e, std::string id, std::string thread, const boost::json::object& v);

  run_engine& engine;  // appends through it (append_to_stream)
  std::string run_id;
  std::string thread_id;
  // Sharing runs: the hold of the thread this run executes under (its
  // held_claim::since when the sink opened). A claim this server takes again
  // after another server held the thread is not this run's: its records are
  // refused.
  std::int64_t since = 0;
  // The thread's values as the run goes, as JSON text: a run may go for
  // hours, and the text is a third of a Boost.JSON tree's memory. Touched
  // on the workflow's strand.
  std::string values;

  // A flushed() waiting for the drain to end: its completion, and where to
  // run it. Completed by posting, from whichever thread the drain ends on
  // (a timer cancelled from there could be cancelled before its wait began,
  // and the wait then never ended: a run stuck at its end under load).
  struct flush_waiter {
    boost::asio::any_completion_handler<void()> done;
    boost::asio::any_io_executor resume_on;
  };

  std::mutex mutex;
  std::vector<std::string> pending;
  bool draining = false;
  std::vector<flush_waiter> flush_waiters;

  // Queues the record `name` + "\n" + `data` for the feed.
  void push(std::string_view name, const boost::json::value& data);
  void push_text(std::string_view name, std::string_view json_text);
  // Completes once everything pushed so far is in the feed.
  boost::asio::awaitable<void> flushed();
  // Appends what is pending, all of it at once.
  static boost::asio::awaitable<void> drain(std::shared_ptr<sink> self);
};

class run_engine::observer final : public orchestrator::observer {
 public:
  explicit observer(run_engine& engine) : engine_(engine) {}
  void on_event(const orchestrator::event& e) noexcept override;
  bool wants_deltas() const noexcept override { return true; }

 private:
  run_engine& engine_;
};

}  // namespace switchboard::server
