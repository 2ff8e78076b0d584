// The model layer's chat spans (models::traced_model) under the hub's step
// spans (host::workflow_tracer as the hub's trace_parents), against a real
// OpenAI-compatible server on 127.0.0.1: one client span per request the
// provider receives (a re-ask of the structured ladder is a second one),
// tokens and finish reasons, error.type on failure, and the W3C traceparent
// the server receives naming the chat span in the run's trace. Also: the
// execute_tool span's id is known to the call before the span is recorded.
#include <switchboard/host/workflow_tracing.hpp>
#include <switchboard/models/model_error.hpp>
#include <switchboard/models/openai_model.hpp>
#include <switchboard/models/structured.hpp>
#include <switchboard/models/traced_model.hpp>
#include <switchboard/telemetry/trace_context.hpp>
#include <switchboard/testing/loopback_model_server.hpp>

#include "telemetry/collecting_processor.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace switchboard::host {
namespace {

namespace json = boost::json;
using orchestrator::event;
using orchestrator::event_kind;
using telemetry::span_data;
using testing::collecting_processor;
using testing::loopback_model_server;
using testing::server_action;

template <class T>
T run(boost::asio::awaitable<T> operation) {
  boost::asio::io_context io;
  auto result = boost::asio::co_spawn(io, std::move(operation), boost::asio::use_future);
  io.run();
  return result.get();
}

const telemetry::attribute_value* find(const span_data& data, std::string_view key) {
  for (const auto& item : data.attributes)
    if (item.key == key) return &item.value;
  return nullptr;
}
template <class T>
std::optional<T> value_of(const span_data& data, std::string_view key) {
  const auto* value = find(data, key);
  if (value == nullptr || !std::holds_alternative<T>(*value)) return std::nullopt;
  return std::get<T>(*value);
}
std::optional<std::string> text(const span_data& data, std::string_view key) { return value_of<std::string>(data, key); }

std::vector<span_data> named_like(const std::vector<span_data>& spans, std::string_view prefix) {
  std::vector<span_data> out;
  for (const auto& s : spans)
    if (s.name.starts_with(prefix)) out.push_back(s);
  return out;
}

event make(event_kind kind, std::int64_t step = 0) {
  event e{};
  e.kind = kind;
  e.workflow_id = "run-chat";
  e.workflow_name = "scheduling";
  e.segment = 1;
  e.step = step;
  if (step > 0) {
    e.node = "plan";
    e.agent = "planner";
  }
  return e;
}

class chat_spans : public ::testing::Test {
 protected:
  chat_spans() {
    models::openai_options options;
    options.http.base_url = server_.base_url();
    options.http.retry.max_attempts = 1;
    options.model = "gpt-test";
    options.capabilities = {models::output_mode::json_object, false};
    client_.emplace(std::move(options));
    traced_.emplace(*client_, tracer_, models::traced_options_for("openai", "gpt-test", server_.base_url()));
  }

  // A run whose step 1 (planner) is open: the parent of the model's requests.
  telemetry::span_context start_step() {
    hub_.on_event(make(event_kind::workflow_started));
    hub_.on_event(make(event_kind::step_started, 1));
    return hub_.step_span("run-chat");
  }
  void end_run() {
    hub_.on_event(make(event_kind::step_completed, 1));
    hub_.on_event(make(event_kind::workflow_completed, 1));
  }

  static models::chat_request request_under(const telemetry::span_context& parent) {
    models::chat_request request;
    request.messages.push_back({models::chat_role::user, "Book the dentist for Leo"});
    request.trace = parent;
    return request;
  }

