// The smallest program that embeds the Switchboard hub: two agents of its
// own and a two-step workflow, run once.
//
//   word_count  native C++: counts the words of the request
//   summarizer  LLM-backed: asks a chat model for a one-line summary
//
// The workflow counts first and summarizes only requests longer than five
// words. The model is a scripted_model, so the example runs offline; use a
// real client (models/model_factory.hpp) in its place for a live model.
#include <switchboard/agents/agent.hpp>
#include <switchboard/agents/agent_context.hpp>
#include <switchboard/agents/agent_registry.hpp>
#include <switchboard/models/scripted_model.hpp>
#include <switchboard/models/structured.hpp>
#include <switchboard/orchestrator/hub.hpp>
#include <switchboard/orchestrator/workflow.hpp>
#include <switchboard/protocol/schema_registry.hpp>
#include <switchboard/protocol/terminal_text.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/json/parse.hpp>

#include <iostream>
#include <iterator>
#include <sstream>

namespace asio = boost::asio;
namespace json = boost::json;
using namespace switchboard;

// A native agent: plain C++ that fills in the envelope itself.
class word_count final : public agents::agent {
 public:
  std::string_view name() const noexcept override { return "word_count"; }
  std::string_view description() const noexcept override { return "Counts the words of a request."; }
  std::string output_schema() const override { return "word_count@1"; }

  asio::awaitable<protocol::envelope> run(agents::agent_context& context) override {
    std::istringstream text(std::string(context.input.at("text").as_string()));
    const auto words = std::distance(std::istream_iterator<std::string>(text), {});
    protocol::envelope answer;
    answer.data["words"] = words;
    answer.explanation = "The request has " + std::to_string(words) + " words.";
    answer.confidence = 1.0;  // counting is exact
    answer.reasoning = "Counted the whitespace-separated words.";
    co_return answer;
  }
};

// An LLM-backed agent: asks the run's model for a whole envelope.
// complete_structured validates the answer against the envelope schema and
// re-asks with the errors when the model answers something invalid.
class summarizer final : public agents::agent {
 public:
  explicit summarizer(std::shared_ptr<protocol::schema_registry> schemas) : schemas_(std::move(schemas)) {}

  std::string_view name() const noexcept override { return "summarizer"; }
  std::string_view description() const noexcept override { return "Summarizes a request in one line."; }
  std::string output_schema() const override { return "summary@1"; }

  asio::awaitable<protocol::envelope> run(agents::agent_context& context) override {
    models::chat_model* model = context.models.find("default");
    if (model == nullptr) {
      throw std::runtime_error("summarizer: no model configured");
    }
    models::chat_request request;
    request.messages = {
        {models::chat_role::system, "Summarize the user's request in one line."},
        {models::chat_role::user, std::string(context.input.at("text").as_string())}};
    models::structured_options options;
    options.schema = schemas_->envelope_schema(output_schema());  // {data, explanation, confidence, reasoning}
    models::structured_result result = co_await models::complete_structured(*model, std::move(request), options);
    context.usage += result.usage;
    co_return json::try_value_to<protocol::envelope>(result.value).value();
  }

 private:
  std::shared_ptr<protocol::schema_registry> schemas_;
};

int main() {
  // 1. The schemas of the agents' `data`, and the agents.
  auto schemas = std::make_shared<protocol::schema_registry>();
  schemas->add({"word_count", 1}, json::parse(R"({"type": "object", "required": ["words"],
                                                  "properties": {"words": {"type": "integer"}}})"));
  schemas->add({"summary", 1}, json::parse(R"({"type": "object", "required": ["summary"],
                                               "properties": {"summary": {"type": "string"}}})"));
  agents::agent_registry registry(schemas);
  registry.add(std::make_shared<word_count>());
  registry.add(std::make_shared<summarizer>(schemas));

  // 2. The workflow: routes read the envelope (here data.words).
  using orchestrator::comparison;
  using orchestrator::condition;
  orchestrator::workflow_builder builder("embedding_example");
  builder.entry("count");
  builder.agent("count", "word_count")
      .route(condition::compare("/words", comparison::gt, 5), "summarize")
      .otherwise("done");
  builder.agent("summarize", "summarizer").otherwise("done");
  builder.end("done");
  const auto workflow = builder.compile(registry);  // checks agents, routes and fields

  // 3. The model: scripted, one answer for the one call this run makes.
  auto model = std::make_shared<models::scripted_model>();
  model->push_text(R"({"data": {"summary": "Maya has soccer practice on Saturday afternoon."},
                       "explanation": "A single event for Maya on Saturday.",
                       "confidence": 0.92, "reasoning": "The request names the person, day and time."})");
  agents::model_set models;
  models.add("default", model);

  // 4. The hub, on an io_context this program runs.
  asio::io_context io;
  orchestrator::hub_options options;
  options.store = orchestrator::make_in_memory_checkpoint_store();  // or stores::make_sqlite_checkpoint_store(path)
  options.models = models;
  orchestrator::hub hub(io.get_executor(), registry, options);
  json::value input = {{"text", "Soccer practice for Maya on Saturday 2-4pm, she needs the minivan"}};
  auto done = asio::co_spawn(io, hub.run(workflow, std::move(input)), asio::use_future);
  io.run();
  const orchestrator::workflow_state state = done.get();

  // 5. What happened, step by step, and the answer. Model text is escaped
  // before it reaches the terminal: an answer could carry escape sequences.
  using protocol::escape_for_terminal;
  for (const orchestrator::audit_entry& step : state.audit) {
    std::cout << step.step << ". " << step.node << " (confidence " << step.confidence
              << "): " << escape_for_terminal(step.explanation) << " -> " << step.route << '\n';
  }
  std::cout << "status: " << orchestrator::to_string(state.status) << '\n';
  if (state.status != orchestrator::workflow_status::completed || !state.result) {
    for (const protocol::error_record& error : state.errors) {
      std::cerr << "error: " << escape_for_terminal(error.message) << '\n';
    }
    return 1;
  }
  std::cout << "summary: " << escape_for_terminal(state.result->data.at("summary").as_string()) << '\n';
  return 0;
}
