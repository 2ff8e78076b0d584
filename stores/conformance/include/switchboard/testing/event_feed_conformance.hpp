// The event-feed half of the store conformance suite (included by
// checkpoint_store_conformance.hpp): positions, reading from a position,
// a waiter woken by an append, appends made under a run-queue claim.
// Skipped for a backend without a feed (checkpoint_store_backend::open_feed
// unset).
#pragma once

#include <switchboard/testing/checkpoint_store_conformance_support.hpp>
#include <switchboard/testing/run_queue_conformance.hpp>

#include <switchboard/orchestrator/event_feed.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <future>
#include <thread>

namespace switchboard::orchestrator::testing {

inline std::vector<std::string> texts_of(const std::vector<feed_event>& events) {
  std::vector<std::string> texts;
  for (const auto& e : events) texts.push_back(e.event);
  return texts;
}

TEST_P(checkpoint_store_conformance, a_feed_is_read_from_a_position) {
  auto feed = open_feed();
  if (!feed) GTEST_SKIP() << "no event feed in this backend";
  using texts = std::vector<std::string>;
  EXPECT_TRUE(run_now(feed->read("wf", 0, 0)).empty()) << "no feed yet";
  EXPECT_EQ(run_now(feed->append("wf", R"({"type":"started"})")), 1);
  EXPECT_EQ(run_now(feed->append("other", R"({"type":"elsewhere"})")), 1) << "each run counts its own positions";
  EXPECT_EQ(run_now(feed->append("wf", R"({"type":"step"})")), 2);
  EXPECT_EQ(run_now(feed->append("wf", R"({"type":"finished"})")), 3);

  const auto all = run_now(feed->read("wf", 0, 0));
  EXPECT_EQ(texts_of(all), (texts{R"({"type":"started"})", R"({"type":"step"})", R"({"type":"finished"})"}));
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].position, 1);
  EXPECT_EQ(all[2].position, 3);
  EXPECT_EQ(all[0].at, clock_.now()) << "stamped by the feed's clock";
  EXPECT_EQ(texts_of(run_now(feed->read("wf", 1, 0))), (texts{R"({"type":"step"})", R"({"type":"finished"})"}));
  EXPECT_EQ(texts_of(run_now(feed->read("wf", 1, 1))), (texts{R"({"type":"step"})"})) << "at most `limit`";
  EXPECT_TRUE(run_now(feed->read("wf", 3, 0)).empty()) << "nothing after the last";

  EXPECT_EQ(run_now(feed->erase("wf")), 3u);
  EXPECT_TRUE(run_now(feed->read("wf", 0, 0)).empty());
  EXPECT_EQ(run_now(feed->read("other", 0, 0)).size(), 1u) << "erase removes only that run's feed";
  EXPECT_THAT(refusal_message(feed->append("", "{}")), ::testing::HasSubstr("empty workflow_id"));
}

TEST_P(checkpoint_store_conformance, a_feed_appends_a_batch_in_order_at_consecutive_positions) {
  auto feed = open_feed();
  if (!feed) GTEST_SKIP() << "no event feed in this backend";
  using texts = std::vector<std::string>;
  EXPECT_EQ(run_now(feed->append_all("wf", texts{})), 0) << "nothing to append";
  EXPECT_TRUE(run_now(feed->read("wf", 0, 0)).empty());
  EXPECT_EQ(run_now(feed->append("wf", "a")), 1);
  EXPECT_EQ(run_now(feed->append_all("wf", texts{"b", "c", "d"})), 4) << "the last position";
  EXPECT_EQ(run_now(feed->append("wf", "e")), 5);
  const auto all = run_now(feed->read("wf", 0, 0));
  EXPECT_EQ(texts_of(all), (texts{"a", "b", "c", "d", "e"}));
  for (std::size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i].position, static_cast<std::int64_t>(i) + 1);
  EXPECT_THAT(refusal_message(feed->append_all("", texts{"x"})), ::testing::HasSubstr("empty workflow_id"));
}

