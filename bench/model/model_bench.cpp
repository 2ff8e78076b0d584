// Client CPU per model call against the loopback server (its own thread):
//  - plain_call: one chat completion (OpenAI format, keep-alive);
//  - tool_round: llm_agent with one tool, the model calls it once and then
//    answers: two completions + the tool + the loop's bookkeeping, next to
//    plain_agent, the same agent answering at once (one completion);
//  - streamed_500_tokens: a 500-token answer streamed (one SSE event, one
//    HTTP chunk and one write per token) with a sink attached, next to
//    whole_500_tokens, the same answer sent whole. Per streamed chunk:
//    (streamed - whole) / 500, printed as the "per_chunk" counter.
// The CPU column is the benchmark thread's (the client's) CPU; the server's
// thread is not in it.
#include <switchboard/agents/llm_agent.hpp>
#include <switchboard/models/openai_model.hpp>
#include <switchboard/agents/tool_registry.hpp>
#include <switchboard/protocol/schema_registry.hpp>
#include <switchboard/testing/loopback_model_server.hpp>

#include <benchmark/benchmark.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/json/parse.hpp>
#include <spdlog/spdlog.h>

#include <memory>
#include <string>

namespace {

namespace asio = boost::asio;
namespace json = boost::json;
namespace sa = switchboard::agents;
namespace sm = switchboard::models;
namespace st = switchboard::testing;

template <class T>
T run(asio::io_context& io, asio::awaitable<T> op) {
  auto f = asio::co_spawn(io, std::move(op), asio::use_future);
  io.restart();
  io.run();
  return f.get();
}

sm::openai_options options_for(const st::loopback_model_server& server) {
  sm::openai_options options;
  options.http.base_url = server.base_url() + "/v1";
  options.model = "bench-model";
  options.api_key = "bench-key";
  return options;
}

const std::string answer_json =
    R"({"data":{"slot":"2026-11-23T10:00"},"explanation":"Free then.","confidence":0.9,"reasoning":"Calendar."})";

void plain_call(benchmark::State& state) {
  st::loopback_model_server server;
  server.set_default(st::server_action::reply(answer_json));
  sm::openai_model model(options_for(server));
  asio::io_context io(1);
  sm::chat_request request;
  request.messages.push_back({sm::chat_role::user, "Suggest a slot."});
  for (auto _ : state) benchmark::DoNotOptimize(run(io, model.complete(request)));
}
BENCHMARK(plain_call);

// --- tool round through llm_agent

class lookup_tool final : public sa::tool {
 public:
  std::string_view name() const noexcept override { return "lookup"; }
  std::string_view description() const noexcept override { return "Events on a date."; }
  json::object parameters() const override {
    return json::parse(R"({"type":"object","properties":{"date":{"type":"string"}},"required":["date"]})").as_object();
  }
  asio::awaitable<sa::tool_result> call(sa::tool_context&, const json::value& arguments) override {
    co_return json::value{{"date", arguments.at("date")}, {"events", json::array{"standup"}}};
  }
};

struct agent_rig {
  explicit agent_rig(bool tools) {
    schemas->add(*switchboard::protocol::schema_id::parse("slot.output@1"),
                 json::parse(R"({"type":"object","properties":{"slot":{"type":"string"}},"required":["slot"]})"));
    registry.add(std::make_shared<lookup_tool>());
    sa::llm_agent_options options;
    options.tools = &registry;
    const std::string prompt = std::string(R"({"name":"planner","version":1,"description":"Plans.",
        "output_schema":"slot.output@1",)") + (tools ? R"("tools":["lookup"],)" : "") +
                               R"("system":"You plan.","user":"Plan {{input/request}}"})";
    agent = std::make_shared<sa::llm_agent>(std::vector{sa::prompt_file::parse(prompt, "planner.v1.json")}, schemas,
                                            options);
    model = std::make_shared<sm::openai_model>(options_for(server));
    models.add("default", model);
  }
  st::loopback_model_server server;
  std::shared_ptr<switchboard::protocol::schema_registry> schemas =
      std::make_shared<switchboard::protocol::schema_registry>();
  sa::tool_registry registry;
  std::shared_ptr<sa::llm_agent> agent;
  std::shared_ptr<sm::openai_model> model;
  sa::model_set models;
  json::value input = json::parse(R"({"request":"the review"})");
  sa::output_map outputs;
  std::vector<std::string> answers;
  std::shared_ptr<spdlog::logger> logger = std::make_shared<spdlog::logger>("bench");

  sa::agent_context context() { return sa::agent_context{input, outputs, {}, answers, models, logger, {}, {}, {}, {}}; }
};

void agent_call(benchmark::State& state, bool tools) {
  agent_rig rig(tools);
  rig.server.set_handler([tools](const st::recorded_request& r) {
    // A tool round: the first turn of each call asks for the tool, the next answers.
    const bool after_tool = r.body.find("\"role\":\"tool\"") != std::string::npos;
    if (tools && !after_tool) return st::server_action::tool_calls({{"c1", "lookup", R"({"date":"2026-11-24"})"}});
    return st::server_action::reply(answer_json);
  });
  asio::io_context io(1);
  for (auto _ : state) {
    auto context = rig.context();
    const auto envelope = run(io, rig.agent->run(context));
    if (envelope.failed()) state.SkipWithError("the agent failed");
  }
}
void plain_agent(benchmark::State& state) { agent_call(state, false); }
void tool_round(benchmark::State& state) { agent_call(state, true); }
BENCHMARK(plain_agent);
BENCHMARK(tool_round);

// --- streaming

struct counting_sink final : sm::stream_sink {
  std::size_t pieces = 0;
  void on_text(std::string_view) override { ++pieces; }
  void on_tool_call(const tool_call_delta&) override { ++pieces; }
};

std::string tokens(int n) {
  std::string text;
  for (int i = 0; i < n; ++i) text += i % 7 == 0 ? " the" : " slot";  // 4-5 bytes: one "token" each
  return text;
}

void answer_500_tokens(benchmark::State& state, bool streamed) {
  st::loopback_model_server server;
  const std::string text = tokens(500);
  auto action = st::server_action::reply(text).with_delta_bytes(5);
  action.stream = streamed;
  server.set_default(action);
  sm::openai_model model(options_for(server));
  asio::io_context io(1);
  counting_sink sink;
  sm::chat_request request;
  request.messages.push_back({sm::chat_role::user, "Write."});
  if (streamed) request.stream = &sink;
  for (auto _ : state) {
    const auto result = run(io, model.complete(request));
    if (result.text != text) {
      state.SkipWithError(("wrong answer: " + std::to_string(result.text.size()) + " bytes of " + std::to_string(text.size())).c_str());
      break;
    }
  }
  state.counters["pieces_per_answer"] = benchmark::Counter(static_cast<double>(sink.pieces) / state.iterations());
}
void whole_500_tokens(benchmark::State& state) { answer_500_tokens(state, false); }
void streamed_500_tokens(benchmark::State& state) { answer_500_tokens(state, true); }
BENCHMARK(whole_500_tokens);
BENCHMARK(streamed_500_tokens);

}  // namespace

BENCHMARK_MAIN();
