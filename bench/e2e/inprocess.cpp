// bench_e2e_inprocess: the hub's own cost, without HTTP or models. The
// benchmark workflow (bench_workflow.hpp) with four native agents that
// answer fixed, valid envelopes, and a deterministic router in the
// coordinator's place: what is left is the hub (strand, state, routing,
// envelope validation, audit, events, metrics).
//
//   bench_e2e_inprocess [--workflows N] [--concurrency C] [--threads T]
//                       [--agent-latency-ms L] [--no-validate]
//                       [--trace --otlp-endpoint URL]
//
// --trace: the hub traced as `switchboard run` traces it, every span
// exported over OTLP/JSON to --otlp-endpoint (a base URL: /v1/traces is
// appended; bench_e2e_server answers it). A collector outside this process,
// so that a count of this process's instructions is the tracing's own cost
// (bench_tracing.hpp).
//
// --agent-latency-ms makes every agent wait on a timer, so that
// --concurrency workflows are really in flight at once (memory per
// in-flight workflow). Output as bench_e2e_load.
#include "bench_tracing.hpp"
#include "bench_workflow.hpp"
#include "load_loop.hpp"

#include <switchboard/agents/agent.hpp>
#include <switchboard/protocol/coordination.hpp>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

namespace sa = switchboard::agents;
namespace sp = switchboard::protocol;

namespace {

struct inprocess_options {
  bench::phase_setup phase{100000, 1, 1000, 1};
  std::chrono::milliseconds agent_latency{0};
  bool validate = true;
  bool trace = false;
  std::string otlp_endpoint;
};

[[noreturn]] void usage(const std::string& problem) {
  std::cerr << "bench_e2e_inprocess: " << problem << "\n"
            << "usage: bench_e2e_inprocess [--workflows N] [--concurrency C] [--threads T] [--warmup W]\n"
            << "                           [--agent-latency-ms L] [--no-validate]\n"
            << "                           [--trace --otlp-endpoint http://127.0.0.1:PORT]\n";
  std::exit(2);
}

inprocess_options parse_args(int argc, char** argv) {
  inprocess_options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (flag == "--help" || flag == "-h") usage("help");
    if (flag == "--no-validate") {
      o.validate = false;
      continue;
    }
    if (flag == "--trace") {
      o.trace = true;
      continue;
    }
    if (i + 1 >= argc) usage(std::string(flag) + " needs a value");
    const std::string_view value = argv[++i];
    if (flag == "--workflows") {
      o.phase.workflows = bench::integer_arg(flag, value, 1, usage);
    } else if (flag == "--concurrency") {
      o.phase.concurrency = bench::integer_arg(flag, value, 1, usage);
    } else if (flag == "--warmup") {
      o.phase.warmup = bench::integer_arg(flag, value, 0, usage);
    } else if (flag == "--threads") {
      o.phase.threads = static_cast<int>(bench::integer_arg(flag, value, 1, usage));
    } else if (flag == "--agent-latency-ms") {
      o.agent_latency = std::chrono::milliseconds(bench::integer_arg(flag, value, 0, usage));
    } else if (flag == "--otlp-endpoint") {
      o.otlp_endpoint = value;
    } else {
      usage("unknown option " + std::string(flag));
    }
  }
  if (o.trace && o.otlp_endpoint.empty()) usage("--trace needs --otlp-endpoint URL (bench_e2e_server answers it)");
  if (!o.trace && !o.otlp_endpoint.empty()) usage("--otlp-endpoint is used only with --trace");
  return o;
}

// Answers a fixed envelope, after an optional timer wait.
class native_agent final : public sa::agent {
 public:
  native_agent(std::string name, std::string schema, sp::envelope answer, std::chrono::milliseconds latency)
      : name_(std::move(name)), schema_(std::move(schema)), answer_(std::move(answer)), latency_(latency) {}

  std::string_view name() const noexcept override { return name_; }
  std::string_view description() const noexcept override { return "A native benchmark agent."; }
  std::string output_schema() const override { return schema_; }

