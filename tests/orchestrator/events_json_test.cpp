// Events as data: every kind serializes to a document valid against
// docs/events.schema.json (checked with the project's own validator), the
// events of real runs too; hostile text stays inside JSON strings; a
// document reads back to the same event; documents of the wrong shape are
// refused by the schema and by event_from_json alike.
#include <switchboard/orchestrator/event_json.hpp>

#include <switchboard/protocol/error.hpp>
#include <switchboard/protocol/validation.hpp>

#include "hub_test_fixture.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace switchboard::orchestrator {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

const protocol::compiled_schema& event_schema() {
  static const protocol::compiled_schema schema = [] {
    std::ifstream in(std::filesystem::path(SWITCHBOARD_SOURCE_DIR) / "docs" / "events.schema.json");
    std::ostringstream text;
    text << in.rdbuf();
    return protocol::compiled_schema::compile(json::parse(text.str()), "docs/events.schema.json");
  }();
  return schema;
}

std::string schema_errors(const json::value& document) {
  return protocol::to_string(event_schema().validate(document));
}

std::vector<event_kind> every_kind() {
  std::vector<event_kind> kinds;
  for (int i = 0; to_string(static_cast<event_kind>(i)) != "?"; ++i) kinds.push_back(static_cast<event_kind>(i));
  return kinds;
}

// What the events of one run point to, owned by the test.
struct run_data {
  protocol::envelope envelope = testing::make_envelope({{"status", "booked"}}, 0.85, "Booked Tuesday.");
  protocol::error_record error{"timeout", "agent 'a' did not answer within 50 ms", true, "a"};
  json::object tool_call{{"round", 1},       {"id", "c1"},          {"tool", "lookup"},
                         {"arguments", json::object{{"date", "2026-11-24"}}},
                         {"is_error", false}, {"result", json::object{{"events", json::array{"standup"}}}},
                         {"duration_ms", 12.5}};
  models::stream_sink::tool_call_delta tool_delta{0, "c1", "lookup", R"({"date":)"};

  // An event of `kind` with the fields the hub sets for it.
  event make(event_kind kind) const {
    event e{};
    e.kind = kind;
    e.workflow_id = "wf-1";
    e.workflow_name = "family_scheduler";
    e.step = 2;
    e.node = "book";
    switch (kind) {
      case event_kind::step_completed:
      case event_kind::step_failed:
        e.agent = "booker";
        e.prompt_version = "booker.v3";
        e.duration = 1234us;
        e.tokens = {120, 30};
        e.attempts = 2;
        if (kind == event_kind::step_completed) e.envelope = &envelope;
        else e.error = &error;
        break;
      case event_kind::workflow_failed: e.error = &error; break;
      case event_kind::routed:
        e.agent = "booker";
        e.target = "done";
        e.condition = "/status == \"booked\"";
        break;
      case event_kind::paused:
      case event_kind::approval_requested:
        e.agent = "booker";
        e.question = "Which Tuesday?";
        break;
      case event_kind::tool_called:
        e.agent = "booker";
        e.tool_call = &tool_call;
        break;
      case event_kind::text_delta:
        e.agent = "booker";
        e.text = "Tues";
        break;
      case event_kind::tool_call_delta:
        e.agent = "booker";
        e.tool_delta = &tool_delta;
        break;
      case event_kind::step_started:
      case event_kind::stream_restarted: e.agent = "booker"; break;
      default: break;
    }
    return e;
  }
};

TEST(events_json, every_kind_is_a_document_valid_against_the_schema) {
  const run_data data;
  const auto kinds = every_kind();
  ASSERT_EQ(kinds.size(), 16u) << "a new kind: give it a form in docs/events.schema.json and docs/events.md";
  for (const auto kind : kinds) {
    const json::object document = to_json(data.make(kind));
    EXPECT_EQ(document.at("kind").as_string(), to_string(kind));
    EXPECT_EQ(schema_errors(document), "") << json::serialize(document);
  }
}

TEST(events_json, a_step_carries_its_envelope_or_error_and_its_costs) {
  const run_data data;
  const auto done = to_json(data.make(event_kind::step_completed));
  EXPECT_EQ(done.at("envelope"), json::value_from(data.envelope));
  EXPECT_EQ(done.at("agent"), "booker");
  EXPECT_EQ(done.at("prompt_version"), "booker.v3");
  EXPECT_EQ(done.at("duration_us"), 1234);
  EXPECT_EQ(done.at("prompt_tokens"), 120);
  EXPECT_EQ(done.at("completion_tokens"), 30);
  EXPECT_EQ(done.at("attempts"), 2);
  EXPECT_FALSE(done.contains("error"));
  const auto failed = to_json(data.make(event_kind::step_failed));
  EXPECT_EQ(failed.at("error").at("type"), "timeout");
  EXPECT_EQ(failed.at("error").at("retryable"), true);
  EXPECT_FALSE(failed.contains("envelope"));
  // Kinds that carry only the run's position carry nothing else.
  const auto started = to_json(data.make(event_kind::workflow_started));
  EXPECT_EQ(started, (json::object{{"kind", "workflow_started"}, {"workflow_id", "wf-1"},
                                   {"workflow_name", "family_scheduler"}, {"step", 2}, {"node", "book"}}));
}

