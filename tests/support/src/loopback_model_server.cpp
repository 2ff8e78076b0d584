#include <switchboard/testing/loopback_model_server.hpp>

#include "self_signed_certificate.hpp"
#include "wire_replies.hpp"

#include <switchboard/net/http_server.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/parse.hpp>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>

namespace switchboard::testing {

namespace asio = boost::asio;
namespace json = boost::json;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

// ---------------------------------------------------------------- records

namespace {

bool iequals(std::string_view a, std::string_view b) {
  return std::ranges::equal(a, b, [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
  });
}

}  // namespace

std::string recorded_request::header(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (iequals(key, name)) return value;
  }
  return {};
}

json::value recorded_request::json() const { return json::parse(body); }

// ---------------------------------------------------------------- actions

server_action server_action::reply(std::string content) {
  server_action a;
  a.content = std::move(content);
  return a;
}

server_action server_action::tool_calls(std::vector<scripted_tool_call> calls, std::string text) {
  server_action a = reply(std::move(text));
  a.calls = std::move(calls);
  a.finish_reason = "tool_calls";
  return a;
}

server_action server_action::fenced_json(std::string_view json_text) {
  return reply("Here is the result:\n```json\n" + std::string(json_text) + "\n```\n");
}

server_action server_action::error(int status, std::string message) {
  server_action a;
  a.type = kind::status;
  a.status = status;
  a.content = std::move(message);
  return a;
}

server_action server_action::rate_limited(int retry_after_seconds, std::string message) {
  return error(429, std::move(message)).with_header("Retry-After", std::to_string(retry_after_seconds));
}

server_action server_action::raw_body(int status, std::string body) {
  server_action a;
  a.type = kind::raw;
  a.status = status;
  a.content = std::move(body);
  return a;
}

server_action server_action::oversized(std::size_t bytes) { return reply(std::string(bytes, 'x')); }

server_action server_action::stall(std::chrono::milliseconds for_how_long) {
  server_action a;
  a.type = kind::stall;
  a.stall_for = for_how_long;
  return a;
}

server_action server_action::reset_mid_body() {
  server_action a;
  a.type = kind::reset_mid_body;
  a.content = R"({"choices":[{"message":{"content":"this answer is cut off before it ends"}}]})";
  return a;
}

server_action server_action::close_connection() {
  server_action a;
  a.type = kind::close;
  return a;
}

server_action&& server_action::with_latency(std::chrono::milliseconds delay) && {
  latency = delay;
  return std::move(*this);
}
server_action&& server_action::with_chunked(bool on) && {
  chunked = on;
  return std::move(*this);
}
server_action&& server_action::with_header(std::string name, std::string value) && {
  headers.emplace_back(std::move(name), std::move(value));
  return std::move(*this);
}
server_action&& server_action::with_connection_close() && {
  keep_alive = false;
  return std::move(*this);
}

server_action&& server_action::streamed() && {
  stream = true;
  return std::move(*this);
}
server_action&& server_action::with_delta_bytes(std::size_t bytes) && {
  delta_bytes = std::max<std::size_t>(1, bytes);
  return std::move(*this);
}
server_action&& server_action::with_split_at(std::vector<std::size_t> offsets) && {
  split_at = std::move(offsets);
  return std::move(*this);
}
server_action&& server_action::with_stall_after(std::size_t bytes, std::chrono::milliseconds for_how_long) && {
  stall_after = bytes;
  stall_for = for_how_long;
  return std::move(*this);
}
server_action&& server_action::without_terminator() && {
  terminator = false;
  return std::move(*this);
}
server_action&& server_action::with_crlf() && {
  crlf = true;
  return std::move(*this);
}

