// Tracing off costs the model path nothing: a traced_model without a
// tracer hands the request to the model it wraps and returns that model's
// awaitable, so a request through it allocates exactly what the same
// request to the wrapped model allocates. This file counts the allocations
// of its thread (a replaced operator new, for this test binary).
#include <switchboard/models/scripted_model.hpp>
#include <switchboard/models/traced_model.hpp>

#include "telemetry/collecting_processor.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <gtest/gtest.h>

#include <cstdlib>
#include <new>

namespace {
thread_local std::size_t allocations_on_this_thread = 0;
}
void* operator new(std::size_t size) {
  ++allocations_on_this_thread;
  if (void* memory = std::malloc(size == 0 ? 1 : size)) return memory;
  throw std::bad_alloc();
}
void operator delete(void* memory) noexcept { std::free(memory); }
void operator delete(void* memory, std::size_t) noexcept { std::free(memory); }

namespace switchboard::models {
namespace {

// What one request costs in allocations, from the call to its answer (the
// request itself and the io_context are made before counting).
std::size_t allocations_of_one_request(chat_model& model) {
  chat_request request;
  request.model = "gpt-test";
  request.messages.push_back({chat_role::user, "Book the dentist for Leo on Tuesday"});
  boost::asio::io_context io;
  const std::size_t before = allocations_on_this_thread;
  auto answer = boost::asio::co_spawn(io, model.complete(std::move(request)), boost::asio::use_future);
  io.run();
  const chat_result result = answer.get();
  const std::size_t after = allocations_on_this_thread;
  EXPECT_EQ(result.text, "Booked for Tuesday at 4pm, with the sedan.");
  return after - before;
}

std::unique_ptr<scripted_model> model_with_one_answer() {
  auto model = std::make_unique<scripted_model>();
  model->push_text("Booked for Tuesday at 4pm, with the sedan.", {11, 7});
  return model;
}

TEST(UntracedModel, ARequestThroughAnUntracedDecoratorAllocatesWhatTheWrappedModelDoes) {
  auto direct = model_with_one_answer();
  const std::size_t plain = allocations_of_one_request(*direct);

  auto wrapped = model_with_one_answer();
  traced_model untraced(*wrapped, nullptr, traced_options_for("openai", "gpt-test", "http://127.0.0.1:1/v1"));
  EXPECT_EQ(allocations_of_one_request(untraced), plain);

  // The count can tell: a request that is recorded as a span allocates
  // more (the span's data, its attributes).
  auto traced_inner = model_with_one_answer();
  auto processor = std::make_shared<testing::collecting_processor>();
  traced_model traced(*traced_inner, std::make_shared<telemetry::recording_tracer>(telemetry::sampler{}, processor),
                      traced_options_for("openai", "gpt-test", "http://127.0.0.1:1/v1"));
  EXPECT_GT(allocations_of_one_request(traced), plain);
  EXPECT_EQ(processor->spans().size(), 1u);
}

}  // namespace
}  // namespace switchboard::models
