// g++ 12 reports Asio's own awaitable frame allocator/deallocator pair as
// mismatched (a known false positive, GCC bug 109224); nothing here allocates
// frames by hand.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
#include <switchboard/orchestrator/hub.hpp>

#include <switchboard/agents/agent_registry.hpp>
#include <switchboard/agents/model/model_error.hpp>
#include <switchboard/orchestrator/error.hpp>

#include "detail/compiled.hpp"
#include "detail/run_control.hpp"
#include "detail/runner.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <spdlog/spdlog.h>

#include <random>

namespace switchboard::orchestrator {

namespace asio = boost::asio;

// ---------------------------------------------------------------- run_control / handle

namespace detail {

void run_control::finish(std::exception_ptr error, std::optional<workflow_state> final_state) {
  std::vector<asio::any_completion_handler<void()>> ready;
  {
    std::lock_guard lock(mutex);
    finished = true;
    exception = error;
    state = std::move(final_state);
    ready.swap(waiters);
  }
  finished_cv.notify_all();
  for (auto& waiter : ready) std::move(waiter)();
}

void run_control::add_waiter(asio::any_completion_handler<void()> waiter) {
  {
    std::lock_guard lock(mutex);
    if (!finished) {
      waiters.push_back(std::move(waiter));
      return;
    }
  }
  std::move(waiter)();
}

workflow_state run_control::result() const {
  std::lock_guard lock(mutex);
  if (exception) std::rethrow_exception(exception);
  return *state;
}

}  // namespace detail

workflow_handle::workflow_handle(std::shared_ptr<detail::run_control> control) : control_(std::move(control)) {}

const std::string& workflow_handle::id() const noexcept { return control_->id; }

void workflow_handle::cancel() const {
  // The signal and the run's slot live on the run's strand.
  asio::post(control_->strand, [control = control_] {
    {
      std::lock_guard lock(control->mutex);
      if (control->finished) return;
    }
    control->signal.emit(asio::cancellation_type::terminal);
  });
}

bool workflow_handle::done() const {
  std::lock_guard lock(control_->mutex);
  return control_->finished;
}

workflow_state workflow_handle::wait() const {
  std::unique_lock lock(control_->mutex);
  control_->finished_cv.wait(lock, [&] { return control_->finished; });
  lock.unlock();
  return control_->result();
}

asio::awaitable<workflow_state> workflow_handle::async_wait() const {
  auto control = control_;
  // The initiation and the operation are named locals, never temporaries of
  // the co_await expression: g++ 12 destroys a capturing lambda created
  // inside a co_await expression twice (the shared_ptr it holds is released
  // twice and the run_control is freed while still in use).
  auto initiation = [control](auto handler) {
    // The waiter resumes through its own executor, never inline on the
    // thread that finished the run.
    control->add_waiter([h = std::move(handler)]() mutable {
      auto executor = asio::get_associated_executor(h);
      asio::post(executor, std::move(h));
    });
  };
  auto finished = asio::async_initiate<decltype(asio::use_awaitable), void()>(std::move(initiation),
                                                                              asio::use_awaitable);
  co_await std::move(finished);
  co_return control->result();
}

// ---------------------------------------------------------------- hub

namespace {

std::string random_prefix() {
  std::random_device device;
  std::uint64_t bits = (std::uint64_t(device()) << 32) ^ device();
  char buffer[17];
  static constexpr char digits[] = "0123456789abcdef";
  for (int i = 15; i >= 0; --i, bits >>= 4) buffer[i] = digits[bits & 0xf];
  buffer[16] = '\0';
  return buffer;
}

}  // namespace

hub::hub(asio::any_io_executor executor, const agents::agent_registry& registry, hub_options options)
    : impl_(std::make_shared<impl>(std::move(executor), registry, std::move(options))) {}

hub::~hub() = default;

hub::impl::impl(asio::any_io_executor ex, const agents::agent_registry& reg, hub_options opts)
    : executor(std::move(ex)),
      registry(reg),
      options(std::move(opts)),
      logger(options.logger ? options.logger : spdlog::default_logger()),
      id_prefix("wf-" + random_prefix() + "-") {}

std::string hub::impl::new_id() { return id_prefix + std::to_string(++id_counter); }

workflow_state hub::impl::initial_state(const compiled_workflow& workflow, boost::json::value input,
                                        run_options& run) {
  workflow_state state;
  state.id = run.workflow_id.empty() ? new_id() : std::move(run.workflow_id);
  state.workflow_name = workflow.name();
  state.input = std::move(input);
  state.next_node = workflow.definition().entry;
  return state;
}

workflow_state hub::impl::take_paused(const compiled_workflow& workflow, const std::string& id) {
  std::optional<workflow_state> state;
  if (options.store) {
    auto cp = options.store->load(id);
    if (cp) state = detail::state_from_checkpoint(*cp);
  } else {
    std::lock_guard lock(paused_mutex);
    if (auto it = paused.find(id); it != paused.end()) {
      if (it->second.status == workflow_status::awaiting_clarification &&
          it->second.workflow_name == workflow.name()) {
        state = std::move(it->second);
        paused.erase(it);
      } else {
        state = it->second;
      }
    }
  }
  if (!state) {
    throw orchestrator_error(orchestrator_errc::unknown_workflow,
                             "resume: no workflow with id '" + id + "'" +
                                 (options.store ? " in the checkpoint store" : " in this hub (it has no store)"));
  }
  if (state->status != workflow_status::awaiting_clarification) {
    throw orchestrator_error(orchestrator_errc::not_awaiting_clarification,
                             "resume: workflow '" + id + "' is " + std::string(to_string(state->status)) +
                                 "; only a workflow awaiting clarification can be resumed");
  }
  if (state->workflow_name != workflow.name()) {
    throw orchestrator_error(orchestrator_errc::workflow_mismatch,
                             "resume: workflow '" + id + "' runs definition '" + state->workflow_name +
                                 "', not '" + workflow.name() + "'");
  }
  return std::move(*state);
}

void hub::impl::remember_paused(const workflow_state& state) {
  if (options.store || state.status != workflow_status::awaiting_clarification) return;
  std::lock_guard lock(paused_mutex);
  paused.insert_or_assign(state.id, state);
}

std::optional<workflow_state> hub::impl::find(std::string_view id) const {
  if (options.store) {
    auto cp = options.store->load(id);
    if (!cp) return std::nullopt;
    return detail::state_from_checkpoint(*cp);
  }
  std::lock_guard lock(paused_mutex);
  if (auto it = paused.find(std::string(id)); it != paused.end()) return it->second;
  return std::nullopt;
}

// run() is not a coroutine itself: it returns the operation that runs the
// workflow, so a workflow in flight holds no frame of run()'s (with a copy of
// its state) on top of its own.
asio::awaitable<workflow_state> hub::run(std::shared_ptr<const compiled_workflow> workflow,
                                         boost::json::value input, run_options options) {
  auto state = impl_->initial_state(*workflow, std::move(input), options);
  return detail::run_on_own_strand(impl_, std::move(workflow), std::move(state), std::nullopt);
}

workflow_handle hub::start(std::shared_ptr<const compiled_workflow> workflow, boost::json::value input,
                           run_options options) {
  auto state = impl_->initial_state(*workflow, std::move(input), options);
  auto control = std::make_shared<detail::run_control>(state.id, detail::make_run_strand(impl_->executor));
  detail::spawn(impl_, control, std::move(workflow), std::move(state), {});
  return workflow_handle(control);
}

asio::awaitable<workflow_state> hub::resume(std::shared_ptr<const compiled_workflow> workflow,
                                            std::string workflow_id, std::string answer) {
  // A coroutine, unlike run(): the paused state is taken only once the
  // resume is awaited, so an operation that is never awaited loses nothing.
  auto state = impl_->take_paused(*workflow, workflow_id);
  auto run = detail::run_on_own_strand(impl_, std::move(workflow), std::move(state), std::move(answer));
  co_return co_await std::move(run);
}

workflow_handle hub::start_resume(std::shared_ptr<const compiled_workflow> workflow, std::string workflow_id,
                                  std::string answer) {
  auto state = impl_->take_paused(*workflow, workflow_id);
  auto control = std::make_shared<detail::run_control>(state.id, detail::make_run_strand(impl_->executor));
  detail::spawn(impl_, control, std::move(workflow), std::move(state), std::move(answer));
  return workflow_handle(control);
}

std::optional<workflow_state> hub::find(std::string_view workflow_id) const { return impl_->find(workflow_id); }

void hub::add_observer(std::shared_ptr<observer> o) { impl_->observers.push_back(std::move(o)); }

const hub_metrics& hub::metrics() const noexcept { return impl_->metrics; }

}  // namespace switchboard::orchestrator
