// `/mcp` (mcp_endpoint.hpp): sessions by Mcp-Session-Id, each an
// mcp::server_session on a strand of its own, and a stream per request that
// carries the messages the session sends for it.
#include "mcp_endpoint.hpp"

#include <switchboard/protocol/limits.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <deque>
#include <map>
#include <mutex>
#include <random>

namespace switchboard::server {

namespace asio = boost::asio;
namespace json = boost::json;

namespace {

using clock = std::chrono::steady_clock;

// The messages of one request's stream, from the session's strand to the
// connection that streams them.
class request_channel : public std::enable_shared_from_this<request_channel> {
 public:
  explicit request_channel(asio::any_io_executor consumer) : wake_(std::move(consumer)) {}

  void push(std::string message, bool last) {
    {
      std::lock_guard lock(mutex_);
      messages_.push_back(std::move(message));
      done_ = done_ || last;
    }
    notify();
  }
  void finish() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    notify();
  }

  // Streams the messages as server-sent events until the last one, or the
  // client is gone. On the consumer's executor.
  asio::awaitable<void> stream(net::response_stream& out, std::chrono::milliseconds heartbeat) {
    for (;;) {
      std::deque<std::string> ready;
      bool done = false;
      {
        std::lock_guard lock(mutex_);
        ready.swap(messages_);
        done = done_;
      }
      for (auto& message : ready) {
        const std::string event = "event: message\ndata: " + message + "\n\n";
        auto writing = out.write(event);
        if (!co_await std::move(writing)) co_return;
      }
      if (done) co_return;
      if (!ready.empty()) continue;
      wake_.expires_after(heartbeat);
      auto waiting = wake_.async_wait(asio::as_tuple(asio::use_awaitable));
      const auto [ec] = co_await std::move(waiting);
      if (!ec) {
        // Nothing to send for a while: a comment finds out whether the client is still there.
        auto writing = out.write(": keep-alive\n\n");
        if (!co_await std::move(writing)) co_return;
      }
    }
  }

 private:
  void notify() {
    asio::post(wake_.get_executor(), [self = shared_from_this()] { self->wake_.cancel(); });
  }

  std::mutex mutex_;
  std::deque<std::string> messages_;
  bool done_ = false;
  asio::steady_timer wake_;
};

std::string new_session_id() {
  static std::mutex mutex;
  static std::mt19937_64 random{(std::uint64_t{std::random_device{}()} << 32) ^ std::random_device{}()};
  std::lock_guard lock(mutex);
  char text[40];
  std::snprintf(text, sizeof text, "%016llx%016llx", static_cast<unsigned long long>(random()),
                static_cast<unsigned long long>(random()));
  return text;
}

net::server_response rpc_error_response(int status, int code, std::string message) {
  net::server_response r;
  r.status = status;
  r.body = json::serialize(json::object{{"jsonrpc", "2.0"},
                                        {"id", nullptr},
                                        {"error", json::object{{"code", code}, {"message", std::move(message)}}}});
  return r;
}

// One MCP session over HTTP.
struct http_session : std::enable_shared_from_this<http_session> {
  http_session(std::string session_id, asio::any_io_executor executor)
      : id(std::move(session_id)), strand(asio::make_strand(executor)) {}

  // Where a message the session sends goes: the stream of its request.
  void route(std::string message, const json::value& related) {
    if (related.is_null()) {
      spdlog::debug("MCP session {}: a message for no request dropped", id);
      return;
    }
    boost::system::error_code ec;
    const json::value parsed = json::parse(message, ec);
    const bool last = !ec && parsed.is_object() && !parsed.get_object().contains("method") &&
                      parsed.get_object().contains("id");  // the request's own response
    std::shared_ptr<request_channel> channel;
    {
      std::lock_guard lock(mutex);
      const auto it = routes.find(json::serialize(related));
      if (it == routes.end()) return;  // its stream is gone (the client went away)
      channel = it->second;
      if (last) routes.erase(it);
    }
    channel->push(std::move(message), last);
  }

