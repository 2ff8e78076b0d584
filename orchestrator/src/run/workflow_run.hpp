// One workflow run on its strand, shared by the files of orchestrator/src/run/:
// run_loop.cpp (the loop, routing, endings, how a run starts), agent_call.cpp
// (calling an agent, parallel groups; detached_call.hpp for a call under a
// deadline), coordinator.cpp, synthesis.cpp,
// persistence.cpp (checkpoints) and events.cpp. Internal.
//
// Thread-safety: a workflow_run is touched only on its run's strand.
#pragma once

#include "../detail/compiled.hpp"
#include "../detail/runner.hpp"
#include "detached_call.hpp"
#include "tool_journal.hpp"

#include <switchboard/agents/agent.hpp>
#include <switchboard/orchestrator/checkpoint_store.hpp>
#include <switchboard/protocol/envelope.hpp>

#include <boost/asio/awaitable.hpp>

#include <atomic>
#include <chrono>
#include <exception>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace switchboard::models {
struct structured_result;
}

namespace switchboard::orchestrator::detail {

namespace asio = boost::asio;
namespace json = boost::json;
using clock = std::chrono::steady_clock;

struct group_member_failed {};

// What fewer steps have than an answer: a failure, a pause, a model's answer
// on record, tool calls, a note (step_outcome::more()).
struct step_details {
  std::optional<protocol::error_record> error;
  std::string prompt_version;
  std::string note;
  std::string raw_text;                  // the model's text of the last answer, whole
  boost::json::array model_attempts;     // the structured ladder's attempts for that answer
  boost::json::array tool_calls;         // every tool call of the step, "agent" added
  // Set: tool calls wait for the user's approval; the step pauses, uncounted.
  std::optional<std::vector<agents::pending_tool_call>> approval;
  // Set: the agent asks the user first (agents::clarification_required);
  // the step pauses, uncounted, and runs again with the answer.
  std::optional<std::string> question;
  std::string question_agent;  // a group's member that asked ("" : `agent` did)
};

// A step's outcome, in its frame for as long as its agent takes (hours,
// for a held model call): the details few steps have are on the heap,
// made when first written.
class step_outcome {
 public:
  std::string agent;                     // who answered
  protocol::envelope envelope;           // valid unless failed or cancelled
  bool cancelled = false;
  int attempts = 0;
  models::token_usage tokens;
  std::chrono::microseconds duration{0};

  // The details to read: empty ones when none were written.
  const step_details& details() const noexcept { return more_ ? *more_ : no_details_; }
  // The details to write, made on first use.
  step_details& more() {
    if (!more_) more_ = std::make_unique<step_details>();
    return *more_;
  }
  bool has_details() const noexcept { return more_ != nullptr; }
  bool failed() const noexcept { return more_ && more_->error; }
  // Paused (approval or question): the step runs again, nothing is recorded.
  bool paused() const noexcept { return more_ && (more_->approval || more_->question); }

 private:
  inline static const step_details no_details_{};
  std::unique_ptr<step_details> more_;
};

struct choice {
  agents::agent* agent = nullptr;
  std::string instructions;
  std::string note;
  models::token_usage tokens;
  std::optional<protocol::error_record> failure;
};


protocol::error_record make_record(std::string_view type, std::string message, bool retryable,
                                   std::string_view agent = {});
std::string format_confidence(double value);
// The question to ask after envelope `e` of `agent`: its own
// data.clarification_question, else one built from its explanation.
std::string question_for(const protocol::envelope& e, std::string_view agent);
// Adds a parallel group member's envelope to the group's merged envelope
// (start from confidence 1): data under the member's name, the lowest
// confidence, explanations and reasonings joined.
void merge_member(protocol::envelope& merged, const std::string& name, const protocol::envelope& member);
// Why an envelope cannot enter the state (a number that is not finite,
// data nested beyond the limits), or nullopt.
std::optional<std::string> unstorable(const protocol::envelope& e);
asio::awaitable<bool> cancelled_now();
// The input, the latest outputs (with their data when asked) and the
// user's answers, for the coordinator's and the synthesis model's prompts.
std::string outputs_summary(const workflow_state& state, bool with_data);

class workflow_run {
 public:
  workflow_run(std::shared_ptr<hub::impl> hub, std::shared_ptr<const compiled_workflow> workflow,
               prepared_run prepared, const std::atomic<bool>* interrupt = nullptr)
      : hub_(std::move(hub)),
        workflow_(std::move(workflow)),
        w_(workflow_->internals()),
        state_(std::move(prepared.state)),
        continuing_(prepared.continuing),
        stored_(prepared.stored.has_value()),
        answer_(std::move(prepared.answer)),
        decision_(prepared.decision ? std::make_unique<approval_decision>(std::move(*prepared.decision)) : nullptr),
        marks_(prepared.stored.value_or(journal_marks{})),
        fence_(prepared.fence),
        interrupt_(interrupt) {
    if (stored_) restore_last_step();
  }
  // For a run whose preparation is awaited (a claim, for a resume): go()
  // awaits it first, and throws what it throws (a refused claim). Built and
  // go() called before the preparation runs: Asio hands a frame the block
  // the last coroutine freed if it fits, and a run waiting for hours should
  // not sit in the block of its preparation.
  workflow_run(std::shared_ptr<hub::impl> hub, std::shared_ptr<const compiled_workflow> workflow,
               const std::atomic<bool>* interrupt, asio::awaitable<prepared_run> preparing)
      : hub_(std::move(hub)),
        workflow_(std::move(workflow)),
        w_(workflow_->internals()),
        interrupt_(interrupt),
        preparing_(std::move(preparing)) {}

