// switchboard serve — the workflows behind the LangGraph Agent Server API
// (docs/serving.md):
//
//   switchboard serve WORKFLOW... [--listen HOST:PORT] [--store URL] [--threads N] [--lease S]
//                     [--auth-token-file FILE | --insecure-no-auth] [--tls-cert FILE --tls-key FILE]
//                     [--cors-origin ORIGIN]... [model and loader options]
//
// Prints "listening on http(s)://HOST:PORT" on standard output once it
// accepts connections (PORT is the one picked for port 0). SIGINT/SIGTERM
// stop it: no new connections, running steps get a grace period, the
// rest continue at the next start.
#include "command.hpp"
#include "loader_arguments.hpp"
#include "model_arguments.hpp"
#include "run_session.hpp"

#include <switchboard/host/workflow_tracing.hpp>
#include <switchboard/host/store.hpp>
#include <switchboard/server/agent_server.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <spdlog/spdlog.h>

#include <charconv>
#include <csignal>
#include <fstream>
#include <iostream>
#include <thread>

namespace {

namespace asio = boost::asio;
namespace cli = switchboard::cli;
namespace host = switchboard::host;
namespace server = switchboard::server;
using cli::option_value;
using cli::usage_error;

constexpr std::string_view usage =
    "usage: switchboard serve WORKFLOW... [options]\n"
    "Serves each workflow (a workflow file, or a directory holding workflow.json) over the LangGraph\n"
    "Agent Server API; @langchain/langgraph-sdk drives it unchanged (docs/serving.md).\n"
    "  --listen HOST:PORT      where to listen (default 127.0.0.1:2024; port 0 picks a free one)\n"
    "  --store URL             memory | sqlite:PATH | postgresql://USER@HOST/DB\n"
    "                          (default: sqlite:<state dir>/workflows.db)\n"
    "  --threads N             threads serving requests and running workflows (default 2)\n"
    "  --auth-token-file FILE  every request but GET /ok and the page needs this token (Bearer or x-api-key)\n"
    "  --insecure-no-auth      listen on a non-loopback address without a token\n"
    "  --tls-cert FILE --tls-key FILE   serve HTTPS\n"
    "  --cors-origin ORIGIN    let browsers of ORIGIN call the API (repeatable)\n"
    "  --grace SECONDS         how long running steps may finish at SIGTERM (default 10)\n"
    "  --lease SECONDS         how long a claim on a run holds unrenewed: a server that dies leaves\n"
    "                          its runs to the others after this long (default 30)\n"
    "  --retention SECONDS     remove finished runs and their streams this long after their last change\n"
    "                          (their threads stay; default: kept until the thread is deleted)\n"
    "  --max-threads N         with a PostgreSQL store, threads executed here at once (default 256);\n"
    "                          servers on one database share runs (docs/scaling.md)\n"
    "plus the model and loader options of `switchboard run`; a caller's traceparent is continued.\n";

struct serve_arguments {
  std::vector<std::filesystem::path> workflows;
  host::loader_settings loader;
  host::model_options model;
  server::serve_options options;
  std::filesystem::path token_file;
  bool insecure_no_auth = false;
  unsigned threads = 2;
  int grace_seconds = 10;
};

template <class Number>
Number number_of(const std::string& option, const std::string& text) {
  Number n{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc{} || end != text.data() + text.size())
    throw usage_error("option '" + option + "' needs a number, got '" + text + "'");
  return n;
}

void take_listen(const std::string& value, switchboard::net::server_options& http) {
  const auto colon = value.rfind(':');
  if (colon == std::string::npos) throw usage_error("--listen needs HOST:PORT, got '" + value + "'");
  auto address = value.substr(0, colon);
  if (address.size() > 2 && address.front() == '[' && address.back() == ']') address = address.substr(1, address.size() - 2);
  if (address == "localhost") address = "127.0.0.1";
  http.address = address;
  http.port = number_of<std::uint16_t>("--listen", value.substr(colon + 1));
}

bool is_loopback(const std::string& address) {
  return address.starts_with("127.") || address == "::1";
}

std::string read_token(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw usage_error("cannot read the token file '" + file.string() + "'");
  std::string token;
  std::getline(in, token);
  while (!token.empty() && (token.back() == '\r' || token.back() == ' ')) token.pop_back();
  if (token.size() < 16) throw usage_error("the token in '" + file.string() + "' is shorter than 16 characters");
  return token;
}

serve_arguments parse(std::span<const std::string> args) {
  serve_arguments a;
  a.options.http.port = 2024;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (cli::take_loader_option(args, i, a.loader) || cli::take_model_option(args, i, a.model)) continue;
    if (arg == "--listen") take_listen(option_value(args, i), a.options.http);
    else if (arg == "--store") a.options.store_url = host::absolute_store_url(option_value(args, i));
    else if (arg == "--threads") a.threads = number_of<unsigned>(arg, option_value(args, i));
    else if (arg == "--auth-token-file") a.token_file = option_value(args, i);
    else if (arg == "--insecure-no-auth") a.insecure_no_auth = true;
    else if (arg == "--tls-cert") a.options.http.tls_certificate_file = option_value(args, i);
    else if (arg == "--tls-key") a.options.http.tls_private_key_file = option_value(args, i);
    else if (arg == "--cors-origin") a.options.cors_origins.push_back(option_value(args, i));
    else if (arg == "--grace") a.grace_seconds = number_of<int>(arg, option_value(args, i));
    else if (arg == "--lease") a.options.lease = std::chrono::seconds(number_of<unsigned>(arg, option_value(args, i)));
    else if (arg == "--retention")
      a.options.retention = std::chrono::seconds(number_of<unsigned>(arg, option_value(args, i)));
    else if (arg == "--max-threads") a.options.max_threads = number_of<std::size_t>(arg, option_value(args, i));
    else if (arg.starts_with("-")) throw usage_error("unknown option '" + arg + "'");
    else a.workflows.push_back(cli::absolute_path(arg));
  }
  if (a.workflows.empty()) throw usage_error("missing the workflow to serve");
  if (a.threads == 0) throw usage_error("--threads must be at least 1");
  if (a.options.lease < std::chrono::seconds(1)) throw usage_error("--lease must be at least 1 second");
  if (a.options.max_threads == 0) throw usage_error("--max-threads must be at least 1");
  if (a.options.retention && *a.options.retention < std::chrono::seconds(1))
    throw usage_error("--retention must be at least 1 second");
  if (!a.token_file.empty()) a.options.auth_token = read_token(a.token_file);
  if (!is_loopback(a.options.http.address) && a.options.auth_token.empty() && !a.insecure_no_auth)
    throw usage_error("listening on " + a.options.http.address +
                      " (not loopback) needs --auth-token-file FILE, or --insecure-no-auth");
  for (auto& w : a.workflows) {
    if (std::filesystem::is_directory(w)) w /= "workflow.json";
    host::workflow_settings settings{.workflow_file = w, .loader = a.loader, .model = a.model};
    a.options.workflows.push_back(std::move(settings));
  }
  return a;
}

