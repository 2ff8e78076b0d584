// The exporter against real collectors on 127.0.0.1: delivery, batching,
// the headers it sends, the bounded queue, and the faults — a collector
// that is down, stalls, fails, or asks to be called later — with what each
// is counted as. No assertion bounds a duration from above.
#include <switchboard/telemetry/otlp_exporter.hpp>

#include "collector_fixture.hpp"
#include "self_signed_certificate.hpp"  // tests/support/src

#include <switchboard/testing/hang_guard.hpp>
#include <switchboard/testing/temp_dir.hpp>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

namespace switchboard::telemetry {
namespace {

using namespace collector_testing;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

class OtlpExporter : public ::testing::Test {
 protected:
  testing::hang_guard guard_{std::string("OtlpExporter.") +
                                 ::testing::UnitTest::GetInstance()->current_test_info()->name(),
                             std::chrono::seconds(90)};
};

void send_spans(otlp_exporter& exporter, int count, std::string_view prefix = "span") {
  for (int i = 0; i < count; ++i) exporter.on_end(finished_span(std::string(prefix) + std::to_string(i)));
}

TEST_F(OtlpExporter, PostsJsonToTheTracesPathWithTheConfiguredHeaders) {
  request_log log;
  collector server(answering(log, 200));
  otlp_exporter_options options = test_options(server.traces_url());
  options.headers = {{"x-api-key", "vendor-key-123"}, {"x-team", "hub"}};
  otlp_exporter exporter(options);
  send_spans(exporter, 2);
  ASSERT_TRUE(exporter.force_flush(60s));

  const auto requests = log.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].method, "POST");
  EXPECT_EQ(requests[0].path, "/v1/traces");
  EXPECT_EQ(requests[0].header("content-type"), "application/json");
  EXPECT_EQ(requests[0].header("x-api-key"), "vendor-key-123");
  EXPECT_EQ(requests[0].header("x-team"), "hub");
  EXPECT_THAT(requests[0].span_names(), ElementsAre("span0", "span1"));
  const exporter_counters counters = exporter.counters();
  EXPECT_EQ(counters.exported, 2u);
  EXPECT_EQ(counters.failed, 0u);
  EXPECT_EQ(counters.dropped, 0u);
  EXPECT_EQ(counters.requests, 1u);
}

TEST_F(OtlpExporter, SplitsWhatIsQueuedIntoBatchesOfTheMaximumSize) {
  request_log log;
  collector server(answering(log, 200));
  otlp_exporter_options options = test_options(server.traces_url());
  options.max_export_batch_size = 3;
  otlp_exporter exporter(options);
  send_spans(exporter, 7);
  ASSERT_TRUE(exporter.force_flush(60s));

  std::vector<std::size_t> sizes;
  for (const auto& request : log.requests()) sizes.push_back(request.span_names().size());
  EXPECT_THAT(sizes, ElementsAre(3u, 3u, 1u));
  EXPECT_EQ(exporter.counters().exported, 7u);
}

TEST_F(OtlpExporter, SpansEndedOnSeveralThreadsAtOnceEachArriveOnce) {
  // Each span is encoded on the thread that ends it, outside the queue's
  // lock: no span may be lost, doubled or interleaved with another.
  request_log log;
  collector server(answering(log, 200));
  otlp_exporter_options options = test_options(server.traces_url());
  options.max_export_batch_size = 64;
  options.max_queue_size = 4096;
  otlp_exporter exporter(options);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&exporter, t] { send_spans(exporter, 250, "thread" + std::to_string(t) + "-"); });
  for (auto& thread : threads) thread.join();
  ASSERT_TRUE(exporter.force_flush(60s));

  std::set<std::string> names;
  std::size_t received = 0;
  for (const auto& request : log.requests()) {
    const auto batch = request.span_names();  // each body parsed as JSON
    EXPECT_LE(batch.size(), 64u);
    received += batch.size();
    names.insert(batch.begin(), batch.end());
  }
  EXPECT_EQ(received, 1000u);
  EXPECT_EQ(names.size(), 1000u);
  EXPECT_EQ(names.count("thread3-249"), 1u);
  EXPECT_EQ(exporter.counters().exported, 1000u);
  EXPECT_EQ(exporter.counters().dropped, 0u);
}

