// take_model_option and model_arguments: one parser for every command that
// talks to a model, and the same options written back for a command
// printed for later.
#include "model_arguments.hpp"

#include "command.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace switchboard::cli {
namespace {

using ::testing::HasSubstr;

host::model_options parse(std::vector<std::string> args) {
  host::model_options out;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (!take_model_option(args, i, out)) throw usage_error("not a model option: " + args[i]);
  }
  return out;
}

std::string usage_message(std::vector<std::string> args) {
  try {
    parse(std::move(args));
  } catch (const usage_error& e) {
    return e.what();
  }
  return "(accepted)";
}

const std::vector<std::string> every_option{
    "--model", "m", "--base-url", "http://h/v1", "--provider", "anthropic", "--mode", "json_object",
    "--max-attempts", "1", "--ca-file", "ca.pem", "--timeout", "2", "--cache", "dir"};

TEST(take_model_option, takes_every_model_option_with_its_value) {
  const auto o = parse(every_option);
  EXPECT_EQ(o.model, "m");
  EXPECT_EQ(o.base_url, "http://h/v1");
  EXPECT_EQ(o.provider, "anthropic");
  EXPECT_EQ(o.mode, models::output_mode::json_object);
  EXPECT_EQ(o.max_attempts, 1);
  EXPECT_EQ(o.ca_file, "ca.pem");
  EXPECT_EQ(o.timeout, std::chrono::seconds(2));
  EXPECT_EQ(o.cache_dir, "dir");
}

TEST(take_model_option, leaves_other_options_alone) {
  host::model_options o;
  const std::vector<std::string> args{"--schema", "x"};
  std::size_t i = 0;
  EXPECT_FALSE(take_model_option(args, i, o));
  EXPECT_EQ(i, 0u);
}

TEST(take_model_option, bad_values_name_the_option_and_the_value) {
  EXPECT_THAT(usage_message({"--max-attempts", "0"}), HasSubstr("'--max-attempts'"));
  EXPECT_THAT(usage_message({"--max-attempts", "0"}), HasSubstr("got '0'"));
  EXPECT_THAT(usage_message({"--timeout", "2s"}), HasSubstr("'--timeout' needs an integer from 1 to 86400, got '2s'"));
  EXPECT_THAT(usage_message({"--timeout", "99999999999"}), HasSubstr("got '99999999999'"));
  EXPECT_THAT(usage_message({"--provider", "gemini"}), HasSubstr("'--provider' must be openai or anthropic, got 'gemini'"));
  EXPECT_THAT(usage_message({"--mode", "xml"}), HasSubstr("'--mode' must be json_schema, json_object or prompt_schema, got 'xml'"));
  EXPECT_THAT(usage_message({"--model"}), HasSubstr("option '--model' needs a value"));
}

TEST(model_arguments, reads_back_to_the_same_options) {
  EXPECT_TRUE(model_arguments({}).empty());
  EXPECT_EQ(model_arguments(parse(every_option)), every_option);
}

}  // namespace
}  // namespace switchboard::cli
