// record_model and replay_model: record a model's answers to a file once,
// then serve them offline and deterministically (the sample's offline mode,
// users' own tests).
//
// File format: JSON Lines, one recording per line, appended:
//   {"hash":"<request_hash>","request":<canonical_request>,
//    "response":{"text":..,"finish_reason":..,"model":..,
//                "usage":{"prompt_tokens":..,"completion_tokens":..},
//                "latency_us":..,"raw_body":..,
//                "stop":"tool_calls",                              (when known)
//                "tool_calls":[{"id":..,"name":..,"arguments":..}]  (when any)}}
// The request is stored in its canonical form so recordings can be read and
// diffed; the hash alone is the key (request_hash.hpp: stable across
// processes and platforms). When a hash occurs on several lines the last
// one wins, so re-recording into the same file updates answers.
//
// Thread-safety: both decorators may be called concurrently from any
// thread. record_model appends each line with a single write() on a file
// opened O_APPEND under a mutex, so several recorders (threads or
// processes) can share one file without interleaving lines.
#pragma once

#include <switchboard/models/chat_model.hpp>

#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace switchboard::models {

// Forwards every request to `inner` and appends each successful answer to
// `file` (created if missing, parent directory must exist). Errors of the
// inner model propagate and are not recorded.
// Completion, cancellation: as the wrapped model; the line is written
// before complete() returns. Throws model_error(not_configured) from the
// constructor when the file cannot be opened, and model_error(invalid_response)
// from complete() when the line cannot be written (names the file).
// Lifetime: `inner` must outlive the recorder.
class record_model final : public chat_model {
 public:
  record_model(chat_model& inner, std::filesystem::path file);
  ~record_model() override;
  record_model(const record_model&) = delete;
  record_model& operator=(const record_model&) = delete;

  boost::asio::awaitable<chat_result> complete(chat_request request) override;
  std::string_view provider() const noexcept override { return inner_.provider(); }
  model_capabilities capabilities() const noexcept override { return inner_.capabilities(); }

  const std::filesystem::path& file() const noexcept { return file_; }

 private:
  void append(const std::string& line);

  chat_model& inner_;
  std::filesystem::path file_;
  std::mutex mutex_;
  int fd_ = -1;
};

struct replay_options {
  // Must match what the recorded model reported: complete_structured picks
  // the response format (and so the request hash) from it.
  model_capabilities capabilities;
  std::string provider_name = "replay";
};

// Serves the answers recorded in `file`. The file is read once, in the
// constructor; throws model_error(not_configured) when it cannot be opened
// and model_error(invalid_response) naming the file and line when a line is
// not a recording. complete() never suspends; a request without recording
// throws model_error(unknown_request) with the request hash and a short
// readable summary of the request.
class replay_model final : public chat_model {
 public:
  explicit replay_model(std::filesystem::path file, replay_options options = {});

  boost::asio::awaitable<chat_result> complete(chat_request request) override;
  std::string_view provider() const noexcept override { return options_.provider_name; }
  model_capabilities capabilities() const noexcept override { return options_.capabilities; }

  std::size_t size() const noexcept { return recordings_.size(); }
  bool contains(const std::string& hash) const { return recordings_.count(hash) != 0; }

 private:
  std::filesystem::path file_;
  replay_options options_;
  std::unordered_map<std::string, chat_result> recordings_;  // immutable after construction
};

}  // namespace switchboard::models