TEST_F(OtlpExporter, AHugeSpanThenSmallOnesOnTheSameThreadArriveIntact) {
  // The thread's encoding buffer grows for the huge span and is given back;
  // the spans after it carry none of its bytes.
  request_log log;
  collector server(answering(log, 200));
  otlp_exporter_options options = test_options(server.traces_url());
  otlp_exporter exporter(options);
  span_data huge = finished_span("huge");
  // ~840 KB of escaped text: under the collector's 1 MiB, over the 1 MiB the buffer may keep.
  for (int i = 0; i < 7; ++i) huge.attributes.push_back({"big." + std::to_string(i), std::string(20000, '\x01')});
  exporter.on_end(std::move(huge));
  send_spans(exporter, 3, "small");
  ASSERT_TRUE(exporter.force_flush(60s));
  ASSERT_EQ(log.count(), 1u);
  EXPECT_THAT(log.requests()[0].span_names(), ElementsAre("huge", "small0", "small1", "small2"));
  EXPECT_EQ(exporter.counters().exported, 4u);
}

TEST_F(OtlpExporter, AFullBatchGoesOutWithoutWaitingForTheSchedule) {
  request_log log;
  collector server(answering(log, 200));
  otlp_exporter_options options = test_options(server.traces_url());  // schedule: an hour
  options.max_export_batch_size = 2;
  otlp_exporter exporter(options);
  send_spans(exporter, 2);
  while (log.count() == 0) std::this_thread::sleep_for(5ms);  // the hang guard bounds this
  EXPECT_THAT(log.requests()[0].span_names(), ElementsAre("span0", "span1"));
}

TEST_F(OtlpExporter, TheScheduleSendsAHalfBatch) {
  request_log log;
  collector server(answering(log, 200));
  otlp_exporter_options options = test_options(server.traces_url());
  options.schedule_delay = 20ms;
  otlp_exporter exporter(options);
  send_spans(exporter, 1);
  while (log.count() == 0) std::this_thread::sleep_for(5ms);
  EXPECT_THAT(log.requests()[0].span_names(), ElementsAre("span0"));
}

TEST_F(OtlpExporter, AFullQueueDropsAndCountsWithoutBlockingTheCaller) {
  request_log log;
  collector server(answering(log, 200));
  otlp_exporter_options options = test_options(server.traces_url());
  options.max_queue_size = 5;
  options.max_export_batch_size = 10;  // nothing leaves the queue before the flush
  otlp_exporter exporter(options);
  send_spans(exporter, 8);
  EXPECT_EQ(exporter.counters().dropped, 3u);
  ASSERT_TRUE(exporter.force_flush(60s));

  ASSERT_EQ(log.count(), 1u);
  EXPECT_THAT(log.requests()[0].span_names(), ElementsAre("span0", "span1", "span2", "span3", "span4"));
  const exporter_counters counters = exporter.counters();
  EXPECT_EQ(counters.exported, 5u);
  EXPECT_EQ(counters.dropped, 3u);
}

TEST_F(OtlpExporter, TheQueueStaysBoundedWhileTheCollectorStalls) {
  request_log log;
  collector server(stalling(log));
  otlp_exporter_options options = test_options(server.traces_url());
  options.max_queue_size = 4;
  options.max_export_batch_size = 2;
  options.timeout = 60s;
  otlp_exporter exporter(options);
  send_spans(exporter, 2);  // a full batch: goes out, and the collector holds it
  while (log.count() == 0) std::this_thread::sleep_for(5ms);
  send_spans(exporter, 10, "later");  // 4 fit in the queue, 6 are dropped
  EXPECT_EQ(exporter.counters().dropped, 6u);
  exporter.shutdown(200ms);
  const exporter_counters counters = exporter.counters();
  EXPECT_EQ(counters.exported, 0u);
  EXPECT_EQ(counters.failed, 6u);  // the held batch and the 4 queued
  EXPECT_EQ(counters.dropped, 6u);
}

TEST_F(OtlpExporter, ACollectorThatIsDownIsRetriedThenCountedAsFailed) {
  otlp_exporter_options options = test_options("http://127.0.0.1:" + std::to_string(free_port()) + "/v1/traces");
  options.max_attempts = 3;
  otlp_exporter exporter(options);
  send_spans(exporter, 2);
  ASSERT_TRUE(exporter.force_flush(60s));
  const exporter_counters counters = exporter.counters();
  EXPECT_EQ(counters.failed, 2u);
  EXPECT_EQ(counters.exported, 0u);
  EXPECT_EQ(counters.requests, 3u);
  EXPECT_EQ(counters.retries, 2u);
}

TEST_F(OtlpExporter, ASlowCollectorTimesOutEachAttempt) {
  request_log log;
  collector server(stalling(log));
  otlp_exporter_options options = test_options(server.traces_url());
  options.timeout = 200ms;
  options.max_attempts = 2;
  otlp_exporter exporter(options);
  send_spans(exporter, 3);
  ASSERT_TRUE(exporter.force_flush(60s));
  EXPECT_EQ(log.count(), 2u);  // both attempts reached it, neither was answered
  const exporter_counters counters = exporter.counters();
  EXPECT_EQ(counters.failed, 3u);
  EXPECT_EQ(counters.retries, 1u);
}

