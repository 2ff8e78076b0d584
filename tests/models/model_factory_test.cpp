#include <switchboard/models/model_factory.hpp>

#include "http_test_support.hpp"
#include "model_test_support.hpp"

#include <gtest/gtest.h>

#include <cstdlib>

namespace switchboard::models {
namespace {

using testing::loopback_model_server;
using testing::server_action;
using test::error_of;

// Sets environment variables for one test and restores them afterwards.
class scoped_env {
 public:
  scoped_env& set(const char* name, const char* value) {
    const char* old = std::getenv(name);
    saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
    if (value) {
      ::setenv(name, value, 1);
    } else {
      ::unsetenv(name);
    }
    return *this;
  }
  ~scoped_env() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      if (it->second) {
        ::setenv(it->first.c_str(), it->second->c_str(), 1);
      } else {
        ::unsetenv(it->first.c_str());
      }
    }
  }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

scoped_env clean_env() {
  scoped_env env;
  for (const char* name : {"SWITCHBOARD_PROVIDER", "SWITCHBOARD_MODEL", "SWITCHBOARD_OUTPUT_MODE",
                           "OPENAI_BASE_URL", "OPENAI_API_KEY", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY"}) {
    env.set(name, nullptr);
  }
  return env;
}

TEST(ModelFactory, ParsesOutputModes) {
  EXPECT_EQ(parse_output_mode("json_schema"), output_mode::json_schema);
  EXPECT_EQ(parse_output_mode("json_object"), output_mode::json_object);
  EXPECT_EQ(parse_output_mode("prompt_schema"), output_mode::prompt_schema);
  EXPECT_EQ(parse_output_mode("JSON"), std::nullopt);
}

TEST(ModelFactory, OpenAiFromTheConventionalVariables) {
  auto env = clean_env();
  loopback_model_server server;
  server.enqueue(server_action::reply("from env"));
  const std::string base = server.base_url() + "/v1";
  env.set("OPENAI_BASE_URL", base.c_str()).set("OPENAI_API_KEY", test::secret_key).set("SWITCHBOARD_MODEL", "env-model");

  const auto config = model_config_from_env();
  EXPECT_EQ(config.provider, "openai");
  EXPECT_EQ(config.http.base_url, base);
  EXPECT_EQ(config.model, "env-model");

  auto model = make_model_from_env();
  EXPECT_EQ(model->provider(), "openai");
  EXPECT_EQ(test::run(model->complete(test::user_request("q", ""))).text, "from env");
  const auto request = server.requests().at(0);
  EXPECT_EQ(request.header("Authorization"), std::string("Bearer ") + test::secret_key);
  EXPECT_EQ(request.json().at("model"), "env-model");
}

TEST(ModelFactory, ExplicitConfigurationWinsOverTheEnvironment) {
  auto env = clean_env();
  env.set("SWITCHBOARD_PROVIDER", "anthropic").set("SWITCHBOARD_MODEL", "env-model");
  model_config config;
  config.provider = "openai";
  config.model = "mine";
  const auto filled = model_config_from_env(config);
  EXPECT_EQ(filled.provider, "openai");
  EXPECT_EQ(filled.model, "mine");
}

TEST(ModelFactory, AnthropicFromTheEnvironment) {
  auto env = clean_env();
  env.set("SWITCHBOARD_PROVIDER", "anthropic").set("ANTHROPIC_API_KEY", "a-key").set("OPENAI_API_KEY", "o-key");
  const auto config = model_config_from_env();
  EXPECT_EQ(config.provider, "anthropic");
  EXPECT_EQ(config.api_key, "a-key");
  EXPECT_TRUE(config.http.base_url.empty());  // the model falls back to api.anthropic.com
  auto model = make_model(config);
  EXPECT_EQ(model->provider(), "anthropic");
}

TEST(ModelFactory, OutputModeSetsTheBestRung) {
  auto env = clean_env();
  env.set("SWITCHBOARD_OUTPUT_MODE", "json_object");
  auto model = make_model_from_env();
  EXPECT_EQ(model->capabilities().best_mode, output_mode::json_object);
  EXPECT_FALSE(model->capabilities().strict_schema);

  env.set("SWITCHBOARD_OUTPUT_MODE", "xml");
  const auto error = error_of([] { make_model_from_env(); });
  ASSERT_TRUE(error);
  EXPECT_EQ(error->errc(), model_errc::not_configured);
  EXPECT_NE(std::string(error->what()).find("xml"), std::string::npos);
}

TEST(ModelFactory, UnknownProviderIsNamed) {
  model_config config;
  config.provider = "gemini";
  const auto error = error_of([&] { make_model(config); });
  ASSERT_TRUE(error);
  EXPECT_EQ(error->errc(), model_errc::not_configured);
  EXPECT_NE(std::string(error->what()).find("'gemini'"), std::string::npos);
}

}  // namespace
}  // namespace switchboard::models
