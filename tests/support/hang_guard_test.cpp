// hang_guard: a step that ends in time passes untouched; one that hangs
// ends the process with a message naming it instead of stalling the suite.
#include <switchboard/testing/hang_guard.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <thread>

namespace {

using namespace std::chrono_literals;
using switchboard::testing::hang_guard;

TEST(hang_guard, a_step_that_ends_leaves_the_process_alone) {
  int steps = 0;
  for (int i = 0; i < 3; ++i) {
    const hang_guard guard("a quick step", 1s);
    ++steps;
  }
  EXPECT_EQ(steps, 3);
}

TEST(hang_guard, a_step_that_hangs_ends_the_process_naming_it) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        const hang_guard guard("waiting for a reply that never comes", 1s);
        for (;;) std::this_thread::sleep_for(1h);
      },
      ::testing::ExitedWithCode(EXIT_FAILURE),
      "hang guard: waiting for a reply that never comes: still running after 1 s");
}

}  // namespace
