#include <switchboard/protocol/schema_registry.hpp>

#include <switchboard/testing/temp_dir.hpp>

#include <boost/json/parse.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <thread>

namespace sp = switchboard::protocol;
namespace json = boost::json;
namespace fs = std::filesystem;
using ::testing::HasSubstr;
using switchboard::testing::temp_dir;

namespace {

const char* object_schema = R"({"type": "object", "properties": {"n": {"type": "integer"}},
                                "required": ["n"]})";

std::string protocol_error_message(const std::function<void()>& f, sp::errc expected) {
  try {
    f();
  } catch (const sp::protocol_error& e) {
    EXPECT_EQ(e.code(), expected) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "expected protocol_error " << sp::to_string(expected);
  return {};
}

}  // namespace

TEST(SchemaId, ParsesNameAndVersion) {
  const auto plain = sp::schema_id::parse("scheduling.output");
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->name, "scheduling.output");
  EXPECT_EQ(plain->version, 0);
  const auto versioned = sp::schema_id::parse("scheduling.output@12");
  ASSERT_TRUE(versioned);
  EXPECT_EQ(versioned->version, 12);
  EXPECT_EQ(versioned->to_string(), "scheduling.output@12");
  for (const char* bad : {"", "@1", "a@", "a@0", "a@-1", "a@1x", "a b@1", "a@1@2"}) {
    EXPECT_EQ(sp::schema_id::parse(bad).error(), sp::errc::invalid_schema_id) << bad;
  }
}

TEST(SchemaRegistry, NameGivesNewestVersionAndNameAtVersionThatOne) {
  sp::schema_registry registry;
  registry.add({"plan", 1}, json::parse(R"({"type": "object"})"));
  registry.add({"plan", 3}, json::parse(R"({"type": "array"})"));
  registry.add({"plan", 2}, json::parse(R"({"type": "string"})"));
  EXPECT_EQ(registry.at("plan").id(), "plan@3");
  EXPECT_EQ(registry.at("plan@2").id(), "plan@2");
  EXPECT_EQ(registry.find("plan@1")->json().at("type"), "object");
  EXPECT_FALSE(registry.find("plan@4"));
  EXPECT_FALSE(registry.find("other"));
  EXPECT_FALSE(registry.find("not a name"));
  EXPECT_EQ(registry.list().size(), 3u);
}

TEST(SchemaRegistry, UnknownSchemaNamesTheVersionsThatExist) {
  sp::schema_registry registry;
  registry.add({"plan", 1}, json::parse("{}"));
  const auto message =
      protocol_error_message([&] { registry.at("plan@7"); }, sp::errc::unknown_schema);
  EXPECT_THAT(message, HasSubstr("plan@7"));
  EXPECT_THAT(message, HasSubstr("plan@1"));
  protocol_error_message([&] { registry.at("nope"); }, sp::errc::unknown_schema);
  protocol_error_message([&] { registry.at("bad id@"); }, sp::errc::invalid_schema_id);
}

TEST(SchemaRegistry, RefusesDuplicates) {
  sp::schema_registry registry;
  registry.add({"plan", 1}, json::parse("{}"), "first.json");
  const auto message = protocol_error_message(
      [&] { registry.add({"plan", 1}, json::parse("{}"), "second.json"); },
      sp::errc::duplicate_schema);
  EXPECT_THAT(message, HasSubstr("plan@1"));
  EXPECT_THAT(message, HasSubstr("second.json"));
  EXPECT_THAT(message, HasSubstr("first.json"));
}

TEST(SchemaRegistry, RefusesAnIdWithoutVersion) {
  sp::schema_registry registry;
  protocol_error_message([&] { registry.add({"plan", 0}, json::parse("{}")); },
                         sp::errc::invalid_schema_id);
}

TEST(SchemaRegistry, LoadsFilesNamedNameAtVersion) {
  temp_dir dir;
  sp::schema_registry registry;
  const auto schema = registry.load_file(dir.write("order@2.json", object_schema));
  EXPECT_EQ(schema.id(), "order@2");
  EXPECT_TRUE(registry.at("order").validate(json::parse(R"({"n": 1})")).empty());
}

