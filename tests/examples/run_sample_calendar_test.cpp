// The sample keeps its word across processes: what one `switchboard run`
// books, the next one sees (they share SWITCHBOARD_STATE_DIR, so the
// calendar file); cancel frees, move moves, --reset restores the seed; two
// processes racing for one vehicle book it once; a run killed around its
// booking step and resumed books exactly once.
#include "cli_support.hpp"

#include <gtest/gtest.h>

#include <sqlite3.h>
#include <sys/stat.h>

#include <csignal>
#include <regex>

namespace switchboard::testing {
namespace {

const std::string soccer = "Soccer practice for Maya on Saturday 2-4pm, she needs the minivan";
const std::string swimming = "Swimming for Leo on Saturday 2-4pm, he needs the minivan";

class sample_calendar : public ::testing::Test {
 protected:
  cli_result run(const std::string& request, std::vector<std::string> extra = {},
                 const std::vector<std::string>& env = {}) {
    std::vector<std::string> args{"run", workflow_.string(), "--input", request};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_switchboard(args, scratch_, env);
  }
  std::filesystem::path calendar_db() const { return scratch_.path() / "scheduling" / "calendar.db"; }

  // Runs on a copy of the sample whose booking step waits 1.5 s before its
  // transaction ("booking_hold_ms"), so that processes started together race.
  void use_copy_with_booking_hold() {
    const auto copy = scratch_.path() / "sample";
    std::filesystem::copy(sample_workflow.parent_path(), copy, std::filesystem::copy_options::recursive);
    workflow_ = copy / "workflow.json";
    std::string text = file_text(workflow_);
    text = std::regex_replace(text, std::regex{R"("confirm_bookings": false)"},
                              R"("confirm_bookings": false, "booking_hold_ms": 1500)");
    std::ofstream(workflow_) << text;
    ASSERT_EQ(run("What does Maya have on Saturday?").exit_code, 0);  // creates the calendar
  }

  // Starts one `switchboard run` per request at once and waits for all; each
  // process's output, with "exit N" appended, in the returned strings.
  std::vector<std::string> race(const std::vector<std::string>& requests) {
    std::string command;
    for (std::size_t i = 0; i < requests.size(); ++i) {
      const auto out = (scratch_.path() / ("race" + std::to_string(i))).string();
      command += "( " + test::isolated_environment(scratch_.path()) + " " + shell_quoted(switchboard_binary.string()) +
                 " run " + shell_quoted(workflow_.string()) + " --input " + shell_quoted(requests[i]) + " > " + shell_quoted(out) +
                 " 2>&1; echo \"exit $?\" >> " + shell_quoted(out) + " ) &\n";
    }
    command += "wait\n";
    EXPECT_EQ(std::system(command.c_str()), 0);
    std::vector<std::string> outputs;
    for (std::size_t i = 0; i < requests.size(); ++i)
      outputs.push_back(file_text(scratch_.path() / ("race" + std::to_string(i))));
    return outputs;
  }

  // How many calendar entries of `owner` are titled `title` (ignoring case).
  int entries(const std::string& owner, const std::string& title) const {
    return calendar_entries(scratch_.path(), owner, title);
  }

