#include <switchboard/agents/tool_registry.hpp>

#include <switchboard/agents/agent_registry.hpp>
#include <switchboard/protocol/limits.hpp>

#include "agent_test_support.hpp"

#include <boost/json/parse.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace switchboard::agents {
namespace {

namespace json = boost::json;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using agent_test::code_of;
using agent_test::run_sync;

// A tool with a given name and schema that answers with its arguments.
class echo_tool final : public tool {
 public:
  echo_tool(std::string name, json::object schema, bool approval = false)
      : name_(std::move(name)), schema_(std::move(schema)), approval_(approval) {}
  std::string_view name() const noexcept override { return name_; }
  std::string_view description() const noexcept override { return "Echoes its arguments."; }
  json::object parameters() const override { return schema_; }
  bool needs_approval() const noexcept override { return approval_; }
  boost::asio::awaitable<tool_result> call(tool_context&, const json::value& arguments) override {
    co_return arguments;
  }

 private:
  std::string name_;
  json::object schema_;
  bool approval_;
};

const json::object event_schema = json::parse(R"({
  "type": "object",
  "properties": {
    "date": {"type": "string"},
    "attendees": {"type": "array", "items": {"type": "object",
                  "properties": {"name": {"type": "string"}}, "required": ["name"]}},
    "limit": {"type": "integer", "minimum": 1}
  },
  "required": ["date"],
  "additionalProperties": false
})").as_object();

std::shared_ptr<tool> echo(std::string name, json::object schema = event_schema) {
  return std::make_shared<echo_tool>(std::move(name), std::move(schema));
}

// Expects `fn` to throw agent_error with `code` and every part in the message.
template <class Fn>
void expect_error(Fn fn, agent_errc code, std::vector<std::string> parts) {
  try {
    fn();
    ADD_FAILURE() << "expected agent_error";
  } catch (const agent_error& e) {
    EXPECT_EQ(code_of(e), code) << e.what();
    for (const auto& p : parts) EXPECT_THAT(e.what(), HasSubstr(p));
  }
}

TEST(ToolRegistry, RegistersFindsAndListsByName) {
  tool_registry registry;
  registry.add(echo("calendar.lookup"));
  registry.add(std::make_shared<echo_tool>("mail.send", json::object{}, true), "plugin:/x/libmail.so");
  EXPECT_THAT(registry.names(), ElementsAre("calendar.lookup", "mail.send"));
  ASSERT_NE(registry.find("mail.send"), nullptr);
  EXPECT_EQ(registry.find("nope"), nullptr);
  EXPECT_TRUE(registry.contains("calendar.lookup"));
  EXPECT_EQ(registry.find_shared("calendar.lookup").get(), registry.find("calendar.lookup"));
  const auto infos = registry.list();
  ASSERT_EQ(infos.size(), 2u);
  EXPECT_EQ(infos[0].origin, "builtin");
  EXPECT_EQ(infos[1].origin, "plugin:/x/libmail.so");
  EXPECT_TRUE(infos[1].needs_approval);
  EXPECT_FALSE(infos[1].idempotent);
  EXPECT_EQ(infos[0].description, "Echoes its arguments.");
}

TEST(ToolRegistry, DuplicateNameNamesBothOrigins) {
  tool_registry registry;
  registry.add(echo("calendar.lookup"), "plugin:/a.so");
  expect_error([&] { registry.add(echo("calendar.lookup"), "plugin:/b.so"); }, agent_errc::duplicate_tool,
               {"calendar.lookup", "plugin:/a.so", "plugin:/b.so"});
  EXPECT_EQ(registry.names().size(), 1u);
}

TEST(ToolRegistry, BadNamesAndNullAreRefused) {
  tool_registry registry;
  for (const std::string& name : std::vector<std::string>{"", "has space", "semi;colon", std::string(129, 'a'), "quote\""}) {
    expect_error([&] { registry.add(echo(name), "builtin"); }, agent_errc::invalid_tool, {"builtin"});
  }
  expect_error([&] { registry.add(nullptr, "plugin:/n.so"); }, agent_errc::invalid_tool, {"null", "plugin:/n.so"});
  registry.add(echo("mcp:files/read_file"));  // the MCP form is a valid name
  registry.add(echo(std::string(128, 'a')));
  EXPECT_EQ(registry.names().size(), 2u);
}

TEST(ToolRegistry, SchemaThatDoesNotCompileIsRefusedNamingTheTool) {
  tool_registry registry;
  const auto backreference = json::parse(R"({"type": "object",
      "properties": {"q": {"type": "string", "pattern": "(a)\\1"}}})").as_object();
  expect_error([&] { registry.add(echo("search.bad", backreference), "plugin:/s.so"); }, agent_errc::invalid_tool,
               {"search.bad", "plugin:/s.so", "does not compile"});
  const auto cycle = json::parse(R"({"$ref": "#"})").as_object();
  expect_error([&] { registry.add(echo("search.cycle", cycle)); }, agent_errc::invalid_tool, {"search.cycle"});
  const auto not_object = json::parse(R"({"type": "array"})").as_object();
  expect_error([&] { registry.add(echo("search.array", not_object)); }, agent_errc::invalid_tool,
               {"search.array", "\"type\": \"object\""});
  EXPECT_THAT(registry.names(), IsEmpty());
}

