#include <switchboard/agents/prompt_library.hpp>

#include <switchboard/agents/agent_registry.hpp>

#include "agent_test_support.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace switchboard::agents {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using agent_test::code_of;
using agent_test::test_data;

TEST(PromptLibrary, VersionsLiveSideBySideNewestByDefault) {
  prompt_library lib;
  EXPECT_EQ(lib.load_directory(test_data() / "prompts"), 2u);
  EXPECT_THAT(lib.names(), ElementsAre("meeting_parser"));
  EXPECT_THAT(lib.versions("meeting_parser"), ElementsAre(1, 2));
  EXPECT_EQ(lib.find("meeting_parser")->version, 2);
  EXPECT_EQ(lib.find("meeting_parser", 1)->version, 1);
  EXPECT_EQ(lib.find("meeting_parser", 3), nullptr);
  EXPECT_EQ(lib.find("other"), nullptr);
  EXPECT_EQ(lib.at("meeting_parser").version, 2);
  EXPECT_EQ(lib.at("meeting_parser", "1").version, 1);
  EXPECT_EQ(lib.at("meeting_parser", "v1").version, 1);
  EXPECT_EQ(lib.at("meeting_parser", "meeting_parser.v1").version, 1);
  EXPECT_EQ(lib.all_versions("meeting_parser").size(), 2u);
}

TEST(PromptLibrary, UnknownVersionsAndNamesAreNamed) {
  prompt_library lib;
  lib.load_directory(test_data() / "prompts");
  try {
    (void)lib.at("meeting_parser", "7");
    FAIL();
  } catch (const agent_error& e) {
    EXPECT_EQ(code_of(e), agent_errc::unknown_prompt_version);
    EXPECT_THAT(e.what(), AllOf(HasSubstr("no version 7"), HasSubstr("loaded: 1, 2")));
  }
  try {
    (void)lib.at("meeting_parser", "latest");
    FAIL();
  } catch (const agent_error& e) {
    EXPECT_EQ(code_of(e), agent_errc::unknown_prompt_version);
    EXPECT_THAT(e.what(), HasSubstr("\"latest\""));
  }
  try {
    (void)lib.at("scheduler");
    FAIL();
  } catch (const agent_error& e) {
    EXPECT_EQ(code_of(e), agent_errc::unknown_agent);
    EXPECT_THAT(e.what(), HasSubstr("meeting_parser"));
  }
}

TEST(PromptLibrary, DuplicateVersionIsRefusedNamingBothFiles) {
  prompt_library lib;
  lib.load_file(test_data() / "prompts" / "meeting_parser.v1.json");
  auto copy = prompt_file::load(test_data() / "prompts" / "meeting_parser.v1.json");
  copy.path = "elsewhere/meeting_parser.v1.json";
  try {
    lib.add(copy);
    FAIL();
  } catch (const agent_error& e) {
    EXPECT_THAT(e.what(), AllOf(HasSubstr("elsewhere/meeting_parser.v1.json"),
                                HasSubstr("prompts/meeting_parser.v1.json")));
  }
}

TEST(PromptLibrary, BadDirectoryOrFileFailsLoudly) {
  prompt_library lib;
  EXPECT_THROW(lib.load_directory(test_data() / "no_such_dir"), agent_error);
  EXPECT_THROW(lib.load_directory(test_data() / "bad_prompts"), agent_error);
}

TEST(PromptVersion, Parses) {
  EXPECT_EQ(parse_prompt_version("p", ""), 0);
  EXPECT_EQ(parse_prompt_version("p", "4"), 4);
  EXPECT_EQ(parse_prompt_version("p", "v4"), 4);
  EXPECT_EQ(parse_prompt_version("p", "p.v4"), 4);
  EXPECT_THROW(parse_prompt_version("p", "q.v4"), agent_error);
  EXPECT_THROW(parse_prompt_version("p", "0"), agent_error);
  EXPECT_THROW(parse_prompt_version("p", "4x"), agent_error);
}

}  // namespace
}  // namespace switchboard::agents