int run_serve(std::span<const std::string> args) {
  for (const auto& a : args)
    if (a == "--help" || a == "-h") {
      std::cout << usage << cli::tracing_environment_usage;
      return cli::exit_ok;
    }
  return cli::guarded(usage, [&] {
    auto a = parse(args);
    asio::io_context io(static_cast<int>(a.threads));
    // Spans when the OTEL_* variables ask for them; its destructor, after
    // the server's, ends what is open and flushes within 5 s.
    host::process_tracing tracing(switchboard::telemetry::process_environment(), "switchboard");
    a.options.tracing = tracing.observer();
    // Metrics: /metrics always; over OTLP when the OTEL_* variables ask.
    // Destroyed after the server: one last export, bounded.
    auto metrics = std::make_shared<host::process_metrics>(switchboard::telemetry::process_environment(), "switchboard");
    a.options.metrics = metrics;
    server::agent_server server(io.get_executor(), a.options);
    const bool tls = !a.options.http.tls_certificate_file.empty();
    asio::co_spawn(io, [&]() -> asio::awaitable<void> {
      co_await server.start();
      std::cout << "listening on " << (tls ? "https" : "http") << "://" << a.options.http.address << ":"
                << server.port() << std::endl;
    }, [](std::exception_ptr e) {
      if (e) std::rethrow_exception(e);
    });
    asio::signal_set signals(io, SIGINT, SIGTERM);
    signals.async_wait([&](const boost::system::error_code& ec, int signal) {
      if (ec) return;
      spdlog::info("serve: signal {}: stopping (grace {} s)", signal, a.grace_seconds);
      asio::co_spawn(io, server.shutdown(std::chrono::seconds(a.grace_seconds)), [&](std::exception_ptr) { io.stop(); });
    });
    std::vector<std::thread> pool;
    for (unsigned i = 1; i < a.threads; ++i) pool.emplace_back([&] { io.run(); });
    io.run();
    for (auto& t : pool) t.join();
    return cli::exit_ok;
  });
}

const cli::command_registration registration{"serve", "serve workflows over the LangGraph Agent Server API",
                                             &run_serve};

}  // namespace
