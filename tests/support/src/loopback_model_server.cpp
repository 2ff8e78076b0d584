#include <switchboard/testing/loopback_model_server.hpp>

#include "self_signed_certificate.hpp"
#include "wire_replies.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/status.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <thread>

namespace switchboard::testing {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace json = boost::json;
using tcp = asio::ip::tcp;
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

tcp::socket& lowest_socket(tcp::socket& s) { return s; }
tcp::socket& lowest_socket(asio::ssl::stream<tcp::socket>& s) { return s.next_layer(); }

}  // namespace

// ---------------------------------------------------------------- server

class loopback_model_server::impl {
 public:
  explicit impl(const loopback_options& options) : acceptor_(ioc_) {
    if (options.tls) setup_tls(options);
    const tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"), 0);
    acceptor_.open(endpoint.protocol());
    acceptor_.set_option(tcp::acceptor::reuse_address(true));
    acceptor_.bind(endpoint);
    acceptor_.listen(asio::socket_base::max_listen_connections);
    port_ = acceptor_.local_endpoint().port();
    asio::co_spawn(ioc_, accept_loop(), asio::detached);
    thread_ = std::thread([this] { ioc_.run(); });
  }

  ~impl() {
    stop();
    if (!temp_dir_.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(temp_dir_, ec);
    }
  }

  void stop() {
    std::call_once(stopped_, [this] {
      ioc_.stop();
      if (thread_.joinable()) thread_.join();
    });
  }