// A waiter with nothing to read sleeps until an append arrives, from
// another thread; the hang guard is an hour, so only a missed wake-up (or
// a poll that never reads again) fails the test, never a slow machine.
TEST_P(checkpoint_store_conformance, a_feed_waiter_is_woken_by_an_append) {
  auto feed = open_feed();
  if (!feed) GTEST_SKIP() << "no event feed in this backend";
  run_now(feed->append("wf", "first"));
  EXPECT_EQ(texts_of(run_now(feed->wait("wf", 0, 0, std::chrono::hours(1)))), std::vector<std::string>{"first"})
      << "something to read: no wait";

  boost::asio::io_context io;
  auto waited = boost::asio::co_spawn(io, feed->wait("wf", 1, 0, std::chrono::hours(1)), boost::asio::use_future);
  std::thread waiter([&] { io.run(); });
  EXPECT_EQ(waited.wait_for(std::chrono::milliseconds(50)), std::future_status::timeout)
      << "the waiter returned with nothing to read";
  run_now(feed->append("wf", "second"));
  const auto events = waited.get();
  waiter.join();
  EXPECT_EQ(texts_of(events), std::vector<std::string>{"second"});
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].position, 2);

  EXPECT_TRUE(run_now(feed->wait("wf", 2, 0, std::chrono::milliseconds(0))).empty())
      << "a wait that times out returns nothing";
}

// An append made through another instance of the feed (another process,
// for a store other processes share) wakes nobody here: the waiter sees it
// only by reading again on its own, however many times it slept before.
// Skipped for a backend whose instances share nothing.
TEST_P(checkpoint_store_conformance, a_feed_waiter_sees_an_append_made_through_another_instance) {
  auto feed = open_feed();
  auto other = open_feed();
  if (!feed || !other) GTEST_SKIP() << "no event feed in this backend";
  run_now(other->append("probe", "x"));
  if (run_now(feed->read("probe", 0, 0)).empty()) GTEST_SKIP() << "instances of this backend's feed share nothing";

  boost::asio::io_context io;
  auto waited = boost::asio::co_spawn(io, feed->wait("wf", 0, 0, std::chrono::hours(1)), boost::asio::use_future);
  std::thread waiter([&] { io.run(); });
  EXPECT_EQ(waited.wait_for(std::chrono::milliseconds(350)), std::future_status::timeout)
      << "the waiter returned with nothing to read";
  run_now(other->append("wf", "from elsewhere"));
  const auto events = waited.get();
  waiter.join();
  EXPECT_EQ(texts_of(events), std::vector<std::string>{"from elsewhere"});
}

