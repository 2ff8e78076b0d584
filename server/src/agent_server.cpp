#include <switchboard/server/agent_server.hpp>

#include "a2a_endpoint.hpp"
#include "catalog.hpp"
#include "ids.hpp"
#include "langgraph_api.hpp"
#include "mcp_endpoint.hpp"
#include "run_engine.hpp"
#include "server_metrics.hpp"
#include "web_assets.hpp"

#include <switchboard/host/error.hpp>
#include <switchboard/host/store.hpp>
#include <switchboard/host/store_metrics.hpp>
#include <switchboard/host/workflow_tools.hpp>
#include <switchboard/telemetry/prometheus.hpp>

#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>

namespace switchboard::server {

namespace asio = boost::asio;

namespace {

using digest = std::array<unsigned char, SHA256_DIGEST_LENGTH>;

digest sha256(std::string_view text) {
  digest d{};
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), d.data());
  return d;
}

// The token the request carries: Authorization: Bearer T, or x-api-key: T.
std::string_view presented_token(const net::server_request& request) {
  if (const auto key = request.header("x-api-key")) return *key;
  if (const auto auth = request.header("authorization"); auth && auth->size() > 7) {
    std::string scheme(auth->substr(0, 7));
    std::ranges::transform(scheme, scheme.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (scheme == "bearer ") return auth->substr(7);
  }
  return {};
}

}  // namespace

struct agent_server::impl {
  impl(asio::any_io_executor ex, serve_options opts) : executor(std::move(ex)), options(std::move(opts)) {
    // No process metrics given: a meter of our own, never exported.
    if (!options.metrics)
      options.metrics = std::make_shared<host::process_metrics>(
          [](std::string_view) -> std::optional<std::string> { return std::nullopt; }, "switchboard");
  }

  asio::any_io_executor executor;
  serve_options options;
  digest token_digest{};
  std::shared_ptr<orchestrator::checkpoint_store> store;
  std::shared_ptr<orchestrator::event_feed> feed;
  std::vector<std::unique_ptr<served_workflow>> workflows;
  std::unique_ptr<catalog> records;
  std::unique_ptr<run_engine> runs;
  std::unique_ptr<langgraph_api> api;
  std::unique_ptr<mcp_endpoint> mcp;  // null: /mcp is off (a workflow name that is no MCP tool name)
  std::unique_ptr<a2a_endpoint> a2a;  // null with /mcp: they share the workflow tools
  std::unique_ptr<net::http_server> http;
  std::shared_ptr<server_metrics> metrics = std::make_shared<server_metrics>();

  // Pauses waiting for a person now, by what they ask.
  std::map<std::string, std::int64_t> waiting_runs() const {
    std::map<std::string, std::int64_t> out{{"clarification", 0}, {"approval", 0}};
    for (const auto& t : records->threads()) {
      if (t.status != "interrupted") continue;
      for (const auto& [task, list] : t.interrupts)
        if (const auto* items = list.if_array())
          for (const auto& i : *items)
            if (const auto* value = i.is_object() ? i.get_object().if_contains("value") : nullptr)
              if (const auto* type = value->is_object() ? value->get_object().if_contains("type") : nullptr)
                if (type->is_string()) ++out[std::string(type->get_string())];
    }
    return out;
  }

  net::server_response metrics_page() const {
    std::vector<server_metrics::labelled_source> sources;
    for (const auto& w : workflows) {
      sources.emplace_back(w->graph_id, &w->hub->metrics());
      for (const auto* source : w->opened.metrics_sources()) sources.emplace_back(w->graph_id, source);
    }
    net::server_response r;
    r.headers = {{"Content-Type", "text/plain; version=0.0.4; charset=utf-8"}};
    r.body = metrics->render(http ? http->open_streams() : 0, waiting_runs(), sources);
    // The OpenTelemetry instruments, named as OpenTelemetry maps them to
    // Prometheus (gen_ai_client_token_usage, switchboard_workflow_runs_total, ...).
    r.body += telemetry::render_prometheus(options.metrics->meter()->collect());
    return r;
  }

  bool authorized(const net::server_request& request) const {
    if (options.auth_token.empty()) return true;
    // Digests of equal length, compared in constant time: neither the
    // token's bytes nor its length leak through timing.
    const auto given = sha256(presented_token(request));
    return CRYPTO_memcmp(given.data(), token_digest.data(), given.size()) == 0;
  }

