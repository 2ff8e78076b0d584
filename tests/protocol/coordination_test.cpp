#include <switchboard/protocol/coordination.hpp>

#include <boost/json/parse.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace sp = switchboard::protocol;
namespace json = boost::json;
using ::testing::HasSubstr;

namespace {
const std::vector<std::string> agents{"scheduler", "summarizer", "translator"};
}

TEST(Coordination, SchemaEnumListsTheRegisteredAgents) {
  const json::value schema = sp::coordination_schema(agents);
  EXPECT_EQ(schema.at("properties").at("agent_name").at("enum"),
            json::parse(R"(["scheduler","summarizer","translator"])"));
  const auto compiled = sp::compiled_schema::compile(schema, "coordination@1");
  EXPECT_TRUE(compiled.validate(json::parse(R"({"agent_name": "scheduler"})")).empty());
  const auto errors = compiled.validate(json::parse(R"({"agent_name": "calendar"})"));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].path, "/agent_name");
}

TEST(Coordination, ReadsAValidRequest) {
  const auto parsed = sp::read_coordination_request(
      json::parse(R"({"agent_name": "translator", "additional_instructions": "into French"})"),
      agents);
  ASSERT_TRUE(parsed.request) << sp::to_string(parsed.errors);
  EXPECT_EQ(parsed.request->agent_name, "translator");
  EXPECT_EQ(parsed.request->additional_instructions, "into French");
}

TEST(Coordination, MissingOrNullInstructionsAreEmpty) {
  for (const char* text : {R"({"agent_name": "scheduler"})",
                           R"({"agent_name": "scheduler", "additional_instructions": null})"}) {
    const auto parsed = sp::read_coordination_request(json::parse(text), agents);
    ASSERT_TRUE(parsed.request) << text;
    EXPECT_EQ(parsed.request->additional_instructions, "");
  }
}

TEST(Coordination, UnknownAgentIsAnErrorNamingTheAllowedAgents) {
  const auto parsed =
      sp::read_coordination_request(json::parse(R"({"agent_name": "calendar"})"), agents);
  EXPECT_FALSE(parsed.request);
  ASSERT_EQ(parsed.errors.size(), 1u);
  EXPECT_EQ(parsed.errors[0].kind, sp::errc::unknown_agent);
  EXPECT_EQ(parsed.errors[0].path, "/agent_name");
  EXPECT_THAT(parsed.errors[0].message, HasSubstr("'calendar'"));
  EXPECT_THAT(parsed.errors[0].message, HasSubstr("scheduler, summarizer, translator"));
}

TEST(Coordination, NoRegisteredAgentsMeansEveryNameIsUnknown) {
  const auto parsed = sp::read_coordination_request(json::parse(R"({"agent_name": "x"})"), {});
  EXPECT_FALSE(parsed.request);
  EXPECT_THAT(parsed.errors[0].message, HasSubstr("none registered"));
}

TEST(Coordination, ShapeErrors) {
  auto parsed = sp::read_coordination_request(json::parse("[]"), agents);
  EXPECT_FALSE(parsed.request);
  EXPECT_EQ(parsed.errors[0].kind, sp::errc::schema_type_error);

  parsed = sp::read_coordination_request(json::parse(R"({"additional_instructions": 5,
                                                          "route": "x"})"), agents);
  EXPECT_FALSE(parsed.request);
  ASSERT_EQ(parsed.errors.size(), 3u);
  EXPECT_EQ(parsed.errors[0].kind, sp::errc::schema_missing_field);
  EXPECT_EQ(parsed.errors[1].to_string(), "/additional_instructions: expected string, got integer");
  EXPECT_EQ(parsed.errors[2].path, "/route");

  parsed = sp::read_coordination_request(json::parse(R"({"agent_name": 1})"), agents);
  EXPECT_EQ(parsed.errors[0].to_string(), "/agent_name: expected string, got integer");
}
