#include <switchboard/agents/function_tool.hpp>

#include <switchboard/agents/tool_registry.hpp>

#include "agent_test_support.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/value_from.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace switchboard::agents::function_tool_test {

namespace json = boost::json;

struct attendee {
  std::string name;
  std::optional<std::string> email;
};
BOOST_DESCRIBE_STRUCT(attendee, (), (name, email))

struct lookup_args {
  std::string date;
  bool include_private;
  int limit;
  std::uint32_t offset;
  double min_score;
  std::optional<std::string> person;
  std::vector<attendee> attendees;
};
BOOST_DESCRIBE_STRUCT(lookup_args, (), (date, include_private, limit, offset, min_score, person, attendees))

// Not described: converted by its own tag_invoke, schema given by hand.
struct add_args {
  int a = 0;
  int b = 0;
};
add_args tag_invoke(json::value_to_tag<add_args>, const json::value& v) {
  const auto& o = v.as_object();
  return {json::value_to<int>(o.at("a")), json::value_to<int>(o.at("b"))};
}

namespace {

using ::testing::HasSubstr;
using agent_test::run_sync;

tool_context make_context() { return {std::make_shared<spdlog::logger>("function-tool-test"), "wf", "call_1", "a"}; }

tool_result call(tool& t, std::string_view arguments) {
  auto context = make_context();
  const json::value args = json::parse(arguments);
  return run_sync(t.call(context, args));
}

TEST(SchemaOf, DescribedStructsBecomeStrictObjectSchemas) {
  const json::value expected = json::parse(R"({
    "type": "object",
    "properties": {
      "date": {"type": "string"},
      "include_private": {"type": "boolean"},
      "limit": {"type": "integer"},
      "offset": {"type": "integer", "minimum": 0},
      "min_score": {"type": "number"},
      "person": {"anyOf": [{"type": "string"}, {"type": "null"}]},
      "attendees": {"type": "array", "items": {
        "type": "object",
        "properties": {"name": {"type": "string"},
                       "email": {"anyOf": [{"type": "string"}, {"type": "null"}]}},
        "required": ["name", "email"],
        "additionalProperties": false}}
    },
    "required": ["date", "include_private", "limit", "offset", "min_score", "person", "attendees"],
    "additionalProperties": false
  })");
  EXPECT_EQ(json::value(schema_of<lookup_args>()), expected) << json::serialize(schema_of<lookup_args>());
}

TEST(FunctionTool, DescribedArgumentsConvertAndTheSchemaValidates) {
  const auto t = make_function_tool<lookup_args>(
      "calendar.lookup", "Events on a date.",
      [](lookup_args a) -> json::value {
        return json::object{{"date", a.date},
                            {"person", a.person.value_or("-")},
                            {"attendees", a.attendees.size()},
                            {"first_email", a.attendees.empty() ? "" : a.attendees[0].email.value_or("")}};
      },
      {.needs_approval = true, .idempotent = true});
  EXPECT_TRUE(t->needs_approval());
  EXPECT_TRUE(t->idempotent());
  EXPECT_EQ(t->name(), "calendar.lookup");

  tool_registry registry;
  registry.add(t);
  const std::string text = R"({"date": "2025-03-04", "include_private": false, "limit": 5, "offset": 0,
      "min_score": 0.5, "person": null, "attendees": [{"name": "Ada", "email": "ada@example.com"}]})";
  const auto args = registry.validate_arguments("calendar.lookup", text);
  ASSERT_TRUE(args.ok()) << args.describe("calendar.lookup");
  const auto r = call(*t, text);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r.value(),
            json::parse(R"({"date": "2025-03-04", "person": "-", "attendees": 1, "first_email": "ada@example.com"})"));

  const auto wrong = registry.validate_arguments("calendar.lookup", R"({"date": 3})");
  ASSERT_FALSE(wrong.ok());
  EXPECT_THAT(wrong.describe("calendar.lookup"), HasSubstr("/date"));
}

TEST(FunctionTool, ConversionFailureIsAnErrorResultNotAnException) {
  const auto t = make_function_tool<lookup_args>("calendar.lookup", "Events on a date.",
                                                 [](lookup_args) -> json::value { return nullptr; });
  const auto r = call(*t, R"({"date": 7})");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "invalid_arguments");
  EXPECT_FALSE(r.error().retryable);
  EXPECT_THAT(r.error().message, HasSubstr("calendar.lookup"));
  EXPECT_THAT(r.error().message, HasSubstr("lookup_args"));
}

TEST(FunctionTool, ATagInvokeThatThrowsIsAnErrorResultToo) {
  const json::object schema = json::parse(R"({"type": "object", "required": ["a", "b"]})").as_object();
  const auto t = make_function_tool<add_args>("math.add", "Adds.", schema,
                                              [](add_args x) { return json::value(x.a + x.b); });
  EXPECT_EQ(t->parameters(), schema);
  const auto sum = call(*t, R"({"a": 2, "b": 3})");
  ASSERT_TRUE(sum.ok());
  EXPECT_EQ(sum.value(), 5);
  const auto missing = call(*t, R"({"a": 2})");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, "invalid_arguments");
}

TEST(FunctionTool, CoroutinesContextAndTypedErrorsAreSupported) {
  const json::object schema = json::parse(R"({"type": "object"})").as_object();
  const auto t = make_function_tool<add_args>(
      "math.checked_add", "Adds small numbers.", schema,
      [](tool_context& context, add_args x) -> boost::asio::awaitable<tool_result> {
        co_await boost::asio::post(co_await boost::asio::this_coro::executor, boost::asio::use_awaitable);
        if (x.a + x.b > 10) co_return tool_result::failure("too_large", "sum above 10", false);
        co_return json::object{{"sum", x.a + x.b}, {"workflow", context.workflow_id}};
      });
  const auto ok = call(*t, R"({"a": 1, "b": 2})");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok.value(), json::parse(R"({"sum": 3, "workflow": "wf"})"));
  const auto refused = call(*t, R"({"a": 9, "b": 2})");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, "too_large");
}

}  // namespace
}  // namespace switchboard::agents::function_tool_test
