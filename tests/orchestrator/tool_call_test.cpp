// Tool calls in the hub: each call in the step's audit entry and events,
// approval before a side effect (pause, decide, resume in this or another
// hub), and exactly-once execution counted across processes killed after
// every store write and in the middle of a call.
#include <switchboard/orchestrator/hub.hpp>

#include "durable_run_fixture.hpp"
#include "tool_workflow.hpp"

#include <mutex>

namespace switchboard::orchestrator {
namespace {

namespace json = boost::json;
using namespace durable_testing;
using testing::book_settings;
using testing::count_lines;
using testing::tool_setup;

class tool_calls : public durable_run {
 protected:
  book_settings settings(bool needs_approval = false) {
    book_settings s;
    s.counter = counter("book");
    s.needs_approval = needs_approval;
    return s;
  }
  hub_options opts(const tool_setup& setup) const { return testing::options(store_, setup.models, silent()); }
  workflow_state start(hub& h, const tool_setup& setup, const std::string& id) {
    run_options run;
    run.workflow_id = id;
    auto workflow = testing::booking_workflow().compile(setup.registry);
    json::value input{{"request", "book the minivan"}};
    return await(h.run(workflow, std::move(input), run));
  }
  workflow_state decide(hub& h, const tool_setup& setup, const std::string& id, bool approve,
                        std::string reason = {}) {
    resume_options o;
    o.decision = approval_decision{approve, std::move(reason)};
    return await(h.resume(testing::booking_workflow().compile(setup.registry), id, o));
  }
  static std::string result_of(const workflow_state& s) {
    return s.result ? std::string(s.result->data.at("status").as_string()) : "(none)";
  }
};

// Keeps the tool_called events it sees.
struct tool_events final : observer {
  void on_event(const event& e) noexcept override {
    std::lock_guard lock(mutex);
    if (e.kind == event_kind::tool_called) calls.push_back(*e.tool_call);
    if (e.kind == event_kind::approval_requested) approvals.emplace_back(e.question);
  }
  std::mutex mutex;
  std::vector<json::object> calls;
  std::vector<std::string> approvals;
};

TEST_F(tool_calls, every_call_is_in_the_audit_entry_and_the_events) {
  tool_setup setup(settings());
  hub h{io_.get_executor(), setup.registry, opts(setup)};
  auto events = std::make_shared<tool_events>();
  h.add_observer(events);
  const auto s = start(h, setup, "audited");
  ASSERT_EQ(s.status, workflow_status::completed) << (s.first_error() ? s.first_error()->message : "");
  EXPECT_EQ(result_of(s), "booked");
  EXPECT_EQ(count_lines(counter("book")), 1);
  ASSERT_EQ(s.audit.size(), 1u);
  ASSERT_EQ(s.audit[0].tool_calls.size(), 1u);
  const auto& call = s.audit[0].tool_calls[0].as_object();
  EXPECT_EQ(call.at("tool"), "book");
  EXPECT_EQ(call.at("agent"), "booker");
  EXPECT_EQ(call.at("result").at("booked"), "2026-11-27T09:00");
  ASSERT_EQ(events->calls.size(), 1u);
  EXPECT_EQ(events->calls[0].at("id"), "call_1");

  // And in the stored run, read back.
  const auto stored = await(h.find("audited"));
  ASSERT_TRUE(stored);
  ASSERT_EQ(stored->audit.at(0).tool_calls.size(), 1u);
  EXPECT_TRUE(stored->tool_records.empty());
}

TEST_F(tool_calls, a_call_that_needs_approval_pauses_and_runs_once_approved_in_another_hub) {
  tool_setup first(settings(true));
  auto events = std::make_shared<tool_events>();
  workflow_state paused;
  {
    hub h{io_.get_executor(), first.registry, opts(first)};
    h.add_observer(events);
    paused = start(h, first, "approve-me");
  }
  ASSERT_EQ(paused.status, workflow_status::awaiting_approval);
  ASSERT_TRUE(paused.approval);
  ASSERT_EQ(paused.approval->calls.size(), 1u);
  EXPECT_EQ(paused.approval->calls[0].tool, "book");
  EXPECT_EQ(paused.approval->calls[0].agent, "booker");
  EXPECT_EQ(paused.approval->calls[0].arguments.at("slot"), "2026-11-27T09:00");
  EXPECT_EQ(paused.approval->calls[0].description, "Books the minivan for a slot.");
  EXPECT_EQ(paused.step, 0);  // the step is not counted until it runs through
  EXPECT_EQ(count_lines(counter("book")), 0);  // nothing was booked
  ASSERT_EQ(events->approvals.size(), 1u);
  EXPECT_THAT(events->approvals[0], HasSubstr("booker wants to call book"));

  // Another hub (another process, as far as the store knows) decides.
  tool_setup second(settings(true));
  hub other{io_.get_executor(), second.registry, opts(second)};
  const auto stored = await(other.find("approve-me"));
  ASSERT_TRUE(stored);
  EXPECT_EQ(stored->status, workflow_status::awaiting_approval);
  ASSERT_TRUE(stored->approval);
  EXPECT_EQ(stored->approval->calls[0].id, "call_1");

  const auto done = decide(other, second, "approve-me", true);
  ASSERT_EQ(done.status, workflow_status::completed) << (done.first_error() ? done.first_error()->message : "");
  EXPECT_EQ(result_of(done), "booked");
  EXPECT_EQ(count_lines(counter("book")), 1);
  // The model's tool call was replayed from the journal, not asked again.
  EXPECT_EQ(second.model->calls, 1);
  EXPECT_FALSE(done.approval);
}

TEST_F(tool_calls, a_rejected_call_is_never_made_and_the_model_is_told_why) {
  tool_setup setup(settings(true));
  hub h{io_.get_executor(), setup.registry, opts(setup)};
  ASSERT_EQ(start(h, setup, "reject-me").status, workflow_status::awaiting_approval);
  const auto done = decide(h, setup, "reject-me", false, "the minivan is in the garage");
  ASSERT_EQ(done.status, workflow_status::completed);
  EXPECT_EQ(result_of(done), "rejected");
  EXPECT_EQ(count_lines(counter("book")), 0);
  ASSERT_EQ(done.audit.back().tool_calls.size(), 1u);
  const auto& error = done.audit.back().tool_calls[0].at("error");
  EXPECT_EQ(error.at("code"), "rejected");
  EXPECT_THAT(std::string(error.at("message").as_string()), HasSubstr("the minivan is in the garage"));
}

TEST_F(tool_calls, an_answer_set_in_place_of_a_step_awaiting_approval_drops_its_calls) {
  tool_setup setup(settings(true));
  hub h{io_.get_executor(), setup.registry, opts(setup)};
  ASSERT_EQ(start(h, setup, "by-hand").status, workflow_status::awaiting_approval);
  auto workflow = testing::booking_workflow().compile(setup.registry);
  const auto updated =
      await(h.update_stored_run(workflow, "by-hand", testing::answer_for("booker", {{"status", "booked by phone"}})));
  EXPECT_EQ(updated.status, workflow_status::interrupted);
  EXPECT_FALSE(updated.approval);
  EXPECT_EQ(updated.next_node, "done");
  const auto done = await(h.resume(workflow, "by-hand", resume_options{}));
  ASSERT_EQ(done.status, workflow_status::completed);
  EXPECT_EQ(result_of(done), "booked by phone");
  EXPECT_EQ(count_lines(counter("book")), 0);  // the pending call was never made
}

TEST_F(tool_calls, resume_without_a_decision_or_with_an_answer_is_refused_and_changes_nothing) {
  tool_setup setup(settings(true));
  hub h{io_.get_executor(), setup.registry, opts(setup)};
  ASSERT_EQ(start(h, setup, "undecided").status, workflow_status::awaiting_approval);
  auto workflow = testing::booking_workflow().compile(setup.registry);
  EXPECT_EQ(refused_resume(h, workflow, "undecided", resume_options{}).code(),
            make_error_code(orchestrator_errc::decision_required));
  const auto with_answer = refused_resume(h, workflow, "undecided", answer("yes"));
  EXPECT_EQ(with_answer.code(), make_error_code(orchestrator_errc::decision_required));
  EXPECT_THAT(with_answer.what(), HasSubstr("awaits approval"));
  const auto still = await(h.find("undecided"));
  ASSERT_TRUE(still);
  EXPECT_EQ(still->status, workflow_status::awaiting_approval);
  EXPECT_EQ(count_lines(counter("book")), 0);

  // A decision for a run that awaits none is refused too.
  tool_setup plain(settings(false));
  hub p{io_.get_executor(), plain.registry, opts(plain)};
  ASSERT_EQ(start(p, plain, "finished").status, workflow_status::completed);
  resume_options decided;
  decided.decision = approval_decision{true, ""};
  EXPECT_EQ(refused_resume(p, testing::booking_workflow().compile(plain.registry), "finished", decided).code(),
            make_error_code(orchestrator_errc::not_awaiting_clarification));
}

// A decision names the calls it was taken on: when the run has moved on to
// other pending calls (another decision let the step ask for more), a stale
// one is refused and nothing is made.
TEST_F(tool_calls, a_decision_on_calls_no_longer_pending_is_refused) {
  tool_setup setup(settings(true));
  hub h{io_.get_executor(), setup.registry, opts(setup)};
  const auto paused = start(h, setup, "stale");
  ASSERT_EQ(paused.status, workflow_status::awaiting_approval);
  auto workflow = testing::booking_workflow().compile(setup.registry);
  resume_options stale;
  stale.decision = approval_decision{true, ""};
  stale.expected_calls = "booker/1/call_0\n";
  EXPECT_EQ(refused_resume(h, workflow, "stale", stale).code(), make_error_code(orchestrator_errc::run_moved_on));
  EXPECT_EQ(count_lines(counter("book")), 0);
  resume_options current = stale;
  current.expected_calls = paused.approval->calls_key();
  EXPECT_EQ(await(h.resume(workflow, "stale", current)).status, workflow_status::completed);
  EXPECT_EQ(count_lines(counter("book")), 1);
}

TEST_F(tool_calls, a_native_agent_calls_a_tool_through_the_same_journal_and_approval) {
  tool_setup setup(settings(true));
  hub h{io_.get_executor(), setup.registry, opts(setup)};
  auto workflow = testing::booking_workflow("native_booker").compile(setup.registry);
  run_options run;
  run.workflow_id = "native";
  json::value input{{"request", "book"}};
  const auto paused = await(h.run(workflow, std::move(input), run));
  ASSERT_EQ(paused.status, workflow_status::awaiting_approval);
  ASSERT_TRUE(paused.approval);
  EXPECT_EQ(paused.approval->calls[0].agent, "native_booker");
  EXPECT_EQ(paused.approval->calls[0].id, "book:2026-11-28T10:00");
  EXPECT_EQ(count_lines(counter("book")), 0);
  resume_options o;
  o.decision = approval_decision{true, ""};
  const auto done = await(h.resume(workflow, "native", o));
  ASSERT_EQ(done.status, workflow_status::completed) << (done.first_error() ? done.first_error()->message : "");
  EXPECT_EQ(result_of(done), "booked");
  EXPECT_EQ(count_lines(counter("book")), 1);
  ASSERT_EQ(done.audit.back().tool_calls.size(), 1u);
  EXPECT_EQ(done.audit.back().tool_calls[0].at("agent"), "native_booker");
}

TEST_F(tool_calls, racing_decisions_make_the_call_once) {
  tool_setup setup(settings(true));
  hub h{io_.get_executor(), setup.registry, opts(setup)};
  ASSERT_EQ(start(h, setup, "race").status, workflow_status::awaiting_approval);
  std::vector<std::unique_ptr<tool_setup>> setups;
  std::vector<std::unique_ptr<hub>> hubs;
  for (int i = 0; i < 4; ++i) {
    setups.push_back(std::make_unique<tool_setup>(settings(true)));
    hubs.push_back(std::make_unique<hub>(io_.get_executor(), setups.back()->registry, opts(*setups.back())));
  }
  std::vector<workflow_handle> handles;
  for (int i = 0; i < 4; ++i) {
    resume_options o;
    o.decision = approval_decision{true, ""};
    handles.push_back(hubs[i]->start_resume(testing::booking_workflow().compile(setups[i]->registry), "race", o));
  }
  int won = 0;
  for (auto& handle : handles) {
    try {
      if (handle.wait().status == workflow_status::completed) ++won;
    } catch (const orchestrator_error& e) {
      EXPECT_THAT(e.code(), AnyOf(make_error_code(orchestrator_errc::run_owned),
                                  make_error_code(orchestrator_errc::run_moved_on),
                                  make_error_code(orchestrator_errc::not_awaiting_clarification)))
          << e.what();
    }
  }
  EXPECT_EQ(won, 1);
  EXPECT_EQ(count_lines(counter("book")), 1);
}

TEST_F(tool_calls, the_hubs_policy_can_ask_approval_for_any_call) {
  tool_setup setup(settings(false));
  auto o = opts(setup);
  std::vector<std::string> asked;
  o.approval_policy = [&](std::string_view agent, const agents::tool& t, const json::value& arguments) {
    asked.push_back(std::string(agent) + ":" + std::string(t.name()) + ":" +
                    std::string(arguments.at("slot").as_string()));
    return true;
  };
  hub h{io_.get_executor(), setup.registry, o};
  const auto s = start(h, setup, "policy");
  EXPECT_EQ(s.status, workflow_status::awaiting_approval);
  EXPECT_EQ(asked, std::vector<std::string>{"booker:book:2026-11-27T09:00"});
  EXPECT_EQ(count_lines(counter("book")), 0);
}

TEST_F(tool_calls, without_a_store_a_paused_approval_resumes_in_the_same_hub) {
  tool_setup setup(settings(true));
  hub h{io_.get_executor(), setup.registry, testing::options(nullptr, setup.models, silent())};
  ASSERT_EQ(start(h, setup, "in-memory").status, workflow_status::awaiting_approval);
  const auto done = decide(h, setup, "in-memory", true);
  EXPECT_EQ(done.status, workflow_status::completed);
  EXPECT_EQ(result_of(done), "booked");
  EXPECT_EQ(count_lines(counter("book")), 1);
}

TEST_F(tool_calls, cancelling_a_run_that_awaits_approval_makes_no_call) {
  tool_setup setup(settings(true));
  hub h{io_.get_executor(), setup.registry, opts(setup)};
  ASSERT_EQ(start(h, setup, "cancel-me").status, workflow_status::awaiting_approval);
  const auto cancelled = await(h.cancel_stored_run("cancel-me"));
  EXPECT_EQ(cancelled.status, workflow_status::cancelled);
  EXPECT_FALSE(cancelled.approval);
  EXPECT_EQ(count_lines(counter("book")), 0);
}

// ---------------------------------------------------------------- across processes

class tool_processes : public tool_calls {
 protected:
  outcome helper(const std::string& command, const std::string& id, int kill_after, const std::string& flags,
                 const std::string& calls) {
    return helper_process({command, db_, calls, id, std::to_string(kill_after), flags}, -1,
                          SWITCHBOARD_TOOL_HELPER)
        .finish();
  }
  // Continues `id` in new processes (approving when asked) until it ends.
  workflow_state drive_to_end(const std::string& id, const std::string& flags, const std::string& calls) {
    tool_setup reader_setup(settings());
    hub reader{io_.get_executor(), reader_setup.registry, opts(reader_setup)};
    for (int round = 0; round < 6; ++round) {
      auto s = await(reader.find(id));
      if (!s) {
        ADD_FAILURE() << "run " << id << " is not stored";
        return {};
      }
      if (s->status == workflow_status::completed || s->status == workflow_status::failed) return *s;
      const std::string command = s->status == workflow_status::awaiting_approval ? "approve" : "continue";
      auto next = helper(command, id, 0, flags, calls);
      EXPECT_TRUE(exited_with(next.status, 0)) << command << ": " << next.describe();
    }
    ADD_FAILURE() << "run " << id << " did not end";
    return {};
  }
};

// Kill the process right after each store write of a run whose call needs
// approval (run, pause, claim, decision, journal records, end), continue
// it in new processes: the tool runs at most once, and when it ran, the
// model heard of it; killed between "started" and the call, the outcome is
// reported unknown and the call is not made again.
TEST_F(tool_processes, a_run_killed_after_any_store_write_never_makes_a_call_twice) {
  const auto reference = helper("run", "reference", 0, "a", counter("reference"));
  ASSERT_TRUE(exited_with(reference.status, 0)) << reference.describe();
  EXPECT_EQ(field(reference.output, "status"), "awaiting_approval");
  const auto approved = helper("approve", "reference", 0, "a", counter("reference"));
  ASSERT_TRUE(exited_with(approved.status, 0)) << approved.describe();
  EXPECT_EQ(field(approved.output, "result"), "booked");
  EXPECT_EQ(count_lines(counter("reference")), 1);
  const int run_writes = std::stoi("0" + field(reference.output, "writes"));
  const int approve_writes = std::stoi("0" + field(approved.output, "writes"));
  ASSERT_GE(run_writes, 3) << reference.output;     // create, turn record, pause
  ASSERT_GE(approve_writes, 4) << approved.output;  // claim, decision, started, result, end

  int unknown = 0;
  for (int phase = 0; phase < 2; ++phase) {
    const int writes = phase == 0 ? run_writes : approve_writes;
    for (int n = 1; n <= writes; ++n) {
      const std::string id = std::string(phase == 0 ? "run-" : "approve-") + std::to_string(n);
      SCOPED_TRACE(id);
      const std::string calls = counter(id);
      if (phase == 0) {
        EXPECT_TRUE(was_killed(helper("run", id, n, "a", calls).status));
      } else {
        ASSERT_TRUE(exited_with(helper("run", id, 0, "a", calls).status, 0));
        EXPECT_TRUE(was_killed(helper("approve", id, n, "a", calls).status));
      }
      const auto end = drive_to_end(id, "a", calls);
      EXPECT_EQ(end.status, workflow_status::completed);
      const int executions = count_lines(calls);
      EXPECT_LE(executions, 1);
      if (result_of(end) == "unknown_outcome") {
        ++unknown;
        EXPECT_EQ(executions, 0);  // killed right after "started", before the call
      } else {
        EXPECT_EQ(result_of(end), "booked");
        EXPECT_EQ(executions, 1);
      }
    }
  }
  EXPECT_EQ(unknown, 1);  // exactly one write is the "started" mark
}

TEST_F(tool_processes, a_call_in_flight_when_its_process_dies_is_reported_unknown_not_repeated) {
  const auto killed = helper("run", "in-flight", 0, "c", counter("in-flight"));
  ASSERT_TRUE(was_killed(killed.status)) << killed.describe();
  EXPECT_EQ(count_lines(counter("in-flight")), 1);
  const auto end = drive_to_end("in-flight", "c", counter("in-flight"));
  EXPECT_EQ(end.status, workflow_status::completed);
  EXPECT_EQ(result_of(end), "unknown_outcome");
  EXPECT_EQ(count_lines(counter("in-flight")), 1);
  ASSERT_FALSE(end.audit.empty());
  const auto& call = end.audit.back().tool_calls.at(0);
  EXPECT_EQ(call.at("error").at("code"), "unknown_outcome");
}

TEST_F(tool_processes, an_idempotent_call_in_flight_when_its_process_dies_is_made_again) {
  const auto killed = helper("run", "idempotent", 0, "ci", counter("idempotent"));
  ASSERT_TRUE(was_killed(killed.status)) << killed.describe();
  const auto end = drive_to_end("idempotent", "ci", counter("idempotent"));
  EXPECT_EQ(end.status, workflow_status::completed);
  EXPECT_EQ(result_of(end), "booked");
  EXPECT_EQ(count_lines(counter("idempotent")), 2);
}

}  // namespace
}  // namespace switchboard::orchestrator
