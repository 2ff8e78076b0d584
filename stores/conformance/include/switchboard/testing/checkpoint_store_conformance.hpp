// The conformance suite every store backend must pass, installed with the
// package so a backend written elsewhere runs the same tests as ours:
//
//   storage    round trips, saves, creation, journals, listing and paging,
//              pruning, completion on the caller's executor
//   ownership  claims, fencing, leases, racing writers and claimants
//   run queue  ready order, racing claimants, a lapsed lease reclaimed
//   event feed reading from a position, a waiter woken by an append
//
// A backend joins by instantiating the value-parameterized suite with a
// checkpoint_store_backend, in exactly one translation unit of its test
// binary (the headers define the tests), linking GoogleTest (GTest::gmock,
// GTest::gtest_main) and switchboard::store_conformance:
//
//   #include <switchboard/testing/checkpoint_store_conformance.hpp>
//   using switchboard::orchestrator::testing::checkpoint_store_backend;
//   INSTANTIATE_TEST_SUITE_P(my_backend, checkpoint_store_conformance,
//       ::testing::Values(checkpoint_store_backend{"my_backend", open_store, open_queue, open_feed}),
//       checkpoint_store_backend_name);
//
// open_queue and open_feed may be left empty: those tests are then skipped.
// The backends of this project join in tests/orchestrator/checkpoint_store_test.cpp.
#pragma once

#include <switchboard/testing/checkpoint_store_conformance_storage.hpp>
#include <switchboard/testing/checkpoint_store_conformance_ownership.hpp>
#include <switchboard/testing/event_feed_conformance.hpp>
#include <switchboard/testing/run_queue_conformance.hpp>