  loopback_model_server server_;
  std::shared_ptr<collecting_processor> processor_ = std::make_shared<collecting_processor>();
  std::shared_ptr<telemetry::tracer> tracer_ =
      std::make_shared<telemetry::recording_tracer>(telemetry::sampler{}, processor_);
  workflow_tracer hub_{tracer_};
  std::optional<models::openai_model> client_;
  std::optional<models::traced_model> traced_;
};

TEST_F(chat_spans, a_request_under_a_step_is_a_client_chat_span_whose_id_the_server_receives_as_parent) {
  server_.enqueue(server_action::reply("Booked."));
  const auto step = start_step();
  ASSERT_TRUE(step.valid());
  const auto answer = run(traced_->complete(request_under(step)));
  EXPECT_EQ(answer.text, "Booked.");
  end_run();

  const auto spans = processor_->spans();
  const auto chats = named_like(spans, "chat");
  ASSERT_EQ(chats.size(), 1u);
  const span_data& chat = chats[0];
  EXPECT_EQ(chat.name, "chat gpt-test");
  EXPECT_EQ(chat.kind, telemetry::span_kind::client);
  EXPECT_EQ(chat.context.trace_id, trace_id_for_run("run-chat"));
  const auto agents = named_like(spans, "invoke_agent planner");
  ASSERT_EQ(agents.size(), 1u);
  EXPECT_EQ(chat.parent_span_id, agents[0].context.span_id);
  EXPECT_EQ(text(chat, "gen_ai.operation.name"), "chat");
  EXPECT_EQ(text(chat, "gen_ai.provider.name"), "openai");
  EXPECT_EQ(text(chat, "gen_ai.request.model"), "gpt-test");
  EXPECT_EQ(value_of<std::int64_t>(chat, "gen_ai.usage.input_tokens"), 11);
  EXPECT_EQ(value_of<std::int64_t>(chat, "gen_ai.usage.output_tokens"), 7);
  EXPECT_EQ(value_of<std::vector<std::string>>(chat, "gen_ai.response.finish_reasons"),
            std::vector<std::string>{"stop"});
  EXPECT_EQ(text(chat, "server.address"), "127.0.0.1");
  EXPECT_GT(value_of<std::int64_t>(chat, "server.port").value_or(0), 0);
  EXPECT_EQ(chat.status, telemetry::status_code::unset);
  // Never the prompt nor the answer.
  for (const auto& a : chat.attributes) {
    if (const auto* s = std::get_if<std::string>(&a.value)) {
      EXPECT_EQ(s->find("dentist"), std::string::npos) << a.key.view();
      EXPECT_EQ(s->find("Booked"), std::string::npos) << a.key.view();
    }
  }

  // The provider saw the chat span as its parent, in the run's trace.
  const auto received = server_.requests();
  ASSERT_EQ(received.size(), 1u);
  const auto parent = telemetry::parse_traceparent(received[0].header("traceparent"));
  ASSERT_TRUE(parent) << "traceparent: '" << received[0].header("traceparent") << "'";
  EXPECT_EQ(parent->trace_id, trace_id_for_run("run-chat"));
  EXPECT_EQ(parent->span_id, chat.context.span_id);
  EXPECT_TRUE(parent->sampled());
}

TEST_F(chat_spans, a_re_ask_of_the_structured_ladder_is_a_second_chat_span_with_the_parsers_verdict) {
  server_.enqueue(server_action::reply(R"({"city": 42})"));      // valid JSON, invalid against the schema
  server_.enqueue(server_action::reply(R"({"city": "Oslo"})"));
  const auto step = start_step();
  models::structured_options options;
  options.schema = protocol::compiled_schema::compile(
      json::parse(R"({"type":"object","properties":{"city":{"type":"string"}},"required":["city"]})"), "city");
  const auto result = run(models::complete_structured(*traced_, request_under(step), options));
  EXPECT_EQ(result.value.at("city"), "Oslo");
  end_run();

  const auto chats = named_like(processor_->spans(), "chat");
  ASSERT_EQ(chats.size(), 2u);
  const auto received = server_.requests();
  ASSERT_EQ(received.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(chats[i].parent_span_id, step.span_id) << i;
    EXPECT_EQ(text(chats[i], "switchboard.structured.rung"), "json_object") << i;
    const auto parent = telemetry::parse_traceparent(received[i].header("traceparent"));
    ASSERT_TRUE(parent) << i;
    EXPECT_EQ(parent->span_id, chats[i].context.span_id) << i;
  }
  EXPECT_NE(chats[0].context.span_id, chats[1].context.span_id);
  EXPECT_EQ(text(chats[0], "switchboard.parser.stage"), "direct");
  EXPECT_TRUE(text(chats[0], "switchboard.parser.reason").has_value());
  EXPECT_EQ(text(chats[1], "switchboard.parser.stage"), "direct");
  EXPECT_FALSE(text(chats[1], "switchboard.parser.reason").has_value());
}

TEST_F(chat_spans, a_model_error_sets_error_type_and_the_error_status) {
  server_.enqueue(server_action::error(400, "the model 'gpt-test' does not exist"));
  const auto step = start_step();
  std::optional<models::model_errc> code;
  try {
    run(traced_->complete(request_under(step)));
  } catch (const models::model_error& e) {
    code = e.errc();
  }
  ASSERT_TRUE(code);
  end_run();
  const auto chats = named_like(processor_->spans(), "chat");
  ASSERT_EQ(chats.size(), 1u);
  EXPECT_EQ(*code, models::model_errc::http_status);
  EXPECT_EQ(text(chats[0], "error.type"), "400");  // an error answer is named by its status
  EXPECT_EQ(chats[0].status, telemetry::status_code::error);
  EXPECT_EQ(chats[0].parent_span_id, step.span_id);
}

TEST_F(chat_spans, without_a_tracer_nothing_is_recorded_and_no_traceparent_is_sent) {
  server_.enqueue(server_action::reply("one"));
  server_.enqueue(server_action::reply("two"));
  traced_->trace_with(nullptr);
  run(traced_->complete(request_under({})));
  // A caller's context still goes out, unchanged, when nothing records.
  telemetry::span_context caller;
  caller.trace_id = trace_id_for_run("elsewhere");
  caller.span_id = workflow_span_id("elsewhere", 1);
  caller.trace_flags = telemetry::sampled_flag;
  run(traced_->complete(request_under(caller)));
  EXPECT_TRUE(processor_->spans().empty());
  const auto received = server_.requests();
  ASSERT_EQ(received.size(), 2u);
  EXPECT_EQ(received[0].header("traceparent"), "");
  EXPECT_EQ(received[1].header("traceparent"), telemetry::format_traceparent(caller));
}

TEST(tool_spans, a_call_knows_the_id_its_execute_tool_span_is_recorded_with) {
  auto processor = std::make_shared<collecting_processor>();
  auto tracer = std::make_shared<telemetry::recording_tracer>(telemetry::sampler{}, processor);
  workflow_tracer hub(tracer);
  EXPECT_FALSE(hub.tool_span("run-chat", "call-1").valid());  // no run: not traced
  hub.on_event(make(event_kind::workflow_started));
  hub.on_event(make(event_kind::step_started, 1));
  const auto during = hub.tool_span("run-chat", "call-1");
  ASSERT_TRUE(during.valid());
  EXPECT_EQ(during.trace_id, trace_id_for_run("run-chat"));
  EXPECT_NE(during.span_id, hub.tool_span("run-chat", "call-2").span_id);

  const json::object record{{"id", "call-1"}, {"tool", "calendar.book"}, {"is_error", false}, {"duration_ms", 3}};
  auto called = make(event_kind::tool_called, 1);
  called.tool_call = &record;
  hub.on_event(called);
  hub.on_event(make(event_kind::step_completed, 1));
  hub.on_event(make(event_kind::workflow_completed, 1));
  const auto tools = named_like(processor->spans(), "execute_tool calendar.book");
  ASSERT_EQ(tools.size(), 1u);
  EXPECT_EQ(tools[0].context.span_id, during.span_id);
  EXPECT_EQ(tools[0].context.trace_id, during.trace_id);
  const auto agents = named_like(processor->spans(), "invoke_agent planner");
  ASSERT_EQ(agents.size(), 1u);
  EXPECT_EQ(tools[0].parent_span_id, agents[0].context.span_id);
}

}  // namespace
}  // namespace switchboard::host
