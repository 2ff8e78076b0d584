// An API run's events: the hubs' events turned into the records a stream
// sends (values, updates, debug, custom) and kept in the feed, in order;
// the stream's end, and the writes a run's waiters depend on, retried until
// kept (keep_trying).
#include "run_events.hpp"

#include <switchboard/orchestrator/event_json.hpp>

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/execution/outstanding_work.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/prefer.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value_from.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <iterator>

namespace switchboard::server {

namespace asio = boost::asio;
namespace json = boost::json;
namespace orch = switchboard::orchestrator;

run_engine::sink::sink(run_engine& e, std::string id, std::string thread, const json::object& v)
    : engine(e), run_id(std::move(id)), thread_id(std::move(thread)), values(json::serialize(v)) {}

void run_engine::sink::push(std::string_view name, const json::value& data) { push_text(name, json::serialize(data)); }

void run_engine::sink::push_text(std::string_view name, std::string_view json_text) {
  std::string record;
  record.reserve(name.size() + 1 + json_text.size());
  record.append(name).push_back('\n');
  record.append(json_text);
  {
    std::scoped_lock lock(mutex);
    pending.push_back(std::move(record));
    if (draining) return;
    draining = true;
  }
  // Outside the lock: co_spawn may start the drain at once on this thread.
  // Counted (spawn_counted): the engine's shutdown waits for it, since it
  // appends through the engine.
  engine.spawn_counted(drain(shared_from_this()));
}

asio::awaitable<void> run_engine::sink::flushed() {
  {
    std::scoped_lock lock(mutex);
    if (!draining) co_return;
  }
  auto initiate = [this](auto handler) {
    asio::any_io_executor resume_on =
        asio::prefer(asio::get_associated_executor(handler), asio::execution::outstanding_work.tracked);
    std::unique_lock lock(mutex);
    if (draining) {
      flush_waiters.push_back({std::move(handler), std::move(resume_on)});
      return;
    }
    lock.unlock();  // drained meanwhile
    asio::post(resume_on, [done = std::move(handler)]() mutable { std::move(done)(); });
  };
  auto waiting = asio::async_initiate<decltype(asio::use_awaitable), void()>(std::move(initiate), asio::use_awaitable);
  co_await std::move(waiting);  // g++ 12: named before co_await
}

// A step's burst of events (values, updates, debug, custom) costs the
// store one write.
asio::awaitable<void> run_engine::sink::drain(std::shared_ptr<sink> self) {
  for (;;) {
    std::vector<std::string> batch;
    std::vector<flush_waiter> released;
    {
      std::scoped_lock lock(self->mutex);
      if (self->pending.empty()) {
        self->draining = false;
        released.swap(self->flush_waiters);
      } else {
        batch.assign(std::make_move_iterator(self->pending.begin()), std::make_move_iterator(self->pending.end()));
        self->pending.clear();
      }
    }
    if (batch.empty()) {
      for (auto& w : released) asio::post(w.resume_on, [done = std::move(w.done)]() mutable { std::move(done)(); });
      co_return;
    }
    try {
      co_await self->engine.append_to_stream(self->run_id, self->thread_id, std::move(batch), self.get());
    } catch (const std::exception& e) {
      spdlog::error("serve: run {}: events could not be kept: {}", self->run_id, e.what());
    }
  }
}

void run_engine::observer::on_event(const orch::event& e) noexcept {
  try {
    engine_.on_event(e);
  } catch (const std::exception& ex) {
    spdlog::error("serve: an event of run {} was lost: {}", e.workflow_id, ex.what());
  }
}

namespace {

json::object debug_record(const orch::event& e, json::object payload) {
  return {{"type", e.kind == orch::event_kind::step_started ? "task" : "task_result"},
          {"timestamp", now_iso8601()},
          {"step", e.step},
          {"payload", std::move(payload)}};
}

}  // namespace

// One hub event as the records of the run it belongs to (none when no API
// run follows that hub run).
void run_engine::on_event(const orch::event& e) {
  std::shared_ptr<sink> s;
  {
    std::scoped_lock lock(mutex_);
    const auto it = sinks_.find(std::string(e.workflow_id));
    if (it == sinks_.end()) return;
    s = it->second;
  }
  auto event_json = orch::to_json(e);
  if (e.kind == orch::event_kind::step_completed && e.envelope && !e.agent.empty()) {
    auto envelope = json::value_from(*e.envelope);
    auto parsed = json::parse(s->values);
    auto& values = parsed.as_object();
    auto& outputs = values["outputs"];
    if (!outputs.is_object()) outputs = json::object{};
    outputs.get_object()[e.agent] = envelope;
    values["step"] = e.step;
    s->values = json::serialize(values);
    s->push_text("values", s->values);
    s->push("updates", json::object{{e.node, json::object{{e.agent, std::move(envelope)}}}});
  }
  if (e.kind == orch::event_kind::step_started || e.kind == orch::event_kind::step_completed ||
      e.kind == orch::event_kind::step_failed)
    s->push("debug", debug_record(e, event_json));
  s->push("custom", event_json);
}

// A store that fails to take a run's record or its stream's end (a cut
// connection) is asked again, 8 times over about 13 s: every `wait`, `join` and
// stream of the run waits for them, and the thread stays busy until the
// record says the run ended. Written twice by a retry, either is harmless
// (equal versions: the later wins; readers stop at the first end). False
// when it kept failing (logged).
boost::asio::awaitable<bool> run_engine::keep_trying(std::string_view subject, std::string_view what,
                                                     const std::function<boost::asio::awaitable<void>()>& write) {
  auto pause = std::chrono::milliseconds(100);
  for (int attempt = 1;; ++attempt) {
    try {
      co_await write();
      co_return true;
    } catch (const std::exception& e) {
      if (attempt == 8) {
        spdlog::error("serve: {}: {} could not be kept: {}", subject, what, e.what());
        co_return false;
      }
      spdlog::warn("serve: {}: {} could not be kept: {}; trying again", subject, what, e.what());
    }
    asio::steady_timer timer(executor_, pause);
    co_await timer.async_wait(asio::use_awaitable);
    pause = std::min(pause * 2, std::chrono::milliseconds(10'000));
  }
}

// Sharing runs, a run's stream takes records only under the claim on its
// thread the run executes under (ADR 0037): a server whose claim lapsed and
// was taken by another (it stalled past its lease) adds nothing after the
// fact, even once it holds the thread again for a later run.
// `executed_by`: the run's sink (its hold); null: the claim held here now.
// A refusal is asked again once when the fence moved meanwhile (this server
// took its own lapsed claim again). False when the store refused the records
// for the claim (logged); other failures are thrown.
boost::asio::awaitable<bool> run_engine::append_to_stream(const std::string& run_id, const std::string& thread_id,
                                                          std::vector<std::string> records, const sink* executed_by) {
  if (!shares_runs()) {
    co_await feed_->append_all(run_id, std::move(records));
    co_return true;
  }
  auto fence = fence_for(thread_id, executed_by);
  for (int attempt = 1;; ++attempt) {
    try {
      orch::feed_claim claim{.workflow_id = thread_id, .owner = fleet_.owner, .fence = fence};
      co_await feed_->append_claimed(run_id, records, std::move(claim));
      co_return true;
    } catch (const orch::claim_error& e) {
      const auto now = fence_for(thread_id, executed_by);
      if (attempt == 1 && now != fence) {
        fence = now;
        continue;
      }
      spdlog::warn("serve: run {}: records not added to its stream: this server no longer holds thread {} ({})",
                   run_id, thread_id, e.what());
      co_return false;
    }
  }
}

// The fence to append under: the current claim's when the run's hold goes
// on (or for no run), else that hold's first fence, which the store refuses
// (fences never repeat). 0, refused as well, when the thread is not held here.
std::int64_t run_engine::fence_for(const std::string& thread_id, const sink* executed_by) const {
  std::scoped_lock lock(mutex_);
  const auto it = claimed_.find(thread_id);
  if (executed_by == nullptr) return it != claimed_.end() ? it->second.fence : 0;
  if (it != claimed_.end() && it->second.since == executed_by->since) return it->second.fence;
  return executed_by->since;
}

// False when the store refused the end for the claim.
boost::asio::awaitable<bool> run_engine::end_stream(const run_record& run, const sink* executed_by) {
  bool refused = false;
  const std::function<asio::awaitable<void>()> append_end = [&]() -> asio::awaitable<void> {
    std::vector<std::string> end{std::string(end_of_run) + "\nnull"};
    refused = !co_await append_to_stream(run.run_id, run.thread_id, std::move(end), executed_by);
  };
  const auto subject = "run " + run.run_id;  // g++ 12: named before co_await
  if (co_await keep_trying(subject, "its stream's end", append_end) && !refused) tell_end(run.run_id);
  co_return !refused;
}

}  // namespace switchboard::server
