#include "detached_call.hpp"

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace switchboard::orchestrator::detail {

namespace asio = boost::asio;
using clock = std::chrono::steady_clock;

// ---------------------------------------------------------------- output_snapshot

std::shared_ptr<const output_snapshot> output_snapshot::of(const workflow_state& state,
                                                           const output_snapshot* previous) {
  auto snapshot = std::make_shared<output_snapshot>();
  snapshot->entries_.reserve(state.outputs.size());
  for (std::size_t i = 0; i < state.outputs.size(); ++i) {
    const auto& h = state.outputs[i];
    // The state appends agents and runs, never reorders them: entry i of an
    // earlier snapshot is the same agent, unchanged if it has as many runs.
    if (previous && i < previous->entries_.size() && previous->entries_[i].runs == h.runs.size() &&
        previous->entries_[i].agent == h.agent) {
      snapshot->entries_.push_back(previous->entries_[i]);
      continue;
    }
    std::shared_ptr<const protocol::envelope> latest;
    if (!h.runs.empty()) latest = std::make_shared<const protocol::envelope>(h.runs.back());
    snapshot->entries_.push_back({h.agent, h.runs.size(), std::move(latest)});
  }
  return snapshot;
}

bool output_snapshot::matches(const workflow_state& state) const noexcept {
  if (state.outputs.size() != entries_.size()) return false;
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    if (state.outputs[i].runs.size() != entries_[i].runs) return false;
  }
  return true;
}

const protocol::envelope* output_snapshot::latest(std::string_view agent) const {
  for (const auto& e : entries_) {
    if (e.agent == agent) return e.latest.get();
  }
  return nullptr;
}

std::vector<std::string> output_snapshot::agent_names() const {
  std::vector<std::string> names;
  names.reserve(entries_.size());
  for (const auto& e : entries_) names.push_back(e.agent);
  return names;
}

// ---------------------------------------------------------------- detached_call

detached_call::detached_call(call_setup setup)
    : setup_(std::move(setup)),
      context_{setup_.inputs->input, *setup_.outputs, setup_.instructions, setup_.inputs->answers,
               *setup_.models, setup_.logger, {}, {}, {}, {}} {}

void detached_call::start(agents::agent& a, asio::any_io_executor executor) {
  agent_executor_ = executor;
  auto self = shared_from_this();
  auto running = run_agent(a, self);
  // The completion keeps the call, and so the signal whose slot the agent's
  // coroutine listens on, alive until that coroutine is over.
  asio::co_spawn(std::move(executor), std::move(running),
                 asio::bind_cancellation_slot(stop_agent_.slot(), [self](std::exception_ptr) {}));
}

// The answer is handed over here, as soon as run() returns, rather than in
// co_spawn's completion (which Asio posts when the agent never suspended):
// an agent that answered before the run was cancelled has answered.
asio::awaitable<void> detached_call::run_agent(agents::agent& a, std::shared_ptr<detached_call> self) {
  // A blocking call that waited for a pool thread past its deadline never starts.
  if (self->given_up()) co_return;
  // Destroyed while suspended (its io_context or pool shut down), the agent
  // will never answer: the waiting run is destroyed with it, as it would be
  // had it awaited the agent directly, instead of holding this call (which
  // holds it) forever.
  struct release_on_destruction {
    detached_call* call;
    ~release_on_destruction() {
      if (call) call->release_waiter();
    }
  } unfinished{self.get()};
  std::exception_ptr error;
  protocol::envelope answer;
  try {
    answer = co_await a.run(self->context_);
  } catch (...) {
    error = std::current_exception();
  }
  unfinished.call = nullptr;
  self->finish(error, std::move(answer));
}

void detached_call::release_waiter() {
  waiter released;
  std::lock_guard lock(mutex_);
  released.swap(waiter_);
}

// On the agent's executor, when its run() completed.
void detached_call::finish(std::exception_ptr error, protocol::envelope answer) {
  waiter resume;
  asio::any_io_executor executor;
  asio::cancellation_slot slot;
  {
    std::lock_guard lock(mutex_);
    finished_ = true;
    finished_at_ = clock::now();
    if (given_up_) return;  // too late: the answer is dropped here, never recorded
    error_ = error;
    answer_ = std::move(answer);
    if (!waiter_) return;   // wait() has not begun; it will find the answer
    resume.swap(waiter_);
    executor = waiter_executor_;
    slot = waiter_slot_;
  }
  resume_waiter(std::move(resume), executor, slot, {});
}

