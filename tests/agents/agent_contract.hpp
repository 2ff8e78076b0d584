// The agent contract suite: every agent — native, LLM-backed, from a plugin —
// must pass it. To run another agent through it, add in any test file of the
// agents (or examples) suite:
//
//   INSTANTIATE_TEST_SUITE_P(my_agents, agent_contract,
//       ::testing::Values(agent_contract_case{"my_agent", &make_my_agent_fixture}),
//       agent_contract_case_name);
//
// where the factory returns an agent_contract_fixture: a registry holding the
// agent (and its schemas), an input it answers validly, an input that makes
// it suspend on a cancellable operation (or nullopt if it never suspends:
// then the test checks that a run under a cancellation slot still completes),
// and the models it needs.
#pragma once

#include <switchboard/agents/agent_registry.hpp>

#include "agent_test_support.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace switchboard::agents::agent_test {

struct agent_contract_fixture {
  std::shared_ptr<agent_registry> registry;
  std::string agent_name;
  boost::json::value valid_input;
  // An input under which run() waits on a cancellable operation long enough
  // for the test to cancel it (e.g. a delayed scripted model).
  std::optional<boost::json::value> suspending_input;
  model_set models;
  // Models for the suspending run; `models` when empty.
  model_set suspending_models;
};

struct agent_contract_case {
  std::string label;
  std::function<agent_contract_fixture()> make;
};

inline std::string agent_contract_case_name(const ::testing::TestParamInfo<agent_contract_case>& info) {
  return info.param.label;
}

class agent_contract : public ::testing::TestWithParam<agent_contract_case> {};

}  // namespace switchboard::agents::agent_test