TEST_F(OtlpExporter, A500IsFinalAndNotRetried) {
  request_log log;
  collector server(answering(log, 500));
  otlp_exporter_options options = test_options(server.traces_url());
  options.max_attempts = 5;
  otlp_exporter exporter(options);
  send_spans(exporter, 2);
  ASSERT_TRUE(exporter.force_flush(60s));
  EXPECT_EQ(log.count(), 1u);
  const exporter_counters counters = exporter.counters();
  EXPECT_EQ(counters.failed, 2u);
  EXPECT_EQ(counters.retries, 0u);
}

TEST_F(OtlpExporter, SpansACollectorRejectsInAPartialSuccessCountAsFailed) {
  request_log log;
  collector server([&log](net::server_request& request) -> asio::awaitable<net::server_response> {
    log.add(request);
    co_return answer(200, R"({"partialSuccess":{"rejectedSpans":"1","errorMessage":"span too old"}})");
  });
  otlp_exporter exporter(test_options(server.traces_url()));
  send_spans(exporter, 3);
  ASSERT_TRUE(exporter.force_flush(60s));
  const exporter_counters counters = exporter.counters();
  EXPECT_EQ(counters.exported, 2u);
  EXPECT_EQ(counters.failed, 1u);
  EXPECT_EQ(counters.retries, 0u);  // rejected data is not sent again
}

TEST_F(OtlpExporter, A400IsFinalAndNotRetried) {
  request_log log;
  collector server(answering(log, 400));
  otlp_exporter_options options = test_options(server.traces_url());
  otlp_exporter exporter(options);
  send_spans(exporter, 1);
  ASSERT_TRUE(exporter.force_flush(60s));
  EXPECT_EQ(log.count(), 1u);
  EXPECT_EQ(exporter.counters().failed, 1u);
}

// Answers the first `failures` requests with `status` (and `headers`), then 200.
net::request_handler failing_first(request_log& log, int failures, int status,
                                   std::vector<std::pair<std::string, std::string>> headers = {}) {
  return [&log, failures, status, headers](net::server_request& request) -> asio::awaitable<net::server_response> {
    log.add(request);
    if (static_cast<int>(log.count()) <= failures) co_return answer(status, "{}", headers);
    co_return answer(200);
  };
}

TEST_F(OtlpExporter, A429IsRetriedNoSoonerThanItsRetryAfter) {
  request_log log;
  collector server(failing_first(log, 1, 429, {{"Retry-After", "1"}}));
  otlp_exporter_options options = test_options(server.traces_url());
  otlp_exporter exporter(options);
  send_spans(exporter, 2);
  ASSERT_TRUE(exporter.force_flush(60s));

  const auto requests = log.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_GE(requests[1].at - requests[0].at, 1s);  // a lower bound: the server's wish was honoured
  EXPECT_EQ(requests[1].body, requests[0].body);
  const exporter_counters counters = exporter.counters();
  EXPECT_EQ(counters.exported, 2u);
  EXPECT_EQ(counters.retries, 1u);
  EXPECT_EQ(counters.failed, 0u);
}

TEST_F(OtlpExporter, ARetryAfterLongerThanTheCapWaitsOnlyTheCap) {
  request_log log;
  collector server(failing_first(log, 1, 503, {{"Retry-After", "86400"}}));
  otlp_exporter_options options = test_options(server.traces_url());
  options.max_retry_after = 50ms;
  otlp_exporter exporter(options);
  send_spans(exporter, 1);
  ASSERT_TRUE(exporter.force_flush(60s));  // a day's wait would trip the hang guard
  EXPECT_EQ(log.count(), 2u);
  EXPECT_EQ(exporter.counters().exported, 1u);
}

TEST_F(OtlpExporter, A503Then200DeliversTheBatchOnce) {
  request_log log;
  collector server(failing_first(log, 1, 503));
  otlp_exporter_options options = test_options(server.traces_url());
  otlp_exporter exporter(options);
  send_spans(exporter, 3);
  ASSERT_TRUE(exporter.force_flush(60s));
  exporter.shutdown(5s);

  ASSERT_EQ(log.count(), 2u);  // the 503, then the one that was accepted; nothing after
  EXPECT_THAT(log.requests()[1].span_names(), ElementsAre("span0", "span1", "span2"));
  const exporter_counters counters = exporter.counters();
  EXPECT_EQ(counters.exported, 3u);
  EXPECT_EQ(counters.retries, 1u);
  EXPECT_EQ(counters.failed, 0u);
}

