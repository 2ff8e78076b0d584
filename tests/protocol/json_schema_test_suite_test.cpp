// The official JSON-Schema-Test-Suite, draft-07, through compiled_schema.
// Every non-optional case runs; a case is excluded only with a written
// reason (see `exclusions`). Remote references (http://localhost:1234/...)
// are served from the suite's own remotes/ directory through a resolver,
// so refRemote runs without a server.
//
// Every case runs twice: through valijson alone (the reference) and through
// compiled_schema's fast path where the schema is eligible. The fast path
// must agree with both the suite and valijson on every eligible case.
#include <switchboard/protocol/validation.hpp>

#include "../../protocol/src/validator/fast_schema.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>

namespace sp = switchboard::protocol;
namespace json = boost::json;
namespace fs = std::filesystem;

namespace {

struct exclusion {
  std::string_view file;   // "ref.json"
  std::string_view group;  // the group's description
  std::string_view test;   // the test's description, "" for the whole group
  std::string_view reason;
};

// Known valijson limitations (Debian 12 libvalijson-dev) and resources the
// suite does not ship.
constexpr std::string_view needs_metaschema =
    "the schema $refs the draft-07 meta-schema (http://json-schema.org/draft-07/schema), which "
    "the suite does not ship and the tests may not download";
constexpr std::string_view relative_to_id =
    "valijson resolves a relative $ref against the document's URI, not against a base URI "
    "changed by a nested $id, so it asks for the bare relative name (a known valijson "
    "limitation; a resolver cannot recover the base)";

const std::vector<exclusion> exclusions{
    {"definitions.json", "valid definition", "", needs_metaschema},
    {"definitions.json", "invalid definition", "", needs_metaschema},
    {"ref.json", "remote ref, containing refs itself", "", needs_metaschema},
    {"ref.json", "Recursive references between schemas", "", relative_to_id},
    {"refRemote.json", "base URI change", "", relative_to_id},
    {"refRemote.json", "base URI change - change folder", "", relative_to_id},
    {"refRemote.json", "base URI change - change folder in subschema", "", relative_to_id},
    {"refRemote.json", "root ref in remote ref", "", relative_to_id},
};

const exclusion* excluded(std::string_view file, std::string_view group, std::string_view test) {
  const auto it = std::ranges::find_if(exclusions, [&](const exclusion& e) {
    return e.file == file && e.group == group && (e.test.empty() || e.test == test);
  });
  return it == exclusions.end() ? nullptr : &*it;
}

std::optional<json::value> read_json(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return std::nullopt;
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  boost::system::error_code ec;
  auto value = json::parse(text, ec);
  if (ec) return std::nullopt;
  return value;
}

// http://localhost:1234/<path> → <suite>/remotes/<path>
sp::schema_resolver remotes_resolver(const fs::path& remotes) {
  return [remotes](const std::string& uri) -> std::optional<json::value> {
    constexpr std::string_view prefix = "http://localhost:1234/";
    if (!uri.starts_with(prefix)) return std::nullopt;
    return read_json(remotes / uri.substr(prefix.size()));
  };
}

}  // namespace

TEST(JsonSchemaTestSuite, Draft7) {
  const fs::path draft7 = SWITCHBOARD_JSON_SCHEMA_TEST_SUITE;
  ASSERT_TRUE(fs::is_directory(draft7)) << draft7 << " missing: run scripts/setup.sh";
  const auto resolver = remotes_resolver(draft7.parent_path().parent_path() / "remotes");

  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(draft7)) {
    if (entry.is_regular_file() && entry.path().extension() == ".json") files.push_back(entry.path());
  }
  std::ranges::sort(files);
  ASSERT_FALSE(files.empty());

  int passed = 0, total = 0, skipped = 0, eligible = 0;
  std::vector<std::string> ineligible_groups;
  std::vector<std::string> failures;
  for (const auto& file : files) {
    const auto groups = read_json(file);
    ASSERT_TRUE(groups && groups->is_array()) << file;
    const std::string name = file.filename().string();
    for (const auto& group : groups->as_array()) {
      const std::string group_name(group.at("description").as_string());
      std::optional<sp::compiled_schema> schema;
      std::string compile_error;
      try {
        schema = sp::compiled_schema::compile(group.at("schema"), name + ": " + group_name, resolver);
      } catch (const std::exception& e) {
        compile_error = e.what();
      }
      std::string why_not;
      const auto fast = sp::detail::fast_schema::compile(group.at("schema"), &why_not);
      if (!fast) ineligible_groups.push_back(name + " / " + group_name + ": " + why_not);
      for (const auto& test : group.at("tests").as_array()) {
        const std::string test_name(test.at("description").as_string());
        if (excluded(name, group_name, test_name)) {
          ++skipped;
          continue;
        }
        ++total;
        const bool expected = test.at("valid").as_bool();
        const std::string where = name + " / " + group_name + " / " + test_name;
        if (!schema) {
          failures.push_back(where + ": schema did not compile: " + compile_error);
          continue;
        }
        bool reference = false;
        {
          const sp::detail::reference_validation_scope guard;
          reference = schema->validate(test.at("data")).empty();
        }
        const bool actual = schema->validate(test.at("data")).empty();
        if (reference == expected && actual == expected) {
          ++passed;
        } else {
          failures.push_back(where + ": expected " + (expected ? "valid" : "invalid") +
                             (reference == expected ? " (valijson agrees, compiled_schema not)" : ""));
        }
        if (fast) {
          ++eligible;
          const bool fast_valid = fast->accepts(test.at("data"));
          if (fast_valid != expected || fast_valid != reference) {
            failures.push_back(where + ": the fast path says " + (fast_valid ? "valid" : "invalid"));
          }
        }
      }
    }
  }
  std::cout << "JSON-Schema-Test-Suite draft-07: " << passed << "/" << total << " passed, "
            << skipped << " excluded; " << eligible << "/" << total
            << " cases fast-path eligible\n";
  for (const auto& g : ineligible_groups) std::cout << "  not eligible: " << g << "\n";
  for (const auto& f : failures) ADD_FAILURE() << f;
  EXPECT_GT(total, 400);  // the Debian 12 suite has 423 non-optional draft-07 cases
  EXPECT_GT(eligible, 300);  // most keyword files compile to the fast path
}

// The optional date, time and date-time format cases: valijson checked them
// with std::regex; compiled_schema checks them without, on both paths.
TEST(JsonSchemaTestSuite, Draft7OptionalDateFormats) {
  const fs::path formats = fs::path(SWITCHBOARD_JSON_SCHEMA_TEST_SUITE) / "optional" / "format";
  int cases = 0;
  for (const auto* name : {"date.json", "time.json", "date-time.json"}) {
    const auto groups = read_json(formats / name);
    ASSERT_TRUE(groups && groups->is_array()) << formats / name;
    for (const auto& group : groups->as_array()) {
      const auto schema = sp::compiled_schema::compile(group.at("schema"), name);
      for (const auto& test : group.at("tests").as_array()) {
        const bool expected = test.at("valid").as_bool();
        bool reference = false;
        {
          const sp::detail::reference_validation_scope guard;
          reference = schema.validate(test.at("data")).empty();
        }
        EXPECT_EQ(reference, expected) << name << " / " << test.at("description").as_string();
        EXPECT_EQ(schema.validate(test.at("data")).empty(), expected) << name;
        ++cases;
      }
    }
  }
  EXPECT_GT(cases, 10);
}
