// The routes of the LangGraph Agent Server API (docs/serving.md lists the
// subset): assistants, threads, their state and history, runs, streams.
#pragma once

#include "catalog.hpp"
#include "run_engine.hpp"

#include <switchboard/net/http_server.hpp>

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace switchboard::server {

class langgraph_api {
 public:
  langgraph_api(catalog& records, run_engine& runs, std::chrono::milliseconds heartbeat)
      : records_(records), runs_(runs), heartbeat_(heartbeat) {}

  // Answers `request`; api_error becomes its 4xx.
  boost::asio::awaitable<net::server_response> handle(net::server_request& request);

 private:
  boost::asio::awaitable<net::server_response> route(net::server_request& request);

  boost::asio::awaitable<net::server_response> create_assistant(const net::server_request& request);
  net::server_response search_assistants(const net::server_request& request);
  boost::asio::awaitable<net::server_response> create_thread(const net::server_request& request);
  net::server_response search_threads(const net::server_request& request);
  boost::asio::awaitable<net::server_response> delete_thread(const std::string& thread_id);
  boost::asio::awaitable<net::server_response> thread_state(const std::string& thread_id);
  boost::asio::awaitable<net::server_response> thread_history(const std::string& thread_id,
                                                              const net::server_request& request);
  boost::asio::awaitable<net::server_response> create_run(std::string thread_id, const net::server_request& request,
                                                          std::string_view mode);
  net::server_response list_runs(const std::string& thread_id, const net::server_request& request);
  net::server_response join_stream(const std::string& thread_id, const std::string& run_id,
                                   const net::server_request& request);
  net::server_response join(const std::string& thread_id, const std::string& run_id);
  boost::asio::awaitable<net::server_response> cancel_run(const std::string& thread_id, const std::string& run_id,
                                                          const net::server_request& request);
  boost::asio::awaitable<net::server_response> delete_run(const std::string& thread_id, const std::string& run_id);

  net::server_response stream_of(const run_record& run, std::vector<std::string> modes, std::int64_t after,
                                 bool cancel_on_disconnect);
  boost::asio::awaitable<std::optional<std::vector<orchestrator::feed_event>>> left_after_end(std::string run_id,
                                                                                              std::int64_t after);
  boost::asio::awaitable<void> cancel_for_gone_client(std::string thread_id, std::string run_id);
  net::server_response result_of(const run_record& run);

  catalog& records_;
  run_engine& runs_;
  std::chrono::milliseconds heartbeat_;
};

}  // namespace switchboard::server
