// The sample as shipped through the `switchboard` binary: a booking waits
// for the user's approval (exit 4, with the command that approves it), is
// made by `resume --approve`, and is not made by `resume --reject`. A
// process killed right after the calendar committed the approved booking
// leaves a run that continues, without being asked again, to that booking,
// written once.
#include "cli_support.hpp"

#include <boost/json/parse.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>


#include <csignal>
#include <regex>

namespace switchboard::testing {
namespace {

namespace json = boost::json;
using ::testing::HasSubstr;

const std::string soccer = "Soccer practice for Maya on Saturday 2-4pm, she needs the minivan";
const std::string confirmed =
    "Confirmed: \"Soccer practice\", Sat 2026-03-07 14:00\u201316:00, with Maya, using the minivan, driven by Ana";

class sample_approval : public ::testing::Test {
 protected:
  cli_result run(const std::string& request) {
    return run_switchboard({"run", shipped_sample_workflow.string(), "--input", request}, scratch_);
  }
  cli_result resume(const std::string& id, std::vector<std::string> extra = {},
                    const std::vector<std::string>& env = {}) {
    std::vector<std::string> args{"resume", id, "--workflow", shipped_sample_workflow.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_switchboard(args, scratch_, env);
  }

  // Runs the soccer request, which must pause for approval; its run id.
  std::string paused_booking() {
    const auto r = run(soccer);
    EXPECT_EQ(r.exit_code, 4) << describe(r);
    std::smatch m;
    if (!std::regex_search(r.out, m, std::regex{R"(workflow id: (\S+))"})) {
      ADD_FAILURE() << "no workflow id\n" << describe(r);
      return {};
    }
    return m[1].str();
  }

  int entries(const std::string& owner, const std::string& title) const {
    return calendar_entries(scratch_.path(), owner, title);
  }
  // The soccer practice in Maya's calendar, the minivan's and Ana's (driving).
  std::vector<int> soccer_entries() const {
    return {entries("Maya", "Soccer practice"), entries("minivan", "Soccer practice"),
            entries("Ana", "Soccer practice")};
  }

  // The status of run `id` as `switchboard runs --json` lists it.
  std::string status_of(const std::string& id) {
    const auto r = run_switchboard({"runs", "--json"}, scratch_);
    EXPECT_EQ(r.exit_code, 0) << describe(r);
    boost::system::error_code ec;
    const auto listed = json::parse(r.out, ec);
    if (ec || !listed.is_array()) return "(unreadable: " + r.out + ")";
    for (const auto& v : listed.get_array())
      if (v.at("id").as_string() == id) return std::string(v.at("status").as_string());
    return "(not listed)";
  }

  temp_dir scratch_;
};

const std::vector<int> none{0, 0, 0};
const std::vector<int> once{1, 1, 1};

TEST_F(sample_approval, a_booking_pauses_and_prints_how_to_approve_or_reject_it) {
  const auto r = run(soccer);
  ASSERT_EQ(r.exit_code, 4) << describe(r);
  EXPECT_THAT(r.out, HasSubstr("bookings wait for your approval"));
  EXPECT_THAT(r.out, HasSubstr("Waiting for your approval before acting:"));
  EXPECT_THAT(r.out, HasSubstr("booking wants to call calendar.book {\"start\":\"2026-03-07T14:00\","
                               "\"end\":\"2026-03-07T16:00\",\"title\":\"Soccer practice\",\"participants\":[\"Maya\"],"
                               "\"resources\":[\"minivan\"],\"moved_from\":null}"));
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex{R"(workflow id: (\S+))"})) << describe(r);
  const std::string id = m[1].str();
  EXPECT_THAT(r.out, HasSubstr("switchboard resume " + id + " --workflow " + shipped_sample_workflow.string() +
                               " --approve"));
  EXPECT_THAT(r.out, HasSubstr("switchboard resume " + id + " --workflow " + shipped_sample_workflow.string() +
                               " --reject --reason"));
  EXPECT_EQ(r.out.find("Confirmed:"), std::string::npos) << describe(r);
  EXPECT_EQ(soccer_entries(), none);
  EXPECT_EQ(status_of(id), "awaiting_approval");

