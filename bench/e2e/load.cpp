// bench_e2e_load: the end-to-end load program. A hub runs the benchmark
// workflow (bench_workflow.hpp) with LLM agents built from prompt files,
// against an OpenAI-compatible server (bench_server) over real HTTP with the
// real openai_model client: three model calls per workflow (the
// coordinator's choice, the chosen agent, the agent after the route on
// confidence) and a deterministic synthesis.
//
// Closed loop: --concurrency workflows in flight; each finished one starts
// the next until --workflows have run (after --warmup unmeasured ones).
// Prints one line of JSON on stdout (throughput, latency percentiles, CPU of
// this process per workflow, peak RSS and RSS per in-flight workflow,
// failures by type, branches taken) and a summary on stderr. Exits 1 when a
// workflow did not complete cleanly, never because of timing.
//
//   bench_e2e_load --base-url http://127.0.0.1:PORT/v1 [--workflows N]
//                  [--concurrency C] [--threads T] [--warmup W]
//                  [--latency-ms L] [--output-mode M] [--no-strict] [--trace]
//
// --trace: traced as `switchboard run` is (the hub's spans, and chat spans
// with traceparent on every model request), every span exported over
// OTLP/JSON to the same server's /v1/traces (bench_tracing.hpp).
#include "bench_tracing.hpp"
#include "bench_workflow.hpp"
#include "load_loop.hpp"

#include <switchboard/agents/llm_agent.hpp>
#include <switchboard/models/model_factory.hpp>
#include <switchboard/models/openai_model.hpp>
#include <switchboard/models/traced_model.hpp>
#include <switchboard/agents/prompt_file.hpp>

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

namespace sa = switchboard::agents;
namespace sm = switchboard::models;
namespace sp = switchboard::protocol;

namespace {

struct load_options {
  std::string base_url;
  bench::phase_setup phase{1000, 1, 0, 1};
  long latency_ms = -1;  // for the record only: the server applies it
  sm::output_mode mode = sm::output_mode::json_schema;
  bool strict = true;
  bool trace = false;
};

[[noreturn]] void usage(const std::string& problem) {
  std::cerr << "bench_e2e_load: " << problem << "\n"
            << "usage: bench_e2e_load --base-url http://127.0.0.1:PORT/v1 [--workflows N] [--concurrency C]\n"
            << "                      [--threads T] [--warmup W] [--latency-ms L]\n"
            << "                      [--output-mode json_schema|json_object|prompt_schema] [--no-strict] [--trace]\n";
  std::exit(2);
}

load_options parse_args(int argc, char** argv) {
  load_options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (flag == "--help" || flag == "-h") usage("help");
    if (flag == "--no-strict") {
      o.strict = false;
      continue;
    }
    if (flag == "--trace") {
      o.trace = true;
      continue;
    }
    if (i + 1 >= argc) usage(std::string(flag) + " needs a value");
    const std::string_view value = argv[++i];
    if (flag == "--base-url") {
      o.base_url = value;
    } else if (flag == "--workflows") {
      o.phase.workflows = bench::integer_arg(flag, value, 1, usage);
    } else if (flag == "--concurrency") {
      o.phase.concurrency = bench::integer_arg(flag, value, 1, usage);
    } else if (flag == "--warmup") {
      o.phase.warmup = bench::integer_arg(flag, value, 0, usage);
    } else if (flag == "--threads") {
      o.phase.threads = static_cast<int>(bench::integer_arg(flag, value, 1, usage));
    } else if (flag == "--latency-ms") {
      o.latency_ms = bench::integer_arg(flag, value, 0, usage);
    } else if (flag == "--output-mode") {
      auto mode = sm::parse_output_mode(value);
      if (!mode) usage("--output-mode: unknown mode '" + std::string(value) + "'");
      o.mode = *mode;
    } else {
      usage("unknown option " + std::string(flag));
    }
  }
  if (o.base_url.empty()) usage("--base-url is required");
  return o;
}

std::string prompt_text(std::string_view name, std::string_view description, std::string_view schema,
                        std::string_view task) {
  namespace json = boost::json;
  json::object prompt{
      {"name", name},
      {"version", 1},
      {"description", description},
      {"output_schema", schema},
      {"model", json::object{{"temperature", 0}, {"max_tokens", 400}, {"max_attempts", 2}}},
      {"system", json::array{task,
                             "Answer with one JSON object {data, explanation, confidence, reasoning}; data follows the " +
                                 std::string(schema) + " schema.",
                             "Keep the explanation to one or two sentences a user can read."}},
      {"user", json::array{"Request: {{input/request}}", "Requested by: {{input/user}}",
                           "Coordinator's instructions: {{additional_instructions}}",
                           "Findings so far: {{outputs.research/data?}}{{outputs.support/data?}}"}},
  };
  return json::serialize(prompt);
}

