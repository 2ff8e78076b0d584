#include <switchboard/protocol/envelope.hpp>

#include <boost/json/parse.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace sp = switchboard::protocol;
namespace json = boost::json;
using ::testing::HasSubstr;

namespace {

sp::compiled_schema candidates_schema() {
  return sp::compiled_schema::compile(json::parse(R"({
    "type": "object",
    "properties": {"candidate_times": {"type": "array", "items": {
      "type": "object", "properties": {"time": {"type": "string"}, "score": {"type": "number"}},
      "required": ["time", "score"]}}},
    "required": ["candidate_times"]})"), "scheduling.output@1");
}

json::value good_envelope() {
  return json::parse(R"({"data": {"candidate_times": [{"time": "09:00", "score": 0.8}]},
                         "explanation": "Tuesday morning works.", "confidence": 0.85,
                         "reasoning": "Both calendars are free."})");
}

}  // namespace

TEST(Envelope, RoundTripsThroughJson) {
  const auto parsed = json::try_value_to<sp::envelope>(good_envelope());
  ASSERT_TRUE(parsed);
  EXPECT_EQ(parsed->explanation, "Tuesday morning works.");
  EXPECT_DOUBLE_EQ(parsed->confidence, 0.85);
  EXPECT_FALSE(parsed->failed());
  EXPECT_EQ(json::value_from(*parsed), good_envelope());
}

TEST(Envelope, ConversionRefusesMalformedEnvelopes) {
  for (const char* bad : {
           R"([])",
           R"({"explanation": "e", "confidence": 0.5, "reasoning": "r"})",
           R"({"data": [], "explanation": "e", "confidence": 0.5, "reasoning": "r"})",
           R"({"data": {}, "explanation": 3, "confidence": 0.5, "reasoning": "r"})",
           R"({"data": {}, "explanation": "e", "confidence": "0.5", "reasoning": "r"})",
           R"({"data": {}, "explanation": "e", "confidence": 1.01, "reasoning": "r"})",
           R"({"data": {}, "explanation": "e", "confidence": -0.1, "reasoning": "r"})",
           R"({"data": {}, "explanation": "e", "confidence": 0.5})",
           R"({"data": {}, "explanation": "e", "confidence": 0.5, "reasoning": "r",
               "error": {"type": "timeout"}})",
       }) {
    const auto result = json::try_value_to<sp::envelope>(json::parse(bad));
    ASSERT_FALSE(result) << bad;
    EXPECT_EQ(result.error(), sp::errc::invalid_envelope) << bad;
  }
}

TEST(Envelope, TakeEnvelopeConvertsLikeValueToAndMovesData) {
  json::value source = good_envelope();
  const json::value* data_before = &source.at("data").at("candidate_times");
  const void* items_before = data_before->as_array().data();
  const auto taken = sp::take_envelope(std::move(source));
  ASSERT_TRUE(taken);
  EXPECT_EQ(json::value_from(*taken), good_envelope());
  // The array's storage moved with it: nothing was copied.
  EXPECT_EQ(taken->data.at("candidate_times").as_array().data(), items_before);

  for (const char* bad : {
           R"({"data": {"a": 1}, "explanation": "e", "confidence": 1.01, "reasoning": "r"})",
           R"({"data": [], "explanation": "e", "confidence": 0.5, "reasoning": "r"})",
           R"({"data": {"a": 1}, "explanation": "e", "confidence": 0.5})",
       }) {
    const auto result = sp::take_envelope(json::parse(bad));
    ASSERT_FALSE(result) << bad;
    EXPECT_EQ(result.error(), sp::errc::invalid_envelope) << bad;
  }
}

TEST(Envelope, ErrorEnvelopeCarriesTheRecord) {
  const auto e = sp::make_error_envelope(
      {"timeout", "agent 'scheduler' did not answer within 30 s", true, "scheduler"},
      "The scheduler did not answer in time.");
  EXPECT_TRUE(e.failed());
  EXPECT_EQ(e.confidence, 0.0);
  EXPECT_THAT(e.reasoning, HasSubstr("timeout"));
  EXPECT_THAT(e.reasoning, HasSubstr("scheduler"));
  const json::value j = json::value_from(e);
  EXPECT_EQ(j.at("error").at("type"), "timeout");
  EXPECT_EQ(j.at("error").at("retryable"), true);
  const auto back = json::try_value_to<sp::envelope>(j);
  ASSERT_TRUE(back);
  ASSERT_TRUE(back->error);
  EXPECT_EQ(back->error->agent, "scheduler");
  EXPECT_TRUE(back->error->retryable);
}

TEST(ValidateEnvelope, ValidEnvelopeHasNoErrors) {
  EXPECT_TRUE(sp::validate_envelope(good_envelope(), candidates_schema()).empty());
}

TEST(ValidateEnvelope, DataErrorsCarryTheDataPrefix) {
  auto envelope = good_envelope();
  envelope.at("data").at("candidate_times").at(0).at("score") = "high";
  const auto errors = sp::validate_envelope(envelope, candidates_schema());
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].to_string(), "/data/candidate_times/0/score: expected number, got string");
  EXPECT_EQ(errors[0].kind, sp::errc::schema_type_error);
}