  const std::string* allowed_origin(const net::server_request& request) const {
    const auto origin = request.header("origin");
    if (!origin) return nullptr;
    const auto it = std::ranges::find(options.cors_origins, *origin);
    return it == options.cors_origins.end() ? nullptr : &*it;
  }

  // /mcp: a browser page of another origin is refused unless allowed
  // (--cors-origin), against DNS rebinding, as the MCP specification asks.
  asio::awaitable<net::server_response> mcp_request(net::server_request& request, const std::string* origin) {
    if (!mcp) co_return net::error_response(404, "/mcp is off: a served workflow's name is not an MCP tool name");
    if (request.header("origin") && !origin) co_return net::error_response(403, "origin not allowed for /mcp");
    auto answering = mcp->handle(request);
    co_return co_await std::move(answering);
  }

  // /mcp's tools: the served workflows (their own hubs, the same store).
  void open_mcp_endpoint() {
    std::vector<host::tool_workflow> tools;
    for (std::size_t i = 0; i < workflows.size(); ++i) {
      // Not owned: the workflows outlive the endpoint (declared before it).
      std::shared_ptr<host::opened_workflow> opened(std::shared_ptr<void>{}, &workflows[i]->opened);
      tools.push_back({opened, host::workflow_description(options.workflows[i].workflow_file)});
    }
    try {
      auto provider = std::make_shared<host::workflow_tools>(executor, std::move(tools));
      provider->add_observer(options.metrics->observer());  // its runs count as the hubs' do
      if (options.tracing) provider->trace_with(options.tracing);
      open_a2a_endpoint(provider);
      mcp = std::make_unique<mcp_endpoint>(executor, std::move(provider),
                                           mcp::server_info{"switchboard", "0.1.0", {}}, options.heartbeat);
    } catch (const host::host_error& e) {
      spdlog::warn("/mcp is off: {}", e.what());
    }
  }

  // The A2A agents: the served workflows, run through the same tools as /mcp.
  void open_a2a_endpoint(std::shared_ptr<host::workflow_tools> tools) {
    std::vector<a2a_agent> agents;
    for (std::size_t i = 0; i < workflows.size(); ++i)
      agents.push_back({workflows[i]->graph_id, host::workflow_description(options.workflows[i].workflow_file)});
    a2a = std::make_unique<a2a_endpoint>(executor, std::move(tools), std::move(agents), store,
                                         !options.auth_token.empty(),
                                         !options.http.tls_certificate_file.empty(), options.heartbeat);
  }

  asio::awaitable<net::server_response> handle(net::server_request& request) {
    // The page's own files load without the token (it asks for it); the API never does.
    if (auto page = web_page(request)) co_return std::move(*page);
    const auto* origin = allowed_origin(request);
    if (origin && request.method == "OPTIONS") {
      net::server_response r;
      r.status = 204;
      r.headers = {{"Access-Control-Allow-Origin", *origin},
                   {"Access-Control-Allow-Methods", "GET, POST, PATCH, DELETE, OPTIONS"},
                   {"Access-Control-Allow-Headers",
                    "Content-Type, Authorization, X-Api-Key, Last-Event-ID, Mcp-Session-Id, Mcp-Protocol-Version, "
                    "A2A-Version, A2A-Extensions"},
                   {"Access-Control-Max-Age", "600"},
                   {"Vary", "Origin"}};
      co_return r;
    }
    net::server_response r;
    // Agent cards are discovery: readable without the token (they name the scheme).
    if (request.path != "/ok" && !(a2a && a2a_endpoint::is_card_path(request.path)) && !authorized(request)) {
      r = net::error_response(401, "missing or wrong API token (Authorization: Bearer TOKEN or x-api-key: TOKEN)");
      r.headers.emplace_back("WWW-Authenticate", "Bearer");
    } else if (request.method == "GET" && request.path == "/metrics") {
      r = metrics_page();
    } else if (a2a && a2a_endpoint::serves(request.path)) {
      auto answering = a2a->handle(request);
      r = co_await std::move(answering);
    } else if (request.path == "/mcp") {
      auto answering = mcp_request(request, origin);
      r = co_await std::move(answering);
    } else {
      r = co_await api->handle(request);
    }
    metrics->count_request(request.method, route_label(request.path), r.status);
    if (origin) {
      r.headers.emplace_back("Access-Control-Allow-Origin", *origin);
      r.headers.emplace_back("Access-Control-Expose-Headers",
                             "Content-Location, Location, X-Pagination-Total, X-Pagination-Next, Mcp-Session-Id");
      r.headers.emplace_back("Vary", "Origin");
    }
    co_return r;
  }
};