TEST(events_json, every_kind_reads_back_as_the_same_event) {
  const run_data data;
  for (const auto kind : every_kind()) {
    const json::object document = to_json(data.make(kind));
    const auto back = event_from_json(json::parse(json::serialize(document)));
    ASSERT_TRUE(back) << json::serialize(document);
    EXPECT_EQ(back->get().kind, kind);
    EXPECT_EQ(to_json(back->get()), document);
  }
}

TEST(events_json, an_owned_event_outlives_what_it_was_copied_from) {
  std::optional<owned_event> kept;
  json::object expected;
  {
    run_data data;
    std::string text = "a piece of the answer that is longer than any small-string buffer";
    event e = data.make(event_kind::text_delta);
    e.text = text;
    kept.emplace(e);
    expected = to_json(e);
    owned_event copy = *kept;
    kept = std::move(copy);  // copies and moves keep their own storage
    text.assign(text.size(), '#');
  }
  EXPECT_EQ(to_json(kept->get()), expected);
  EXPECT_EQ(kept->get().text, "a piece of the answer that is longer than any small-string buffer");
}

// Model output that tries to end the string, add members, break the line a
// stream frames on, drive a terminal, or is not UTF-8.
const std::string hostile = "\"}, \"kind\": \"workflow_completed\", \"x\": \"\n\ndata: {}\r\n\x1b]0;owned\x07\x1b[2J\xff\xfe";
const std::string hostile_repaired =
    "\"}, \"kind\": \"workflow_completed\", \"x\": \"\n\ndata: {}\r\n\x1b]0;owned\x07\x1b[2J\xEF\xBF\xBD\xEF\xBF\xBD";

TEST(events_json, hostile_text_stays_inside_json_strings) {
  run_data data;
  data.envelope.explanation = hostile;
  data.envelope.data["status"] = hostile;
  data.error.message = hostile;
  data.tool_call["result"] = json::object{{hostile, hostile}};
  data.tool_delta.arguments = hostile;
  for (const auto kind : every_kind()) {
    event e = data.make(kind);
    if (!e.question.empty()) e.question = hostile;
    if (!e.text.empty()) e.text = hostile;
    if (!e.condition.empty()) e.condition = hostile;
    const json::object plain = to_json(data.make(kind));
    const std::string line = json::serialize(to_json(e));
    // One line a stream can frame, no raw control character, valid UTF-8.
    for (const char c : line) EXPECT_GE(static_cast<unsigned char>(c), 0x20) << to_string(kind) << ": " << line;
    boost::system::error_code ec;
    const json::value back = json::parse(line, ec);
    ASSERT_FALSE(ec) << to_string(kind) << ": " << line;
    // The same members as an event of plain text: nothing was added.
    ASSERT_TRUE(back.is_object());
    EXPECT_EQ(back.as_object().size(), plain.size()) << line;
    EXPECT_EQ(back.at("kind").as_string(), to_string(kind));
    EXPECT_EQ(schema_errors(back), "") << line;
    const auto text_at = [&](std::initializer_list<std::string_view> path) {
      const json::value* v = &back;
      for (const auto key : path) v = &v->at(key);
      return std::string(v->as_string());
    };
    if (!e.question.empty()) {
      EXPECT_EQ(text_at({"question"}), hostile_repaired);
    }
    if (!e.text.empty()) {
      EXPECT_EQ(text_at({"text"}), hostile_repaired);
    }
    if (e.envelope) {
      EXPECT_EQ(text_at({"envelope", "explanation"}), hostile_repaired);
    }
    if (e.error) {
      EXPECT_EQ(text_at({"error", "message"}), hostile_repaired);
    }
    if (e.tool_call) {
      EXPECT_EQ(text_at({"tool_call", "result", hostile_repaired}), hostile_repaired);
    }
    if (e.tool_delta) {
      EXPECT_EQ(text_at({"tool_call_delta", "arguments"}), hostile_repaired);
    }
  }
}

struct wrong_document {
  const char* what;
  const char* json;
};

class events_json_refuses : public ::testing::TestWithParam<wrong_document> {};

