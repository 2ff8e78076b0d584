// Server-sent events: a run streamed as it goes (metadata first, ids
// increasing, the stream ends with the run), and joined again from the
// store's event feed: after Last-Event-ID N only the events after N, with
// -1 the same events as the original stream.
#include "server_fixture.hpp"

#include "ids.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace switchboard::server::testing {
namespace {

using ::testing::HasSubstr;

const json::array all_modes{"values", "updates", "custom", "debug"};

class stream_test : public server_test {
 protected:
  // POST /threads/{id}/runs/stream of `request_text`.
  reply stream_run(const std::string& thread, const std::string& request_text,
                   const json::value& modes = all_modes) {
    return post(port(), "/threads/" + thread + "/runs/stream",
                json::object{{"assistant_id", "family_scheduling"},
                             {"input", json::object{{"request", request_text}}},
                             {"stream_mode", modes}});
  }
  // GET .../runs/{run}/stream with `last_event_id` ("" for none).
  reply join_stream(const std::string& thread, const std::string& run, const std::string& last_event_id,
                    const std::string& query = "") {
    header_list h;
    if (!last_event_id.empty()) h.emplace_back("last-event-id", last_event_id);
    return get(port(), "/threads/" + thread + "/runs/" + run + "/stream" + query, h);
  }
  static std::vector<sse_event> events_of(const reply& r) {
    EXPECT_EQ(r.status, 200) << r.describe();
    EXPECT_THAT(r.header("content-type"), HasSubstr("text/event-stream"));
    return parse_sse(r.body);
  }
};

bool same_events(const std::vector<sse_event>& a, const std::vector<sse_event>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].event != b[i].event || a[i].data != b[i].data || a[i].id != b[i].id) return false;
  return true;
}

std::string names(const std::vector<sse_event>& events) {
  std::string out;
  for (const auto& e : events) out += e.event + "#" + e.id + " ";
  return out;
}

TEST_F(stream_test, a_streamed_run_starts_with_metadata_has_increasing_ids_and_ends) {
  const auto thread = create_thread();
  const auto r = stream_run(thread, soccer);
  const auto events = events_of(r);
  ASSERT_GE(events.size(), 3u) << r.body;

  EXPECT_EQ(events.front().event, "metadata");
  const auto metadata = events.front().json();
  const std::string run_id(metadata.at("run_id").as_string());
  EXPECT_TRUE(is_uuid(run_id));
  EXPECT_EQ(metadata.at("thread_id"), json::value(thread));
  EXPECT_EQ(r.header("content-location"), "/threads/" + thread + "/runs/" + run_id);
  EXPECT_EQ(r.header("location"), "/threads/" + thread + "/runs/" + run_id + "/stream");

  long long last = 0;
  for (const auto& e : events) {
    ASSERT_FALSE(e.id.empty()) << e.event;
    const long long id = std::stoll(e.id);
    EXPECT_GT(id, last) << names(events);
    last = id;
    (void)e.json();  // every data is JSON
    EXPECT_THAT(std::vector<std::string>({"metadata", "values", "updates", "custom", "debug"}),
                ::testing::Contains(e.event));
  }
  // The stream ended with the run: its last values are the pause, and the
  // thread is no longer busy once the stream is over.
  std::optional<json::value> last_values;
  for (const auto& e : events)
    if (e.event == "values") last_values = e.json();
  ASSERT_TRUE(last_values) << names(events);
  EXPECT_EQ(last_values->at("status"), "awaiting_approval");
  EXPECT_EQ(last_values->at("__interrupt__").at(0).at("value").at("type"), "approval");
  EXPECT_EQ(thread_status(thread), "interrupted");
  // Each step's update and its values.
  const auto updates = std::ranges::count_if(events, [](const sse_event& e) { return e.event == "updates"; });
  EXPECT_GE(updates, 3) << names(events);
}