agent_server::agent_server(asio::any_io_executor executor, serve_options options)
    : impl_(std::make_unique<impl>(std::move(executor), std::move(options))) {
  auto& s = *impl_;
  if (!s.options.auth_token.empty()) s.token_digest = sha256(s.options.auth_token);
  s.store = host::measured_store(host::open_store(s.options.store_url), s.options.metrics->meter());
  s.feed = host::open_event_feed(s.options.store_url);
  // The memory store outlives nothing: a journal there would only be a
  // second copy of the catalog.
  const bool durable = s.options.store_url.empty() ||
                       host::parse_store_url(s.options.store_url).scheme != host::store_url::backend::memory;
  s.records = std::make_unique<catalog>(s.feed, durable);
  std::vector<served_workflow*> served;
  for (const auto& settings : s.options.workflows) {
    auto w = std::make_unique<served_workflow>();
    w->opened = host::open_workflow(settings, s.store);
    w->graph_id = w->opened.workflow->definition().name;
    for (const auto* other : served)
      if (other->graph_id == w->graph_id)
        throw host::host_error(host::host_errc::bad_workflow,
                               "two workflows are named '" + w->graph_id + "': a graph id must be unique");
    auto hub_options = w->opened.hub_options();
    hub_options.lease = s.options.lease;
    w->hub = std::make_unique<orchestrator::hub>(s.executor, *w->opened.agents.registry, std::move(hub_options));
    w->hub->add_observer(s.options.metrics->observer());
    s.options.metrics->watch(w->opened, w->graph_id);
    if (s.options.tracing) {
      w->hub->add_observer(s.options.tracing);
      w->hub->set_trace_parents(s.options.tracing);
      w->opened.model.trace_with(s.options.tracing->tracer());
    }
    assistant_record a;
    a.assistant_id = system_assistant_id(w->graph_id);
    a.graph_id = a.name = w->graph_id;
    a.created_at = a.updated_at = now_iso8601();
    s.records->add_system_assistant(std::move(a));
    served.push_back(w.get());
    s.workflows.push_back(std::move(w));
  }
  s.runs = std::make_unique<run_engine>(s.executor, *s.records, s.feed, served);
  s.runs->trace_with(s.options.tracing);
  if (s.options.retention) s.runs->keep_runs_for(*s.options.retention);
  if (host::is_shared_store(s.options.store_url) && !served.empty())
    s.runs->share_runs({.queue = host::open_run_queue(s.options.store_url),
                        .owner = served.front()->hub->owner_id() + "/serve-" + time_ordered_uuid(),
                        .lease = s.options.lease,
                        .max_threads = s.options.max_threads});
  s.api = std::make_unique<langgraph_api>(*s.records, *s.runs, s.options.heartbeat);
  s.open_mcp_endpoint();
  s.http = std::make_unique<net::http_server>(
      s.executor, s.options.http, [this](net::server_request& request) { return impl_->handle(request); });
}

agent_server::~agent_server() {
  if (impl_->http) impl_->http->stop();
  // The process's metrics may outlive the server: they let go of its workflows.
  for (const auto& w : impl_->workflows) impl_->options.metrics->forget(w->opened);
}

asio::awaitable<void> agent_server::start() {
  co_await impl_->records->load();
  co_await impl_->runs->recover();
  impl_->http->start();
}

std::uint16_t agent_server::port() const noexcept { return impl_->http->port(); }

asio::awaitable<void> agent_server::shutdown(std::chrono::milliseconds grace) {
  impl_->http->stop();
  if (impl_->mcp) impl_->mcp->close_all();  // their runs are interrupted, resumable
  if (impl_->a2a) impl_->a2a->close_all();
  co_await impl_->runs->shutdown(grace);
}

}  // namespace switchboard::server
