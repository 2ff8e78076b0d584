// The household's calendar file: created private and seeded, keyed changes
// applied once, refused changes write nothing, reset restores the seed, and
// a foreign or corrupt file is an error naming the file — never a crash.
#include <switchboard/scheduling/calendar.hpp>

#include "scheduling/workflow_fixture.hpp"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include <fstream>

namespace switchboard::scheduling::testing {
namespace {

household seed() { return load_household(sample_workflow_dir / "data"); }

std::size_t entry_count(const household& h) {
  std::size_t n = 0;
  for (const auto& m : h.members) n += m.calendar.size();
  for (const auto& r : h.resources) n += r.bookings.size();
  return n;
}

void sql(const std::filesystem::path& file, const std::string& statement) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(file.c_str(), &db), SQLITE_OK);
  char* message = nullptr;
  EXPECT_EQ(sqlite3_exec(db, statement.c_str(), nullptr, nullptr, &message), SQLITE_OK) << (message ? message : "");
  sqlite3_free(message);
  sqlite3_close(db);
}

calendar_change add_tennis(std::string run_id) {
  calendar_change c;
  c.run_id = std::move(run_id);
  c.decide = [](const household&) {
    calendar_decision d;
    d.add.push_back({"Sam", false, {"Tennis", "", interval{*parse_datetime("2026-03-07T13:00"),
                                                           *parse_datetime("2026-03-07T14:00")}, 0, 0, 0}});
    d.result = "booked tennis";
    return d;
  };
  return c;
}

int tennis_entries(const household& h) {
  int n = 0;
  for (const auto& e : h.find_member("Sam")->calendar) n += e.title == "Tennis";
  return n;
}

TEST(calendar, a_new_file_is_private_and_holds_the_seed) {
  temp_dir dir;
  const auto file = dir.path() / "scheduling" / "calendar.db";
  const auto cal = calendar::open_file(file, seed());
  struct stat info {};
  ASSERT_EQ(::stat(file.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat(file.parent_path().c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0700u);
  const household h = cal->snapshot();
  EXPECT_EQ(entry_count(h), entry_count(seed()));
  // Recurring entries stay recurring.
  EXPECT_EQ(h.find_member("Ana")->calendar.front().weekdays, seed().find_member("Ana")->calendar.front().weekdays);
}

TEST(calendar, a_keyed_change_is_applied_once_and_replayed_after) {
  temp_dir dir;
  const auto cal = calendar::open_file(dir.path() / "calendar.db", seed());
  EXPECT_EQ(cal->apply(add_tennis("wf-1")).outcome, apply_result::status::applied);
  const auto again = cal->apply(add_tennis("wf-1"));
  EXPECT_EQ(again.outcome, apply_result::status::replayed);
  EXPECT_EQ(again.result, "booked tennis");
  EXPECT_EQ(tennis_entries(cal->snapshot()), 1);
  // Another process opening the same file sees it.
  EXPECT_EQ(tennis_entries(calendar::open_file(dir.path() / "calendar.db", seed())->snapshot()), 1);
}

TEST(calendar, a_refused_change_writes_nothing) {
  const auto cal = calendar::in_memory(seed());
  calendar_change c = add_tennis("wf-2");
  c.remove.push_back({"", false, {"Swim meet", "", interval{*parse_datetime("2026-03-07T10:00"),
                                                            *parse_datetime("2026-03-07T11:30")}, 0, 0, 0}});
  c.decide = [](const household&) {
    calendar_decision d;
    d.problems.push_back("taken meanwhile");
    return d;
  };
  const auto r = cal->apply(c);
  EXPECT_EQ(r.outcome, apply_result::status::refused);
  EXPECT_EQ(r.problems, std::vector<std::string>{"taken meanwhile"});
  EXPECT_EQ(entry_count(cal->snapshot()), entry_count(seed()));  // the removal was rolled back too
  // Not keyed either: the same key may be applied later.
  EXPECT_EQ(cal->apply(add_tennis("wf-2")).outcome, apply_result::status::applied);
}

TEST(calendar, reset_restores_the_seed) {
  temp_dir dir;
  const auto file = dir.path() / "calendar.db";
  calendar::open_file(file, seed())->apply(add_tennis("wf-3"));
  EXPECT_EQ(tennis_entries(calendar::open_file(file, seed())->snapshot()), 1);
  const auto reset = calendar::open_file(file, seed(), true);
  EXPECT_EQ(tennis_entries(reset->snapshot()), 0);
  EXPECT_EQ(entry_count(reset->snapshot()), entry_count(seed()));
}

TEST(calendar, a_file_that_is_not_a_database_is_named) {
  temp_dir dir;
  const auto file = dir.path() / "calendar.db";
  std::ofstream(file) << "groceries: milk, eggs\n" << std::string(4096, '.');
  try {
    calendar::open_file(file, seed());
    FAIL() << "no error";
  } catch (const data_error& e) {
    EXPECT_NE(std::string(e.what()).find(file.string() + ": not a household calendar"), std::string::npos) << e.what();
  }
}

TEST(calendar, another_applications_database_is_named) {
  temp_dir dir;
  const auto file = dir.path() / "calendar.db";
  sql(file, "CREATE TABLE recipes(name TEXT)");
  try {
    calendar::open_file(file, seed());
    FAIL() << "no error";
  } catch (const data_error& e) {
    EXPECT_NE(std::string(e.what()).find("not a household calendar"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(file.string()), std::string::npos) << e.what();
  }
}

TEST(calendar, corrupt_rows_are_named_with_the_file_and_the_entry) {
  temp_dir dir;
  const auto file = dir.path() / "calendar.db";
  const auto cal = calendar::open_file(file, seed());
  sql(file, "UPDATE entries SET start = '2026-13-45T99:00' WHERE id = 5");
  try {
    cal->snapshot();
    FAIL() << "no error";
  } catch (const data_error& e) {
    EXPECT_NE(std::string(e.what()).find(file.string() + ": entry 5: malformed start/end"), std::string::npos)
        << e.what();
  }
  sql(file, "DELETE FROM entries WHERE id = 5; INSERT INTO entries(owner, owner_kind, title, start, \"end\", origin) "
            "VALUES('Bob', 'member', 'x', '2026-03-07T10:00', '2026-03-07T11:00', 'seed')");
  try {
    cal->snapshot();
    FAIL() << "no error";
  } catch (const data_error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown member \"Bob\""), std::string::npos) << e.what();
  }
  sql(file, "UPDATE calendar_meta SET value = '99' WHERE key = 'version'");
  EXPECT_THROW(calendar::open_file(file, seed()), data_error);
}

TEST(calendar, the_plugin_keeps_its_calendar_in_the_state_directory_or_in_memory) {
  temp_dir dir;
  sample_workflow_runner with_state(dir.path());
  EXPECT_EQ(with_state.cal().file(), dir.path() / "scheduling" / "calendar.db");
  sample_workflow_runner without({});
  EXPECT_TRUE(without.cal().file().empty());
  bool said_so = false;
  for (const auto& n : without.notices()) said_so = said_so || n.find("calendar: in memory") != std::string::npos;
  EXPECT_TRUE(said_so);
}

}  // namespace
}  // namespace switchboard::scheduling::testing
