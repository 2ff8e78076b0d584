#include <switchboard/orchestrator/hub.hpp>

#include <switchboard/agents/agent_registry.hpp>
#include <switchboard/models/model_error.hpp>
#include <switchboard/orchestrator/error.hpp>

#include <switchboard/protocol/limits.hpp>

#include <switchboard/orchestrator/store_support.hpp>
#include "detail/compiled.hpp"
#include "detail/owner.hpp"
#include "detail/run_control.hpp"
#include "detail/runner.hpp"
#include "detail/state_journal.hpp"
#include "detail/state_update.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <future>
#include <random>
#include <stdexcept>
#include <string_view>
#include <unordered_set>

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
    if (final_state) state = std::make_unique<workflow_state>(std::move(*final_state));
    ready.swap(waiters);
  }
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

void workflow_handle::interrupt() const {
  control_->interrupt = true;
  cancel();
}

bool workflow_handle::done() const {
  std::lock_guard lock(control_->mutex);
  return control_->finished;
}

// A waiter like any other, rather than a condition variable every run
// would carry for the few callers that block.
workflow_state workflow_handle::wait() const {
  std::promise<void> stopped;
  auto done = stopped.get_future();
  control_->add_waiter([&stopped] { stopped.set_value(); });
  done.wait();
  return control_->result();
}

asio::awaitable<workflow_state> workflow_handle::async_wait() const {
  auto control = control_;  // the handle may go while this waits
  auto finished = workflow_handle(control).async_done();  // g++ 12: named before co_await (README, "Development")
  co_await std::move(finished);
  co_return control->result();
}

// Not a coroutine: the wait is the initiation's own small frame.
asio::awaitable<void> workflow_handle::async_done() const {
  auto initiation = [handle = *this](auto handler) { handle.on_done(std::move(handler)); };
  return asio::async_initiate<decltype(asio::use_awaitable), void()>(std::move(initiation), asio::use_awaitable);
}

void workflow_handle::when_stopped(asio::any_completion_handler<void()> waiter) const {
  control_->add_waiter(std::move(waiter));
}