namespace {

using detail::chunk_encode;
using detail::chunk_of;
using detail::render_body;
using detail::render_head;
using detail::render_stream;

// No limit in time: the scripted actions decide when the server waits.
constexpr std::chrono::milliseconds forever = std::chrono::hours(24);

asio::awaitable<void> wait(std::chrono::milliseconds d) {
  if (d.count() <= 0) co_return;
  asio::steady_timer timer(co_await asio::this_coro::executor, d);
  co_await timer.async_wait(use_tuple);
}

// ---------------------------------------------------------------- answers on the raw connection

// Writes `bytes`; keeps the connection when asked to and the write went out.
asio::awaitable<bool> write_bytes(net::raw_connection& connection, std::string bytes, bool keep_alive) {
  const bool written = co_await connection.write(bytes);
  co_return written && keep_alive;
}

// Reads nothing more and answers nothing for `how_long`, then closes.
asio::awaitable<bool> stall_then_close(net::raw_connection&, std::chrono::milliseconds how_long) {
  co_await wait(how_long);
  co_return false;
}

asio::awaitable<bool> close_unanswered(net::raw_connection&) { co_return false; }

// Sends `bytes` (a head and half a body), then resets the connection.
asio::awaitable<bool> write_then_reset(net::raw_connection& connection, std::string bytes) {
  co_await connection.write(bytes);
  connection.reset();
  co_return false;
}

// A streamed answer: the head, then each piece of `text` up to the next cut
// as one chunk and one write; a stall sends nothing for stall_for once
// stall_after bytes went out, then closes.
asio::awaitable<bool> write_event_stream(net::raw_connection& connection, std::string head, std::string text,
                                         std::vector<std::size_t> cuts, std::optional<std::size_t> stall_after,
                                         std::chrono::milliseconds stall_for, bool keep_alive) {
  if (!co_await connection.write(head)) co_return false;
  std::size_t pos = 0;
  for (const std::size_t cut : cuts) {
    if (stall_after && pos >= *stall_after) co_return co_await stall_then_close(connection, stall_for);
    if (cut <= pos) continue;
    if (!co_await connection.write(chunk_of(std::string_view(text).substr(pos, cut - pos)))) co_return false;
    pos = cut;
  }
  if (stall_after && pos >= *stall_after) co_return co_await stall_then_close(connection, stall_for);
  co_return co_await write_bytes(connection, "0\r\n\r\n", keep_alive);
}

net::server_response raw_answer(std::function<asio::awaitable<bool>(net::raw_connection&)> write) {
  net::server_response response;
  response.raw = std::move(write);
  return response;
}

net::server_response event_stream(const server_action& a, const recorded_request& req, std::size_t n,
                                  bool client_keep_alive) {
  auto [text, cuts] = render_stream(a, req.target, req.body, n);
  const bool keep_alive = a.keep_alive && client_keep_alive && !a.stall_after;
  std::string head = "HTTP/1.1 200 OK\r\nServer: switchboard-loopback\r\nContent-Type: text/event-stream\r\n"
                     "Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n";
  head += keep_alive ? "Connection: keep-alive\r\n" : "Connection: close\r\n";
  for (const auto& [name, value] : a.headers) head += name + ": " + value + "\r\n";
  head += "\r\n";
  if (a.stall_after) {
    cuts.push_back(std::min(*a.stall_after, text.size()));
    std::sort(cuts.begin(), cuts.end());
  }
  return raw_answer([head = std::move(head), text = std::move(text), cuts = std::move(cuts),
                     stall_after = a.stall_after, stall_for = a.stall_for, keep_alive](net::raw_connection& c) {
    return write_event_stream(c, head, text, cuts, stall_after, stall_for, keep_alive);
  });
}

// ---------------------------------------------------------------- answers the server writes

bool header_named(const header_list& headers, std::string_view name) {
  return std::ranges::any_of(headers, [&](const auto& header) { return iequals(header.first, name); });
}

// Whether the server's own response writer sends what render_head would:
// a body with a Content-Length, a status that may carry one, and no extra
// header that is the server's own or named twice (the writer sets a
// header, it does not add a second one). Otherwise the answer goes out as
// render_head's bytes through the raw hook.
bool server_writes_it_alike(const server_action& a, int status) {
  if (a.chunked || status < 200 || status == 204 || status == 304) return false;
  header_list seen;
  for (const auto& [name, value] : a.headers) {
    for (const std::string_view own :
         {"server", "content-type", "content-length", "transfer-encoding", "connection"}) {
      if (iequals(name, own)) return false;
    }
    if (header_named(seen, name)) return false;
    seen.emplace_back(name, value);
  }
  return true;
}

// A whole answer: status, JSON body, keep-alive as scripted and asked.
net::server_response whole_answer(const server_action& a, const recorded_request& req, std::size_t n,
                                  bool client_keep_alive) {
  const bool keep_alive = a.keep_alive && client_keep_alive;
  const int status = a.type == server_action::kind::reply ? 200 : a.status;
  std::string body = render_body(a, req, n);
  if (!server_writes_it_alike(a, status)) {
    std::string out = render_head(a, status, keep_alive, body.size(), a.chunked);
    out += a.chunked ? chunk_encode(body) : body;
    return raw_answer([out = std::move(out), keep_alive](net::raw_connection& c) {
      return write_bytes(c, out, keep_alive);
    });
  }
  net::server_response response;
  response.status = status;
  response.headers = {{"Server", "switchboard-loopback"}, {"Content-Type", "application/json"}};
  response.headers.insert(response.headers.end(), a.headers.begin(), a.headers.end());
  response.body = std::move(body);
  response.close = !keep_alive;
  return response;
}

// What the server answers request number `n` with `a`.
net::server_response answer(const server_action& a, const recorded_request& req, std::size_t n,
                            bool client_keep_alive) {
  switch (a.type) {
    case server_action::kind::stall:
      return raw_answer([how_long = a.stall_for](net::raw_connection& c) { return stall_then_close(c, how_long); });
    case server_action::kind::close:
      return raw_answer(close_unanswered);
    case server_action::kind::reset_mid_body: {
      const std::string body = render_body(a, req, n);
      std::string out = render_head(a, 200, true, body.size(), false) + body.substr(0, body.size() / 2);
      return raw_answer([out = std::move(out)](net::raw_connection& c) { return write_then_reset(c, out); });
    }
    default:
      break;
  }
  if (a.stream && a.type == server_action::kind::reply) return event_stream(a, req, n, client_keep_alive);
  return whole_answer(a, req, n, client_keep_alive);
}

// The network layer's server configured as this one always behaved: no
// limit in time or connections, bodies up to 64 MiB, a head up to Beast's
// default 8 KiB, small writes sent at once, and bytes that are not HTTP
// (a TLS ClientHello on the plain port) answered by closing.
net::server_options loopback_server_options(const std::filesystem::path& tls_dir) {
  net::server_options o;
  o.address = "127.0.0.1";
  o.max_connections = std::numeric_limits<std::size_t>::max();
  o.max_header_bytes = 8 * 1024;
  o.max_body_bytes = 64 * 1024 * 1024;
  o.request_timeout = o.idle_timeout = o.write_timeout = forever;
  o.answer_malformed_requests = false;
  if (!tls_dir.empty()) {
    o.tls_certificate_file = (tls_dir / "ca.pem").string();
    o.tls_private_key_file = (tls_dir / "key.pem").string();
  }
  return o;
}

}  // namespace

