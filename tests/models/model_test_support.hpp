// Helpers shared by the model-layer tests: run a coroutine to completion on
// a private io_context, build requests, make unique temporary directories.
#pragma once

#include <switchboard/testing/temp_dir.hpp>

#include <switchboard/models/chat_model.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <filesystem>
#include <string>
#include <utility>


namespace switchboard::models::test {

// Runs `operation` on a fresh io_context and returns its result (or rethrows).
template <class T>
T run(boost::asio::awaitable<T> operation) {
  boost::asio::io_context io;
  auto result = boost::asio::co_spawn(io, std::move(operation), boost::asio::use_future);
  io.run();
  return result.get();
}

inline chat_request user_request(std::string text, std::string model = "gpt-test") {
  chat_request request;
  request.model = std::move(model);
  request.messages.push_back({chat_role::user, std::move(text)});
  return request;
}

using testing::temp_dir;

}  // namespace switchboard::models::test
