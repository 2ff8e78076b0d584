// Helpers for the HTTP model client tests: options pointing at a loopback
// server with fast, jitter-free retries, and a log sink that captures every
// spdlog line so tests can search it for secrets.
#pragma once

#include <switchboard/models/http_options.hpp>
#include <switchboard/models/model_error.hpp>
#include <switchboard/models/openai_model.hpp>
#include <switchboard/testing/loopback_model_server.hpp>

#include "model_test_support.hpp"

#include <boost/asio/awaitable.hpp>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace switchboard::models::test {

inline constexpr const char* secret_key = "sk-test-SECRET-0123456789abcdef";

inline http_options fast_http(const testing::loopback_model_server& server, std::string path = "/v1") {
  http_options http;
  http.base_url = server.base_url() + path;
  http.retry.initial_backoff = std::chrono::milliseconds(1);
  http.retry.max_backoff = std::chrono::milliseconds(5);
  http.retry.jitter = 0;
  http.request_timeout = std::chrono::seconds(20);
  if (!server.ca_file().empty()) http.ca_file = server.ca_file();
  return http;
}

// An OpenAI-compatible client of `server` with the test key and `model` as
// its default model.
inline openai_options openai_for(const testing::loopback_model_server& server, std::string model) {
  openai_options options;
  options.http = fast_http(server);
  options.api_key = secret_key;
  options.model = std::move(model);
  return options;
}

// Options for a server that is not a loopback_model_server (or no server).
inline openai_options options_at(std::string base_url) {
  openai_options options;
  options.http.base_url = std::move(base_url);
  options.model = "m";
  return options;
}

// One question to `model`, run to completion on a fresh io_context.
inline chat_result ask(openai_model& model, std::string text = "hello") {
  return run(model.complete(user_request(std::move(text))));
}

// `count` requests one after the other on one coroutine; the answers' texts joined.
inline boost::asio::awaitable<std::string> ask_in_sequence(openai_model& model, int count) {
  std::string texts;
  for (int i = 0; i < count; ++i) texts += (co_await model.complete(user_request("q"))).text;
  co_return texts;
}

// Records every retry_event the client announces.
struct retry_log {
  std::mutex mutex;
  std::vector<retry_event> events;
  std::function<void(const retry_event&)> observer() {
    return [this](const retry_event& e) {
      std::lock_guard lock(mutex);
      events.push_back(e);
    };
  }
};

// Routes spdlog's default logger into a string at trace level for its
// lifetime, then restores the previous logger.
class captured_log {
 public:
  captured_log() : previous_(spdlog::default_logger()) {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(stream_);
    auto logger = std::make_shared<spdlog::logger>("captured", sink);
    logger->set_level(spdlog::level::trace);
    logger->flush_on(spdlog::level::trace);
    spdlog::set_default_logger(logger);
  }
  ~captured_log() { spdlog::set_default_logger(previous_); }
  captured_log(const captured_log&) = delete;
  captured_log& operator=(const captured_log&) = delete;

  std::string text() const { return stream_.str(); }

 private:
  std::shared_ptr<spdlog::logger> previous_;
  std::ostringstream stream_;
};

// Runs `f` and returns the model_error it throws (nullopt if it throws none).
template <class F>
std::optional<model_error> error_of(F&& f) {
  try {
    f();
  } catch (const model_error& e) {
    return e;
  }
  return std::nullopt;
}

}  // namespace switchboard::models::test