// The run resumes on its own strand, never on a pool thread nor inside the
// agent's completion; there its cancellation slot, no longer needed, is
// cleared (it holds a reference to this call).
void detached_call::resume_waiter(waiter resume, const asio::any_io_executor& executor, asio::cancellation_slot slot,
                                  boost::system::error_code ec) {
  asio::post(executor, [resume = std::move(resume), slot, ec]() mutable {
    if (slot.is_connected()) slot.clear();
    std::move(resume)(ec);
  });
}

bool detached_call::given_up() const {
  std::lock_guard lock(mutex_);
  return given_up_;
}

// On the run's strand. Asks the agent to stop (on its own executor, where
// its cancellation slot lives) unless it already finished.
void detached_call::give_up() {
  {
    std::lock_guard lock(mutex_);
    if (given_up_) return;
    given_up_ = true;
    if (finished_) return;
  }
  asio::post(agent_executor_, [self = shared_from_this()] {
    {
      std::lock_guard lock(self->mutex_);
      if (self->finished_) return;
    }
    self->stop_agent_.emit(asio::cancellation_type::terminal);
  });
}

// The operation behind answered(): completes when finish() ran, or at once
// with operation_aborted when the awaiting coroutine is cancelled (which
// gives the call up).
struct detached_call::wait_initiation {
  std::shared_ptr<detached_call> self;

  template <class Handler>
  void operator()(Handler handler) const {
    asio::any_io_executor executor = asio::get_associated_executor(handler);
    // The erased handler puts its own cancellation state in the handler's
    // slot and forwards to a slot of its own: that is the one to listen on.
    waiter stored(std::move(handler));
    auto slot = stored.get_cancellation_slot();
    {
      std::lock_guard lock(self->mutex_);
      if (!self->finished_) {
        if (slot.is_connected()) slot.assign([call = self](asio::cancellation_type) { call->cancel_wait(); });
        self->waiter_slot_ = slot;
        self->waiter_executor_ = executor;
        self->waiter_.swap(stored);
        return;
      }
    }
    resume_waiter(std::move(stored), executor, {}, {});
  }
};

// On the run's strand, from the awaiting coroutine's cancellation slot.
void detached_call::cancel_wait() {
  waiter resume;
  asio::any_io_executor executor;
  {
    std::lock_guard lock(mutex_);
    resume.swap(waiter_);
    executor = waiter_executor_;
  }
  give_up();
  if (!resume) return;  // already answered: its completion is on its way
  // The slot is not cleared here: this runs inside its own handler.
  resume_waiter(std::move(resume), executor, {}, asio::error::operation_aborted);
}

asio::awaitable<void> detached_call::answered() {
  // g++ 12: named before co_await (README, "Development").
  auto initiation = wait_initiation{shared_from_this()};
  auto operation = asio::async_initiate<decltype(asio::use_awaitable), void(boost::system::error_code)>(
      std::move(initiation), asio::use_awaitable);
  co_await std::move(operation);
}

asio::awaitable<void> detached_call::wait(std::optional<clock::time_point> deadline) {
  // An agent that never suspended has answered already: nothing to wait for.
  if (!finished()) {
    auto suspended = wait_suspended(deadline);
    co_await std::move(suspended);
  }
  // An agent that blocked this thread past the deadline kept the timer from
  // firing; its answer is late all the same.
  if (deadline && finished_after(*deadline)) {
    give_up();
    throw timeout_expired{};
  }
}

asio::awaitable<void> detached_call::wait_suspended(std::optional<clock::time_point> deadline) {
  auto state = co_await asio::this_coro::cancellation_state;
  if (state.cancelled() != asio::cancellation_type::none) {
    give_up();
    throw boost::system::system_error(asio::error::operation_aborted);
  }
  if (!deadline) {
    auto answer = answered();
    co_await std::move(answer);
    co_return;
  }
  using namespace asio::experimental::awaitable_operators;
  asio::steady_timer timer(co_await asio::this_coro::executor, *deadline);
  auto answer = answered();
  auto expiry = timer.async_wait(asio::use_awaitable);
  const auto first = co_await (std::move(answer) || std::move(expiry));
  if (first.index() == 1) {
    give_up();
    throw timeout_expired{};
  }
}

void detached_call::take_answer(protocol::envelope& out) {
  std::lock_guard lock(mutex_);
  if (error_) std::rethrow_exception(error_);
  out = std::move(answer_);
}

bool detached_call::finished() const {
  std::lock_guard lock(mutex_);
  return finished_;
}

bool detached_call::finished_after(clock::time_point limit) const {
  std::lock_guard lock(mutex_);
  return finished_ && finished_at_ > limit;
}

}  // namespace switchboard::orchestrator::detail