// ---------------------------------------------------------------- server

class loopback_model_server::impl {
 public:
  explicit impl(const loopback_options& options) {
    if (options.tls) write_certificate(options);
    server_.emplace(ioc_.get_executor(), loopback_server_options(temp_dir_),
                    [this](net::server_request& request) { return handle(request); });
    server_->start();
    thread_ = std::thread([this] { ioc_.run(); });
  }

  ~impl() {
    stop();
    if (!temp_dir_.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(temp_dir_, ec);
    }
  }

  // The connections are closed first, then the loop stops: a stall waiting
  // on a timer is dropped with the io_context.
  void stop() {
    std::call_once(stopped_, [this] {
      server_->stop();
      asio::post(ioc_, [this] { ioc_.stop(); });
      if (thread_.joinable()) thread_.join();
    });
  }

  unsigned short port() const noexcept { return server_->port(); }
  bool tls() const noexcept { return !temp_dir_.empty(); }
  std::string ca_file() const { return ca_file_; }

  void enqueue(server_action a) {
    std::lock_guard lock(mutex_);
    queue_.push_back(std::move(a));
  }
  void set_handler(handler h) {
    std::lock_guard lock(mutex_);
    handler_ = std::move(h);
  }
  void set_default(server_action a) {
    std::lock_guard lock(mutex_);
    default_ = std::move(a);
  }
  std::size_t accepted() const noexcept { return server_->accepted_connections(); }
  std::size_t request_count() const {
    std::lock_guard lock(mutex_);
    return requests_.size();
  }
  std::vector<recorded_request> requests() const {
    std::lock_guard lock(mutex_);
    return requests_;
  }
  void clear_requests() {
    std::lock_guard lock(mutex_);
    requests_.clear();
  }

