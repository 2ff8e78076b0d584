#include <switchboard/models/scripted_model.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <optional>
#include <stdexcept>
#include <utility>

namespace switchboard::models {

namespace asio = boost::asio;

namespace {

chat_result completed(chat_result result, const chat_request& request) {
  if (result.model.empty()) result.model = request.model.empty() ? "scripted" : request.model;
  if (result.finish_reason.empty()) result.finish_reason = "stop";
  return result;
}

}  // namespace

scripted_response scripted_response::text(std::string text, token_usage usage) {
  chat_result result;
  result.raw_body = text;
  result.text = std::move(text);
  result.usage = usage;
  return scripted_response::result(std::move(result));
}

scripted_response scripted_response::tool_calls(std::vector<tool_call> calls, std::string text, token_usage usage) {
  chat_result result;
  result.text = std::move(text);
  result.tool_calls = std::move(calls);
  result.finish_reason = "tool_calls";
  result.stop = stop_reason::tool_calls;
  result.usage = usage;
  return scripted_response::result(std::move(result));
}

scripted_response scripted_response::result(chat_result result) {
  scripted_response step;
  step.respond_ = [result = std::move(result)](const chat_request& request) {
    return completed(result, request);
  };
  return step;
}

scripted_response scripted_response::error(model_error error) {
  return exception(std::make_exception_ptr(std::move(error)));
}

scripted_response scripted_response::exception(std::exception_ptr error) {
  if (!error) throw std::invalid_argument("scripted_response::exception: null exception_ptr");
  scripted_response step;
  step.respond_ = [error](const chat_request&) -> chat_result { std::rethrow_exception(error); };
  return step;
}

scripted_response scripted_response::from(responder fn) {
  if (!fn) throw std::invalid_argument("scripted_response::from: empty function");
  scripted_response step;
  step.respond_ = [fn = std::move(fn)](const chat_request& request) {
    return completed(fn(request), request);
  };
  return step;
}

scripted_response& scripted_response::after(std::chrono::steady_clock::duration delay) & {
  delay_ = delay;
  return *this;
}

scripted_response&& scripted_response::after(std::chrono::steady_clock::duration delay) && {
  delay_ = delay;
  return std::move(*this);
}

chat_result scripted_response::respond(const chat_request& request) const {
  return respond_(request);
}

scripted_model::scripted_model(std::vector<scripted_response> script,
                               model_capabilities capabilities, std::string provider_name)
    : script_(std::move(script)),
      capabilities_(capabilities),
      provider_name_(std::move(provider_name)) {}

void scripted_model::push(scripted_response step) {
  std::lock_guard lock(mutex_);
  script_.push_back(std::move(step));
}

void scripted_model::push_text(std::string text, token_usage usage) {
  push(scripted_response::text(std::move(text), usage));
}

asio::awaitable<chat_result> scripted_model::complete(chat_request request) {
  std::optional<scripted_response> step;
  std::size_t call_number = 0;
  std::size_t script_size = 0;
  {
    std::lock_guard lock(mutex_);
    requests_.push_back(request);
    call_number = requests_.size();
    script_size = script_.size();
    if (next_ < script_.size()) step = script_[next_++];
  }
  if (!step)
    throw model_error(model_errc::script_exhausted,
                      provider_name_ + " model: no scripted response left for call " +
                          std::to_string(call_number) + " (the script has " +
                          std::to_string(script_size) + " response(s))");

  const auto started = std::chrono::steady_clock::now();
  if (step->delay() > std::chrono::steady_clock::duration::zero()) {
    asio::steady_timer timer(co_await asio::this_coro::executor, step->delay());
    auto [ec] = co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
    if (ec)
      throw model_error(model_errc::cancelled, provider_name_ + " model: call " +
                                                   std::to_string(call_number) +
                                                   " cancelled during its scripted delay");
  }
  chat_result result = step->respond(request);
  if (result.latency == std::chrono::microseconds::zero())
    result.latency = std::chrono::duration_cast<std::chrono::microseconds>(
        std::chrono::steady_clock::now() - started);
  deliver_whole(request.stream, result);  // a streamed request: the scripted answer as one piece
  co_return result;
}

std::vector<chat_request> scripted_model::requests() const {
  std::lock_guard lock(mutex_);
  return requests_;
}

chat_request scripted_model::request(std::size_t index) const {
  std::lock_guard lock(mutex_);
  if (index >= requests_.size())
    throw std::out_of_range("scripted_model: no request " + std::to_string(index) + " (received " +
                            std::to_string(requests_.size()) + ")");
  return requests_[index];
}

std::size_t scripted_model::calls() const {
  std::lock_guard lock(mutex_);
  return requests_.size();
}

std::size_t scripted_model::remaining() const {
  std::lock_guard lock(mutex_);
  return script_.size() - next_;
}

}  // namespace switchboard::models