TEST(ValidateEnvelope, FieldErrorsNameTheField) {
  const auto errors = sp::validate_envelope(
      json::parse(R"({"data": {"candidate_times": []}, "explanation": "",
                      "confidence": 2, "reasoning": 7, "mood": "great"})"),
      candidates_schema());
  ASSERT_EQ(errors.size(), 4u) << sp::to_string(errors);
  EXPECT_EQ(errors[0].to_string(), "/explanation: must be a non-empty string");
  EXPECT_EQ(errors[1].to_string(), "/confidence: must be a finite number in [0, 1], got 2");
  const auto fractional = sp::validate_envelope(
      json::parse(R"({"data": {"candidate_times": []}, "explanation": "e", "confidence": 1.25,
                      "reasoning": "r"})"),
      candidates_schema());
  ASSERT_EQ(fractional.size(), 1u);
  EXPECT_EQ(fractional[0].to_string(), "/confidence: must be a finite number in [0, 1], got 1.25");
  EXPECT_EQ(errors[2].to_string(), "/reasoning: expected string, got integer");
  EXPECT_EQ(errors[3].path, "/mood");
}

TEST(ValidateEnvelope, MissingFieldsAndNonObjectData) {
  auto errors = sp::validate_envelope(json::parse(R"({"data": []})"), candidates_schema());
  ASSERT_EQ(errors.size(), 4u);
  EXPECT_EQ(errors[0].to_string(), "/data: expected object, got array");
  EXPECT_EQ(errors[1].to_string(), "/explanation: required property missing");
  EXPECT_EQ(errors[1].kind, sp::errc::schema_missing_field);
  errors = sp::validate_envelope(json::parse("\"text\""), candidates_schema());
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].path, "");
}

TEST(ValidateEnvelope, TypedEnvelopeWithNonFiniteConfidence) {
  auto e = *json::try_value_to<sp::envelope>(good_envelope());
  e.confidence = std::numeric_limits<double>::quiet_NaN();
  const auto errors = sp::validate_envelope(e, candidates_schema());
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].path, "/confidence");
  e.confidence = 0.5;
  EXPECT_TRUE(sp::validate_envelope(e, candidates_schema()).empty());
}

TEST(ValidateEnvelope, MalformedErrorRecordIsReported) {
  auto envelope = good_envelope();
  envelope.as_object()["error"] = json::parse(R"({"type": 1})");
  const auto errors = sp::validate_envelope(envelope, candidates_schema());
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].path, "/error");
}

// The struct overload checks the fields directly; its errors must be those
// the JSON overload gives for the same envelope, in the same order.
TEST(ValidateEnvelope, TypedEnvelopeGivesTheErrorsOfItsJsonForm) {
  const auto schema = candidates_schema();
  auto same_as_json = [&](const sp::envelope& e) {
    const auto typed = sp::validate_envelope(e, schema);
    const auto as_json = sp::validate_envelope(json::value_from(e), schema);
    ASSERT_EQ(typed.size(), as_json.size()) << sp::to_string(typed) << "\nvs\n" << sp::to_string(as_json);
    for (std::size_t i = 0; i < typed.size(); ++i) {
      EXPECT_EQ(typed[i].path, as_json[i].path);
      EXPECT_EQ(typed[i].message, as_json[i].message);
      EXPECT_EQ(typed[i].kind, as_json[i].kind);
    }
  };
  const auto good = *json::try_value_to<sp::envelope>(good_envelope());
  same_as_json(good);

  auto e = good;
  e.explanation.clear();
  e.reasoning.clear();
  e.confidence = 1.25;
  e.data = json::parse(R"({"candidate_times": [{"time": 9}], "extra": true})").as_object();
  same_as_json(e);
  const auto errors = sp::validate_envelope(e, schema);
  ASSERT_EQ(errors.size(), 5u);
  EXPECT_EQ(errors[0].to_string(), "/data/candidate_times/0/time: expected string, got integer");
  EXPECT_EQ(errors[1].to_string(), "/data/candidate_times/0/score: required property missing");
  EXPECT_EQ(errors[2].to_string(), "/explanation: must be a non-empty string");
  EXPECT_EQ(errors[3].to_string(), "/confidence: must be a finite number in [0, 1], got 1.25");
  EXPECT_EQ(errors[4].to_string(), "/reasoning: must be a non-empty string");

  e = good;
  e.confidence = -0.5;
  same_as_json(e);
  e = sp::make_error_envelope({"timeout", "agent 'x' timed out", true, "x"}, "The agent timed out.");
  e.data = good.data;
  same_as_json(e);
  EXPECT_TRUE(sp::validate_envelope(e, schema).empty());

  // NaN cannot be written as JSON: its error comes first, then the rest.
  e = good;
  e.confidence = std::numeric_limits<double>::infinity();
  e.explanation.clear();
  const auto non_finite = sp::validate_envelope(e, schema);
  ASSERT_EQ(non_finite.size(), 2u);
  EXPECT_EQ(non_finite[0].path, "/confidence");
  EXPECT_THAT(non_finite[0].message, HasSubstr("inf"));
  EXPECT_EQ(non_finite[1].to_string(), "/explanation: must be a non-empty string");
}