workflow_state workflow_handle::result() const {
  if (!done()) throw std::logic_error("workflow_handle::result() before the run stopped");
  return control_->result();
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

// The options as the hub keeps them: an owner id (this process's by
// default), a lease long enough to renew, and a store (an in-memory one of
// the hub's own when none was given).
hub_options completed(hub_options options) {
  if (options.owner_id.empty()) options.owner_id = detail::this_process_owner_id();
  if (!options.store) options.store = make_in_memory_checkpoint_store();
  if (options.lease < std::chrono::milliseconds(3)) options.lease = std::chrono::milliseconds(3);
  return options;
}

orchestrator_error refusal(const claim_error& e, std::string_view verb) {
  const auto message = std::string(verb) + ": " + e.what();
  switch (e.why()) {
    case claim_error::reason::not_found: return {orchestrator_errc::unknown_workflow, message};
    case claim_error::reason::owned: return {orchestrator_errc::run_owned, message};
    case claim_error::reason::step_changed: return {orchestrator_errc::run_moved_on, message};
    default: return {orchestrator_errc::not_awaiting_clarification, message};
  }
}

// What differs between the definition a run was stored with and `now`.
// Up to 20 names, then how many more: a message, not a dump of the workflow.
class name_list {
 public:
  void add(std::string_view name) {
    if (++count_ <= 20) text_ += (text_.empty() ? "" : ", ") + std::string(name);
  }
  bool empty() const noexcept { return count_ == 0; }
  std::string text() const {
    return count_ <= 20 ? text_ : text_ + " and " + std::to_string(count_ - 20) + " more";
  }

 private:
  std::string text_;
  std::size_t count_ = 0;
};

// Sets of names, not a scan per name: a large workflow's resume must not
// take quadratic time to say what changed.
std::string definition_changes(const detail::definition_identity& stored, const compiled_workflow& now) {
  std::unordered_set<std::string_view> current, before(stored.nodes.begin(), stored.nodes.end());
  for (const auto& n : now.definition().nodes) current.insert(n.name);
  name_list removed, added;
  for (const auto& n : stored.nodes) {
    if (!current.contains(n)) removed.add(n);
  }
  for (const auto& n : now.definition().nodes) {
    if (!before.contains(n.name)) added.add(n.name);
  }
  std::string changes;
  if (!removed.empty()) changes += "nodes removed: " + removed.text();
  if (!added.empty()) changes += std::string(changes.empty() ? "" : "; ") + "nodes added: " + added.text();
  if (changes.empty()) changes = "the nodes' agents, routes or limits changed";
  return changes + " (fingerprint " + stored.fingerprint + " when it started, " + now.fingerprint() + " now)";
}

// Throws unless the decision in `options` fits the run: one is needed for
// a run awaiting approval (and allowed for one interrupted while a decision
// was being saved), refused otherwise; an answer is refused there.
void check_decision(const workflow_state& state, workflow_status status, const resume_options& options) {
  const auto& id = state.id;
  const bool calls_wait = state.approval.has_value() &&
                          (status == workflow_status::awaiting_approval || status == workflow_status::interrupted);
  if (status == workflow_status::awaiting_approval && !options.decision) {
    throw orchestrator_error(orchestrator_errc::decision_required,
                             "resume: workflow '" + id + "' awaits approval of " +
                                 std::to_string(state.approval ? state.approval->calls.size() : 0) +
                                 " tool call(s); approve or reject them");
  }
  if (options.decision && !calls_wait) {
    throw orchestrator_error(orchestrator_errc::decision_required,
                             "resume: workflow '" + id + "' is " + std::string(to_string(status)) +
                                 " and awaits no approval; "
                             "a decision applies only to a run awaiting approval");
  }
  if (calls_wait && options.decision && options.expected_calls && *options.expected_calls != state.approval->calls_key()) {
    throw orchestrator_error(orchestrator_errc::run_moved_on,
                             "resume: workflow '" + id + "' now awaits approval of other tool calls than those "
                             "decided on (another decision was taken and the step asked for more); read them "
                             "again and decide on those");
  }
  if (calls_wait && options.answer) {
    throw orchestrator_error(orchestrator_errc::decision_required,
                             "resume: workflow '" + id + "' awaits approval of tool calls, not an answer; "
                             "approve or reject them");
  }
}

// Paused for the user or interrupted: what resume() and cancel_stored_run() take.
bool is_resumable(workflow_status status) noexcept {
  return is_paused(status) || status == workflow_status::interrupted;
}

void check_definition(const detail::stored_run& stored, const compiled_workflow& workflow, std::string_view verb);

// Throws unless `stored` may continue under `workflow` with `options`.
void check_resumable(const detail::stored_run& stored, workflow_status status, const compiled_workflow& workflow,
                     const resume_options& options, const checkpoint* cp) {
  const auto& id = stored.state.id;
  if (status == workflow_status::running) {
    throw orchestrator_error(orchestrator_errc::run_owned,
                             "resume: workflow '" + id + "' is being resumed by another process (owner " +
                                 cp->owner + ", since " + store_support::format_utc(cp->updated_at) + ")");
  }
  if (!is_resumable(status)) {
    throw orchestrator_error(orchestrator_errc::not_awaiting_clarification,
                             "resume: workflow '" + id + "' is " + std::string(to_string(status)) +
                                 "; only a workflow awaiting clarification or approval, or interrupted, can be "
                                 "resumed");
  }
  check_decision(stored.state, status, options);
  if (status == workflow_status::awaiting_clarification && !options.answer) {
    throw orchestrator_error(orchestrator_errc::answer_required,
                             "resume: workflow '" + id + "' is awaiting clarification and needs an answer" +
                                 (stored.state.clarification ? ": " + stored.state.clarification->question : ""));
  }
  // Interrupted after a claim to answer it, before the answer was saved: the
  // question stands, and may be answered.
  const bool question_stands = stored.state.clarification.has_value();
  if (status == workflow_status::interrupted && options.answer && !question_stands) {
    throw orchestrator_error(orchestrator_errc::answer_required,
                             "resume: workflow '" + id + "' was interrupted, not paused for a question; "
                             "continue it without an answer");
  }
  check_definition(stored, workflow, "resume");
}

// Throws unless `stored` is a run of `workflow` as it is now.
void check_definition(const detail::stored_run& stored, const compiled_workflow& workflow, std::string_view verb) {
  const auto& id = stored.state.id;
  if (stored.state.workflow_name != workflow.name()) {
    throw orchestrator_error(orchestrator_errc::workflow_mismatch,
                             std::string(verb) + ": workflow '" + id + "' runs definition '" +
                                 stored.state.workflow_name + "', not '" + workflow.name() + "'");
  }
  if (!stored.definition.fingerprint.empty() && stored.definition.fingerprint != workflow.fingerprint()) {
    throw orchestrator_error(orchestrator_errc::workflow_mismatch,
                             std::string(verb) + ": the definition of '" + workflow.name() +
                                 "' changed since workflow '" + id + "' started: " +
                                 definition_changes(stored.definition, workflow) +
                                 "; the run is kept, restore the definition to continue it");
  }
}

// Throws unless a stored run with `status` may be updated: paused or
// interrupted, as for cancel_stored_run().
void check_updatable(const std::string& id, workflow_status status, const checkpoint& cp) {
  if (is_resumable(status)) return;
  const bool owned = status == workflow_status::running;
  throw orchestrator_error(owned ? orchestrator_errc::run_owned : orchestrator_errc::not_awaiting_clarification,
                           "update: workflow '" + id + "' is " + std::string(to_string(status)) +
                               (owned ? " (owner " + cp.owner + ")" : "") +
                               "; only a paused or interrupted run can be updated");
}

}  // namespace