  // Without a decision (and no terminal to ask at), resume leaves it waiting.
  const auto undecided = resume(id);
  EXPECT_EQ(undecided.exit_code, 4) << describe(undecided);
  EXPECT_THAT(undecided.err, HasSubstr("is awaiting approval of tool calls"));
  EXPECT_EQ(soccer_entries(), none);
  EXPECT_EQ(status_of(id), "awaiting_approval");
}

TEST_F(sample_approval, approved_from_another_process_the_booking_is_written) {
  const std::string id = paused_booking();
  ASSERT_FALSE(id.empty());
  const auto r = resume(id, {"--approve"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_THAT(r.out, HasSubstr("approved: the pending tool calls of workflow " + id));
  EXPECT_THAT(r.out, HasSubstr(confirmed));
  EXPECT_EQ(soccer_entries(), once);
  EXPECT_EQ(status_of(id), "completed");
}

TEST_F(sample_approval, rejected_nothing_is_written_and_the_reason_is_shown) {
  const std::string id = paused_booking();
  ASSERT_FALSE(id.empty());
  const auto r = resume(id, {"--reject", "--reason", "not this week"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_THAT(r.out, HasSubstr("rejected: the pending tool calls of workflow " + id));
  EXPECT_THAT(r.out, HasSubstr("not this week"));
  EXPECT_THAT(r.out, HasSubstr("Not booked (declined): \"Soccer practice\", Sat 2026-03-07 14:00\u201316:00"));
  EXPECT_THAT(r.out, HasSubstr("-> declined"));
  EXPECT_EQ(r.out.find("Confirmed:"), std::string::npos) << describe(r);
  EXPECT_EQ(soccer_entries(), none);
  EXPECT_EQ(status_of(id), "completed");
}

// Killed right after the calendar committed the approved booking, before
// the hub recorded the call's result: the decision was saved before the
// call was made, so the run continues without being asked again; the step
// runs again, makes the (idempotent) call again, and the calendar, which
// knows the call's key, writes nothing twice.
TEST_F(sample_approval, killed_right_after_the_approved_booking_the_run_continues_to_one_booking) {
  const std::string id = paused_booking();
  ASSERT_FALSE(id.empty());
  const auto killed = resume(id, {"--approve"}, {"SWITCHBOARD_FAULT_KILL_AFTER_BOOKING=1"});
  ASSERT_EQ(killed.exit_code, 128 + SIGKILL) << describe(killed);
  EXPECT_EQ(soccer_entries(), once) << "the calendar committed before the kill";
  EXPECT_EQ(status_of(id), "interrupted");

  // The decision is not asked for again: one given now is refused, and
  // changes nothing.
  const auto approved_again = resume(id, {"--approve"});
  EXPECT_EQ(approved_again.exit_code, 2) << describe(approved_again);
  EXPECT_THAT(approved_again.err, HasSubstr("awaits no approval"));
  EXPECT_EQ(soccer_entries(), once);

  const auto continued = resume(id, {"--json"});
  ASSERT_EQ(continued.exit_code, 0) << describe(continued);
  boost::system::error_code ec;
  const auto state = json::parse(continued.out, ec);
  ASSERT_FALSE(ec) << describe(continued);
  EXPECT_EQ(state.at("status"), "completed");
  const auto& result = state.at("result");
  EXPECT_EQ(result.at("data").at("action"), "booked");
  EXPECT_EQ(result.at("data").at("replayed"), true);
  EXPECT_THAT(std::string(result.at("explanation").as_string()), HasSubstr(confirmed));
  EXPECT_THAT(std::string(result.at("reasoning").as_string()), HasSubstr("had already been written by this run"));
  EXPECT_EQ(soccer_entries(), once);

  // A later run sees the practice, once.
  const auto query = run("What does Maya have on Saturday?");
  ASSERT_EQ(query.exit_code, 0) << describe(query);
  EXPECT_THAT(query.out, HasSubstr("\nAnswer: Maya has on Saturday 2026-03-07: Swim meet 10:00\u201311:30 and Soccer "
                                   "practice 14:00\u201316:00.\n"));
}

}  // namespace
}  // namespace switchboard::testing