TEST_F(OtlpExporter, ShutdownWithAStalledCollectorReturnsAndCountsWhatItGaveUp) {
  request_log log;
  collector server(stalling(log));
  otlp_exporter_options options = test_options(server.traces_url());
  options.timeout = std::chrono::minutes(10);  // only the shutdown's bound can end the request
  otlp_exporter exporter(options);
  send_spans(exporter, 4);
  exporter.shutdown(300ms);  // the hang guard fails the test should this not return

  EXPECT_LE(log.count(), 1u);  // no retry once the deadline is near
  const exporter_counters counters = exporter.counters();
  EXPECT_EQ(counters.failed, 4u);
  EXPECT_EQ(counters.exported, 0u);
  exporter.on_end(finished_span("after the end"));
  EXPECT_EQ(exporter.counters().dropped, 1u);
}

TEST_F(OtlpExporter, ShutdownStopsRetryingAtItsDeadline) {
  request_log log;
  collector server(answering(log, 503));
  otlp_exporter_options options = test_options(server.traces_url());
  options.max_attempts = 1000;
  options.initial_backoff = 100ms;
  options.max_backoff = 100ms;
  otlp_exporter exporter(options);
  send_spans(exporter, 2);
  exporter.shutdown(500ms);
  const exporter_counters counters = exporter.counters();
  EXPECT_EQ(counters.failed, 2u);
  EXPECT_GE(counters.requests, 1u);
  EXPECT_LT(counters.requests, 1000u);
}

TEST_F(OtlpExporter, HttpsVerifiesTheCollectorsCertificate) {
  const testing::temp_dir files("otlp-tls");
  const auto certificate = testing::detail::make_self_signed_certificate({"127.0.0.1"});
  const std::string certificate_file = (files.path() / "collector.pem").string();
  const std::string key_file = (files.path() / "collector.key").string();
  std::ofstream(certificate_file) << certificate.certificate_pem;
  std::ofstream(key_file) << certificate.private_key_pem;
  request_log log;
  net::server_options tls;
  tls.tls_certificate_file = certificate_file;
  tls.tls_private_key_file = key_file;
  collector server(answering(log, 200), tls);

  otlp_exporter_options trusting = test_options(server.traces_url("https"));
  trusting.ca_file = certificate_file;
  otlp_exporter trusted(trusting);
  send_spans(trusted, 1);
  ASSERT_TRUE(trusted.force_flush(60s));
  EXPECT_EQ(trusted.counters().exported, 1u);

  otlp_exporter_options untrusting = test_options(server.traces_url("https"));
  untrusting.max_attempts = 5;
  otlp_exporter untrusted(untrusting);
  send_spans(untrusted, 1);
  ASSERT_TRUE(untrusted.force_flush(60s));
  const exporter_counters counters = untrusted.counters();
  EXPECT_EQ(counters.failed, 1u);
  EXPECT_EQ(counters.retries, 0u);  // the same certificate would be refused again
  EXPECT_EQ(log.count(), 1u);       // only the trusting exporter's request got through
}

TEST_F(OtlpExporter, HeaderValuesNeverReachTheLog) {
  std::ostringstream captured;
  auto previous = spdlog::default_logger();
  auto logger = std::make_shared<spdlog::logger>("captured", std::make_shared<spdlog::sinks::ostream_sink_mt>(captured));
  logger->set_level(spdlog::level::trace);
  spdlog::set_default_logger(logger);
  {
    request_log log;
    // The collector echoes the key back, as a misconfigured proxy might.
    collector server([&log](net::server_request& request) -> asio::awaitable<net::server_response> {
      log.add(request);
      const std::string echoed(request.header("authorization").value_or(""));
      std::string body = "{\"error\":\"bad key " + echoed + "\"}";
      co_return answer(401, std::move(body));
    });
    otlp_exporter_options options = test_options(server.traces_url());
    options.headers = {{"authorization", "Bearer sk-secret-vendor-key"}};
    otlp_exporter exporter(options);
    send_spans(exporter, 1);
    ASSERT_TRUE(exporter.force_flush(60s));
    exporter.shutdown(5s);
    EXPECT_EQ(exporter.counters().failed, 1u);
  }
  spdlog::set_default_logger(previous);
  EXPECT_THAT(captured.str(), HasSubstr("401"));
  EXPECT_THAT(captured.str(), Not(HasSubstr("sk-secret-vendor-key")));
}

TEST_F(OtlpExporter, RefusesAnEndpointThatIsNotHttp) {
  EXPECT_THROW(otlp_exporter(test_options("ftp://127.0.0.1/v1/traces")), std::invalid_argument);
  EXPECT_THROW(otlp_exporter(test_options("http://user:pass@127.0.0.1/v1/traces")), std::invalid_argument);
}

}  // namespace
}  // namespace switchboard::telemetry