  unsigned short port() const noexcept { return port_; }
  bool tls() const noexcept { return ssl_.has_value(); }
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
  std::size_t accepted() const noexcept { return accepted_.load(); }
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
  void setup_tls(const loopback_options& options) {
    const auto cert = detail::make_self_signed_certificate(options.certificate_names);
    ssl_.emplace(asio::ssl::context::tls_server);
    ssl_->use_certificate_chain(asio::buffer(cert.certificate_pem));
    ssl_->use_private_key(asio::buffer(cert.private_key_pem), asio::ssl::context::pem);

    std::string pattern = (std::filesystem::temp_directory_path() / "switchboard-loopback-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) throw std::runtime_error("loopback server: mkdtemp failed");
    temp_dir_ = pattern;
    ca_file_ = (temp_dir_ / "ca.pem").string();
    std::ofstream(ca_file_) << cert.certificate_pem;
  }

  // Records the request and picks what to do with it.
  std::pair<server_action, std::size_t> take_action(recorded_request record) {
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

  asio::awaitable<void> accept_loop() {
    for (;;) {
      auto [ec, socket] = co_await acceptor_.async_accept(use_tuple);
      if (ec) {
        if (ec == asio::error::operation_aborted) co_return;
        continue;
      }
      const std::size_t index = ++accepted_;
      socket.set_option(tcp::no_delay(true));
      if (ssl_) {
        asio::co_spawn(ioc_, tls_session(std::move(socket), index), asio::detached);
      } else {
        asio::co_spawn(ioc_, session(std::move(socket), index), asio::detached);
      }
    }
  }

  asio::awaitable<void> tls_session(tcp::socket socket, std::size_t index) {
    asio::ssl::stream<tcp::socket> stream(std::move(socket), *ssl_);
    auto [ec] = co_await stream.async_handshake(asio::ssl::stream_base::server, use_tuple);
    if (ec) co_return;  // e.g. the client rejected our certificate
    co_await session(std::move(stream), index);
  }

  template <class Stream>
  asio::awaitable<void> session(Stream stream, std::size_t index) {
    beast::flat_buffer buffer;
    for (;;) {
      http::request_parser<http::string_body> parser;
      parser.body_limit(64 * 1024 * 1024);
      auto [ec, bytes] = co_await http::async_read(stream, buffer, parser, use_tuple);
      if (ec) co_return;
      auto request = parser.release();
      recorded_request record;
      record.method = std::string(request.method_string());
      record.target = std::string(request.target());
      for (const auto& field : request) {
        record.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
      }
      record.body = std::move(request.body());
      record.connection = index;
      record.received_at = std::chrono::steady_clock::now();
      const bool client_keep_alive = request.keep_alive();
      auto [action, n] = take_action(record);
      const bool keep = co_await perform(stream, action, record, n, client_keep_alive);
      if (!keep) co_return;
    }
  }

  asio::awaitable<void> wait(std::chrono::milliseconds d) {
    if (d.count() <= 0) co_return;
    asio::steady_timer timer(ioc_, d);
    co_await timer.async_wait(use_tuple);
  }

  template <class Stream>
  asio::awaitable<bool> perform(Stream& stream, const server_action& a, const recorded_request& req,
                                std::size_t n, bool client_keep_alive) {
    co_await wait(a.latency);
    switch (a.type) {
      case server_action::kind::stall:
        co_await wait(a.stall_for);
        co_return false;
      case server_action::kind::close:
        co_return false;
      case server_action::kind::reset_mid_body: {
        const std::string body = render_body(a, req, n);
        const std::string out = render_head(a, 200, true, body.size(), false) + body.substr(0, body.size() / 2);
        co_await asio::async_write(stream, asio::buffer(out), use_tuple);
        auto& socket = lowest_socket(stream);
        boost::system::error_code ignored;
        socket.set_option(asio::socket_base::linger(true, 0), ignored);
        socket.close(ignored);  // linger 0: the peer sees a reset
        co_return false;
      }
      default: break;
    }
    if (a.stream && a.type == server_action::kind::reply) co_return co_await send_stream(stream, a, req, n, client_keep_alive);
    const bool keep_alive = a.keep_alive && client_keep_alive;
    const int status = a.type == server_action::kind::reply ? 200 : a.status;
    const std::string body = render_body(a, req, n);
    std::string out = render_head(a, status, keep_alive, body.size(), a.chunked);
    out += a.chunked ? chunk_encode(body) : body;
    auto [ec, written] = co_await asio::async_write(stream, asio::buffer(out), use_tuple);
    if (ec) co_return false;
    if (!keep_alive) {
      boost::system::error_code ignored;
      lowest_socket(stream).shutdown(tcp::socket::shutdown_send, ignored);
    }
    co_return keep_alive;
  }

  // A streamed answer: each piece one chunk and one write; a stall sends
  // nothing for stall_for after stall_after bytes, then closes.
  template <class Stream>
  asio::awaitable<bool> send_stream(Stream& stream, const server_action& a, const recorded_request& req, std::size_t n,
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
    auto [hec, hn] = co_await asio::async_write(stream, asio::buffer(head), use_tuple);
    if (hec) co_return false;
    std::size_t pos = 0;
    for (const std::size_t cut : cuts) {
      if (a.stall_after && pos >= *a.stall_after) {
        co_await wait(a.stall_for);
        co_return false;
      }
      if (cut <= pos) continue;
      const std::string chunk = chunk_of(std::string_view(text).substr(pos, cut - pos));
      auto [ec, written] = co_await asio::async_write(stream, asio::buffer(chunk), use_tuple);
      if (ec) co_return false;
      pos = cut;
    }
    if (a.stall_after && pos >= *a.stall_after) {
      co_await wait(a.stall_for);
      co_return false;
    }
    auto [ec, written] = co_await asio::async_write(stream, asio::buffer(std::string_view("0\r\n\r\n")), use_tuple);
    if (ec || !keep_alive) co_return false;
    co_return true;
  }

  // Declared before ioc_: coroutine frames destroyed with ioc_ may hold TLS streams.
  std::optional<asio::ssl::context> ssl_;
  asio::io_context ioc_{1};
  tcp::acceptor acceptor_;
  unsigned short port_ = 0;
  std::thread thread_;
  std::once_flag stopped_;
  std::filesystem::path temp_dir_;
  std::string ca_file_;

  mutable std::mutex mutex_;
  std::deque<server_action> queue_;
  handler handler_;
  std::optional<server_action> default_;
  std::vector<recorded_request> requests_;
  std::atomic<std::size_t> accepted_{0};
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