TEST(ToolRegistry, AtAndValidateOnAnUnknownToolListTheRegisteredOnes) {
  tool_registry registry;
  registry.add(echo("calendar.lookup"));
  expect_error([&] { (void)registry.at("calendar.lokup"); }, agent_errc::unknown_tool,
               {"calendar.lokup", "calendar.lookup"});
  expect_error([&] { (void)registry.validate_arguments("nope", "{}"); }, agent_errc::unknown_tool, {"nope"});
}

struct ValidateArguments : ::testing::Test {
  tool_registry registry;
  void SetUp() override { registry.add(echo("calendar.lookup")); }
  tool_arguments check(std::string_view text) { return registry.validate_arguments("calendar.lookup", text); }
};

TEST_F(ValidateArguments, ValidArgumentsAreParsed) {
  const auto args = check(R"({"date": "2025-03-04", "attendees": [{"name": "Ada"}], "limit": 3})");
  EXPECT_TRUE(args.ok()) << args.describe("calendar.lookup");
  EXPECT_EQ(args.value.at("date"), "2025-03-04");
}

TEST_F(ValidateArguments, MalformedJsonIsAnErrorNotAThrow) {
  for (const std::string_view text : {R"({"date": )", R"({"date": "x"} trailing)", "{'date': 1}"}) {
    const auto args = check(text);
    ASSERT_FALSE(args.ok()) << text;
    EXPECT_THAT(args.errors[0].message, HasSubstr("not valid JSON")) << text;
  }
}

TEST_F(ValidateArguments, TooDeepTooLargeAndNonFiniteAreRefused) {
  const std::string deep = R"({"date": "d", "x": )" + std::string(200, '[') + std::string(200, ']') + "}";
  EXPECT_FALSE(check(deep).ok());
  const std::string big = R"({"date": ")" + std::string(protocol::max_tool_arguments_bytes, 'a') + "\"}";
  const auto too_big = check(big);
  ASSERT_FALSE(too_big.ok());
  EXPECT_THAT(too_big.errors[0].message, HasSubstr("limit"));
  const auto infinite = check(R"({"date": "d", "limit": 1e999})");
  ASSERT_FALSE(infinite.ok());
  EXPECT_THAT(infinite.errors[0].message, HasSubstr("/limit"));
}

TEST_F(ValidateArguments, WrongTypesNameTheirPointers) {
  const auto args = check(R"({"date": 20250304, "attendees": [{"name": 7}], "limit": 0, "extra": true})");
  ASSERT_FALSE(args.ok());
  std::vector<std::string> paths;
  for (const auto& e : args.errors) paths.push_back(e.path);
  EXPECT_THAT(paths, ::testing::IsSupersetOf({"/date", "/attendees/0/name", "/limit"}));
  EXPECT_THAT(args.describe("calendar.lookup"),
              AllOf(HasSubstr("calendar.lookup"), HasSubstr("/attendees/0/name"), HasSubstr("/date")));
  EXPECT_FALSE(check(R"({"limit": 2})").ok());  // missing required date
}

TEST_F(ValidateArguments, EmptyTextIsAnEmptyObjectAndNonObjectsAreRefused) {
  registry.add(echo("clock.now", json::object{}));
  const auto empty = registry.validate_arguments("clock.now", "  ");
  EXPECT_TRUE(empty.ok());
  EXPECT_TRUE(empty.value.is_object());
  const auto array = registry.validate_arguments("clock.now", "[1]");
  ASSERT_FALSE(array.ok());
  EXPECT_THAT(array.errors[0].message, HasSubstr("object"));
}

TEST(Tool, DefinitionAndResultShapes) {
  const auto t = echo("calendar.lookup");
  const tool_definition d = to_definition(*t);
  EXPECT_EQ(d.name, "calendar.lookup");
  EXPECT_EQ(d.description, "Echoes its arguments.");
  EXPECT_EQ(d.parameters, json::value(event_schema));
  EXPECT_FALSE(t->idempotent());

  tool_context context{std::make_shared<spdlog::logger>("tool-test"), "wf-1", "call_1", "agent"};
  const tool_result ok = run_sync(t->call(context, json::parse(R"({"date": "d"})")));
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok.to_json(), json::parse(R"({"date": "d"})"));
  EXPECT_THROW((void)ok.error(), std::logic_error);

  const auto failed = tool_result::failure("not_found", "no event on 2025-03-04", true);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().code, "not_found");
  EXPECT_EQ(failed.to_json(),
            json::parse(R"({"error": {"code": "not_found", "message": "no event on 2025-03-04", "retryable": true}})"));
  EXPECT_THROW((void)failed.value(), std::logic_error);
}

TEST(ToolRegistry, DefinitionsFollowTheRequestedOrder) {
  tool_registry registry;
  registry.add(echo("a.one"));
  registry.add(echo("b.two"));
  const std::vector<std::string> wanted{"b.two", "a.one"};
  const auto defs = registry.definitions(wanted);
  ASSERT_EQ(defs.size(), 2u);
  EXPECT_EQ(defs[0].name, "b.two");
  EXPECT_EQ(defs[1].name, "a.one");
  const std::vector<std::string> missing{"c.three"};
  EXPECT_THROW((void)registry.definitions(missing), agent_error);
}

}  // namespace
}  // namespace switchboard::agents
