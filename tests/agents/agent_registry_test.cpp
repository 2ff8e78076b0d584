#include <switchboard/agents/agent_registry.hpp>

#include "agent_test_support.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace switchboard::agents {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using agent_test::code_of;

class named_agent final : public agent {
 public:
  named_agent(std::string name, std::string schema = "meeting.output@1")
      : name_(std::move(name)), schema_(std::move(schema)) {}
  std::string_view name() const noexcept override { return name_; }
  std::string_view description() const noexcept override { return "a test agent"; }
  std::string output_schema() const override { return schema_; }
  boost::asio::awaitable<protocol::envelope> run(agent_context&) override { co_return protocol::envelope{}; }

 private:
  std::string name_;
  std::string schema_;
};

protocol::envelope meeting(boost::json::object data) {
  protocol::envelope e;
  e.data = std::move(data);
  e.explanation = "A meeting.";
  e.reasoning = "Read from the request.";
  e.confidence = 0.9;
  return e;
}

struct AgentRegistry : ::testing::Test {
  agent_registry registry{agent_test::test_schemas()};
};

TEST_F(AgentRegistry, RegistersLooksUpAndListsSortedWithOrigins) {
  registry.add(std::make_shared<named_agent>("zeta"));
  registry.add(std::make_shared<named_agent>("alpha"), "plugin:/x/libalpha.so");
  EXPECT_THAT(registry.names(), ElementsAre("alpha", "zeta"));
  ASSERT_NE(registry.find("zeta"), nullptr);
  EXPECT_EQ(registry.find("zeta")->name(), "zeta");
  EXPECT_EQ(registry.find("beta"), nullptr);
  EXPECT_EQ(registry.at("alpha").name(), "alpha");
  const auto infos = registry.list();
  ASSERT_EQ(infos.size(), 2u);
  EXPECT_EQ(infos[0].name, "alpha");
  EXPECT_EQ(infos[0].origin, "plugin:/x/libalpha.so");
  EXPECT_EQ(infos[0].output_schema, "meeting.output@1");
  EXPECT_EQ(infos[1].origin, "builtin");
  EXPECT_EQ(infos[1].description, "a test agent");
}

TEST_F(AgentRegistry, DuplicateNameIsRefusedNamingBothOrigins) {
  registry.add(std::make_shared<named_agent>("parser"), "prompt:prompts/parser.v1.json");
  try {
    registry.add(std::make_shared<named_agent>("parser"), "plugin:/p/libparser.so");
    FAIL();
  } catch (const agent_error& e) {
    EXPECT_EQ(code_of(e), agent_errc::duplicate_agent);
    EXPECT_THAT(e.what(), AllOf(HasSubstr("'parser'"), HasSubstr("prompt:prompts/parser.v1.json"),
                                HasSubstr("plugin:/p/libparser.so")));
  }
  EXPECT_EQ(registry.list().at(0).origin, "prompt:prompts/parser.v1.json");
}

TEST_F(AgentRegistry, UnknownAgentListsTheRegisteredOnes) {
  registry.add(std::make_shared<named_agent>("calendar"));
  try {
    (void)registry.at("calender");
    FAIL();
  } catch (const agent_error& e) {
    EXPECT_EQ(code_of(e), agent_errc::unknown_agent);
    EXPECT_THAT(e.what(), AllOf(HasSubstr("'calender'"), HasSubstr("registered: calendar")));
  }
}

TEST_F(AgentRegistry, RefusesNullAndNamelessAgents) {
  EXPECT_THROW(registry.add(nullptr), std::invalid_argument);
  EXPECT_THROW(registry.add(std::make_shared<named_agent>("")), std::invalid_argument);
}

TEST_F(AgentRegistry, ValidatesEnvelopesAgainstTheDeclaredSchema) {
  const named_agent a("parser");
  EXPECT_THAT(registry.validate(a, meeting({{"title", "Standup"}})), IsEmpty());

  const auto errors = registry.validate(a, meeting({{"title", 42}, {"room", "4"}}));
  ASSERT_THAT(errors, Not(IsEmpty()));
  const std::string all = protocol::to_string(errors);
  EXPECT_THAT(all, AllOf(HasSubstr("/data/title"), HasSubstr("room")));

  auto bad_confidence = meeting({{"title", "Standup"}});
  bad_confidence.confidence = 1.5;
  EXPECT_THAT(protocol::to_string(registry.validate(a, bad_confidence)), HasSubstr("/confidence"));
}

TEST_F(AgentRegistry, FailedEnvelopeIsCheckedAsAnEnvelopeOnly) {
  const named_agent a("parser");
  const auto failed = protocol::make_error_envelope({"structured_output_failed", "no luck", false, {}},
                                                    "The parser could not answer.");
  EXPECT_THAT(registry.validate(a, failed), IsEmpty());
  auto broken = failed;
  broken.reasoning.clear();
  EXPECT_THAT(protocol::to_string(registry.validate(a, broken)), HasSubstr("/reasoning"));
}

TEST_F(AgentRegistry, UnknownOutputSchemaIsNamed) {
  const named_agent a("ghost", "ghost.output@3");
  try {
    (void)registry.validate(a, meeting({}));
    FAIL();
  } catch (const agent_error& e) {
    EXPECT_EQ(code_of(e), agent_errc::unknown_output_schema);
    EXPECT_THAT(e.what(), AllOf(HasSubstr("'ghost'"), HasSubstr("ghost.output@3")));
  }
}

TEST(AgentErrc, HasReadableNamesInItsOwnCategory) {
  const boost::system::error_code ec = agent_errc::plugin_abi_mismatch;
  EXPECT_EQ(ec.category().name(), std::string("switchboard.agents"));
  EXPECT_EQ(ec.message(), "plugin_abi_mismatch");
  EXPECT_EQ(to_string(agent_errc::unknown_prompt_version), "unknown_prompt_version");
  EXPECT_THROW(agent_registry(nullptr), std::invalid_argument);
}

}  // namespace
}  // namespace switchboard::agents
