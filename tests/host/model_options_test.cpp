// configured, model_only_options_given, call_limits_of, model_config_of:
// the model options as data, the same for every host.
#include <switchboard/host/model_options.hpp>

#include <switchboard/models/structured.hpp>

#include <gtest/gtest.h>

#include <cstdlib>

namespace switchboard::host {
namespace {

// Options with what `set` sets, the rest as default.
template <class Set>
model_options options(Set set) {
  model_options out;
  set(out);
  return out;
}

TEST(configured, an_explicit_option_or_the_providers_environment) {
  ::unsetenv("OPENAI_BASE_URL");
  ::unsetenv("OPENAI_API_KEY");
  ::unsetenv("ANTHROPIC_API_KEY");
  ::unsetenv("ANTHROPIC_BASE_URL");
  ::unsetenv("SWITCHBOARD_PROVIDER");
  EXPECT_FALSE(configured({}));
  EXPECT_TRUE(configured(options([](auto& o) { o.model = "m"; })));
  EXPECT_TRUE(configured(options([](auto& o) { o.base_url = "http://h/v1"; })));
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

TEST(model_only_options_given, names_the_options_that_act_only_on_a_model) {
  EXPECT_FALSE(model_only_options_given({}));
  EXPECT_FALSE(model_only_options_given(options([](auto& o) {
    o.model = "m";
    o.base_url = "http://h/v1";
    o.provider = "openai";
  })));
  EXPECT_TRUE(model_only_options_given(options([](auto& o) { o.max_attempts = 2; })));
  EXPECT_TRUE(model_only_options_given(options([](auto& o) { o.timeout = std::chrono::seconds(1); })));
  EXPECT_TRUE(model_only_options_given(options([](auto& o) { o.cache_dir = "cache"; })));
}

TEST(call_limits_of, carries_attempts_timeout_and_mode_and_nothing_unset) {
  EXPECT_TRUE(call_limits_of({}).empty());
  const auto limits = call_limits_of(options([](auto& o) {
    o.mode = models::output_mode::prompt_schema;
    o.max_attempts = 2;
    o.timeout = std::chrono::seconds(3);
  }));
  EXPECT_EQ(limits.max_attempts, 2);
  EXPECT_EQ(limits.timeout, std::chrono::milliseconds(3000));
  EXPECT_EQ(limits.force_mode, models::output_mode::prompt_schema);
  models::structured_options structured;
  apply_model_options(options([](auto& o) { o.timeout = std::chrono::seconds(3); }), structured);
  EXPECT_EQ(structured.max_attempts, 3);  // the default stays
  EXPECT_EQ(structured.timeout, std::chrono::milliseconds(3000));
}

TEST(model_config_of, the_timeout_bounds_each_request_too) {
  const auto config = model_config_of(options([](auto& o) {
    o.ca_file = "ca.pem";
    o.timeout = std::chrono::seconds(2);
  }));
  EXPECT_EQ(config.http.request_timeout, std::chrono::seconds(2));
  EXPECT_EQ(config.http.connect_timeout, std::chrono::seconds(2));
  EXPECT_EQ(config.http.ca_file, "ca.pem");
}

}  // namespace
}  // namespace switchboard::host
