// The event-feed half of the store conformance suite (included by
// checkpoint_store_conformance.hpp): positions, reading from a position,
// a waiter woken by an append. Skipped for a backend without a feed
// (checkpoint_store_backend::open_feed unset).
#pragma once

#include <switchboard/testing/checkpoint_store_conformance_support.hpp>

#include <switchboard/orchestrator/event_feed.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

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

}  // namespace switchboard::orchestrator::testing