TEST(SchemaRegistry, DeclaredIdWinsOverFileName) {
  temp_dir dir;
  sp::schema_registry registry;
  registry.load_file(dir.write("whatever.json", R"({"$id": "invoice@4", "type": "object"})"));
  EXPECT_TRUE(registry.find("invoice@4"));
}

TEST(SchemaRegistry, UnparsableFileIsRefusedWithTheFileName) {
  temp_dir dir;
  sp::schema_registry registry;
  const auto file = dir.write("broken@1.json", R"({"type": "object",)");
  const auto message =
      protocol_error_message([&] { registry.load_file(file); }, sp::errc::unparsable_schema);
  EXPECT_THAT(message, HasSubstr(file.string()));
  EXPECT_THAT(message, HasSubstr("not valid JSON"));
}

TEST(SchemaRegistry, InvalidSchemaFileIsRefusedWithTheFileName) {
  temp_dir dir;
  sp::schema_registry registry;
  const auto file = dir.write("weird@1.json", R"({"type": 42})");
  const auto message =
      protocol_error_message([&] { registry.load_file(file); }, sp::errc::unparsable_schema);
  EXPECT_THAT(message, HasSubstr(file.string()));
}

TEST(SchemaRegistry, SchemaFilesThatCouldCrashOrHangAreRefusedNamingFileAndPlace) {
  temp_dir dir;
  sp::schema_registry registry;
  const auto cyclic = dir.write("cyclic@1.json", R"({"definitions": {"a": {"$ref": "#/definitions/b"},
                                                                   "b": {"$ref": "#/definitions/a"}},
                                                   "$ref": "#/definitions/a"})");
  auto message = protocol_error_message([&] { registry.load_file(cyclic); }, sp::errc::unparsable_schema);
  EXPECT_THAT(message, HasSubstr("schema 'cyclic@1'"));
  EXPECT_THAT(message, HasSubstr("#/definitions/a -> #/definitions/b -> #/definitions/a"));
  EXPECT_THAT(message, HasSubstr(cyclic.string()));

  const auto lookahead = dir.write("code@1.json", R"js({"properties": {"code": {"pattern": "^(?!x)"}}})js");
  message = protocol_error_message([&] { registry.load_file(lookahead); }, sp::errc::unparsable_schema);
  EXPECT_THAT(message, HasSubstr(R"js(pattern "^(?!x)" at #/properties/code/pattern)js"));
  EXPECT_THAT(message, HasSubstr(lookahead.string()));
  EXPECT_TRUE(registry.list().empty());
}

TEST(SchemaRegistry, BadFileNameAndMissingFileAreNamed) {
  temp_dir dir;
  sp::schema_registry registry;
  const auto unnamed = dir.write("order.json", object_schema);
  EXPECT_THAT(protocol_error_message([&] { registry.load_file(unnamed); },
                                     sp::errc::invalid_schema_id),
              HasSubstr(unnamed.string()));
  const auto missing = dir.path() / "missing@1.json";
  EXPECT_THAT(protocol_error_message([&] { registry.load_file(missing); },
                                     sp::errc::unparsable_schema),
              HasSubstr(missing.string()));
}

TEST(SchemaRegistry, LoadsADirectoryRecursively) {
  temp_dir dir;
  dir.write("a@1.json", object_schema);
  dir.write("nested/a@2.json", object_schema);
  dir.write("nested/b@1.json", R"({"type": "string"})");
  dir.write("README.txt", "not a schema");
  sp::schema_registry registry;
  EXPECT_EQ(registry.load_directory(dir.path()), 3u);
  EXPECT_EQ(registry.at("a").id(), "a@2");
}

TEST(SchemaRegistry, DuplicateAcrossFilesNamesBothFiles) {
  temp_dir dir;
  const auto first = dir.write("one/a@1.json", object_schema);
  const auto second = dir.write("two/x.json", R"({"$id": "a@1"})");
  sp::schema_registry registry;
  const auto message = protocol_error_message([&] { registry.load_directory(dir.path()); },
                                              sp::errc::duplicate_schema);
  EXPECT_THAT(message, HasSubstr(first.string()));
  EXPECT_THAT(message, HasSubstr(second.string()));
}

