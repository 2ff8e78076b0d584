#include <switchboard/agents/escaping_sink.hpp>

#include "../cli_runner.hpp"

#include <gtest/gtest.h>
#include <spdlog/logger.h>
#include <spdlog/sinks/ostream_sink.h>

#include <algorithm>
#include <sstream>

namespace {

using switchboard::agents::escape_log_messages;
using switchboard::agents::escaping_sink;
using switchboard::agents::make_escaping_sink;
using switchboard::test::find_raw_control;
using switchboard::test::forged_record;
using switchboard::test::has_line_starting_with;
using switchboard::test::hostile_text;

class EscapingSink : public ::testing::Test {
 protected:
  EscapingSink() : inner_(std::make_shared<spdlog::sinks::ostream_sink_mt>(stream_)) {
    inner_->set_pattern("[%l] %v");
  }

  std::shared_ptr<spdlog::logger> escaped_logger() {
    return std::make_shared<spdlog::logger>("test", make_escaping_sink(inner_));
  }

  std::size_t line_count() const { return std::ranges::count(stream_.str(), '\n'); }

  std::ostringstream stream_;
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> inner_;
};

TEST_F(EscapingSink, AMessageWithNewlinesStaysOneLine) {
  escaped_logger()->info("step 1 explanation: {}", hostile_text);
  const std::string out = stream_.str();
  EXPECT_EQ(line_count(), 1u) << out;
  EXPECT_TRUE(out.ends_with("\n"));  // the sink's own terminator stays
  EXPECT_FALSE(has_line_starting_with(out, forged_record)) << out;
  EXPECT_EQ(find_raw_control(out), "") << out;
  EXPECT_TRUE(out.starts_with("[info] step 1 explanation: \\x1b[2J\\x1b]0;pwned\\x07")) << out;
  EXPECT_NE(out.find("\\n[2026-11-25 10:00:00] [info] approved"), std::string::npos) << out;
}

TEST_F(EscapingSink, CleanMessagesPassUnchanged) {
  escaped_logger()->warn("caf\xc3\xa9 \xf0\x9f\x99\x82 ok");
  EXPECT_EQ(stream_.str(), "[warning] caf\xc3\xa9 \xf0\x9f\x99\x82 ok\n");
}

TEST_F(EscapingSink, APatternSetLaterStillEscapes) {
  auto logger = escaped_logger();
  logger->set_pattern("%n|%v");
  logger->info("a\nb\x1b");
  EXPECT_EQ(stream_.str(), "test|a\\nb\\x1b\n");
}

TEST_F(EscapingSink, TheWrappedSinksLevelStillFilters) {
  inner_->set_level(spdlog::level::warn);
  auto logger = escaped_logger();
  logger->info("dropped");
  logger->warn("kept");
  EXPECT_EQ(stream_.str(), "[warning] kept\n");
}

TEST_F(EscapingSink, EscapeLogMessagesWrapsEverySinkOnce) {
  std::ostringstream second_stream;
  auto second = std::make_shared<spdlog::sinks::ostream_sink_mt>(second_stream);
  second->set_pattern("%v");
  spdlog::logger logger("test", {inner_, second});
  escape_log_messages(logger);
  escape_log_messages(logger);
  ASSERT_EQ(logger.sinks().size(), 2u);
  for (const auto& sink : logger.sinks()) {
    const auto wrapper = std::dynamic_pointer_cast<escaping_sink>(sink);
    ASSERT_NE(wrapper, nullptr);
    EXPECT_EQ(std::dynamic_pointer_cast<escaping_sink>(wrapper->inner()), nullptr);  // not wrapped twice
  }
  logger.error("x\ry");
  EXPECT_EQ(stream_.str(), "[error] x\\ry\n");
  EXPECT_EQ(second_stream.str(), "x\\ry\n");
}

TEST(EscapingSinkConstruction, ANullSinkIsRefused) {
  EXPECT_THROW(escaping_sink{nullptr}, std::invalid_argument);
}

}  // namespace
