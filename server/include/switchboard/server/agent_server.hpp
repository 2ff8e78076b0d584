// `switchboard serve` as a library: workflows served over the LangGraph
// Agent Server API (the subset @langchain/langgraph-sdk drives), each run
// kept in the store and its events in the store's event feed, so streams
// replay from any event and a restarted server carries on every run it
// held. docs/serving.md describes the API; ADR 0026 the design.
//
//   server::serve_options options;
//   options.workflows.push_back({.workflow_file = "examples/scheduling/workflow.json"});
//   options.store_url = "sqlite:/var/lib/switchboard/runs.db";
//   server::agent_server server{io.get_executor(), options};
//   co_await server.start();      // carries on the runs it held, then listens
//   ...
//   co_await server.shutdown(std::chrono::seconds(10));
//
// Thread-safety: the server's io_context may run on any number of threads.
// start() and shutdown() are called once each.
#pragma once

#include <switchboard/host/opened_workflow.hpp>
#include <switchboard/host/workflow_metrics.hpp>
#include <switchboard/host/workflow_tracing.hpp>
#include <switchboard/net/http_server.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace switchboard::server {

struct serve_options {
  std::vector<host::workflow_settings> workflows;  // each served as a graph named by its workflow's name
  std::string store_url;                           // host::open_store's URL; "" = the default SQLite file
  net::server_options http;                        // address, port, limits, TLS
  // Not empty: every request but GET /ok must carry it (Authorization:
  // Bearer TOKEN, or x-api-key: TOKEN); compared in constant time.
  std::string auth_token;
  std::vector<std::string> cors_origins;           // browsers of these origins may call the API
  // A stream with nothing to send writes a comment this often (and so
  // finds out when its client has gone).
  std::chrono::milliseconds heartbeat{std::chrono::seconds(10)};
  // How long a claim on a run holds without renewal (the hubs' claims in
  // the store and, sharing runs, this server's claims on threads): a
  // server that dies leaves its runs to others after this long.
  std::chrono::milliseconds lease{std::chrono::seconds(30)};
  // Sharing runs (a PostgreSQL store): at most this many threads executed
  // here at once; the others wait in the queue for any server.
  std::size_t max_threads = 256;
  // Set: finished runs whose last change is older than this are removed,
  // with their streams (their threads stay, with their values). Unset:
  // kept until their thread is deleted.
  std::optional<std::chrono::seconds> retention;
  // Spans of every run (host::process_tracing's observer); null: tracing
  // off, and nothing is attached to the hubs. A run created with a
  // `traceparent` header continues the caller's trace.
  std::shared_ptr<host::workflow_tracer> tracing;
  // The process's metrics (OTLP export included when configured): every
  // hub, model and parser of the served workflows records into its meter,
  // and /metrics shows its instruments after the serve_* series. Null: the
  // server keeps a meter of its own, for /metrics only.
  std::shared_ptr<host::process_metrics> metrics;
};

class agent_server {
 public:
  // Opens the store and every workflow (their plugins, schemas, prompts and
  // MCP servers). Throws what host::open_store and host::open_workflow
  // throw, host_error naming the graph served twice, and net_error when the
  // address cannot be listened on.
  agent_server(boost::asio::any_io_executor executor, serve_options options);
  ~agent_server();
  agent_server(const agent_server&) = delete;
  agent_server& operator=(const agent_server&) = delete;

  // Reads back what the store kept, carries on the runs that were running,
  // then accepts connections.
  boost::asio::awaitable<void> start();
  std::uint16_t port() const noexcept;
  // Stops accepting, lets running steps finish for up to `grace`, then
  // interrupts the rest: they continue at the next start.
  boost::asio::awaitable<void> shutdown(std::chrono::milliseconds grace);

  struct impl;

 private:
  std::unique_ptr<impl> impl_;
};

}  // namespace switchboard::server