hub::hub(asio::any_io_executor executor, const agents::agent_registry& registry, hub_options options)
    : impl_(std::make_shared<impl>(std::move(executor), registry, std::move(options))) {}

hub::~hub() = default;

hub::impl::impl(asio::any_io_executor ex, const agents::agent_registry& reg, hub_options opts)
    : executor(std::move(ex)),
      registry(reg),
      own_store(!opts.store),
      options(completed(std::move(opts))),
      models(std::make_shared<const agents::model_set>(options.models)),
      approval_policy(options.approval_policy
                          ? std::make_shared<const agents::approval_policy>(options.approval_policy)
                          : nullptr),
      logger(options.logger ? options.logger : spdlog::default_logger()),
      id_prefix("wf-" + random_prefix() + "-"),
      leases(std::make_shared<detail::lease_keeper>(executor, options.store, options.owner_id, options.lease, logger)) {}

// The pool's destructor stops it (calls not yet started never start, and
// coroutine agents suspended on it are dropped) and joins its threads: it
// waits for blocking agents in the middle of a call to return.
hub::impl::~impl() = default;

asio::any_io_executor hub::impl::agent_executor(const agents::agent& a, const asio::any_io_executor& run_strand) {
  if (!a.blocks_thread() || options.blocking_threads == 0) return run_strand;
  std::call_once(blocking_pool_started,
                 [this] { blocking_pool = std::make_unique<asio::thread_pool>(options.blocking_threads); });
  return asio::make_strand(blocking_pool->get_executor());
}

std::string hub::impl::new_id() { return id_prefix + std::to_string(++id_counter); }

detail::prepared_run hub::impl::initial_state(const compiled_workflow& workflow, boost::json::value input,
                                              run_options& run) {
  if (auto problem = protocol::check_untrusted_value(input)) {
    throw orchestrator_error(orchestrator_errc::invalid_input, "workflow '" + workflow.name() + "' input: " + *problem);
  }
  detail::prepared_run prepared;
  auto& state = prepared.state;
  state.id = run.workflow_id.empty() ? new_id() : std::move(run.workflow_id);
  state.workflow_name = workflow.name();
  state.input = std::move(input);
  state.next_node = workflow.definition().entry;
  return prepared;
}

asio::awaitable<hub::impl::claimable> hub::impl::read_for_claim(std::string id, std::string_view verb) {
  auto& store = *options.store;
  claimable run;
  auto loaded = co_await store.load(id);
  if (loaded && loaded->status == workflow_status::running && detail::owner_is_dead_on_this_host(loaded->owner)) {
    // The owner may have paused or finished the run just before it exited:
    // read again, now that it can no longer write.
    run.dead_owner = loaded->owner;
    loaded = co_await store.load(id);
  }
  if (!loaded) {
    throw orchestrator_error(orchestrator_errc::unknown_workflow, std::string(verb) + ": no workflow with id '" +
                                                                      id + "' in the checkpoint store");
  }
  run.status = loaded->status;
  if (run.status == workflow_status::running && !run.dead_owner.empty() && loaded->owner == run.dead_owner) {
    run.status = workflow_status::interrupted;
  }
  run.cp = std::move(*loaded);
  co_return run;
}