TEST_F(stream_test, only_the_modes_asked_for_are_streamed) {
  const auto thread = create_thread();
  const auto events = events_of(stream_run(thread, question, "values"));
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.front().event, "metadata");
  for (std::size_t i = 1; i < events.size(); ++i) EXPECT_EQ(events[i].event, "values") << names(events);
  EXPECT_EQ(events.back().json().at("status"), "completed");
}

TEST_F(stream_test, joined_with_last_event_id_n_only_the_events_after_n_come) {
  const auto thread = create_thread();
  const auto original = events_of(stream_run(thread, soccer));
  ASSERT_GE(original.size(), 5u);
  const std::string run_id(original.front().json().at("run_id").as_string());

  for (const std::size_t cut : {std::size_t{0}, std::size_t{2}, original.size() - 2, original.size() - 1}) {
    const auto& n = original[cut].id;
    SCOPED_TRACE("Last-Event-ID " + n);
    const auto replayed = events_of(join_stream(thread, run_id, n));
    const std::vector<sse_event> expected(original.begin() + static_cast<std::ptrdiff_t>(cut) + 1, original.end());
    EXPECT_TRUE(same_events(replayed, expected)) << "replayed: " << names(replayed) << "\nexpected: " << names(expected);
  }
}

TEST_F(stream_test, joined_with_last_event_id_minus_one_the_whole_stream_comes_again) {
  const auto thread = create_thread();
  const auto original = events_of(stream_run(thread, soccer));
  ASSERT_FALSE(original.empty());
  const std::string run_id(original.front().json().at("run_id").as_string());
  const auto replayed = events_of(join_stream(thread, run_id, "-1"));
  EXPECT_TRUE(same_events(replayed, original)) << "replayed: " << names(replayed) << "\noriginal: " << names(original);
  // Twice: a replay consumes nothing.
  EXPECT_TRUE(same_events(events_of(join_stream(thread, run_id, "-1")), original));
}

TEST_F(stream_test, a_join_may_ask_for_other_modes_than_the_run_was_made_with) {
  const auto thread = create_thread();
  const auto original = events_of(stream_run(thread, question));
  const std::string run_id(original.front().json().at("run_id").as_string());
  const auto values_only = events_of(join_stream(thread, run_id, "-1", "?stream_mode=values"));
  std::vector<sse_event> expected;
  for (const auto& e : original)
    if (e.event == "metadata" || e.event == "values") expected.push_back(e);
  EXPECT_TRUE(same_events(values_only, expected)) << names(values_only);
  // As the JS SDK sends a list: JSON in the query.
  const auto as_list = events_of(join_stream(thread, run_id, "-1", "?stream_mode=%5B%22values%22%5D"));
  EXPECT_TRUE(same_events(as_list, expected)) << names(as_list);
}

TEST_F(stream_test, a_last_event_id_that_is_not_a_number_is_422) {
  const auto thread = create_thread();
  const auto original = events_of(stream_run(thread, question));
  const std::string run_id(original.front().json().at("run_id").as_string());
  const auto r = join_stream(thread, run_id, "1-0");
  EXPECT_EQ(r.status, 422) << r.describe();
  EXPECT_EQ(join_stream(thread, random_uuid(), "-1").status, 404);
}

TEST_F(stream_test, the_resume_streams_too_and_its_metadata_names_its_own_run) {
  const auto thread = create_thread();
  const auto paused = events_of(stream_run(thread, soccer));
  const std::string first_run(paused.front().json().at("run_id").as_string());
  const auto r = post(port(), "/threads/" + thread + "/runs/stream",
                      json::object{{"assistant_id", "family_scheduling"},
                                   {"command", json::object{{"resume", json::object{{"decision", "approve"}}}}},
                                   {"stream_mode", "values"}});
  const auto events = events_of(r);
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events.front().event, "metadata");
  EXPECT_NE(events.front().json().at("run_id"), json::value(first_run));
  EXPECT_EQ(events.back().event, "values");
  EXPECT_EQ(events.back().json().at("status"), "completed");
  EXPECT_EQ(thread_status(thread), "idle");
}

}  // namespace
}  // namespace switchboard::server::testing
