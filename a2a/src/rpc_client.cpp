// JSON-RPC calls to a remote A2A agent, and its agent card.
#include "rpc_client.hpp"

#include "remote_failure.hpp"

#include <switchboard/net/error.hpp>
#include <switchboard/net/redaction.hpp>
#include <switchboard/protocol/limits.hpp>
#include <switchboard/telemetry/trace_context.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/url/parse.hpp>

#include <cctype>
#include <vector>

namespace switchboard::a2a {

namespace json = boost::json;

namespace {

constexpr std::string_view version_header = "A2A-Version";
constexpr std::string_view version = "1.0";

std::string who(const remote_agent_config& config) { return "remote agent '" + config.name + "'"; }

// The request's headers: A2A-Version, then the configured ones (secret).
std::vector<net::http_header> headers_of(const remote_agent_config& config) {
  std::vector<net::http_header> out{{version_header, version, false}};
  for (const auto& [name, value] : config.headers) out.push_back({name, value, true});
  return out;
}

// What the remote sent, quotable: secrets it echoed redacted, cut, escaped.
std::string quoted(std::string_view text, const std::vector<net::http_header>& headers) {
  return net::excerpt(text, headers, 300);
}

// A failure of the network layer: whether the remote got the request.
delivery delivery_of(const net::net_error& e) {
  if (e.errc() == net::net_errc::connect_failed || e.errc() == net::net_errc::tls_verification_failed)
    return delivery::unsent;
  if (e.errc() == net::net_errc::timeout || e.errc() == net::net_errc::connection_lost) return delivery::unknown;
  return delivery::refused;
}

delivery delivery_of(int http_status) {
  return http_status == 429 || http_status == 503 ? delivery::unsent : delivery::refused;
}

json::value parse_answer(const remote_agent_config& config, std::string_view what, std::string_view body) {
  boost::system::error_code ec;
  json::value v = json::parse(body, ec, {}, protocol::untrusted_parse_options());
  if (ec) {
    throw remote_failure("invalid_remote_response",
                         who(config) + ": " + std::string(what) + " is not JSON (" + ec.message() + ")");
  }
  if (auto problem = protocol::check_untrusted_value(v)) {
    throw remote_failure("invalid_remote_response", who(config) + ": " + std::string(what) + ": " + *problem);
  }
  return v;
}

std::string lowered(std::string_view text) {
  std::string out(text);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Scheme, host and port, the default port of the scheme filled in.
bool same_origin(const boost::urls::url_view& a, const boost::urls::url_view& b) {
  const auto port = [](const boost::urls::url_view& u) -> std::uint16_t {
    if (u.has_port()) return u.port_number();
    return lowered(u.scheme()) == "https" ? 443 : 80;
  };
  return lowered(a.scheme()) == lowered(b.scheme()) && lowered(a.host()) == lowered(b.host()) && port(a) == port(b);
}

json::value request_body(std::int64_t id, std::string_view method, json::object params) {
  return json::object{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}};
}

}  // namespace

net::http_options http_options_for(const remote_agent_config& config, std::string url) {
  net::http_options options;
  options.base_url = std::move(url);
  options.request_timeout = config.request_timeout;
  options.verify_peer = config.verify_peer;
  options.max_response_bytes = max_response_bytes;
  options.max_connections_per_host = 8;
  options.retry.max_attempts = 3;
  options.retry.initial_backoff = std::chrono::milliseconds(200);
  return options;
}

rpc_client::rpc_client(std::string url, const remote_agent_config& config)
    : url_(std::move(url)), config_(config), client_([&] {
        try {
          return net::http_client(http_options_for(config, url_), who(config));
        } catch (const net::net_error& e) {
          throw remote_failure("not_configured", who(config) + ": " + e.what());
        }
      }()) {}

boost::asio::awaitable<json::value> rpc_client::call(std::string_view method, json::object params,
                                                     std::chrono::milliseconds timeout, net::retry_scope retry,
                                                     const telemetry::span_context& trace) {
  const std::int64_t id = next_id_++;
  const std::string body = json::serialize(request_body(id, method, std::move(params)));
  auto headers = headers_of(config_);
  const std::string traceparent = trace.valid() ? telemetry::format_traceparent(trace) : std::string();
  if (!traceparent.empty()) {
    headers.push_back({telemetry::traceparent_header, traceparent, false});
    if (!trace.trace_state.empty()) headers.push_back({telemetry::tracestate_header, trace.trace_state, false});
  }
  net::http_request request;
  request.method = net::http_method::post;
  request.body = body;
  request.headers = headers;
  request.max_body_bytes = max_response_bytes;
  request.timeout = timeout;
  request.retry = retry;
  // The deadline holds for the request with its retries, not each attempt.
  net::request_budget budget;
  budget.deadline = std::chrono::steady_clock::now() + timeout;
  request.budget = &budget;
  net::http_result result;
  std::optional<remote_failure> failure;
  try {
    result = co_await client_.request(request);
  } catch (const net::net_error& e) {
    if (e.errc() == net::net_errc::cancelled) throw;
    failure = remote_failure("remote_agent_unreachable",
                             who(config_) + ": " + std::string(method) + " at " + url_ + ": " +
                                 (e.reason().empty() ? std::string(e.what()) : e.reason()),
                             e.retryable(), delivery_of(e));
  }
  if (failure) throw *failure;
  const std::string what = std::string(method) + "'s answer";
  if (result.status != 200) {
    throw remote_failure("remote_agent_unreachable",
                         who(config_) + ": " + std::string(method) + " at " + url_ + " answered HTTP " +
                             std::to_string(result.status) + ": " + quoted(result.body, headers),
                         result.status >= 500 || result.status == 429, delivery_of(result.status));
  }
  auto answer = parse_answer(config_, what, result.body);
  const auto* o = answer.if_object();
  if (!o || !o->contains("jsonrpc")) throw remote_failure("invalid_remote_response", who(config_) + ": " + what + " is not a JSON-RPC response");
  const auto* answered_id = o->if_contains("id");
  if (!answered_id || !answered_id->is_int64() || answered_id->get_int64() != id) {
    throw remote_failure("invalid_remote_response", who(config_) + ": " + what + " answers another request id");
  }
  if (const auto* error = o->if_contains("error")) {
    const auto* e = error->if_object();
    const auto* code = e ? e->if_contains("code") : nullptr;
    const auto* message = e ? e->if_contains("message") : nullptr;
    throw remote_failure("remote_error", who(config_) + ": " + std::string(method) + " failed: " +
                                             (message && message->is_string() ? quoted(message->get_string(), headers)
                                                                              : std::string("(no message)")) +
                                             (code && code->is_int64() ? " (code " +
                                                                             std::to_string(code->get_int64()) + ")"
                                                                       : std::string()));
  }
  const auto* value = o->if_contains("result");
  if (!value) throw remote_failure("invalid_remote_response", who(config_) + ": " + what + " has no result");
  co_return *value;
}

boost::asio::awaitable<std::string> interface_from_card(const remote_agent_config& config) {
  const std::string where = "the agent card at " + config.card_url;
  std::optional<net::http_client> client;
  try {
    client.emplace(http_options_for(config, config.card_url), who(config));
  } catch (const net::net_error& e) {
    throw remote_failure("not_configured", who(config) + ": " + e.what());
  }
  const auto headers = headers_of(config);
  net::http_request request;
  request.headers = headers;
  request.max_body_bytes = max_response_bytes;
  net::request_budget budget;
  budget.deadline = std::chrono::steady_clock::now() + config.request_timeout;
  request.budget = &budget;
  net::http_result result;
  std::optional<remote_failure> failure;
  try {
    result = co_await client->request(request);
  } catch (const net::net_error& e) {
    if (e.errc() == net::net_errc::cancelled) throw;
    failure = remote_failure("remote_agent_unreachable",
                             who(config) + ": cannot fetch " + where + ": " +
                                 (e.reason().empty() ? std::string(e.what()) : e.reason()),
                             e.retryable(), delivery_of(e));
  }
  if (failure) throw *failure;
  if (result.status != 200) {
    throw remote_failure("remote_agent_unreachable", who(config) + ": " + where + " answered HTTP " +
                                                         std::to_string(result.status) + ": " +
                                                         quoted(result.body, headers),
                         result.status >= 500 || result.status == 429, delivery_of(result.status));
  }
  const auto card = parse_answer(config, where, result.body);
  const auto* interfaces = card.is_object() ? card.get_object().if_contains("supportedInterfaces") : nullptr;
  std::string offered;
  std::string elsewhere;  // a JSON-RPC interface on another origin, refused
  if (interfaces && interfaces->is_array()) {
    for (const auto& i : interfaces->get_array()) {
      const auto* o = i.if_object();
      if (!o) continue;
      const auto* url = o->if_contains("url");
      const auto* binding = o->if_contains("protocolBinding");
      const auto* protocol = o->if_contains("protocolVersion");
      if (!url || !url->is_string() || !binding || !binding->is_string() || !protocol || !protocol->is_string())
        continue;
      if (binding->get_string() != "JSONRPC" || !protocol->get_string().starts_with("1.")) {
        if (offered.size() < 200)
          offered += (offered.empty() ? "" : ", ") + quoted(binding->get_string(), headers) + " " +
                     quoted(protocol->get_string(), headers);
        continue;
      }
      const auto endpoint = boost::urls::parse_uri(url->get_string());
      const auto card_url = boost::urls::parse_uri(config.card_url);
      if (!endpoint || (endpoint->scheme() != "http" && endpoint->scheme() != "https")) {
        throw remote_failure("invalid_remote_response",
                             who(config) + ": " + where + " names an interface URL that is not http(s)");
      }
      // The configured headers (a key) go to the interface: never to an
      // address the card chose on another origin.
      if (!card_url || !same_origin(*endpoint, *card_url)) {
        if (elsewhere.empty()) elsewhere = quoted(url->get_string(), headers);
        continue;
      }
      co_return std::string(url->get_string());
    }
  }
  if (!elsewhere.empty()) {
    throw remote_failure("invalid_remote_response",
                         who(config) + ": " + where + " names its JSON-RPC interface on another origin (" + elsewhere +
                             "); give that URL as \"url\" in the workflow file if it is to be trusted");
  }
  throw remote_failure("invalid_remote_response",
                       who(config) + ": " + where + " offers no JSON-RPC interface of A2A 1.x" +
                           (offered.empty() ? std::string() : " (it offers: " + offered + ")"));
}

}  // namespace switchboard::a2a