void register_agents(sa::agent_registry& registry) {
  bench::register_schemas(registry.schemas());
  struct spec {
    std::string_view name, description, schema, task;
  };
  const spec specs[] = {
      {"research", "Finds facts and sources about the request's topic.", "bench.findings@1",
       "You research the user's request and report findings with their sources."},
      {"support", "Answers support questions about the user's account or product.", "bench.findings@1",
       "You answer the user's support question and cite the documents used."},
      {"review", "Reviews findings in depth and scores them.", "bench.review@1",
       "You review the findings in depth, list what to improve and score them."},
      {"quick_check", "Checks findings quickly when the first answer was unsure.", "bench.review@1",
       "You check the findings quickly for obvious errors and score them."},
  };
  for (const auto& s : specs) {
    std::vector<sa::prompt_file> versions;
    versions.push_back(sa::prompt_file::parse(prompt_text(s.name, s.description, s.schema, s.task),
                                              "bench:" + std::string(s.name) + ".v1.json"));
    registry.add(std::make_shared<sa::llm_agent>(std::move(versions), registry.schemas_ptr()), "bench");
  }
}

// The OTLP base URL of the bench server: its /v1 base URL without /v1
// (the exporter appends /v1/traces).
std::string otlp_endpoint_of(std::string_view base_url) {
  if (base_url.ends_with('/')) base_url.remove_suffix(1);
  if (base_url.ends_with("/v1")) base_url.remove_suffix(3);
  return std::string(base_url);
}

}  // namespace

int main(int argc, char** argv) {
  const load_options options = parse_args(argc, argv);
  // Declared first, destroyed last: the model's idle connections and the
  // hub's runs belong to it.
  boost::asio::io_context io(options.phase.threads);

  // Info-level logs per step would measure spdlog, not the hub.
  auto logger = spdlog::stderr_logger_mt("bench");
  logger->set_level(spdlog::level::warn);
  spdlog::set_level(spdlog::level::warn);

  sa::agent_registry registry(std::make_shared<sp::schema_registry>());
  std::shared_ptr<const switchboard::orchestrator::compiled_workflow> workflow;
  std::atomic<long> retries{0};
  std::shared_ptr<sm::openai_model> model;
  std::shared_ptr<sm::chat_model> hub_model;  // the model, or the model traced
  // Off: nothing is made and nothing attached, the hub as without tracing.
  std::optional<switchboard::host::process_tracing> tracing;
  try {
    register_agents(registry);
    workflow = bench::build_workflow(registry);
    sm::openai_options model_options;
    model_options.http.base_url = options.base_url;
    // One connection per workflow in flight: each has one call pending.
    model_options.http.max_connections_per_host = static_cast<std::size_t>(options.phase.concurrency);
    model_options.http.request_timeout = std::chrono::seconds(60);
    model_options.http.connect_timeout = std::chrono::seconds(30);
    model_options.http.retry.on_retry = [&retries](const sm::retry_event&) { retries.fetch_add(1); };
    model_options.model = "bench-model";
    model_options.capabilities = {options.mode, options.strict};
    model = std::make_shared<sm::openai_model>(std::move(model_options));
    hub_model = model;
    if (options.trace) {
      tracing.emplace(bench::trace_lookup(otlp_endpoint_of(options.base_url)), "bench_e2e_load");
      // As configured_model::trace_with: chat spans under their step, traceparent on the wire.
      hub_model = std::make_shared<sm::traced_model>(
          *model, tracing->tracing().tracer, sm::traced_options_for("openai", "bench-model", options.base_url));
    }
  } catch (const std::exception& e) {
    std::cerr << "bench_e2e_load: set-up failed: " << e.what() << "\n";
    return 2;
  }

  switchboard::orchestrator::hub_options hub_options;
  hub_options.models.add("default", hub_model);
  hub_options.logger = logger;
  switchboard::orchestrator::hub hub(io.get_executor(), registry, std::move(hub_options));
  if (tracing && tracing->enabled()) {
    hub.add_observer(tracing->observer());
    hub.set_trace_parents(tracing->observer());
  }
  const boost::json::value input = {
      {"request", "Summarize what changed in the quarterly report and check it for errors."}, {"user", "bench"}};

  const bench::workload work{hub, workflow, input, "coordinate"};
  boost::json::object extra{{"bench", "e2e_http"},
                            {"latency_ms", options.latency_ms},
                            {"model_calls_per_workflow", 3},
                            {"output_mode", sm::to_string(options.mode)},
                            {"strict", options.strict},
                            {"trace", options.trace}};
  const long failed = bench::measure(io, work, options.phase, std::move(extra), "bench_e2e_load (HTTP)");
  std::cerr << "  retries      " << retries.load() << "\n";
  const bool all_exported = !tracing || bench::finish_tracing(*tracing, options.phase.warmup + options.phase.workflows);
  return failed == 0 && all_exported ? 0 : 1;
}