  // Runs until the workflow stops; the final state stays here for
  // take_state(). No parameters (g++ 12: an argument of an awaited call is
  // a temporary of the co_await; README, "Development"). No result either:
  // an awaitable's frame keeps a slot for its result (a workflow_state is
  // ~570 bytes) for its whole life.
  asio::awaitable<void> go();
  workflow_state take_state() { return std::move(state_); }

 private:
  // Awaits the preparation and begins with it; in a frame of its own, so
  // the prepared state is not kept in go()'s.
  asio::awaitable<void> take_preparation();
  void begin_with(prepared_run prepared) {
    state_ = std::move(prepared.state);
    continuing_ = prepared.continuing;
    stored_ = prepared.stored.has_value();
    answer_ = std::move(prepared.answer);
    if (prepared.decision) decision_ = std::make_unique<approval_decision>(std::move(*prepared.decision));
    marks_ = prepared.stored.value_or(journal_marks{});
    fence_ = prepared.fence;
    if (stored_) restore_last_step();
  }

  // The node coroutines write their outcome into `out` rather than return it:
  // a returned step_outcome is a temporary that g++ keeps in the awaiting
  // frame once per co_await, and frames are most of the memory a workflow in
  // flight holds.
  std::optional<int> begin_run();
  void fail_step(const std::exception_ptr& failure);
  asio::awaitable<int> step(int index);
  std::optional<int> begin_step(const compiled_node& n);
  int end_step(const compiled_node& n, step_outcome& out);
  asio::awaitable<void> call_agent(const compiled_node& n, agents::agent& a, const std::string& instructions,
                                   step_outcome& out);
  // One call of the agent: its envelope into out.envelope, or why it failed into `error`.
  asio::awaitable<void> call_detached(const compiled_node& n, agents::agent& a, const std::string& instructions,
                                      step_outcome& out, std::optional<protocol::error_record>& error);
  agents::agent_context inline_context(const agents::agent& a, const std::string& instructions,
                                       const asio::any_io_executor& run_strand);
  std::optional<protocol::error_record> end_attempt(const compiled_node* deadline_of, const agents::agent& a,
                                                    agents::agent_context* finished, step_outcome& out,
                                                    std::exception_ptr failure);
  void record_call(const agents::agent& a, agents::agent_context& context, step_outcome& out, bool answered);
  // What every call's context takes from the run, inline or detached: the
  // run's id, the agent's tools and the relay of its stream to the
  // observers on `run_strand`.
  void prepare_context(agents::agent_context& context, const agents::agent& a,
                       const asio::any_io_executor& run_strand);
  std::shared_ptr<detached_call> start_call(agents::agent& a, const std::string& instructions,
                                            const asio::any_io_executor& strand);
  asio::awaitable<void> run_group(const compiled_node& n, step_outcome& out);
  asio::awaitable<void> group_member(const compiled_node& n, std::size_t i, std::vector<step_outcome>& results);
  asio::awaitable<void> run_coordinator(const compiled_node& n, step_outcome& out);
  asio::awaitable<void> choose(const compiled_node& n, choice& result);
  std::optional<std::string> choose_by_router(const compiled_node& n, choice& result);
  asio::awaitable<std::optional<std::string>> choose_by_model(const compiled_node& n, models::chat_model& model,
                                                              choice& result);
  asio::awaitable<void> ask_for_choice(const compiled_node& n, models::chat_model& model,
                                       models::structured_result& answer);
  std::optional<std::string> take_choice(const compiled_node& n, const models::structured_result& answer,
                                         choice& result);
  bool recorded_choice(const compiled_node& n, choice& chosen) const;
  asio::awaitable<void> keep_choice(const compiled_node& n, const choice& chosen);
  asio::awaitable<void> run_synthesis(const compiled_node& n, step_outcome& out);
  asio::awaitable<void> synthesize_by_model(const compiled_node& n, step_outcome& out);
  asio::awaitable<void> ask_for_synthesis(const compiled_node& n, models::chat_model& model,
                                          models::structured_result& answer);
  void take_synthesis(const compiled_node& n, models::structured_result& answer, step_outcome& out);
  step_outcome synthesize_deterministically(const compiled_node& n);

