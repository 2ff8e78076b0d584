// The A2A v1.0 server of `switchboard serve` (JSON-RPC and HTTP+JSON): each
// served workflow is an agent, each of its runs a task (task id = run id,
// contextId = the workflow's name). The runs go through the same
// host::workflow_tools as /mcp: the same hubs, store and pause handling.
// docs/interop.md, ADR 0035.
//
//   GET  /.well-known/agent-card.json            the card (one workflow served)
//   GET  /a2a/{workflow}/.well-known/agent-card.json   its card (any number)
//   POST /a2a/{workflow}                          JSON-RPC 2.0: SendMessage,
//        SendStreamingMessage, GetTask, ListTasks, CancelTask, SubscribeToTask
//   /a2a/{workflow}/message:send, /message:stream, /tasks, /tasks/{id},
//        /tasks/{id}:cancel, /tasks/{id}:subscribe   the same, HTTP+JSON binding
//
// Every request needs `A2A-Version: 1.0` (an absent one means 0.3, which is
// not served: VersionNotSupported). Errors are JSON-RPC errors with HTTP 200
// on JSON-RPC, an HTTP status with a google.rpc.Status body on HTTP+JSON, as
// the specification's bindings give them. One message at a time
// continues a task: a reply that races another gets UnsupportedOperation.
//
// Thread-safety: handle() may be called concurrently from any connection;
// workflow_tools is called on one strand of the endpoint's.
#pragma once

#include <switchboard/host/workflow_tools.hpp>
#include <switchboard/net/http_server.hpp>
#include <switchboard/orchestrator/checkpoint_store.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace switchboard::server {

struct a2a_agent {
  std::string workflow;     // its name: the path segment and the contextId
  std::string description;  // the workflow file's
};

class a2a_endpoint {
 public:
  a2a_endpoint(boost::asio::any_io_executor executor, std::shared_ptr<host::workflow_tools> tools,
               std::vector<a2a_agent> agents, std::shared_ptr<orchestrator::checkpoint_store> store,
               bool bearer_auth, bool tls, std::chrono::milliseconds heartbeat);
  ~a2a_endpoint();

  // Whether the A2A server answers `path` (the well-known card, /a2a/...).
  static bool serves(std::string_view path) noexcept;
  // An agent card's path: served without the API token (discovery).
  static bool is_card_path(std::string_view path) noexcept;

  boost::asio::awaitable<net::server_response> handle(net::server_request& request);
  // Server shutdown: the tasks in flight are interrupted (stored, resumable).
  void close_all();

  struct impl;

 private:
  std::shared_ptr<impl> impl_;
};

}  // namespace switchboard::server