TEST(SchemaRegistry, MissingDirectoryIsNamed) {
  sp::schema_registry registry;
  EXPECT_THAT(protocol_error_message([&] { registry.load_directory("/nonexistent/schemas"); },
                                     sp::errc::unknown_schema),
              HasSubstr("/nonexistent/schemas"));
}

TEST(SchemaRegistry, InvariantsApplyToLaterLookupsAndToTheEnvelope) {
  sp::schema_registry registry;
  registry.add({"count", 1}, json::parse(R"({"type": "object", "properties": {
      "total": {"type": "integer"}, "shown": {"type": "integer"}}})"));
  const auto before = registry.envelope_schema("count");
  registry.add_invariant("count", "total >= shown",
                         [](const json::value& v) -> std::optional<sp::validation_error> {
                           const auto& o = v.as_object();
                           if (o.at("total").as_int64() >= o.at("shown").as_int64()) return {};
                           return sp::validation_error{"/shown", "larger than total"};
                         });
  const json::value bad = json::parse(R"({"total": 1, "shown": 5})");
  const auto errors = registry.at("count@1").validate(bad);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].kind, sp::errc::invariant_violation);

  const json::value envelope = {{"data", bad}, {"explanation", "e"}, {"confidence", 0.5},
                                {"reasoning", "r"}};
  const auto envelope_errors = registry.envelope_schema("count").validate(envelope);
  ASSERT_EQ(envelope_errors.size(), 1u);
  EXPECT_EQ(envelope_errors[0].path, "/data/shown");
  EXPECT_TRUE(before.validate(envelope).empty());  // handles taken before are unchanged
  EXPECT_THROW(registry.add_invariant("nope", "x", {}), sp::protocol_error);
}

TEST(SchemaRegistry, EnvelopeSchemaComposesAroundTheDataSchemaAndIsCached) {
  sp::schema_registry registry;
  registry.add({"slot", 1}, json::parse(R"({
      "$id": "slot@1",
      "type": "object",
      "properties": {"when": {"$ref": "#/definitions/time"}},
      "required": ["when"],
      "definitions": {"time": {"type": "string", "pattern": "^[0-9]{2}:[0-9]{2}$"}}})"));
  const auto envelope = registry.envelope_schema("slot@1");
  EXPECT_EQ(envelope.id(), "envelope(slot@1)");
  EXPECT_EQ(registry.envelope_schema("slot").json(), envelope.json());

  EXPECT_TRUE(envelope.validate(json::parse(R"({"data": {"when": "09:30"}, "explanation": "e",
                                                "confidence": 0.9, "reasoning": "r"})"))
                  .empty());
  const auto errors = envelope.validate(json::parse(R"({"data": {"when": "soon"},
      "explanation": "", "confidence": 1.5, "reasoning": "r"})"));
  ASSERT_EQ(errors.size(), 3u) << sp::to_string(errors);
  const std::string all = sp::to_string(errors);
  EXPECT_THAT(all, HasSubstr("/data/when: does not match pattern"));
  EXPECT_THAT(all, HasSubstr("/explanation: string shorter than minLength 1"));
  EXPECT_THAT(errors, ::testing::Contains(::testing::Field(&sp::validation_error::message,
                                                         "must be <= 1, got 1.5")));
}

TEST(SchemaRegistry, ComposeEnvelopeSchemaRequiresEveryField) {
  const json::value composed = sp::compose_envelope_schema(json::parse(R"({"type": "object"})"));
  EXPECT_EQ(composed.at("required"), json::parse(R"(["data","explanation","confidence","reasoning"])"));
  EXPECT_EQ(composed.at("properties").at("data"), json::parse(R"({"type": "object"})"));
  EXPECT_EQ(composed.at("additionalProperties"), false);
}

TEST(SchemaRegistry, ConcurrentLookupsAndRegistrations) {
  sp::schema_registry registry;
  registry.add({"base", 1}, json::parse(object_schema));
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 1; i <= 25; ++i) {
        registry.add({"s" + std::to_string(t), i}, json::parse(object_schema));
        if (!registry.find("base")) ++failures;
        if (registry.envelope_schema("base").id() != "envelope(base@1)") ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(registry.list().size(), 101u);
  EXPECT_EQ(registry.at("s2").id(), "s2@25");
}