// An append under a claim lands while the queue holds the claim as given
// (owner and fence), lapsed or not, and is refused, appending nothing, once
// another claimant took it, or once it left the queue.
TEST_P(checkpoint_store_conformance, a_claimed_append_lands_only_while_its_claim_is_held) {
  auto feed = open_feed();
  auto queue = open_queue();
  if (!feed || !queue) GTEST_SKIP() << "no event feed or no run queue in this backend";
  using texts = std::vector<std::string>;
  const auto append_as = [&](std::string owner, std::int64_t fence, texts events) {
    return feed->append_claimed("run", std::move(events), feed_claim{"thread", std::move(owner), fence});
  };
  if (!GetParam().feed_checks_claims) {
    run_now(queue->enqueue(queued("thread")));
    const auto held = run_now(queue->claim_next("worker-a", 10s));
    ASSERT_TRUE(held.has_value());
    EXPECT_THAT(refusal_message(append_as("worker-a", held->fence, texts{"x"})), ::testing::HasSubstr("no run queue"))
        << "a claim the feed cannot check is never taken as held";
    EXPECT_TRUE(run_now(feed->read("run", 0, 0)).empty());
    return;
  }
  const auto refusal = [](std::optional<claim_error> e) { return e ? reason_name(e->why()) : "none"; };
  EXPECT_EQ(refusal(claim_refusal(append_as("worker-a", 1, texts{"x"}))), "stale_fence") << "not queued";
  run_now(queue->enqueue(queued("thread")));
  EXPECT_EQ(refusal(claim_refusal(append_as("worker-a", 0, texts{"x"}))), "stale_fence") << "queued, not claimed";

  const auto first = run_now(queue->claim_next("worker-a", 10s));
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(run_now(append_as("worker-a", first->fence, texts{"a1", "a2"})), 2);
  EXPECT_EQ(refusal(claim_refusal(append_as("worker-b", first->fence, texts{"x"}))), "stale_fence")
      << "another owner's";
  EXPECT_EQ(refusal(claim_refusal(append_as("worker-a", first->fence + 1, texts{"x"}))), "stale_fence")
      << "another fence";
  clock_.advance(11s);
  EXPECT_EQ(run_now(append_as("worker-a", first->fence, texts{"a3"})), 3) << "lapsed, but nobody claimed it since";

  const auto second = run_now(queue->claim_next("worker-b", 10s));
  ASSERT_TRUE(second.has_value());
  const auto stale = claim_refusal(append_as("worker-a", first->fence, texts{"stale"}));
  ASSERT_TRUE(stale.has_value()) << "appended after another claimant took the claim";
  EXPECT_EQ(reason_name(stale->why()), "stale_fence");
  EXPECT_THAT(stale->what(), ::testing::HasSubstr("'run'"));
  EXPECT_THAT(stale->what(), ::testing::HasSubstr("claim of 'thread' with fencing number " +
                                                  std::to_string(first->fence) + " is no longer held by 'worker-a'"));
  EXPECT_EQ(run_now(append_as("worker-b", second->fence, texts{"b1"})), 4);
  EXPECT_EQ(run_now(feed->append("run", "unclaimed")), 5) << "an append made under no claim is not checked";
  run_now(queue->done("thread", second->fence));
  EXPECT_EQ(refusal(claim_refusal(append_as("worker-b", second->fence, texts{"x"}))), "stale_fence")
      << "no longer queued";

  EXPECT_EQ(texts_of(run_now(feed->read("run", 0, 0))), (texts{"a1", "a2", "a3", "b1", "unclaimed"}))
      << "nothing refused was appended";
  EXPECT_THAT(refusal_message(feed->append_claimed("run", texts{"x"}, feed_claim{"thread", "", 1})),
              ::testing::HasSubstr("no owner"));
  EXPECT_THAT(refusal_message(feed->append_claimed("", texts{"x"}, feed_claim{"thread", "worker-b", 1})),
              ::testing::HasSubstr("empty workflow_id"));
}

// Appends made at the same moment may be written together (group commit):
// one refused for its claim costs the others nothing. (A feed that checks
// no claims refuses them all.)
TEST_P(checkpoint_store_conformance, a_refused_claimed_append_costs_appends_written_with_it_nothing) {
  auto feed = open_feed();
  auto queue = open_queue();
  if (!feed || !queue) GTEST_SKIP() << "no event feed or no run queue in this backend";
  run_now(queue->enqueue(queued("thread")));
  const auto held = run_now(queue->claim_next("worker-a", 10s));
  ASSERT_TRUE(held.has_value());

  boost::asio::io_context io;
  constexpr int appends = 40;
  std::vector<std::future<std::int64_t>> outcomes;
  for (int i = 0; i < appends; ++i) {
    feed_claim claim{"thread", i % 2 == 1 ? "worker-gone" : "worker-a", held->fence};
    const auto run = "run-" + std::to_string(i % 4);
    outcomes.push_back(boost::asio::co_spawn(
        io, feed->append_claimed(run, std::vector<std::string>{"e" + std::to_string(i)}, std::move(claim)),
        boost::asio::use_future));
  }
  std::thread runner([&] { io.run(); });
  int landed = 0;
  for (int i = 0; i < appends; ++i) {
    if (i % 2 == 0 && GetParam().feed_checks_claims) {
      EXPECT_GT(outcomes[i].get(), 0) << "append " << i << " was held";
      ++landed;
    } else {
      EXPECT_THROW(outcomes[i].get(), checkpoint_error) << "append " << i << " was not held, or not checked";
    }
  }
  runner.join();
  std::size_t read = 0;
  for (int r = 0; r < 4; ++r) {
    const auto events = run_now(feed->read("run-" + std::to_string(r), 0, 0));
    for (std::size_t k = 0; k < events.size(); ++k) EXPECT_EQ(events[k].position, static_cast<std::int64_t>(k) + 1);
    read += events.size();
  }
  EXPECT_EQ(read, static_cast<std::size_t>(landed)) << "every held append, and nothing else";
}

}  // namespace switchboard::orchestrator::testing
