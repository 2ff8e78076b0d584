// scripted_model: a chat_model test double that answers from a script, so an
// application's tests run offline and deterministically.
//
// Each call to complete() takes the next step of the script, in order: a
// text (or a full chat_result) to return, an exception to throw, or a
// function of the request that computes the answer. A step may carry a
// delay, waited on an Asio steady_timer on the calling coroutine's executor,
// so concurrency tests can keep calls suspended. Every request received is
// recorded, including those that hit an error step or the end of the
// script. When the script runs out, complete() throws
// model_error(script_exhausted) naming the call number.
//
// Completion: returns the step's answer (model = the request's model or
// "scripted", finish_reason "stop" and latency = time spent in the delay,
// unless the step's result sets them) or throws the step's exception. Cancellation:
// cancelling the awaiting coroutine during a delay throws
// model_error(cancelled); steps without a delay complete immediately.
// Lifetime: the model must outlive every pending complete().
//
// Thread-safety: complete(), push() and the observers may be called
// concurrently from any thread (one internal mutex, never held across a
// suspension). Steps are taken in the order the calls arrive.
#pragma once

#include <switchboard/models/chat_model.hpp>
#include <switchboard/models/model_error.hpp>

#include <chrono>
#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace switchboard::models {

// One step of a script. Build with the static factories.
class scripted_response {
 public:
  using responder = std::function<chat_result(const chat_request&)>;

  // Returns `text` with the given usage.
  static scripted_response text(std::string text, token_usage usage = {});
  // Returns an assistant turn calling `calls` (in parallel when several),
  // with `text` said beside them: stop `tool_calls`, finish_reason
  // "tool_calls". The calls are returned as given, unchecked, so a test can
  // hand the tool loop a malformed one.
  static scripted_response tool_calls(std::vector<tool_call> calls, std::string text = {}, token_usage usage = {});
  // Returns `result` as is (model and finish_reason filled in if empty).
  static scripted_response result(chat_result result);
  // Throws `error` (a copy per call).
  static scripted_response error(model_error error);
  // Throws whatever `error` holds.
  static scripted_response exception(std::exception_ptr error);
  // Returns fn(request); whatever fn throws propagates.
  static scripted_response from(responder fn);

  // Waits `delay` (Asio timer) before answering or throwing.
  scripted_response& after(std::chrono::steady_clock::duration delay) &;
  scripted_response&& after(std::chrono::steady_clock::duration delay) &&;

  std::chrono::steady_clock::duration delay() const noexcept { return delay_; }
  // The answer for `request`, or throws the step's exception.
  chat_result respond(const chat_request& request) const;

 private:
  scripted_response() = default;
  responder respond_;
  std::chrono::steady_clock::duration delay_{0};
};

class scripted_model final : public chat_model {
 public:
  explicit scripted_model(std::vector<scripted_response> script = {},
                          model_capabilities capabilities = {},
                          std::string provider_name = "scripted");

  // Appends a step to the script.
  void push(scripted_response step);
  void push_text(std::string text, token_usage usage = {});

  boost::asio::awaitable<chat_result> complete(chat_request request) override;
  std::string_view provider() const noexcept override { return provider_name_; }
  model_capabilities capabilities() const noexcept override { return capabilities_; }

  // Every request received so far, in arrival order (a copy).
  std::vector<chat_request> requests() const;
  // The request of call `index` (0-based); throws std::out_of_range.
  chat_request request(std::size_t index) const;
  std::size_t calls() const;
  std::size_t remaining() const;

 private:
  mutable std::mutex mutex_;
  std::vector<scripted_response> script_;
  std::size_t next_ = 0;
  std::vector<chat_request> requests_;
  model_capabilities capabilities_;
  std::string provider_name_;
};

}  // namespace switchboard::models
