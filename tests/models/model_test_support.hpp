// Helpers shared by the model-layer tests: run a coroutine to completion on
// a private io_context, build requests, make unique temporary directories.
#pragma once

#include <switchboard/models/chat_model.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <atomic>
#include <filesystem>
#include <string>
#include <utility>

#include <unistd.h>

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

// A directory under the system temp dir, removed with everything in it.
class temp_dir {
 public:
  temp_dir() {
    static std::atomic<int> counter{0};
    path_ = std::filesystem::temp_directory_path() /
            ("switchboard-model-test-" + std::to_string(::getpid()) + "-" + std::to_string(++counter));
    std::filesystem::create_directories(path_);
  }
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

}  // namespace switchboard::models::test