 private:
  // The certificate (also the CA file clients trust) and its key, in a
  // private temporary directory the destructor removes.
  void write_certificate(const loopback_options& options) {
    const auto cert = detail::make_self_signed_certificate(options.certificate_names);
    std::string pattern = (std::filesystem::temp_directory_path() / "switchboard-loopback-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) throw std::runtime_error("loopback server: mkdtemp failed");
    temp_dir_ = pattern;
    ca_file_ = (temp_dir_ / "ca.pem").string();
    std::ofstream(ca_file_) << cert.certificate_pem;
    std::ofstream(temp_dir_ / "key.pem") << cert.private_key_pem;
  }

  asio::awaitable<net::server_response> handle(net::server_request& request) {
    recorded_request record;
    record.method = request.method;
    record.target = request.target;
    record.headers = std::move(request.headers);
    record.body = std::move(request.body);
    record.connection = static_cast<std::size_t>(request.connection);
    record.received_at = std::chrono::steady_clock::now();
    auto [action, n] = take_action(record);
    co_await wait(action.latency);
    co_return answer(action, record, n, request.keep_alive);
  }

  // Records the request and picks what to do with it.
  std::pair<server_action, std::size_t> take_action(const recorded_request& record) {
    std::unique_lock lock(mutex_);
    requests_.push_back(record);
    const std::size_t n = requests_.size();
    if (!queue_.empty()) {
      auto a = std::move(queue_.front());
      queue_.pop_front();
      return {std::move(a), n};
    }
    if (handler_) {
      auto h = handler_;
      lock.unlock();
      return {h(record), n};
    }
    if (default_) return {*default_, n};
    return {server_action::error(500, "loopback server: no scripted action for request " +
                                          std::to_string(n) + " (" + record.target + ")"),
            n};
  }

  asio::io_context ioc_{1};
  std::filesystem::path temp_dir_;  // TLS only: the certificate and key files
  std::string ca_file_;
  // Destroyed before ioc_; connections still on it keep the server's state alive until ioc_ goes.
  std::optional<net::http_server> server_;
  std::thread thread_;
  std::once_flag stopped_;

  mutable std::mutex mutex_;
  std::deque<server_action> queue_;
  handler handler_;
  std::optional<server_action> default_;
  std::vector<recorded_request> requests_;
};

loopback_model_server::loopback_model_server(loopback_options options)
    : impl_(std::make_unique<impl>(options)) {}
loopback_model_server::~loopback_model_server() = default;

unsigned short loopback_model_server::port() const noexcept { return impl_->port(); }
std::string loopback_model_server::base_url() const {
  return std::string(impl_->tls() ? "https" : "http") + "://127.0.0.1:" + std::to_string(port());
}
std::string loopback_model_server::ca_file() const { return impl_->ca_file(); }
void loopback_model_server::enqueue(server_action action) { impl_->enqueue(std::move(action)); }
void loopback_model_server::set_handler(handler h) { impl_->set_handler(std::move(h)); }
void loopback_model_server::set_default(server_action action) { impl_->set_default(std::move(action)); }
std::size_t loopback_model_server::accepted_connections() const noexcept { return impl_->accepted(); }
std::size_t loopback_model_server::request_count() const { return impl_->request_count(); }
std::vector<recorded_request> loopback_model_server::requests() const { return impl_->requests(); }
void loopback_model_server::clear_requests() { impl_->clear_requests(); }
void loopback_model_server::stop() { impl_->stop(); }

std::string render_event_stream(const server_action& action, std::string_view target, std::string_view request_body) {
  return render_stream(action, target, request_body, 1).first;
}

}  // namespace switchboard::testing
