// The offline agents' honesty, measured: every request of corpus.json runs
// through the sample's real workflow file (in-process, a fresh calendar
// each, after the requests listed in "before"), and its outcome — an event
// booked, moved or cancelled, several events, a clarification question, an
// answer, a refusal — is compared with the expected one, field by field.
// Every expected outcome must come out; and the confidence the run reports
// must mean something: no wrong outcome may carry confidence >= 0.7 (the
// clarification threshold). The calibration is printed.
#include "workflow_fixture.hpp"

#include <switchboard/scheduling/household.hpp>

#include <boost/json/serialize.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <iostream>
#include <set>

namespace switchboard::scheduling::testing {
namespace {

namespace json = boost::json;
using orchestrator::workflow_state;
using orchestrator::workflow_status;

std::string lowered(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string str(const json::value* v) { return v && v->is_string() ? std::string(v->get_string()) : ""; }

std::set<std::string> name_set(const json::value* v) {
  std::set<std::string> out;
  if (v && v->is_array())
    for (const auto& item : v->get_array())
      if (item.is_string()) out.insert(std::string(item.get_string()));
  return out;
}

struct outcome {
  std::string kind;  // event, events, moved, cancelled, clarification, answer, refusal, none
  double confidence = 0;
  std::string text;                 // question, answer or error message
  std::vector<json::object> events;  // booked/moved/cancelled events (booking data "event")
};

outcome outcome_of(const workflow_state& s) {
  outcome o;
  if (s.status == workflow_status::awaiting_clarification) {
    o.kind = "clarification";
    o.text = s.clarification ? s.clarification->question : "";
    for (auto it = s.audit.rbegin(); it != s.audit.rend(); ++it)
      if (!it->agent.empty()) {
        o.confidence = it->confidence;
        break;
      }
    return o;
  }
  if (s.status == workflow_status::failed) {
    o.kind = "refusal";
    for (const auto& e : s.errors) o.text += e.message + "\n";
    for (auto it = s.audit.rbegin(); it != s.audit.rend(); ++it)
      if (!it->agent.empty()) {
        o.confidence = it->confidence;
        o.text += it->explanation;
        break;
      }
    return o;
  }
  if (s.status != workflow_status::completed || !s.result) {
    o.kind = "none";
    return o;
  }
  o.confidence = s.result->confidence;
  const json::object& data = s.result->data;
  if (data.contains("answer")) {
    o.kind = "answer";
    o.text = str(data.if_contains("answer"));
    return o;
  }
  const std::string action = str(data.if_contains("action"));
  for (const auto& b : s.history("booking"))
    if (const auto* e = b.data.if_contains("event"); e && e->is_object()) o.events.push_back(e->get_object());
  o.kind = action == "booked" ? (o.events.size() > 1 ? "events" : "event") : action;
  o.text = s.result->explanation;
  return o;
}

// The differences between a produced event and the expected one (only the
// keys the corpus gives are compared).
std::vector<std::string> event_mismatches(const json::object& want, const json::object& got) {
  std::vector<std::string> out;
  for (const auto& [key, value] : want) {
    const json::value* have = got.if_contains(key);
    bool same = false;
    if (key == "participants" || key == "resources") same = name_set(&value) == name_set(have);
    else if (key == "title") same = lowered(str(&value)) == lowered(str(have));
    else if (value.is_null()) same = !have || have->is_null();
    else same = have && *have == value;
    if (!same)
      out.push_back(std::string(key) + ": expected " + json::serialize(value) + ", got " +
                    (have ? json::serialize(*have) : "nothing"));
  }
  return out;
}

std::vector<std::string> mismatches(const json::object& expected, const outcome& got) {
  std::vector<std::string> out;
  const std::string kind = str(expected.if_contains("expect"));
  if (kind != got.kind) {
    out.push_back("expected " + kind + ", got " + got.kind + ": " + got.text);
    return out;
  }
  if (const auto* contains = expected.if_contains("contains"); contains && contains->is_array())
    for (const auto& part : contains->get_array())
      if (got.text.find(str(&part)) == std::string::npos)
        out.push_back("the " + kind + " lacks \"" + str(&part) + "\": " + got.text);
  std::vector<json::object> want;
  if (const auto* e = expected.if_contains("event"); e && e->is_object()) want.push_back(e->get_object());
  if (const auto* list = expected.if_contains("events"); list && list->is_array())
    for (const auto& e : list->get_array()) want.push_back(e.as_object());
  if (!want.empty() && want.size() != got.events.size())
    out.push_back("expected " + std::to_string(want.size()) + " event(s), got " + std::to_string(got.events.size()));
  for (std::size_t i = 0; i < want.size() && i < got.events.size(); ++i)
    for (auto& m : event_mismatches(want[i], got.events[i])) out.push_back(m);
  return out;
}

std::vector<std::string> strings(const json::value* v) {
  std::vector<std::string> out;
  if (v && v->is_array())
    for (const auto& item : v->get_array()) out.push_back(str(&item));
  return out;
}

TEST(scheduling_corpus, every_outcome_is_right_and_no_wrong_one_is_confident) {
  const auto corpus = parse_json_file(std::filesystem::path(SWITCHBOARD_SOURCE_DIR) / "tests" / "examples" /
                                      "scheduling" / "corpus.json");
  const auto& requests = corpus.at("requests").as_array();
  ASSERT_GE(requests.size(), 40u);
  int right = 0;
  int wrong = 0;
  double max_wrong = 0;
  double min_right_event = 1;
  std::set<std::string> kinds;
  for (const auto& item : requests) {
    const auto& expected = item.as_object();
    const std::string text = str(expected.if_contains("text"));
    SCOPED_TRACE(str(expected.if_contains("id")) + ": " + text);
    temp_dir state;
    sample_workflow_runner runner(state.path());
    for (const auto& before : strings(expected.if_contains("before"))) {
      const auto s = runner.run(before);
      ASSERT_EQ(s.status, workflow_status::completed) << "set-up request \"" << before << "\" did not complete";
    }
    const auto got = outcome_of(runner.run(text, strings(expected.if_contains("answers"))));
    const auto problems = mismatches(expected, got);
    kinds.insert(str(expected.if_contains("expect")));
    if (problems.empty()) {
      ++right;
      if (got.kind == "event" || got.kind == "events") min_right_event = std::min(min_right_event, got.confidence);
      continue;
    }
    ++wrong;
    max_wrong = std::max(max_wrong, got.confidence);
    std::string all;
    for (const auto& p : problems) all += "\n  " + p;
    ADD_FAILURE() << "wrong outcome at confidence " << got.confidence << ":" << all;
    EXPECT_LT(got.confidence, 0.7) << "a wrong outcome carries a confidence above the clarification threshold";
  }
  std::cout << "[ corpus ] " << requests.size() << " requests: " << right << " right, " << wrong
            << " wrong; highest confidence of a wrong outcome " << max_wrong
            << "; lowest confidence of a right event " << min_right_event << "\n";
  EXPECT_LT(max_wrong, 0.7);
  for (const auto* kind : {"event", "events", "moved", "cancelled", "clarification", "answer", "refusal"})
    EXPECT_TRUE(kinds.contains(kind)) << "the corpus has no request expecting " << kind;
}

}  // namespace
}  // namespace switchboard::scheduling::testing