asio::awaitable<checkpoint> hub::impl::take(const claimable& run, std::int64_t expected_step, std::string_view verb) {
  claim_request request;
  request.workflow_id = run.cp.workflow_id;
  request.owner = options.owner_id;
  request.lease = options.lease;
  request.expected_status = run.status;
  request.expected_step = expected_step;
  request.dead_owner = run.dead_owner;
  try {
    co_return co_await options.store->claim(std::move(request));
  } catch (const claim_error& e) {
    throw refusal(e, verb);
  }
}

asio::awaitable<void> hub::impl::save_taken(save_request request, std::string_view verb) {
  const auto id = request.workflow_id;
  const auto fence = request.fence;
  std::exception_ptr failed;
  try {
    co_await options.store->save(std::move(request));
    co_return;
  } catch (const claim_error& e) {
    throw orchestrator_error(orchestrator_errc::lost_ownership, std::string(verb) + ": " + e.what());
  } catch (...) {
    failed = std::current_exception();
  }
  try {
    co_await options.store->release(id, options.owner_id, fence);
  } catch (const std::exception& e) {
    logger->warn("[{}] {}: cannot give the run back after a failed save: {}", id, verb, e.what());
  }
  std::rethrow_exception(failed);
}

asio::awaitable<detail::prepared_run> hub::impl::claim(std::shared_ptr<const compiled_workflow> workflow,
                                                       std::string id, resume_options options) {
  const auto run = co_await read_for_claim(std::move(id), "resume");
  auto stored = detail::read_stored_run(run.cp);
  check_resumable(stored, run.status, *workflow, options, &run.cp);
  // The claim succeeds only at the step and status read here, so the state
  // read here is the state claimed.
  const auto claimed = co_await take(run, options.expected_step.value_or(run.cp.step));
  detail::prepared_run prepared;
  prepared.state = std::move(stored.state);
  prepared.fence = claimed.fence;
  prepared.stored = detail::marks_of(prepared.state);
  prepared.answer = std::move(options.answer);
  prepared.decision = std::move(options.decision);
  prepared.continuing = !prepared.answer && !prepared.decision;
  co_return prepared;
}

// ---------------------------------------------------------------- runs

namespace {

asio::awaitable<detail::prepared_run> ready(detail::prepared_run run) { co_return run; }

}  // namespace

// run() is not a coroutine itself: it returns the operation that runs the
// workflow, so a workflow in flight holds no frame of run()'s (with a copy of
// its state) on top of its own.
asio::awaitable<workflow_state> hub::run(std::shared_ptr<const compiled_workflow> workflow,
                                         boost::json::value input, run_options options) {
  auto prepared = impl_->initial_state(*workflow, std::move(input), options);
  return detail::run_on_own_strand(impl_, std::move(workflow), std::move(prepared));
}

workflow_handle hub::start(std::shared_ptr<const compiled_workflow> workflow, boost::json::value input,
                           run_options options) {
  auto prepared = impl_->initial_state(*workflow, std::move(input), options);
  auto control =
      std::make_shared<detail::run_control>(prepared.state.id, detail::make_run_strand(impl_->executor));
  detail::spawn(impl_, control, std::move(workflow), ready(std::move(prepared)));
  return workflow_handle(control);
}

asio::awaitable<workflow_state> hub::resume(std::shared_ptr<const compiled_workflow> workflow,
                                            std::string workflow_id, std::string answer) {
  resume_options options;
  options.answer = std::move(answer);
  return resume(std::move(workflow), std::move(workflow_id), std::move(options));
}