  boost::asio::awaitable<sp::envelope> run(sa::agent_context&) override {
    if (latency_.count() > 0) {
      boost::asio::steady_timer timer(co_await boost::asio::this_coro::executor, latency_);
      co_await timer.async_wait(boost::asio::use_awaitable);
    }
    co_return answer_;
  }

 private:
  std::string name_, schema_;
  sp::envelope answer_;
  std::chrono::milliseconds latency_;
};

sp::envelope envelope_of(boost::json::object data, std::string explanation) {
  sp::envelope e;
  e.data = std::move(data);
  e.explanation = std::move(explanation);
  e.confidence = 0.9;  // >= bench::review_threshold: the route takes `review`
  e.reasoning = "A fixed answer.";
  return e;
}

void register_agents(sa::agent_registry& registry, std::chrono::milliseconds latency) {
  bench::register_schemas(registry.schemas());
  const boost::json::object findings{
      {"topic", "quarterly report"},
      {"findings", boost::json::array{"Revenue grew 4%.", "Costs fell 2%."}},
      {"sources", boost::json::array{boost::json::object{{"title", "Q3 report"}, {"year", 2026}}}}};
  const boost::json::object review{
      {"verdict", "accept"}, {"notes", boost::json::array{"Figures match the report."}}, {"score", 0.9}};
  for (const char* name : {"research", "support"}) {
    registry.add(std::make_shared<native_agent>(name, "bench.findings@1",
                                                envelope_of(findings, "Two findings, one source."), latency));
  }
  for (const char* name : {"review", "quick_check"}) {
    registry.add(std::make_shared<native_agent>(name, "bench.review@1",
                                                envelope_of(review, "The findings hold."), latency));
  }
}

sp::coordination_request choose_research(const boost::json::value&, const sa::agent_outputs&) {
  return {"research", "Keep it short."};
}

}  // namespace

int main(int argc, char** argv) {
  const inprocess_options options = parse_args(argc, argv);
  boost::asio::io_context io(options.phase.threads);
  auto logger = spdlog::stderr_logger_mt("bench");
  logger->set_level(spdlog::level::warn);
  spdlog::set_level(spdlog::level::warn);

  sa::agent_registry registry(std::make_shared<sp::schema_registry>());
  std::shared_ptr<const switchboard::orchestrator::compiled_workflow> workflow;
  try {
    register_agents(registry, options.agent_latency);
    workflow = bench::build_workflow(registry, choose_research);
  } catch (const std::exception& e) {
    std::cerr << "bench_e2e_inprocess: set-up failed: " << e.what() << "\n";
    return 2;
  }
  switchboard::orchestrator::hub_options hub_options;
  hub_options.logger = logger;
  hub_options.validate_envelopes = options.validate;
  switchboard::orchestrator::hub hub(io.get_executor(), registry, std::move(hub_options));
  // Off: nothing is made and nothing attached, the hub as without tracing.
  std::optional<switchboard::host::process_tracing> tracing;
  try {
    if (options.trace) tracing.emplace(bench::trace_lookup(options.otlp_endpoint), "bench_e2e_inprocess");
  } catch (const std::exception& e) {
    std::cerr << "bench_e2e_inprocess: --otlp-endpoint: " << e.what() << "\n";
    return 2;
  }
  if (tracing && tracing->enabled()) {
    hub.add_observer(tracing->observer());
    hub.set_trace_parents(tracing->observer());
  }
  const boost::json::value input = {
      {"request", "Summarize what changed in the quarterly report and check it for errors."}, {"user", "bench"}};

  const bench::workload work{hub, workflow, input, "coordinate"};
  boost::json::object extra{{"bench", "inprocess"},
                            {"agent_latency_ms", options.agent_latency.count()},
                            {"agent_calls_per_workflow", 2},
                            {"validate_envelopes", options.validate},
                            {"trace", options.trace}};
  const long failed = bench::measure(io, work, options.phase, std::move(extra), "bench_e2e_inprocess");
  const bool all_exported = !tracing || bench::finish_tracing(*tracing, options.phase.warmup + options.phase.workflows);
  return failed == 0 && all_exported ? 0 : 1;
}