  // How many entries of `owner` overlap [start, end).
  int bookings_overlapping(const std::string& owner, const std::string& start, const std::string& end) const {
    sqlite3* db = nullptr;
    sqlite3_open_v2(calendar_db().c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
    sqlite3_stmt* stmt = nullptr;
    sqlite3_prepare_v2(db, "SELECT count(*) FROM entries WHERE owner = ? AND start < ? AND \"end\" > ?", -1, &stmt,
                       nullptr);
    sqlite3_bind_text(stmt, 1, owner.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(stmt, 2, end.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(stmt, 3, start.c_str(), -1, SQLITE_TRANSIENT);
    const int n = sqlite3_step(stmt) == SQLITE_ROW ? sqlite3_column_int(stmt, 0) : -1;
    sqlite3_finalize(stmt);
    sqlite3_close(db);
    return n;
  }
  // The id of the only run the state directory's store holds.
  std::string only_run_id() {
    const auto r = run_switchboard({"runs", "--json"}, scratch_);
    std::smatch m;
    return std::regex_search(r.out, m, std::regex{R"re("id"\s*:\s*"([^"]+)")re"}) ? m[1].str() : std::string{};
  }

  temp_dir scratch_;
  std::filesystem::path workflow_ = sample_workflow;
};

TEST_F(sample_calendar, a_second_booking_of_the_minivan_in_another_run_is_caught) {
  const auto first = run(soccer);
  ASSERT_EQ(first.exit_code, 0) << describe(first);
  EXPECT_NE(first.out.find("Confirmed: \"Soccer practice\", Sat 2026-03-07 14:00\u201316:00, with Maya, using the "
                           "minivan, driven by Ana"),
            std::string::npos)
      << describe(first);
  EXPECT_NE(first.out.find("calendar: " + calendar_db().string()), std::string::npos) << describe(first);
  struct stat info {};
  ASSERT_EQ(::stat(calendar_db().c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat(calendar_db().parent_path().c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0700u);

  // Another process: the minivan is taken now, the conflict is found and
  // resolved with the sedan, driven by the parent who is still free.
  const auto second = run(swimming);
  ASSERT_EQ(second.exit_code, 0) << describe(second);
  EXPECT_NE(second.out.find("The minivan is booked: Soccer practice"), std::string::npos) << describe(second);
  EXPECT_NE(second.out.find("Plan (after resolution): \"Swimming\", Sat 2026-03-07 14:00\u201316:00, with Leo, using "
                            "the sedan, driven by Sam"),
            std::string::npos)
      << describe(second);
  EXPECT_EQ(entries("minivan", "Swimming"), 0);
  EXPECT_EQ(entries("minivan", "Soccer practice"), 1);

  const auto question = run("Is the minivan free on Saturday afternoon?");
  ASSERT_EQ(question.exit_code, 0) << describe(question);
  EXPECT_NE(question.out.find("Answer: No: the minivan is booked Sat 2026-03-07 14:00\u201316:00 (Soccer practice"),
            std::string::npos)
      << describe(question);
}

TEST_F(sample_calendar, cancel_frees_the_vehicle_for_the_next_run) {
  ASSERT_EQ(run(soccer).exit_code, 0);
  const auto cancelled = run("Cancel Maya's soccer practice");
  ASSERT_EQ(cancelled.exit_code, 0) << describe(cancelled);
  EXPECT_NE(cancelled.out.find("Cancelled: \"Soccer practice\", Sat 2026-03-07 14:00\u201316:00, with Maya, using the "
                               "minivan (Ana no longer drives)"),
            std::string::npos)
      << describe(cancelled);
  EXPECT_EQ(entries("minivan", "Soccer practice"), 0);
  EXPECT_EQ(entries("Ana", "Soccer practice"), 0);

  const auto rebooked = run(swimming);
  ASSERT_EQ(rebooked.exit_code, 0) << describe(rebooked);
  EXPECT_NE(rebooked.out.find("Confirmed: \"Swimming\", Sat 2026-03-07 14:00\u201316:00, with Leo, using the minivan"),
            std::string::npos)
      << describe(rebooked);

  const auto again = run("Cancel Maya's soccer practice");
  EXPECT_EQ(again.exit_code, 1) << describe(again);
  EXPECT_NE((again.out + again.err).find("no upcoming event \"Soccer practice\""), std::string::npos) << describe(again);
}

TEST_F(sample_calendar, a_move_keeps_the_duration_and_frees_the_old_slot) {
  const auto moved = run("Move Maya's swim meet to Sunday at 3pm");
  ASSERT_EQ(moved.exit_code, 0) << describe(moved);
  EXPECT_NE(moved.out.find("Moved: \"Swim meet\" from Sat 2026-03-07 10:00\u201311:30 to Sun 2026-03-08 "
                           "15:00\u201316:30, with Maya"),
            std::string::npos)
      << describe(moved);
  const auto sunday = run("What does Maya have on Sunday?");
  EXPECT_NE(sunday.out.find("Swim meet 15:00\u201316:30"), std::string::npos) << describe(sunday);
  const auto saturday = run("What does Maya have on Saturday?");
  EXPECT_NE(saturday.out.find("Maya has nothing on the calendar on Saturday 2026-03-07"), std::string::npos)
      << describe(saturday);
}

TEST_F(sample_calendar, reset_restores_the_seed_data) {
  ASSERT_EQ(run(soccer).exit_code, 0);
  ASSERT_EQ(run("Cancel the swim meet on Saturday").exit_code, 0);
  const auto reset = run("What does Maya have on Saturday?", {"--reset"});
  ASSERT_EQ(reset.exit_code, 0) << describe(reset);
  EXPECT_NE(reset.out.find("reset to the seed data"), std::string::npos) << describe(reset);
  EXPECT_NE(reset.out.find("Maya has on Saturday 2026-03-07: Swim meet 10:00\u201311:30."), std::string::npos)
      << describe(reset);
  EXPECT_EQ(entries("minivan", "Soccer practice"), 0);
  // And the minivan can be booked again.
  const auto again = run(soccer);
  EXPECT_NE(again.out.find("Confirmed: \"Soccer practice\""), std::string::npos) << describe(again);
}

TEST_F(sample_calendar, a_foreign_calendar_file_is_a_clear_error) {
  std::filesystem::create_directories(calendar_db().parent_path());
  std::ofstream(calendar_db()) << "this is not a database, it is a shopping list\n" << std::string(2000, 'x');
  const auto r = run(soccer);
  EXPECT_NE(r.exit_code, 0) << describe(r);
  EXPECT_NE(r.err.find(calendar_db().string()), std::string::npos) << describe(r);
  EXPECT_NE(r.err.find("not a household calendar"), std::string::npos) << describe(r);
}

// Four processes ask for the minivan at the same time; each holds its
// booking step for 1.5 s (the copy's "booking_hold_ms"), so they have
// checked the calendar before any of them writes. Exactly one books the
// minivan; the others are told so (or, started late, see it taken and take
// the sedan), and nothing is double-booked.
TEST_F(sample_calendar, racing_processes_book_the_minivan_once) {
  use_copy_with_booking_hold();
  const auto outputs = race({"Zoo trip for Maya on Saturday 2-4pm with the minivan",
                             "Museum trip for Leo on Saturday 2-4pm with the minivan",
                             "Park trip for Maya and Leo on Saturday 2-4pm with the minivan",
                             "Beach trip for Leo and Maya on Saturday 2-4pm with the minivan"});
  int booked = 0;
  int refused = 0;
  int resolved = 0;
  for (const auto& text_out : outputs) {
    if (text_out.find("Confirmed:") != std::string::npos && text_out.find("using the minivan") != std::string::npos) {
      ++booked;
    } else if (text_out.find("Not booked:") != std::string::npos) {
      ++refused;
      EXPECT_NE(text_out.find("the minivan is booked: "), std::string::npos) << text_out;
      EXPECT_NE(text_out.find("exit 1"), std::string::npos) << text_out;
    } else if (text_out.find("Plan (after resolution)") != std::string::npos) {
      ++resolved;  // started after the first booking: saw it and resolved
    } else {
      ADD_FAILURE() << text_out;
    }
  }
  EXPECT_EQ(booked, 1);
  EXPECT_GE(refused, 1) << "no process raced (they ran one after another)";
  EXPECT_EQ(booked + refused + resolved, 4);
  EXPECT_EQ(bookings_overlapping("minivan", "2026-03-07T14:00", "2026-03-07T16:00"), 1);
}

// Two runs move (or one moves and one cancels) the same event at once: the
// second finds it gone inside its transaction and changes nothing, so the
// event is never in two places.
TEST_F(sample_calendar, racing_moves_of_one_event_leave_it_in_one_place) {
  use_copy_with_booking_hold();
  const auto outputs = race({"Move Maya's swim meet to Sunday at 3pm", "Move Maya's swim meet to Monday at 5pm",
                             "Cancel Maya's swim meet"});
  int changed = 0;
  for (const auto& out : outputs) {
    if (out.find("\nMoved: ") != std::string::npos || out.find("\nCancelled: ") != std::string::npos) ++changed;
    else EXPECT_NE(out.find("exit 1"), std::string::npos) << out;
  }
  EXPECT_EQ(changed, 1);
  // One swim meet at most, wherever the winner put it (none if the cancel won).
  EXPECT_LE(entries("Maya", "Swim meet"), 1);
}

// Killed right after the calendar committed the booking, before the hub
// recorded the step: the resumed run runs the step again, which finds its
// own booking (keyed on the run's id) and writes nothing.
TEST_F(sample_calendar, a_run_killed_after_booking_books_once_when_resumed) {
  const auto killed = run(soccer, {}, {"SWITCHBOARD_FAULT_KILL_AFTER_BOOKING=1"});
  ASSERT_EQ(killed.exit_code, 128 + SIGKILL) << describe(killed);
  EXPECT_EQ(entries("minivan", "Soccer practice"), 1);
  const std::string id = only_run_id();
  ASSERT_FALSE(id.empty()) << describe(killed);
  const auto resumed = run_switchboard({"resume", id, "--workflow", sample_workflow.string()}, scratch_);
  ASSERT_EQ(resumed.exit_code, 0) << describe(resumed);
  EXPECT_NE(resumed.out.find("Confirmed: \"Soccer practice\", Sat 2026-03-07 14:00\u201316:00"), std::string::npos)
      << describe(resumed);
  EXPECT_NE(resumed.out.find("written by an earlier attempt of this step (the run was interrupted, or the step retried); nothing was written again"), std::string::npos)
      << describe(resumed);
  EXPECT_EQ(entries("minivan", "Soccer practice"), 1);
  EXPECT_EQ(entries("Maya", "Soccer practice"), 1);
  EXPECT_EQ(entries("Ana", "Soccer practice"), 1);
}

// The same for a cancel: the step run again reads the household from its
// journal (as the first run saw it, the event still there), so it asks for
// the same keyed cancel, which the calendar already made, instead of not
// finding the event.
TEST_F(sample_calendar, a_run_killed_after_cancelling_completes_when_resumed) {
  const auto killed = run("Cancel Maya's swim meet", {}, {"SWITCHBOARD_FAULT_KILL_AFTER_BOOKING=1"});
  ASSERT_EQ(killed.exit_code, 128 + SIGKILL) << describe(killed);
  EXPECT_EQ(entries("Maya", "Swim meet"), 0);  // the seed's swim meet is gone
  const std::string id = only_run_id();
  ASSERT_FALSE(id.empty()) << describe(killed);
  const auto resumed = run_switchboard({"resume", id, "--workflow", sample_workflow.string()}, scratch_);
  ASSERT_EQ(resumed.exit_code, 0) << describe(resumed);
  EXPECT_NE(resumed.out.find("Cancelled: \"Swim meet\", Sat 2026-03-07 10:00\u201311:30, with Maya"),
            std::string::npos)
      << describe(resumed);
  EXPECT_NE(resumed.out.find("nothing was written again"), std::string::npos) << describe(resumed);
  EXPECT_EQ(entries("Maya", "Swim meet"), 0);
}

// Killed after each write the runs store commits, and resumed: always one
// booking, never two.
TEST_F(sample_calendar, a_run_killed_after_any_commit_books_once) {
  for (int kill_after = 1; kill_after < 40; ++kill_after) {
    SCOPED_TRACE("killed after write " + std::to_string(kill_after));
    std::filesystem::remove_all(scratch_.path() / "scheduling");
    std::filesystem::remove(scratch_.path() / "workflows.db");
    const auto r = run(soccer, {}, {"SWITCHBOARD_FAULT_KILL_AFTER_WRITES=" + std::to_string(kill_after)});
    if (r.exit_code == 0) {
      EXPECT_EQ(entries("minivan", "Soccer practice"), 1);
      EXPECT_GT(kill_after, 3);
      return;
    }
    ASSERT_EQ(r.exit_code, 128 + SIGKILL) << describe(r);
    const std::string id = only_run_id();
    ASSERT_FALSE(id.empty()) << describe(r);
    const auto resumed = run_switchboard({"resume", id, "--workflow", sample_workflow.string()}, scratch_);
    // Killed after the last commit the run is complete, and resume says so.
    if (resumed.exit_code != 0) {
      EXPECT_NE(resumed.err.find("is completed"), std::string::npos) << describe(resumed);
    }
    EXPECT_EQ(entries("minivan", "Soccer practice"), 1);
    EXPECT_EQ(entries("Ana", "Soccer practice"), 1);
  }
  FAIL() << "the run never completed without a kill";
}

}  // namespace
}  // namespace switchboard::testing
