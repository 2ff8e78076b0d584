// wire.hpp: a run's state in the LangGraph shapes. A clarification and an
// approval pause as interrupts (ids stable for the same state, so a client
// resuming by interrupt id finds it again after a restart), the thread
// state's next/tasks/interrupts, and the history newest first.
#include "wire.hpp"

#include "ids.hpp"

#include <boost/json/serialize.hpp>
#include <gtest/gtest.h>

namespace switchboard::server {
namespace {

namespace json = boost::json;
namespace orch = switchboard::orchestrator;

protocol::envelope envelope_of(json::object data, std::string explanation) {
  protocol::envelope e;
  e.data = std::move(data);
  e.explanation = std::move(explanation);
  e.confidence = 0.9;
  e.reasoning = "because";
  return e;
}

orch::audit_entry audit(std::int64_t step, std::string node, std::string agent) {
  orch::audit_entry a;
  a.step = step;
  a.node = std::move(node);
  a.agent = std::move(agent);
  return a;
}

// A run of three steps (parse, schedule, parse again) that now waits at
// `parse` for an answer to its question.
orch::workflow_state clarification_pause(std::string id = "run-1") {
  orch::workflow_state s;
  s.id = std::move(id);
  s.workflow_name = "family_scheduling";
  s.input = json::object{{"request", "Piano lesson for Leo sometime next week"}};
  s.status = orch::workflow_status::awaiting_clarification;
  s.step = 3;
  s.next_node = "parse";
  s.add_output("nl_parser", envelope_of({{"title", "Piano lesson"}}, "first parse"));
  s.audit.push_back(audit(1, "parse", "nl_parser"));
  s.add_output("scheduling", envelope_of({{"slots", 2}}, "scheduled"));
  s.audit.push_back(audit(2, "schedule", "scheduling"));
  s.add_output("nl_parser", envelope_of({{"title", "Piano lesson"}, {"when", "?"}}, "second parse"));
  s.audit.push_back(audit(3, "parse", "nl_parser"));
  s.clarification = orch::clarification_request{.question = "When next week?", .node = "parse",
                                                .agent = "nl_parser", .round = 1};
  return s;
}

// A run of two steps that waits at `auto_confirm` for the user's approval
// of a booking.
orch::workflow_state approval_pause(std::string id = "run-2") {
  orch::workflow_state s;
  s.id = std::move(id);
  s.workflow_name = "family_scheduling";
  s.input = json::object{{"request", "Soccer practice for Maya on Saturday 2-4pm"}};
  s.status = orch::workflow_status::awaiting_approval;
  s.step = 2;
  s.next_node = "auto_confirm";
  s.add_output("nl_parser", envelope_of({{"title", "Soccer practice"}}, "parsed"));
  s.audit.push_back(audit(1, "parse", "nl_parser"));
  s.add_output("scheduling", envelope_of({{"slots", 1}}, "scheduled"));
  s.audit.push_back(audit(2, "schedule", "scheduling"));
  agents::pending_tool_call call{.agent = "booking", .round = 1, .id = "call_1", .tool = "calendar.book",
                                 .arguments = json::object{{"title", "Soccer practice"}},
                                 .description = "Books an event"};
  s.approval = orch::approval_request{.node = "auto_confirm", .calls = {call}};
  return s;
}

thread_record thread_of(const orch::workflow_state& s) {
  thread_record t;
  t.thread_id = "70000000-0000-4000-8000-000000000001";
  t.created_at = t.updated_at = "2026-03-01T10:00:00.000Z";
  t.graph_id = s.workflow_name;
  t.workflow_run = s.id;
  return t;
}

TEST(wire, a_clarification_pause_is_one_interrupt_asking_the_question) {
  const auto s = clarification_pause();
  const auto interrupts = interrupts_of(s);
  ASSERT_EQ(interrupts.size(), 1u);
  const auto& i = interrupts[0].as_object();
  EXPECT_TRUE(is_uuid(i.at("id").as_string()));
  const auto& value = i.at("value").as_object();
  EXPECT_EQ(value.at("type"), "clarification");
  EXPECT_EQ(value.at("question"), "When next week?");
  EXPECT_EQ(value.at("node"), "parse");
  EXPECT_EQ(value.at("agent"), "nl_parser");

  const auto values = values_of(s);
  EXPECT_EQ(values.at("status"), "awaiting_clarification");
  EXPECT_EQ(values.at("step"), 3);
  EXPECT_EQ(values.at("input"), s.input);
  EXPECT_EQ(values.at("__interrupt__"), json::value(interrupts));
  // Each agent's latest envelope.
  EXPECT_EQ(values.at("outputs").at("nl_parser").at("explanation"), "second parse");
  EXPECT_EQ(values.at("outputs").at("scheduling").at("explanation"), "scheduled");
  EXPECT_TRUE(values.at("result").is_null());
}

TEST(wire, an_approval_pause_is_one_interrupt_listing_the_calls) {
  const auto s = approval_pause();
  const auto interrupts = interrupts_of(s);
  ASSERT_EQ(interrupts.size(), 1u);
  const auto& value = interrupts[0].at("value").as_object();
  EXPECT_EQ(value.at("type"), "approval");
  EXPECT_EQ(value.at("node"), "auto_confirm");
  ASSERT_EQ(value.at("calls").as_array().size(), 1u);
  const auto& call = value.at("calls").at(0).as_object();
  EXPECT_EQ(call.at("id"), "call_1");
  EXPECT_EQ(call.at("tool"), "calendar.book");
  EXPECT_EQ(call.at("description"), "Books an event");
  EXPECT_EQ(call.at("agent"), "booking");
  EXPECT_EQ(call.at("arguments"), (json::object{{"title", "Soccer practice"}}));
  EXPECT_EQ(values_of(s).at("__interrupt__"), json::value(interrupts));
}

TEST(wire, interrupt_and_task_ids_are_stable_for_the_same_state_and_differ_otherwise) {
  const auto a = clarification_pause();
  EXPECT_EQ(interrupts_of(a), interrupts_of(clarification_pause()));
  EXPECT_EQ(task_id_of(a), task_id_of(clarification_pause()));
  EXPECT_TRUE(is_uuid(task_id_of(a)));
  EXPECT_EQ(interrupts_of(approval_pause()), interrupts_of(approval_pause()));

  // Another run, or the same run a step later, has other ids.
  const auto other_run = clarification_pause("run-9");
  EXPECT_NE(interrupts_of(a)[0].at("id"), interrupts_of(other_run)[0].at("id"));
  auto later = clarification_pause();
  later.step = 5;
  EXPECT_NE(interrupts_of(a)[0].at("id"), interrupts_of(later)[0].at("id"));
  EXPECT_NE(task_id_of(a), task_id_of(later));
  // The interrupt and the task are not the same id.
  EXPECT_NE(json::value(task_id_of(a)), interrupts_of(a)[0].at("id"));
}

TEST(wire, a_run_that_is_not_paused_has_no_interrupts) {
  auto s = clarification_pause();
  s.status = orch::workflow_status::completed;
  s.clarification.reset();
  s.next_node.clear();
  s.result = envelope_of({{"booked", true}}, "done");
  EXPECT_TRUE(interrupts_of(s).empty());
  const auto values = values_of(s);
  EXPECT_FALSE(values.contains("__interrupt__"));
  EXPECT_EQ(values.at("status"), "completed");
  EXPECT_EQ(values.at("result").at("explanation"), "done");

  s.status = orch::workflow_status::running;
  EXPECT_TRUE(interrupts_of(s).empty());
  // Paused by its status, but the request is missing: still no interrupt
  // of another kind.
  s.status = orch::workflow_status::awaiting_approval;
  EXPECT_TRUE(interrupts_of(s).empty());
}

TEST(wire, the_state_of_a_paused_thread_names_the_next_node_its_task_and_interrupts) {
  for (const auto& s : {clarification_pause(), approval_pause()}) {
    SCOPED_TRACE(s.id);
    const auto state = thread_state(thread_of(s), s);
    ASSERT_EQ(state.at("next").as_array().size(), 1u);
    EXPECT_EQ(state.at("next").at(0), json::value(s.next_node));
    ASSERT_EQ(state.at("tasks").as_array().size(), 1u);
    const auto& task = state.at("tasks").at(0).as_object();
    EXPECT_EQ(task.at("id"), json::value(task_id_of(s)));
    EXPECT_EQ(task.at("name"), json::value(s.next_node));
    EXPECT_EQ(task.at("path"), (json::array{"__pregel_pull", json::string(s.next_node)}));
    EXPECT_EQ(task.at("interrupts"), json::value(interrupts_of(s)));
    EXPECT_EQ(state.at("interrupts"), json::value(interrupts_of(s)));
    // The values as the client reads them: no __interrupt__ (that is the
    // stream's and the join's).
    EXPECT_FALSE(state.at("values").as_object().contains("__interrupt__"));
    EXPECT_EQ(state.at("values").at("step"), s.step);
    EXPECT_EQ(state.at("metadata").at("step"), s.step);
    EXPECT_EQ(state.at("metadata").at("graph_id"), "family_scheduling");
    const auto& checkpoint = state.at("checkpoint").as_object();
    EXPECT_EQ(checkpoint.at("thread_id"), "70000000-0000-4000-8000-000000000001");
    EXPECT_TRUE(is_uuid(checkpoint.at("checkpoint_id").as_string()));
    ASSERT_TRUE(state.at("parent_checkpoint").is_object());
    EXPECT_NE(state.at("parent_checkpoint").at("checkpoint_id"), checkpoint.at("checkpoint_id"));
  }
}

TEST(wire, the_state_of_a_finished_thread_has_nothing_next) {
  auto s = approval_pause();
  s.status = orch::workflow_status::completed;
  s.approval.reset();
  s.next_node.clear();
  const auto state = thread_state(thread_of(s), s);
  EXPECT_TRUE(state.at("next").as_array().empty());
  EXPECT_TRUE(state.at("tasks").as_array().empty());
  EXPECT_TRUE(state.at("interrupts").as_array().empty());

  // A failed run that still names a next node continues nowhere.
  s.status = orch::workflow_status::failed;
  s.next_node = "auto_confirm";
  EXPECT_TRUE(thread_state(thread_of(s), s).at("next").as_array().empty());
}

TEST(wire, the_state_of_a_thread_without_a_run_is_empty) {
  thread_record t;
  t.thread_id = "70000000-0000-4000-8000-000000000002";
  const auto state = thread_state(t, std::nullopt);
  EXPECT_EQ(state.at("values"), json::object{});
  EXPECT_TRUE(state.at("next").as_array().empty());
  EXPECT_TRUE(state.at("tasks").as_array().empty());
  EXPECT_TRUE(state.at("checkpoint").is_null());  // useStream: no history
  EXPECT_TRUE(state.at("interrupts").as_array().empty());
}

TEST(wire, history_is_newest_first_one_state_per_step) {
  const auto s = clarification_pause();
  const auto history = thread_history(thread_of(s), s, 10);
  ASSERT_EQ(history.size(), 4u);  // after steps 3, 2, 1 and before the first
  std::vector<json::value> checkpoints;
  for (std::size_t i = 0; i < history.size(); ++i) {
    const auto& h = history[i].as_object();
    EXPECT_EQ(h.at("metadata").at("step"), static_cast<std::int64_t>(3 - i)) << i;
    EXPECT_EQ(h.at("values").at("step"), static_cast<std::int64_t>(3 - i)) << i;
    checkpoints.push_back(h.at("checkpoint").at("checkpoint_id"));
  }
  // The newest is the thread's state, interrupts and all.
  EXPECT_EQ(json::value(history[0]), json::value(thread_state(thread_of(s), s)));
  // Each entry's parent is the entry after it; the oldest has none.
  for (std::size_t i = 0; i + 1 < history.size(); ++i)
    EXPECT_EQ(history[i].at("parent_checkpoint").at("checkpoint_id"), checkpoints[i + 1]) << i;
  EXPECT_TRUE(history.back().at("parent_checkpoint").is_null());
  // The oldest is before the first node, as LangGraph's is.
  EXPECT_EQ(history.back().at("next"), (json::array{"__start__"}));
  // Distinct checkpoints.
  for (std::size_t i = 0; i < checkpoints.size(); ++i)
    for (std::size_t j = i + 1; j < checkpoints.size(); ++j) EXPECT_NE(checkpoints[i], checkpoints[j]);

  // The values each step left: after step 1 the first parse only, after
  // step 2 the schedule too, before step 1 nothing.
  const auto& after_1 = history[2].at("values").at("outputs").as_object();
  EXPECT_EQ(after_1.size(), 1u);
  EXPECT_EQ(after_1.at("nl_parser").at("explanation"), "first parse");
  const auto& after_2 = history[1].at("values").at("outputs").as_object();
  EXPECT_EQ(after_2.size(), 2u);
  EXPECT_EQ(after_2.at("nl_parser").at("explanation"), "first parse");
  EXPECT_TRUE(history[3].at("values").at("outputs").as_object().empty());
  // What ran next from each: step 1 went to schedule, step 2 to parse.
  EXPECT_EQ(history[2].at("next"), (json::array{"schedule"}));
  EXPECT_EQ(history[1].at("next"), (json::array{"parse"}));
  EXPECT_EQ(history[3].at("metadata").at("source"), "input");
}

TEST(wire, history_stops_at_the_limit) {
  const auto s = clarification_pause();
  const auto history = thread_history(thread_of(s), s, 2);
  ASSERT_EQ(history.size(), 2u);
  EXPECT_EQ(history[0].at("metadata").at("step"), 3);
  EXPECT_EQ(history[1].at("metadata").at("step"), 2);
}

TEST(wire, records_as_the_client_reads_them) {
  assistant_record a;
  a.assistant_id = system_assistant_id("g");
  a.graph_id = a.name = "g";
  a.system = true;
  const auto wa = to_wire(a);
  EXPECT_EQ(wa.at("metadata").at("created_by"), "system");
  EXPECT_EQ(wa.at("version"), 1);
  for (const auto* key : {"assistant_id", "graph_id", "config", "context", "created_at", "updated_at", "metadata",
                          "version", "name", "description"})
    EXPECT_TRUE(wa.contains(key)) << key;

  thread_record t = thread_of(approval_pause());
  const auto wt = to_wire(t);
  for (const auto* key : {"thread_id", "created_at", "updated_at", "state_updated_at", "metadata", "status",
                          "config", "values", "interrupts"})
    EXPECT_TRUE(wt.contains(key)) << key;
  // The hub's run id is the server's own business.
  EXPECT_FALSE(wt.contains("workflow_run"));

  run_record r;
  r.run_id = time_ordered_uuid();
  const auto wr = to_wire(r);
  for (const auto* key : {"run_id", "thread_id", "assistant_id", "created_at", "updated_at", "status", "metadata",
                          "kwargs", "multitask_strategy"})
    EXPECT_TRUE(wr.contains(key)) << key;
  EXPECT_EQ(wr.at("status"), "pending");
}

}  // namespace
}  // namespace switchboard::server