  // False when a stream for that request id is already open.
  bool open_route(const std::string& key, std::shared_ptr<request_channel> channel) {
    std::lock_guard lock(mutex);
    return routes.emplace(key, std::move(channel)).second;
  }
  void close_route(const std::string& key) {
    std::lock_guard lock(mutex);
    routes.erase(key);
  }

  void receive(std::string message) {
    last_used = clock::now().time_since_epoch().count();
    asio::post(strand, [self = shared_from_this(), message = std::move(message)] { self->session->receive(message); });
  }

  void close() {
    asio::post(strand, [self = shared_from_this()] {
      self->session->close();
      std::map<std::string, std::shared_ptr<request_channel>> open;
      {
        std::lock_guard lock(self->mutex);
        open.swap(self->routes);
      }
      for (auto& [key, channel] : open) channel->finish();
    });
  }

  const std::string id;
  asio::strand<asio::any_io_executor> strand;
  std::shared_ptr<mcp::server_session> session;
  std::atomic<int> open_streams{0};
  std::atomic<clock::rep> last_used{clock::now().time_since_epoch().count()};
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<request_channel>> routes;  // by the request's serialized id
};

}  // namespace

struct mcp_endpoint::impl : std::enable_shared_from_this<mcp_endpoint::impl> {
  asio::any_io_executor executor;
  std::shared_ptr<mcp::tool_provider> tools;
  mcp::server_info info;
  std::chrono::milliseconds heartbeat;
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<http_session>> sessions;

  std::shared_ptr<http_session> find(const net::server_request& request) {
    const auto id = request.header("mcp-session-id");
    if (!id) return nullptr;
    std::lock_guard lock(mutex);
    const auto it = sessions.find(std::string(*id));
    return it == sessions.end() ? nullptr : it->second;
  }

  // A new session, or null when max_sessions are open and busy.
  std::shared_ptr<http_session> open_session() {
    std::lock_guard lock(mutex);
    if (sessions.size() >= max_sessions && !drop_idlest()) return nullptr;
    auto s = std::make_shared<http_session>(new_session_id(), executor);
    const std::weak_ptr<http_session> weak = s;
    s->session = mcp::server_session::make(s->strand, tools, info,
                                           [weak](std::string message, const json::value& related) {
                                             if (auto self = weak.lock()) self->route(std::move(message), related);
                                           });
    sessions.emplace(s->id, s);
    spdlog::info("MCP over HTTP: session {} opened", s->id);
    return s;
  }

  // Under `mutex`: ends the session idle longest with no stream open.
  bool drop_idlest() {
    auto idlest = sessions.end();
    for (auto it = sessions.begin(); it != sessions.end(); ++it) {
      if (it->second->open_streams.load() != 0) continue;
      if (idlest == sessions.end() || it->second->last_used.load() < idlest->second->last_used.load()) idlest = it;
    }
    if (idlest == sessions.end()) return false;
    spdlog::info("MCP over HTTP: session {} dropped (idle longest, {} sessions open)", idlest->first, sessions.size());
    idlest->second->close();
    sessions.erase(idlest);
    return true;
  }

  asio::awaitable<net::server_response> post(net::server_request& request);
  asio::awaitable<net::server_response> stream_answer(std::shared_ptr<http_session> session, std::string key,
                                                      std::string body);
};

mcp_endpoint::mcp_endpoint(asio::any_io_executor executor, std::shared_ptr<mcp::tool_provider> tools,
                           mcp::server_info info, std::chrono::milliseconds heartbeat)
    : impl_(std::make_shared<impl>()) {
  impl_->executor = std::move(executor);
  impl_->tools = std::move(tools);
  impl_->info = std::move(info);
  impl_->heartbeat = heartbeat;
}

mcp_endpoint::~mcp_endpoint() { close_all(); }

void mcp_endpoint::close_all() {
  std::map<std::string, std::shared_ptr<http_session>> open;
  {
    std::lock_guard lock(impl_->mutex);
    open.swap(impl_->sessions);
  }
  for (auto& [id, s] : open) s->close();
}

