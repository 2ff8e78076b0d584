// take_model_option, configured, call_limits_of: one parser for every
// command that talks to a model.
#include "model_options.hpp"

#include "command.hpp"

#include <switchboard/models/structured.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

namespace switchboard::cli {
namespace {

using ::testing::HasSubstr;

model_options parse(std::vector<std::string> args) {
  model_options out;
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

TEST(take_model_option, takes_every_model_option_with_its_value) {
  const auto o = parse({"--model", "m", "--base-url", "http://h/v1", "--provider", "anthropic", "--mode",
                        "json_object", "--max-attempts", "1", "--ca-file", "ca.pem", "--timeout", "2", "--cache",
                        "dir"});
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
  model_options o;
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

TEST(configured, an_explicit_option_or_the_providers_environment) {
  ::unsetenv("OPENAI_BASE_URL");
  ::unsetenv("OPENAI_API_KEY");
  ::unsetenv("ANTHROPIC_API_KEY");
  ::unsetenv("ANTHROPIC_BASE_URL");
  ::unsetenv("SWITCHBOARD_PROVIDER");
  EXPECT_FALSE(configured({}));
  EXPECT_TRUE(configured(parse({"--model", "m"})));
  EXPECT_TRUE(configured(parse({"--base-url", "http://h/v1"})));
  ::setenv("ANTHROPIC_API_KEY", "k", 1);
  EXPECT_FALSE(configured({}));  // the provider is openai
  ::setenv("SWITCHBOARD_PROVIDER", "anthropic", 1);
  EXPECT_TRUE(configured({}));
  ::unsetenv("SWITCHBOARD_PROVIDER");
  ::unsetenv("ANTHROPIC_API_KEY");
  ::setenv("OPENAI_API_KEY", "k", 1);
  EXPECT_TRUE(configured({}));
  ::unsetenv("OPENAI_API_KEY");
}

TEST(call_limits_of, carries_attempts_timeout_and_mode_and_nothing_unset) {
  EXPECT_TRUE(call_limits_of({}).empty());
  const auto limits = call_limits_of(parse({"--max-attempts", "2", "--timeout", "3", "--mode", "prompt_schema"}));
  EXPECT_EQ(limits.max_attempts, 2);
  EXPECT_EQ(limits.timeout, std::chrono::milliseconds(3000));
  EXPECT_EQ(limits.force_mode, models::output_mode::prompt_schema);
  models::structured_options structured;
  apply_model_options(parse({"--timeout", "3"}), structured);
  EXPECT_EQ(structured.max_attempts, 3);  // the default stays
  EXPECT_EQ(structured.timeout, std::chrono::milliseconds(3000));
}

TEST(model_config_of, the_timeout_bounds_each_request_too) {
  const auto config = model_config_of(parse({"--timeout", "2", "--ca-file", "ca.pem"}));
  EXPECT_EQ(config.http.request_timeout, std::chrono::seconds(2));
  EXPECT_EQ(config.http.connect_timeout, std::chrono::seconds(2));
  EXPECT_EQ(config.http.ca_file, "ca.pem");
}

}  // namespace
}  // namespace switchboard::cli
