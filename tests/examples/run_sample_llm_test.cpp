// End-to-end: the scheduling sample through `switchboard run` with the
// LLM-backed nl_parser, resolution and query (built from prompts/), talking
// real HTTP to a loopback model server with scripted answers: create,
// cancel, move, query and compound requests, booked into the calendar the
// offline runs use too.
#include "cli_support.hpp"

#if __has_include(<switchboard/testing/loopback_model_server.hpp>)
#include <switchboard/testing/loopback_model_server.hpp>

#include <boost/json/serialize.hpp>
#include <gtest/gtest.h>

namespace switchboard::testing {
namespace {

namespace json = boost::json;

std::string envelope(json::object data, std::string explanation) {
  return json::serialize(json::object{{"data", std::move(data)},
                                      {"explanation", std::move(explanation)},
                                      {"confidence", 0.9},
                                      {"reasoning", "scripted answer"}});
}

json::object dentist_request() {
  return {{"intent", "create"}, {"title", "Dentist appointment"}, {"date", "2026-03-03"},
          {"date_range", nullptr}, {"start_time", "16:00"}, {"end_time", "17:00"},
          {"time_window", nullptr}, {"duration_minutes", 60}, {"participants", json::array{"Leo"}},
          {"resources", json::array{"minivan"}}, {"priority", "normal"}, {"flexibility", "fixed"}};
}

json::object sedan_plan() {
  return {{"strategies", json::array{json::object{{"strategy", "change_resource"},
                                                  {"description", "take the sedan instead of the minivan"},
                                                  {"score", 0.9},
                                                  {"start", "2026-03-03T16:00"},
                                                  {"end", "2026-03-03T17:00"},
                                                  {"resources", json::array{"sedan"}}}}},
          {"recommended", 0},
          {"plan", json::object{{"title", "Dentist appointment"},
                                {"start", "2026-03-03T16:00"},
                                {"end", "2026-03-03T17:00"},
                                {"participants", json::array{"Leo"}},
                                {"resources", json::array{"sedan"}}}}};
}

class run_sample_llm : public ::testing::Test {
 protected:
  cli_result offline(const std::string& request) {
    return run_switchboard({"run", sample_workflow.string(), "--input", request}, scratch_);
  }
  cli_result run(const std::string& request) {
    return run_switchboard({"run", sample_workflow.string(), "--input", request, "--model", "gpt-test"}, scratch_,
                           {"OPENAI_BASE_URL=" + server_.base_url(), "OPENAI_API_KEY=test-key",
                            // JSON-object mode: the schema travels in the prompt and
                            // every answer goes through parse, validate, re-ask.
                            "SWITCHBOARD_OUTPUT_MODE=json_object"});
  }
  loopback_model_server server_;
  temp_dir scratch_;
};

TEST_F(run_sample_llm, conflict_resolved_by_the_model_after_a_re_ask) {
  server_.enqueue(server_action::reply(envelope(dentist_request(), "A dentist appointment for Leo.")));
  // The first resolution answer lacks "plan": the validator's errors go back
  // to the model, whose second answer is valid.
  json::object incomplete = sedan_plan();
  incomplete.erase("plan");
  server_.enqueue(server_action::reply(envelope(incomplete, "Take the sedan.")));
  server_.enqueue(server_action::reply(envelope(sedan_plan(), "Take the sedan instead of the minivan.")));

  const auto r = run("Dentist appointment for Leo on Tuesday 4-5pm, he needs the minivan");
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_NE(r.out.find("LLM-backed: nl_parser, resolution, query"), std::string::npos) << describe(r);
  EXPECT_EQ(r.out.find("offline:"), std::string::npos) << describe(r);
  EXPECT_NE(r.out.find("-> resolve"), std::string::npos) << describe(r);
  EXPECT_NE(r.out.find("Plan (after resolution): \"Dentist appointment\", Tue 2026-03-03 16:00\u201317:00, with Leo, "
                       "using the sedan, driven by Ana"),
            std::string::npos)
      << describe(r);

  const auto requests = server_.requests();
  ASSERT_EQ(requests.size(), 3u);
  // The parser's prompt carries the request; the household's members are
  // not pasted in: the model may read them with the calendar tools offered.
  const std::string first = requests[0].body;
  EXPECT_NE(first.find("Dentist appointment for Leo on Tuesday 4-5pm"), std::string::npos);
  EXPECT_EQ(first.find(R"("calendar":)"), std::string::npos);
  EXPECT_EQ(first.find(R"("bookings":)"), std::string::npos);
  std::vector<std::string> offered;
  const json::value parser_request = requests[0].json();
  for (const auto& t : parser_request.at("tools").as_array())
    offered.emplace_back(t.at("function").at("name").as_string());
  EXPECT_EQ(offered, (std::vector<std::string>{"calendar.household", "calendar.events"}));
  EXPECT_EQ(requests[0].header("authorization"), "Bearer test-key");
  // The re-ask names what was missing.
  EXPECT_NE(requests[2].body.find("plan"), std::string::npos);
  EXPECT_GT(requests[2].json().at("messages").as_array().size(), requests[1].json().at("messages").as_array().size());
}

TEST_F(run_sample_llm, clear_request_never_reaches_resolution) {
  json::object soccer = dentist_request();
  soccer["title"] = "Soccer practice";
  soccer["date"] = "2026-03-07";
  soccer["start_time"] = "14:00";
  soccer["end_time"] = "16:00";
  soccer["duration_minutes"] = 120;
  soccer["participants"] = json::array{"Maya"};
  server_.enqueue(server_action::reply(envelope(soccer, "Soccer practice for Maya.")));
  const auto r = run("Soccer practice for Maya on Saturday 2-4pm, she needs the minivan");
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_NE(r.out.find("Confirmed: \"Soccer practice\", Sat 2026-03-07 14:00\u201316:00, with Maya"), std::string::npos)
      << describe(r);
  EXPECT_EQ(server_.request_count(), 1u);
}

// The LLM-backed agents check the input's reference time as the rule-based
// ones do, before a model reads it.
TEST_F(run_sample_llm, a_now_that_is_not_a_date_and_time_fails_before_the_model_is_asked) {
  const auto r = run_switchboard({"run", sample_workflow.string(), "--input", "Soccer practice for Maya on Saturday 2-4pm",
                                  "--input-field", "now=next monday", "--model", "gpt-test"},
                                 scratch_, {"OPENAI_BASE_URL=" + server_.base_url(), "OPENAI_API_KEY=test-key"});
  EXPECT_EQ(r.exit_code, 1) << describe(r);
  EXPECT_NE(r.err.find("\"now\" must be a date and time \"YYYY-MM-DDTHH:MM\", got \"next monday\""),
            std::string::npos)
      << describe(r);
  EXPECT_EQ(server_.request_count(), 0u);
}

TEST_F(run_sample_llm, a_model_that_never_answers_validly_fails_the_run_clearly) {
  server_.set_default(server_action::reply("this is not JSON at all"));
  const auto r = run("Soccer practice for Maya on Saturday 2-4pm");
  EXPECT_EQ(r.exit_code, 1) << describe(r);
  EXPECT_NE(r.err.find("nl_parser"), std::string::npos) << describe(r);
  EXPECT_EQ(server_.request_count(), 3u);  // the prompt's max_attempts
}

TEST_F(run_sample_llm, an_answer_cut_off_at_the_token_limit_never_books_with_a_person_missing) {
  json::object dinner = dentist_request();
  dinner["title"] = "Family dinner";
  dinner["participants"] = json::array{"Maya", "Leo"};
  dinner["resources"] = json::array{};
  const std::string whole = envelope(dinner, "Family dinner for Maya and Leo.");
  // Cut inside the participants, right after "Maya": a repair that closed
  // the list would book the dinner without Leo.
  server_action cut = server_action::reply(whole.substr(0, whole.find("\"Leo\"")));
  cut.finish_reason = "length";
  server_.enqueue(cut);
  server_.enqueue(server_action::reply(whole));

  const auto r = run("Family dinner for Maya and Leo on Tuesday 4-5pm");
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_NE(r.out.find("Leo"), std::string::npos) << describe(r);
  const auto requests = server_.requests();
  ASSERT_EQ(requests.size(), 2u) << describe(r);
  // Asked again with room to finish, not with the cut answer shown back.
  EXPECT_EQ(requests[1].json().at("max_tokens").as_int64(), 2 * requests[0].json().at("max_tokens").as_int64());
  EXPECT_EQ(requests[1].json().at("messages").as_array().size(), requests[0].json().at("messages").as_array().size());
}

TEST_F(run_sample_llm, a_refusal_fails_the_run_at_once_with_the_models_words) {
  server_.enqueue(server_action::raw_body(
      200, R"({"choices":[{"message":{"role":"assistant","content":null,"refusal":"I can't help with that request."},)"
           R"("finish_reason":"stop"}],"model":"gpt-test"})"));
  const auto r = run("Soccer practice for Maya on Saturday 2-4pm");
  EXPECT_EQ(r.exit_code, 1) << describe(r);
  EXPECT_NE((r.out + r.err).find("I can't help with that request."), std::string::npos) << describe(r);
  EXPECT_EQ(server_.request_count(), 1u) << "a refusal is not re-asked";
}

json::object parsed(std::string intent, std::string title, json::value date, json::value start,
                    json::array participants) {
  return {{"intent", std::move(intent)}, {"title", std::move(title)}, {"date", std::move(date)},
          {"date_range", nullptr}, {"start_time", std::move(start)}, {"end_time", nullptr},
          {"time_window", nullptr}, {"duration_minutes", nullptr}, {"participants", std::move(participants)},
          {"resources", json::array{}}, {"priority", "normal"}, {"flexibility", "fixed"}};
}

TEST_F(run_sample_llm, cancel_removes_the_event_the_model_names) {
  server_.enqueue(server_action::reply(
      envelope(parsed("cancel", "Swim meet", nullptr, nullptr, {"Maya"}), "Cancel Maya's swim meet.")));
  const auto r = run("Please drop Maya's swim meet this weekend");
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_NE(r.out.find("Cancelled: \"Swim meet\", Sat 2026-03-07 10:00\u201311:30, with Maya"), std::string::npos)
      << describe(r);
  EXPECT_EQ(server_.request_count(), 1u);
  // The prompt told the model what cancel means and which fields to fill.
  EXPECT_NE(server_.requests()[0].body.find("cancel (remove an existing event)"), std::string::npos);
  // The next (offline) run sees Saturday morning free.
  const auto after = offline("What does Maya have on Saturday?");
  EXPECT_NE(after.out.find("Maya has nothing on the calendar on Saturday 2026-03-07"), std::string::npos)
      << describe(after);
}

TEST_F(run_sample_llm, move_keeps_the_events_duration) {
  server_.enqueue(server_action::reply(
      envelope(parsed("modify", "Swim meet", "2026-03-08", "15:00", {"Maya"}), "Move the swim meet to Sunday 3pm.")));
  const auto r = run("Could the swim meet happen on Sunday at three instead?");
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_NE(r.out.find("Moved: \"Swim meet\" from Sat 2026-03-07 10:00\u201311:30 to Sun 2026-03-08 15:00\u201316:30, "
                       "with Maya"),
            std::string::npos)
      << describe(r);
  EXPECT_NE(server_.requests()[0].body.find("modify (move an existing event"), std::string::npos);
}

TEST_F(run_sample_llm, compound_request_books_every_event_and_the_query_prompt_sees_them) {
  json::object first = parsed("create", "Soccer", "2026-03-07", "14:00", {"Maya"});
  first["end_time"] = "16:00";
  first["duration_minutes"] = 120;
  first["resources"] = json::array{"minivan"};
  json::object second = parsed("create", "Piano", "2026-03-09", "17:00", {"Leo"});
  second["end_time"] = "18:00";
  second["duration_minutes"] = 60;
  json::object both = first;
  json::array events;
  for (auto* e : {&first, &second}) {
    json::object item = *e;
    for (const auto* key : {"intent", "priority", "flexibility"}) item.erase(key);
    events.push_back(std::move(item));
  }
  both["events"] = std::move(events);
  server_.enqueue(server_action::reply(envelope(both, "Two events.")));
  const auto r = run("soccer for Maya Saturday 2-4pm, and piano for Leo next Monday at 5pm");
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_NE(r.out.find("Confirmed: \"Soccer\", Sat 2026-03-07 14:00\u201316:00, with Maya, using the minivan, "
                       "driven by Ana"),
            std::string::npos)
      << describe(r);
  EXPECT_NE(r.out.find("Confirmed: \"Piano\", Mon 2026-03-09 17:00\u201318:00, with Leo"), std::string::npos)
      << describe(r);
  EXPECT_EQ(server_.request_count(), 1u);

  // A question, answered by the model from the calendar as it is now.
  json::object question = parsed("query", "Availability question", "2026-03-07", nullptr, {});
  question["query_kind"] = "resource";
  question["resources"] = json::array{"minivan"};
  server_.enqueue(server_action::reply(envelope(question, "A question about the minivan.")));
  // The query agent reads the minivan's Saturday through calendar.events
  // (by an alias), then answers.
  server_.enqueue(server_action::tool_calls(
      {{"call_1", "calendar.events", R"({"from":"2026-03-07","who":["van"]})"}}));
  server_.enqueue(server_action::reply(envelope(
      {{"question", "Is the minivan free on Saturday?"}, {"kind", "resource"}, {"date", "2026-03-07"},
       {"participants", json::array{}}, {"resource", "minivan"},
       {"bookings", json::array{json::object{{"title", "Soccer"}, {"by", "Maya"}, {"start", "2026-03-07T14:00"},
                                             {"end", "2026-03-07T16:00"}}}},
       {"free_slots", json::array{}}, {"answer", "No: the minivan is taken for Soccer from 14:00 to 16:00."}},
      "model's own words")));
  const auto q = run("Is the minivan free on Saturday?");
  ASSERT_EQ(q.exit_code, 0) << describe(q);
  EXPECT_NE(q.out.find("Answer: No: the minivan is taken for Soccer from 14:00 to 16:00."), std::string::npos)
      << describe(q);
  EXPECT_NE(q.out.find("query called calendar.events"), std::string::npos) << describe(q);
  const auto requests = server_.requests();
  ASSERT_EQ(requests.size(), 4u);
  // The query's prompt has no calendar pasted in; the tool's result, sent
  // back to the model, carries the booking made by the first run.
  EXPECT_EQ(requests[2].body.find("2026-03-07T14:00"), std::string::npos);
  const json::value answer_request = requests[3].json();
  const auto& messages = answer_request.at("messages").as_array();
  const auto& result = messages.back().as_object();
  EXPECT_EQ(result.at("role").as_string(), "tool");
  const std::string content(result.at("content").as_string());
  EXPECT_NE(content.find(R"("who":"minivan")"), std::string::npos) << content;
  EXPECT_NE(content.find(R"("title":"Soccer")"), std::string::npos) << content;
  EXPECT_NE(content.find(R"("start":"2026-03-07T14:00")"), std::string::npos) << content;
}

TEST_F(run_sample_llm, the_shipped_sample_asks_before_booking_and_never_asks_the_model_again) {
  json::object soccer = parsed("create", "Soccer practice", "2026-03-07", "14:00", {"Maya"});
  soccer["end_time"] = "16:00";
  soccer["duration_minutes"] = 120;
  // The parser looks the household up first, then answers.
  server_.enqueue(server_action::tool_calls({{"call_1", "calendar.household", "{}"}}));
  server_.enqueue(server_action::reply(envelope(soccer, "Soccer practice for Maya.")));
  const std::vector<std::string> env{"OPENAI_BASE_URL=" + server_.base_url(), "OPENAI_API_KEY=test-key",
                                     "SWITCHBOARD_OUTPUT_MODE=json_object"};
  const auto paused = run_switchboard({"run", shipped_sample_workflow.string(), "--input",
                                       "Soccer practice for Maya on Saturday 2-4pm", "--model", "gpt-test"},
                                      scratch_, env);
  ASSERT_EQ(paused.exit_code, 4) << describe(paused);
  EXPECT_NE(paused.out.find("nl_parser called calendar.household {}: ok"), std::string::npos) << describe(paused);
  EXPECT_NE(paused.out.find("booking wants to call calendar.book"), std::string::npos) << describe(paused);
  // What the tool answered the model: the members, no calendars.
  const json::value answer_request = server_.requests().at(1).json();
  const std::string household(answer_request.at("messages").as_array().back().at("content").as_string());
  EXPECT_NE(household.find(R"("name":"Maya")"), std::string::npos) << household;
  EXPECT_EQ(household.find(R"("calendar":)"), std::string::npos) << household;

  const auto id_at = paused.out.find("workflow id: ");
  ASSERT_NE(id_at, std::string::npos) << describe(paused);
  const std::string id = paused.out.substr(id_at + 13, paused.out.find('\n', id_at) - id_at - 13);
  const auto approved = run_switchboard(
      {"resume", id, "--workflow", shipped_sample_workflow.string(), "--model", "gpt-test", "--approve"}, scratch_, env);
  ASSERT_EQ(approved.exit_code, 0) << describe(approved);
  EXPECT_NE(approved.out.find("Confirmed: \"Soccer practice\", Sat 2026-03-07 14:00\u201316:00, with Maya"),
            std::string::npos)
      << describe(approved);
  EXPECT_EQ(server_.request_count(), 2u) << "approving runs the booking only: the parse is not asked again";
}

TEST_F(run_sample_llm, a_model_unsure_about_a_person_pauses_the_run) {
  json::object unsure = parsed("create", "Dinner", "2026-03-06", "19:00", {});
  unsure["unresolved"] = json::array{"person \"Bob\""};
  unsure["clarification_question"] = "Who is Bob?";
  // The model claims 0.9; the prompt's confidence rules know better.
  server_.enqueue(server_action::reply(envelope(unsure, "Dinner with Bob.")));
  const auto r = run("Dinner with Bob on Friday at 7pm");
  EXPECT_EQ(r.exit_code, 3) << describe(r);
  EXPECT_NE(r.out.find("Who is Bob?"), std::string::npos) << describe(r);
}

}  // namespace
}  // namespace switchboard::testing
#endif