  std::optional<protocol::error_record> check_envelope(const agents::agent& a, const protocol::envelope& e) const;
  void finish_call(const compiled_node& n, step_outcome& out);
  void store(const compiled_node& n, step_outcome& out);
  int route(const compiled_node& n, const protocol::envelope& e);
  void pause(const compiled_node& rerun, std::string question, std::string_view agent);
  // The step's tool calls wait for approval: the step is given up uncounted,
  // its tool journal kept for the run that continues it.
  void pause_for_approval(const compiled_node& n, step_outcome& out);
  // The agent asked the user (step_outcome::question): the step is given up
  // uncounted, its journal kept, and runs again with the answer.
  void pause_for_answer(const compiled_node& n, step_outcome& out);
  // Adds the resume's decision to the journal of the step that runs again.
  void apply_decision();
  // The tool journal of the step begun / ended (kept: it runs again).
  void open_step_tools();
  void close_step_tools(bool kept);
  std::optional<journal_target> journal_target_now();
  void give_tools(agents::agent_context& context, const agents::agent& a);
  void report_tool_calls(const step_outcome& out);
  void complete();
  void fail(protocol::error_record record);
  void restore_last_step();
  void cancel(std::string_view node);
  void interrupt(std::string_view node);
  void stop(std::string_view node);  // cancel or interrupt, as asked
  // Whether save() would write anything now. Callers ask first: a
  // coroutine's frame (save()'s holds a whole save request) is allocated at
  // the call even when the coroutine returns at once.
  bool saves_now() const;
  asio::awaitable<void> save();
  void refused_save(const claim_error& e);
  asio::awaitable<void> give_up_stored_run();
  asio::awaitable<void> prune_finished_runs();
  // Removes the run from a store the hub made for itself (hub::impl::own_store).
  asio::awaitable<void> forget();
  void emit(const event& e);
  void log(const event& e) const;
  event make_event(event_kind kind) const;
  const protocol::envelope* last_envelope() const;
  std::span<const std::string> answers() const { return state_.clarification_answers; }

  std::shared_ptr<hub::impl> hub_;
  std::shared_ptr<const compiled_workflow> workflow_;
  const compiled_workflow::impl& w_;
  workflow_state state_;
  // This object is allocated for every run; it stays within the 1,000
  // bytes glibc serves from its per-thread cache or its small bins (a
  // larger block costs a search of its bins and makes it consolidate its
  // fast bins): the flags sit together after last_node_, and what only
  // some runs have (a group's envelope, a decision to resume with) is on
  // the heap. run_loop.cpp checks.
  int last_node_ = no_node;        // the node of the last agent step
  bool continuing_ = false;        // an interrupted run continues
  bool stored_ = false;            // the run exists in the store (created or claimed)
  bool lost_ = false;              // a save was refused: the run is no longer ours
  bool gave_up_ = false;           // a save failed, its outcome unknown: nothing more is saved
  bool step_in_flight_ = false;    // begin_step started a step that did not end
  std::string last_agent_;         // whose envelope that step produced
  std::unique_ptr<protocol::envelope> last_group_;  // a parallel group's merged envelope
  std::optional<std::string> answer_;               // the clarification answer a resume continues with
  std::unique_ptr<approval_decision> decision_;     // the decision a resume continues with
  std::shared_ptr<step_records> step_tools_;        // the tool journal of the step in flight
  journal_marks marks_;                           // how much of state_ the store has
  std::int64_t fence_ = 0;
  const std::atomic<bool>* interrupt_;            // set: a cancellation is an interruption
  asio::awaitable<prepared_run> preparing_;       // valid: go() awaits it first
  // What agent calls read, owned by them rather than pointing into state_
  // (a call given up may outlive this run): built at the first call,
  // refreshed when the state's outputs change.
  std::shared_ptr<const run_inputs> call_inputs_;
  std::shared_ptr<const output_snapshot> call_outputs_;
};

// Passed instead of `{}`. g++ 12: named before co_await (README, "Development").
inline const std::string no_instructions;

}  // namespace switchboard::orchestrator::detail
