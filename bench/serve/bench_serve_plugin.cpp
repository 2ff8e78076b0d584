// bench_serve: the native agents of bench/serve's workflows, as a plugin
// that `switchboard serve` loads from workflow/workflow.json. The same four
// agents as bench/e2e's in-process benchmark (bench_e2e_inprocess): each
// answers a fixed, valid envelope, so what is measured is the server, the
// hub and the store, not the agents.
//
//   research, support     bench.findings@1, confidence 0.9 (the route on
//                         confidence takes `review`)
//   review, quick_check   bench.review@1
//   ask                   bench.review@1 with confidence 0.2: below the
//                         workflow's clarification threshold, so the run
//                         pauses for a person (park.json: a parked run)
//
// Input {"request": ..., "hold_ms": N}: research and support wait N ms on
// a timer first (a run held in flight, for the memory of open streams).
#include <switchboard/agents/plugin.hpp>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <memory>
#include <string>

namespace {

namespace asio = boost::asio;
namespace sa = switchboard::agents;
namespace sp = switchboard::protocol;

class native_agent final : public sa::agent {
 public:
  native_agent(std::string name, std::string description, std::string schema, sp::envelope answer, bool holds)
      : name_(std::move(name)),
        description_(std::move(description)),
        schema_(std::move(schema)),
        answer_(std::move(answer)),
        holds_(holds) {}

  std::string_view name() const noexcept override { return name_; }
  std::string_view description() const noexcept override { return description_; }
  std::string output_schema() const override { return schema_; }

  asio::awaitable<sp::envelope> run(sa::agent_context& context) override {
    if (holds_) {
      const auto* input = context.input.if_object();
      const auto* hold = input ? input->if_contains("hold_ms") : nullptr;
      if (hold && hold->is_int64() && hold->get_int64() > 0) {
        asio::steady_timer timer(co_await asio::this_coro::executor, std::chrono::milliseconds(hold->get_int64()));
        co_await timer.async_wait(asio::use_awaitable);
      }
    }
    co_return answer_;
  }

 private:
  std::string name_, description_, schema_;
  sp::envelope answer_;
  bool holds_;
};

sp::envelope envelope_of(boost::json::object data, std::string explanation, double confidence) {
  sp::envelope e;
  e.data = std::move(data);
  e.explanation = std::move(explanation);
  e.confidence = confidence;
  e.reasoning = "A fixed answer.";
  return e;
}

}  // namespace

SWITCHBOARD_PLUGIN(registrar) {
  // The same answers as bench/e2e/inprocess.cpp.
  const boost::json::object findings{
      {"topic", "quarterly report"},
      {"findings", boost::json::array{"Revenue grew 4%.", "Costs fell 2%."}},
      {"sources", boost::json::array{boost::json::object{{"title", "Q3 report"}, {"year", 2026}}}}};
  const boost::json::object review{
      {"verdict", "accept"}, {"notes", boost::json::array{"Figures match the report."}}, {"score", 0.9}};
  registrar.add(std::make_shared<native_agent>("research", "Finds facts and sources (fixed answer).",
                                               "bench.findings@1",
                                               envelope_of(findings, "Two findings, one source.", 0.9), true));
  registrar.add(std::make_shared<native_agent>("support", "Answers support questions (fixed answer).",
                                               "bench.findings@1",
                                               envelope_of(findings, "Two findings, one source.", 0.9), true));
  registrar.add(std::make_shared<native_agent>("review", "Reviews findings in depth (fixed answer).",
                                               "bench.review@1", envelope_of(review, "The findings hold.", 0.9),
                                               false));
  registrar.add(std::make_shared<native_agent>("quick_check", "Checks findings quickly (fixed answer).",
                                               "bench.review@1", envelope_of(review, "The findings hold.", 0.9),
                                               false));
  registrar.add(std::make_shared<native_agent>(
      "ask", "Always unsure: its run pauses for a person.", "bench.review@1",
      envelope_of(review, "Is the quarterly report the one meant?", 0.2), false));
}