asio::awaitable<net::server_response> mcp_endpoint::handle(net::server_request& request) {
  // A revision the client names must be one the server speaks (the
  // transport's rule: 400 otherwise).
  if (const auto version = request.header("mcp-protocol-version");
      version && std::ranges::find(mcp::server_protocol_versions, *version) == mcp::server_protocol_versions.end()) {
    co_return rpc_error_response(400, mcp::rpc_code::invalid_request,
                                 "unsupported MCP-Protocol-Version (2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05)");
  }
  if (request.method == "POST") {
    auto posting = impl_->post(request);
    co_return co_await std::move(posting);
  }
  if (request.method == "DELETE") {
    auto s = impl_->find(request);
    if (!s) co_return rpc_error_response(404, mcp::rpc_code::invalid_request, "no such MCP session");
    {
      std::lock_guard lock(impl_->mutex);
      impl_->sessions.erase(s->id);
    }
    s->close();
    spdlog::info("MCP over HTTP: session {} ended by the client", s->id);
    co_return net::server_response{.status = 200, .headers = {}, .body = {}, .stream = {}, .close = false, .raw = {}};
  }
  auto r = rpc_error_response(405, mcp::rpc_code::invalid_request,
                              "method " + request.method + " is not allowed on /mcp (POST, DELETE)");
  r.headers.emplace_back("Allow", "POST, DELETE");
  co_return r;
}

asio::awaitable<net::server_response> mcp_endpoint::impl::post(net::server_request& request) {
  boost::system::error_code ec;
  const json::value message = json::parse(request.body, ec, {}, protocol::untrusted_parse_options());
  if (ec) co_return rpc_error_response(400, mcp::rpc_code::parse_error, "malformed JSON: " + ec.message());
  if (!message.is_object())
    co_return rpc_error_response(400, mcp::rpc_code::invalid_request, "one JSON-RPC message (an object) per POST");
  const auto& o = message.get_object();
  const auto* method = o.if_contains("method");
  const auto* id = o.if_contains("id");
  const bool is_request = method && id;
  std::shared_ptr<http_session> s;
  if (is_request && method->is_string() && method->get_string() == "initialize") {
    s = open_session();
    if (!s) co_return rpc_error_response(503, mcp::rpc_code::server_busy, "too many MCP sessions open");
  } else {
    if (!request.header("mcp-session-id"))
      co_return rpc_error_response(400, mcp::rpc_code::invalid_request, "missing the Mcp-Session-Id header");
    s = find(request);
    if (!s) co_return rpc_error_response(404, mcp::rpc_code::invalid_request, "no such MCP session (ended?)");
  }
  if (!is_request) {
    s->receive(std::move(request.body));
    co_return net::server_response{.status = 202, .headers = {}, .body = {}, .stream = {}, .close = false, .raw = {}};
  }
  auto answering = stream_answer(s, json::serialize(*id), std::move(request.body));
  co_return co_await std::move(answering);
}

asio::awaitable<net::server_response> mcp_endpoint::impl::stream_answer(std::shared_ptr<http_session> s,
                                                                        std::string key, std::string body) {
  auto channel = std::make_shared<request_channel>(co_await asio::this_coro::executor);
  if (!s->open_route(key, channel))
    co_return rpc_error_response(409, mcp::rpc_code::invalid_request, "request id " + key + " is already in use");
  s->receive(std::move(body));
  net::server_response r;
  r.headers = {{"Content-Type", "text/event-stream"}, {"Cache-Control", "no-cache"}, {"Mcp-Session-Id", s->id}};
  r.stream = [s, key, channel, heartbeat = heartbeat](net::response_stream& out) -> asio::awaitable<void> {
    ++s->open_streams;
    auto streaming = channel->stream(out, heartbeat);
    co_await std::move(streaming);
    s->close_route(key);
    --s->open_streams;
  };
  co_return r;
}

}  // namespace switchboard::server
