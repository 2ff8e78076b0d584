// ids.hpp: the UUIDs the API hands out. The system assistant's id is the
// reference servers' (uuid5 of the graph id in their namespace), random ids
// are version 4, time-ordered ids version 7 and sort as they were made.
#include "ids.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

namespace switchboard::server {
namespace {

// The version nibble and the RFC 9562 variant of a canonical UUID.
char version_of(const std::string& id) { return id.at(14); }
bool rfc_variant(const std::string& id) { return std::string_view("89ab").find(id.at(19)) != std::string_view::npos; }

TEST(ids, the_system_assistant_id_is_the_reference_servers) {
  // uuid5(UUID("6ba7b821-9dad-11d1-80b4-00c04fd430c8"), "lead_agent"), as a
  // langgraph_api server logged it (docs: reference, 1.2).
  EXPECT_EQ(system_assistant_id("lead_agent"), "bee7d354-5df5-5f26-a978-10ea053f620d");
  EXPECT_EQ(system_assistant_id("lead_agent"), system_assistant_id("lead_agent"));
  EXPECT_NE(system_assistant_id("lead_agent"), system_assistant_id("lead_agent2"));
}

TEST(ids, name_uuids_are_rfc_version_5) {
  // uuid.uuid5(uuid.NAMESPACE_DNS, "python.org") in Python.
  EXPECT_EQ(name_uuid("6ba7b810-9dad-11d1-80b4-00c04fd430c8", "python.org"), "886313e1-3b8a-5372-9b90-0c9aee199e5d");
  // The namespace may be written in upper case.
  EXPECT_EQ(name_uuid("6BA7B810-9DAD-11D1-80B4-00C04FD430C8", "python.org"), "886313e1-3b8a-5372-9b90-0c9aee199e5d");
}

TEST(ids, random_uuids_are_version_4_and_differ) {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    const auto id = random_uuid();
    ASSERT_TRUE(is_uuid(id)) << id;
    EXPECT_EQ(version_of(id), '4') << id;
    EXPECT_TRUE(rfc_variant(id)) << id;
    EXPECT_EQ(id, [&] { auto lower = id; std::ranges::transform(lower, lower.begin(), ::tolower); return lower; }());
    seen.insert(id);
  }
  EXPECT_EQ(seen.size(), 1000u);
}

TEST(ids, time_ordered_uuids_are_version_7_and_sort_by_creation) {
  // Many in a row, most within the same millisecond: each must sort after
  // the one made before it (the API's run ids order the runs).
  std::vector<std::string> made;
  for (int i = 0; i < 5000; ++i) made.push_back(time_ordered_uuid());
  for (std::size_t i = 0; i < made.size(); ++i) {
    ASSERT_TRUE(is_uuid(made[i])) << made[i];
    EXPECT_EQ(version_of(made[i]), '7') << made[i];
    EXPECT_TRUE(rfc_variant(made[i])) << made[i];
    if (i > 0) {
      ASSERT_LT(made[i - 1], made[i]) << "id " << i << " sorts before the one made before it";
    }
  }
}

TEST(ids, time_ordered_uuids_start_with_the_current_unix_milliseconds) {
  const auto before = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch()).count();
  const auto id = time_ordered_uuid();
  const auto after = std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::system_clock::now().time_since_epoch()).count();
  const auto hex = id.substr(0, 8) + id.substr(9, 4);  // the 48-bit timestamp
  const auto ms = static_cast<long long>(std::stoull(hex, nullptr, 16));
  EXPECT_GE(ms, before);
  // Ahead of the clock only as far as ids made faster than the timestamp
  // can tell apart borrowed from the next milliseconds (RFC 9562, 6.2).
  EXPECT_LE(ms, after + 1000);
}

TEST(ids, is_uuid_accepts_the_canonical_form_only) {
  EXPECT_TRUE(is_uuid("bee7d354-5df5-5f26-a978-10ea053f620d"));
  EXPECT_TRUE(is_uuid("BEE7D354-5DF5-5F26-A978-10EA053F620D"));
  EXPECT_TRUE(is_uuid("00000000-0000-0000-0000-000000000000"));
  EXPECT_TRUE(is_uuid(random_uuid()));
  EXPECT_TRUE(is_uuid(time_ordered_uuid()));

  EXPECT_FALSE(is_uuid(""));
  EXPECT_FALSE(is_uuid("lead_agent"));
  EXPECT_FALSE(is_uuid("bee7d3545df55f26a97810ea053f620d"));        // no dashes
  EXPECT_FALSE(is_uuid("bee7d354-5df5-5f26-a978-10ea053f620"));     // one short
  EXPECT_FALSE(is_uuid("bee7d354-5df5-5f26-a978-10ea053f620d0"));   // one long
  EXPECT_FALSE(is_uuid("bee7d3545-df5-5f26-a978-10ea053f620d"));    // a dash moved
  EXPECT_FALSE(is_uuid("gee7d354-5df5-5f26-a978-10ea053f620d"));    // not hex
  EXPECT_FALSE(is_uuid("{ee7d354-5df5-5f26-a978-10ea053f620d"));
  EXPECT_FALSE(is_uuid("bee7d354-5df5-5f26-a978 10ea053f620d"));
  EXPECT_FALSE(is_uuid("../../../../../../../../../etc/passwd"));
}

}  // namespace
}  // namespace switchboard::server
