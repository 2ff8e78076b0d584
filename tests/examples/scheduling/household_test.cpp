// The sample's data files: loading, clear errors for malformed data, and the
// civil-time helpers the agents rely on.
#include <switchboard/scheduling/household.hpp>

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace switchboard::scheduling {
namespace {

namespace fs = std::filesystem;

const fs::path sample_data =
    fs::path(SWITCHBOARD_SOURCE_DIR) / "examples" / "scheduling" / "data";

// A copy of the sample's data directory in which one file can be replaced.
class data_copy {
 public:
  data_copy() : dir_(fs::temp_directory_path() / ("sb-household-" + std::to_string(::getpid()) + "-" +
                                                  std::to_string(counter_++))) {
    fs::create_directories(dir_);
    for (const auto& entry : fs::directory_iterator(sample_data))
      fs::copy_file(entry.path(), dir_ / entry.path().filename(), fs::copy_options::overwrite_existing);
  }
  ~data_copy() { fs::remove_all(dir_); }
  void write(const std::string& file, const std::string& text) const {
    std::ofstream(dir_ / file, std::ios::trunc) << text;
  }
  const fs::path& dir() const { return dir_; }

 private:
  static inline int counter_ = 0;
  fs::path dir_;
};

std::string load_error(const fs::path& dir) {
  try {
    load_household(dir);
  } catch (const data_error& e) {
    return e.what();
  }
  return "no error";
}

TEST(household, loads_the_sample_data) {
  const household h = load_household(sample_data);
  EXPECT_EQ(h.name, "The Rivera family");
  EXPECT_EQ(format_datetime(h.now), "2026-03-02T08:00");
  ASSERT_EQ(h.members.size(), 5u);
  EXPECT_EQ(h.find_member("grandma"), h.find_member("Rosa"));
  EXPECT_EQ(h.find_member("MAYA")->role, "child");
  EXPECT_EQ(h.find_member("Zoe"), nullptr);
  EXPECT_EQ(h.find_resource("van")->name, "minivan");
  EXPECT_EQ(h.find_resource("minivan")->capacity, 7);
  EXPECT_EQ(h.hard_rules.size(), 2u);
  EXPECT_EQ(h.soft_rules.size(), 2u);
}

TEST(household, syntax_error_names_file_line_and_column) {
  data_copy copy;
  copy.write("resources.json", "{\n  \"resources\": [\n    { \"name\": \"minivan\" \"kind\": \"vehicle\" }\n  ]\n}\n");
  const std::string error = load_error(copy.dir());
  EXPECT_NE(error.find("resources.json:3:"), std::string::npos) << error;
  EXPECT_NE(error.find("malformed JSON"), std::string::npos) << error;
}

TEST(household, truncated_file_points_at_its_end) {
  data_copy copy;
  copy.write("rules.json", "{\n  \"hard\": [\n");
  const std::string error = load_error(copy.dir());
  EXPECT_NE(error.find("rules.json:3:1"), std::string::npos) << error;
}

TEST(household, bad_values_name_the_file_and_json_pointer) {
  data_copy copy;
  copy.write("household.json",
             R"({"now": "2026-03-02T08:00", "members": [{"name": "Ana", "role": "parent",
                 "calendar": [{"title": "Work", "start": "2026-13-01T09:00", "end": "2026-03-01T10:00"}]}]})");
  std::string error = load_error(copy.dir());
  EXPECT_NE(error.find("household.json: /members/0/calendar/0/start"), std::string::npos) << error;
  EXPECT_NE(error.find("2026-13-01T09:00"), std::string::npos) << error;

  copy.write("household.json",
             R"({"now": "2026-03-02T08:00", "members": [{"name": "Ana", "role": "parent",
                 "calendar": [{"title": "Work", "every": ["mon", "funday"], "from": "09:00", "to": "17:00"}]}]})");
  error = load_error(copy.dir());
  EXPECT_NE(error.find("/members/0/calendar/0/every/1: unknown weekday \"funday\""), std::string::npos) << error;

  copy.write("household.json", R"({"now": "2026-03-02T08:00", "members": [{"name": "Ana"}]})");
  error = load_error(copy.dir());
  EXPECT_NE(error.find("/members/0: missing required field \"role\""), std::string::npos) << error;
}

TEST(household, missing_directory_and_file_are_named) {
  EXPECT_NE(load_error("/nonexistent/dir").find("/nonexistent/dir: not a directory"), std::string::npos);
  data_copy copy;
  fs::remove(copy.dir() / "rules.json");
  EXPECT_NE(load_error(copy.dir()).find("rules.json: cannot open"), std::string::npos);
}

TEST(household, duplicate_names_are_refused) {
  data_copy copy;
  copy.write("household.json",
             R"({"now": "2026-03-02T08:00", "members": [{"name": "Ana", "role": "parent"},
                 {"name": "Bob", "role": "parent", "aliases": ["ana"]}]})");
  EXPECT_NE(load_error(copy.dir()).find("/members/1/aliases"), std::string::npos);
}

TEST(time, parses_and_formats_wall_clock_times) {
  const auto t = parse_datetime("2026-03-07T14:30");
  ASSERT_TRUE(t);
  EXPECT_EQ(format_datetime(*t), "2026-03-07T14:30");
  EXPECT_EQ(weekday(day_of(*t)), 6);  // Saturday
  EXPECT_EQ(weekday_name(weekday(day_of(*t))), "Saturday");
  EXPECT_FALSE(parse_datetime("2026-02-30T10:00"));
  EXPECT_FALSE(parse_datetime("2026-03-07T24:00"));
  EXPECT_FALSE(parse_datetime("2026-03-07 10:00"));
  EXPECT_EQ(parse_clock("24:00"), 1440);
  EXPECT_FALSE(parse_clock("7:00"));
  EXPECT_EQ(parse_weekday("SAT"), 6);
  EXPECT_EQ(parse_weekday("sunday"), 0);
  EXPECT_FALSE(parse_weekday("satur"));
}

TEST(time, describes_slots_including_midnight) {
  const minute_t start = *parse_datetime("2026-03-07T22:00");
  EXPECT_EQ(describe({start, start + 120}), "Sat 2026-03-07 22:00\u201324:00");
  EXPECT_EQ(describe({start, start + 180}), "Sat 2026-03-07 22:00\u20132026-03-08 01:00");
}

TEST(time, weekly_entries_occur_on_their_days_only) {
  calendar_entry school;
  school.title = "School";
  school.weekdays = 0b0111110;  // Monday to Friday
  school.from = 8 * 60;
  school.to = 15 * 60;
  const minute_t monday = *parse_datetime("2026-03-02T00:00");
  const auto week = occurrences(school, {monday, monday + 7 * minutes_per_day});
  ASSERT_EQ(week.size(), 5u);
  EXPECT_EQ(format_datetime(week.front().when.start), "2026-03-02T08:00");
  EXPECT_TRUE(occurrences(school, {monday + 5 * minutes_per_day, monday + 7 * minutes_per_day}).empty());
}

}  // namespace
}  // namespace switchboard::scheduling