asio::awaitable<workflow_state> hub::resume(std::shared_ptr<const compiled_workflow> workflow,
                                            std::string workflow_id, resume_options options) {
  // The run is claimed only once the resume is awaited, so an operation
  // that is never awaited changes nothing.
  auto prepared = co_await impl_->claim(workflow, std::move(workflow_id), std::move(options));
  auto run = detail::run_on_own_strand(impl_, std::move(workflow), std::move(prepared));
  co_return co_await std::move(run);
}

workflow_handle hub::start_resume(std::shared_ptr<const compiled_workflow> workflow, std::string workflow_id,
                                  resume_options options) {
  auto control = std::make_shared<detail::run_control>(workflow_id, detail::make_run_strand(impl_->executor));
  auto claim = impl_->claim(workflow, std::move(workflow_id), std::move(options));
  detail::spawn(impl_, control, std::move(workflow), std::move(claim));
  return workflow_handle(control);
}

workflow_handle hub::start_resume(std::shared_ptr<const compiled_workflow> workflow, std::string workflow_id,
                                  std::string answer) {
  resume_options options;
  options.answer = std::move(answer);
  return start_resume(std::move(workflow), std::move(workflow_id), std::move(options));
}

asio::awaitable<std::optional<workflow_state>> hub::find(std::string workflow_id) const {
  auto cp = co_await impl_->options.store->load(std::move(workflow_id));
  if (!cp) co_return std::nullopt;
  co_return workflow_state::from_checkpoint(*cp);
}

asio::awaitable<workflow_state> hub::cancel_stored_run(std::string workflow_id) {
  const auto& options = impl_->options;
  const auto run = co_await impl_->read_for_claim(workflow_id, "cancel");
  if (!is_resumable(run.status)) {
    const bool owned = run.status == workflow_status::running;
    throw orchestrator_error(owned ? orchestrator_errc::run_owned : orchestrator_errc::not_awaiting_clarification,
                             "cancel: workflow '" + workflow_id + "' is " + std::string(to_string(run.status)) +
                                 (owned ? " (owner " + run.cp.owner + ")" : "") +
                                 "; only a paused or interrupted run can be cancelled here");
  }
  auto stored = detail::read_stored_run(run.cp);
  const auto claimed = co_await impl_->take(run, run.cp.step, "cancel");
  auto& state = stored.state;
  auto marks = detail::marks_of(state);
  state.status = workflow_status::cancelled;
  state.clarification.reset();
  state.approval.reset();  // the pending calls are never made
  state.errors.push_back({"cancelled", "workflow '" + workflow_id + "' was cancelled while " + std::string(to_string(run.status)),
                          false,
                          {}});
  auto request = detail::make_save_request(state, stored.definition, &marks, options.owner_id, claimed.fence);
  co_await impl_->save_taken(std::move(request), "cancel");
  co_return std::move(state);
}

asio::awaitable<workflow_state> hub::update_stored_run(std::shared_ptr<const compiled_workflow> workflow,
                                                       std::string workflow_id, state_update update) {
  const auto run = co_await impl_->read_for_claim(workflow_id, "update");
  check_updatable(workflow_id, run.status, run.cp);
  auto stored = detail::read_stored_run(run.cp);
  check_definition(stored, *workflow, "update");
  auto& state = stored.state;
  auto marks = detail::marks_of(state);
  const auto expected_step = update.expected_step.value_or(run.cp.step);
  // Checked before the claim: a refused update leaves the run as it was.
  detail::apply_state_update(state, *workflow, impl_->registry, std::move(update));
  const auto claimed = co_await impl_->take(run, expected_step, "update");
  auto request = detail::make_save_request(state, stored.definition, &marks, impl_->options.owner_id, claimed.fence);
  co_await impl_->save_taken(std::move(request), "update");
  co_return std::move(state);
}

bool is_dead_local_owner(std::string_view owner_id) { return detail::owner_is_dead_on_this_host(owner_id); }

const std::string& hub::owner_id() const noexcept { return impl_->options.owner_id; }

void hub::add_observer(std::shared_ptr<observer> o) { impl_->observers.push_back(std::move(o)); }

void hub::set_trace_parents(std::shared_ptr<const agents::trace_parents> traces) { impl_->traces = std::move(traces); }

const hub_metrics& hub::metrics() const noexcept { return impl_->metrics; }

}  // namespace switchboard::orchestrator