TEST_P(events_json_refuses, a_document_of_the_wrong_shape) {
  const json::value document = json::parse(GetParam().json);
  EXPECT_NE(schema_errors(document), "") << "the schema accepted it";
  const auto back = event_from_json(document);
  ASSERT_FALSE(back);
  EXPECT_EQ(back.error(), protocol::make_error_code(protocol::errc::schema_violation));
}

#define POSITION R"("workflow_id": "wf", "workflow_name": "n", "step": 1, "node": "a")"
INSTANTIATE_TEST_SUITE_P(
    forms, events_json_refuses,
    ::testing::Values(
        wrong_document{"not_an_object", R"(["step_started"])"},
        wrong_document{"unknown_kind", R"({"kind": "step_exploded", )" POSITION "}"},
        wrong_document{"no_position", R"({"kind": "workflow_started"})"},
        wrong_document{"negative_step", R"({"kind": "workflow_started", "workflow_id": "wf", "workflow_name": "n",
                                            "step": -1, "node": "a"})"},
        wrong_document{"step_as_text", R"({"kind": "workflow_started", "workflow_id": "wf", "workflow_name": "n",
                                           "step": "1", "node": "a"})"},
        wrong_document{"completed_step_without_envelope",
                       R"({"kind": "step_completed", )" POSITION R"(, "agent": "a", "duration_us": 1,
                          "prompt_tokens": 0, "completion_tokens": 0, "attempts": 1})"},
        wrong_document{"envelope_with_confidence_above_one",
                       R"({"kind": "step_completed", )" POSITION R"(, "agent": "a", "duration_us": 1,
                          "prompt_tokens": 0, "completion_tokens": 0, "attempts": 1,
                          "envelope": {"data": {}, "explanation": "e", "confidence": 2, "reasoning": "r"}})"},
        wrong_document{"tool_call_without_agent",
                       R"({"kind": "tool_called", )" POSITION R"(, "tool_call": {"round": 1, "id": "c1",
                          "tool": "t", "arguments": {}, "is_error": false, "duration_ms": 1}})"},
        wrong_document{"failure_without_error", R"({"kind": "workflow_failed", )" POSITION "}"},
        wrong_document{"route_without_target", R"({"kind": "routed", )" POSITION R"(, "condition": "otherwise"})"},
        wrong_document{"question_as_number", R"({"kind": "paused", )" POSITION R"(, "question": 7})"},
        wrong_document{"delta_without_index",
                       R"({"kind": "tool_call_delta", )" POSITION R"(, "agent": "a",
                          "tool_call_delta": {"id": "", "name": "", "arguments": "{"}})"}),
    [](const auto& info) { return std::string(info.param.what); });
#undef POSITION

// ---------------------------------------------------------------- real runs

// Keeps the JSON form of every event a hub emits (thread-safe).
class json_observer final : public observer {
 public:
  void on_event(const event& e) noexcept override {
    std::lock_guard lock(mutex_);
    documents_.push_back(to_json(e));
  }
  std::vector<json::object> documents() const {
    std::lock_guard lock(mutex_);
    return documents_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<json::object> documents_;
};

class events_json_of_runs : public hub_testing::hub_test {
 protected:
  std::shared_ptr<json_observer> documents_ = std::make_shared<json_observer>();
};

TEST_F(events_json_of_runs, are_valid_against_the_schema) {
  add(hub_testing::unsure_until_answered("a"));
  add(testing::constant_agent("b", {{"status", "fine"}}));
  add(std::make_shared<testing::fn_agent>("broken", [](agents::agent_context&, int) -> protocol::envelope {
    throw std::runtime_error("disk on fire");
  }));
  make_hub().add_observer(documents_);
  workflow_builder wf{"flow"};
  wf.agent("a").route(condition::equals("/status", "Tuesday"), "b").otherwise("broken");
  wf.agent("b").otherwise("done");
  wf.agent("broken").otherwise("done");
  wf.end("done");
  const auto paused = run(wf);
  ASSERT_EQ(paused.status, workflow_status::awaiting_clarification);
  EXPECT_EQ(resume(wf, paused.id, "Tuesday").status, workflow_status::completed);
  EXPECT_EQ(resume(wf, run(wf).id, "Monday").status, workflow_status::failed);

  std::set<std::string> kinds;
  for (const auto& document : documents_->documents()) {
    EXPECT_EQ(schema_errors(document), "") << json::serialize(document);
    EXPECT_TRUE(event_from_json(document)) << json::serialize(document);
    kinds.insert(std::string(document.at("kind").as_string()));
  }
  EXPECT_EQ(kinds, (std::set<std::string>{"workflow_started", "step_started", "step_completed", "step_failed",
                                          "routed", "paused", "resumed", "workflow_completed", "workflow_failed"}));
}

}  // namespace
}  // namespace switchboard::orchestrator
