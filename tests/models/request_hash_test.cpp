#include <switchboard/models/request_hash.hpp>

#include "model_test_support.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <gtest/gtest.h>

namespace switchboard::models {
namespace {

chat_request sample_request() {
  chat_request request = test::user_request("Book the dentist on Tuesday", "gpt-4o-mini");
  request.messages.insert(request.messages.begin(), {chat_role::system, "You schedule."});
  request.prompt_version = "nl_parser@3";
  request.temperature = 0.25;
  request.max_tokens = 512;
  request.seed = 42;
  request.stop = {"\n\n"};
  request.format.type = response_format::kind::json_schema;
  request.format.name = "nl_parser_output_1";
  request.format.strict = true;
  request.format.schema = boost::json::parse(
      R"({"type":"object","properties":{"when":{"type":"string"}},"required":["when"]})");
  return request;
}

TEST(request_hash, is_pinned_so_recordings_stay_valid_across_builds_and_platforms) {
  // If this changes, every recording on disk silently stops matching: bump
  // the format tag in request_hash.cpp instead of updating the constant.
  EXPECT_EQ(boost::json::serialize(canonical_request(sample_request())),
            R"({"format":"switchboard.chat_request/1","model":"gpt-4o-mini","prompt_version":"nl_parser@3",)"
            R"("messages":[["system","You schedule."],["user","Book the dentist on Tuesday"]],)"
            R"("temperature":2.5E-1,"max_tokens":512,"seed":42,"stop":["\n\n"],)"
            R"("response_format":{"type":"json_schema","name":"nl_parser_output_1","strict":true,)"
            R"("schema":{"properties":{"when":{"type":"string"}},"required":["when"],"type":"object"}}})");
  EXPECT_EQ(request_hash(sample_request()),
            "9dce09e361abdd8cacd08fc3eacce59f807ec39adb18c82f6a34edc866d5fab6");
}

TEST(request_hash, schema_key_order_does_not_matter) {
  chat_request reordered = sample_request();
  reordered.format.schema = boost::json::parse(
      R"({"required":["when"],"properties":{"when":{"type":"string"}},"type":"object"})");
  EXPECT_EQ(request_hash(reordered), request_hash(sample_request()));
}

TEST(request_hash, every_field_changes_the_hash) {
  const std::string base = request_hash(sample_request());
  EXPECT_EQ(base.size(), 64u);
  auto changed = [&](auto&& mutate) {
    chat_request request = sample_request();
    mutate(request);
    return request_hash(request) != base;
  };
  EXPECT_TRUE(changed([](chat_request& r) { r.model = "gpt-4o"; }));
  EXPECT_TRUE(changed([](chat_request& r) { r.prompt_version = "nl_parser@4"; }));
  EXPECT_TRUE(changed([](chat_request& r) { r.messages[1].content += "!"; }));
  EXPECT_TRUE(changed([](chat_request& r) { r.messages[0].role = chat_role::user; }));
  EXPECT_TRUE(changed([](chat_request& r) { r.temperature.reset(); }));
  EXPECT_TRUE(changed([](chat_request& r) { r.max_tokens = 513; }));
  EXPECT_TRUE(changed([](chat_request& r) { r.seed = 43; }));
  EXPECT_TRUE(changed([](chat_request& r) { r.stop.clear(); }));
  EXPECT_TRUE(changed([](chat_request& r) { r.format.strict = false; }));
  EXPECT_TRUE(changed([](chat_request& r) { r.format.name = "x"; }));
  EXPECT_TRUE(changed([](chat_request& r) {
    auto schema = r.format.schema.json();
    schema.as_object()["type"] = "array";
    r.format.schema = std::move(schema);
  }));
  EXPECT_TRUE(changed([](chat_request& r) { r.format.type = response_format::kind::json_object; }));
}

TEST(request_hash, message_boundaries_are_not_ambiguous) {
  chat_request one = test::user_request("ab");
  chat_request two = test::user_request("a");
  two.messages.push_back({chat_role::user, "b"});
  EXPECT_NE(request_hash(one), request_hash(two));
}

TEST(request_summary, is_short_readable_and_on_one_line) {
  chat_request request = sample_request();
  request.messages.back().content = "line one\nline two " + std::string(200, 'x');
  const std::string summary = request_summary(request);
  EXPECT_NE(summary.find("model 'gpt-4o-mini'"), std::string::npos) << summary;
  EXPECT_NE(summary.find("prompt nl_parser@3"), std::string::npos) << summary;
  EXPECT_NE(summary.find("2 message(s)"), std::string::npos) << summary;
  EXPECT_NE(summary.find("json_schema 'nl_parser_output_1' strict"), std::string::npos) << summary;
  EXPECT_NE(summary.find("\"line one line two xxx"), std::string::npos) << summary;
  EXPECT_EQ(summary.find('\n'), std::string::npos);
  EXPECT_LT(summary.size(), 250u);
}

}  // namespace
}  // namespace switchboard::models
