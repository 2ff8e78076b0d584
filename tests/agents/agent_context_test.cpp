#include <switchboard/agents/agent_context.hpp>

#include <switchboard/models/scripted_model.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace switchboard::agents {
namespace {

using ::testing::ElementsAre;

protocol::envelope with_confidence(double c) {
  protocol::envelope e;
  e.confidence = c;
  return e;
}

TEST(OutputMap, KeepsFirstRunOrderAndTheLatestValue) {
  output_map outputs;
  EXPECT_EQ(outputs.latest("a"), nullptr);
  outputs.set("b", with_confidence(0.1));
  outputs.set("a", with_confidence(0.2));
  outputs.set("b", with_confidence(0.3));
  EXPECT_THAT(outputs.agent_names(), ElementsAre("b", "a"));
  ASSERT_NE(outputs.latest("b"), nullptr);
  EXPECT_DOUBLE_EQ(outputs.latest("b")->confidence, 0.3);
  EXPECT_DOUBLE_EQ(outputs.latest("a")->confidence, 0.2);
}

TEST(ModelSet, FallsBackToTheDefaultRole) {
  model_set models;
  EXPECT_TRUE(models.empty());
  EXPECT_EQ(models.find(), nullptr);
  auto coordinator = std::make_shared<scripted_model>();
  models.add("coordinator", coordinator);
  EXPECT_EQ(models.find("coordinator"), coordinator.get());
  EXPECT_EQ(models.find("parser"), nullptr);
  auto fallback = std::make_shared<scripted_model>();
  models.add("default", fallback);
  EXPECT_EQ(models.find("parser"), fallback.get());
  EXPECT_EQ(models.find(), fallback.get());
  auto replacement = std::make_shared<scripted_model>();
  models.add("coordinator", replacement);
  EXPECT_EQ(models.find("coordinator"), replacement.get());
  EXPECT_FALSE(models.empty());
}

}  // namespace
}  // namespace switchboard::agents
