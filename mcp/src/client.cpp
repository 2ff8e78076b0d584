// The MCP session: JSON-RPC requests with ids, deadlines and cancellation;
// the lifecycle (initialize, version negotiation, notifications/initialized);
// what a server may send unasked (notifications, requests); tools/list and
// tools/call. The bytes go through a transport (transport.hpp). Everything
// here runs on the client's strand.
#include <switchboard/mcp/client.hpp>

#include "transport.hpp"

#include <switchboard/protocol/limits.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <spdlog/spdlog.h>

#include <map>

namespace switchboard::mcp {

namespace asio = boost::asio;
namespace json = boost::json;
using detail::quote;

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
constexpr int method_not_found = -32601;

std::optional<bool> hint(const json::object& annotations, std::string_view key) {
  const auto* v = annotations.if_contains(key);
  if (v && v->is_bool()) return v->get_bool();
  return std::nullopt;
}

std::string string_or_empty(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->get_string()) : std::string();
}

// One tool of a tools/list page, or nullopt with `why` set.
std::optional<tool_description> parse_tool(const json::value& v, std::string& why) {
  const auto* o = v.if_object();
  if (!o) return why = "a tool that is not an object", std::nullopt;
  tool_description t;
  t.name = string_or_empty(*o, "name");
  if (t.name.empty() || t.name.size() > protocol::max_tool_name_length)
    return why = "a tool without a valid name", std::nullopt;
  const auto* schema = o->if_contains("inputSchema");
  if (!schema || !schema->is_object())
    return why = "tool " + quote(t.name) + " without an inputSchema object", std::nullopt;
  t.input_schema = schema->get_object();
  t.title = string_or_empty(*o, "title");
  t.description = string_or_empty(*o, "description");
  if (const auto* out = o->if_contains("outputSchema"); out && out->is_object()) t.output_schema = out->get_object();
  if (const auto* a = o->if_contains("annotations"); a && a->is_object()) {
    const auto& ann = a->get_object();
    t.read_only_hint = hint(ann, "readOnlyHint");
    t.destructive_hint = hint(ann, "destructiveHint");
    t.idempotent_hint = hint(ann, "idempotentHint");
    t.open_world_hint = hint(ann, "openWorldHint");
    if (t.title.empty()) t.title = string_or_empty(ann, "title");
  }
  return t;
}

// A non-text content block in one line.
std::string summarize_block(const json::object& block) {
  const std::string type = string_or_empty(block, "type");
  if (type == "image" || type == "audio") {
    const auto* data = block.if_contains("data");
    const std::size_t size = data && data->is_string() ? data->get_string().size() : 0;
    return "[" + type + " " + string_or_empty(block, "mimeType") + ", " + std::to_string(size) + " bytes of base64]";
  }
  if (type == "resource_link") return "[resource link " + string_or_empty(block, "uri") + "]";
  if (type == "resource") {
    const auto* r = block.if_contains("resource");
    if (r && r->is_object()) {
      const auto& res = r->get_object();
      if (const auto* text = res.if_contains("text"); text && text->is_string())
        return "[resource " + string_or_empty(res, "uri") + "]\n" + std::string(text->get_string());
      return "[resource " + string_or_empty(res, "uri") + ", binary]";
    }
  }
  return "[" + (type.empty() ? std::string("unknown") : type) + " content]";
}

}  // namespace

class client::impl : public std::enable_shared_from_this<client::impl> {
 public:
  impl(server_config config, detail::strand_type strand, std::shared_ptr<spdlog::logger> logger)
      : config_(std::move(config)), strand_(std::move(strand)),
        logger_(logger ? std::move(logger) : spdlog::default_logger()) {}

  asio::awaitable<void> start();
  asio::awaitable<std::vector<tool_description>> list_tools();
  asio::awaitable<call_result> call_tool(std::string tool, json::value arguments, telemetry::span_context trace);
  asio::awaitable<void> ping() { co_await request("ping", {}); }
  asio::awaitable<void> close();
  void kill() noexcept {
    closed_ = true;
    if (transport_) transport_->kill();
  }

  server_config config_;
  detail::strand_type strand_;
  std::shared_ptr<spdlog::logger> logger_;
  std::string version_;
  json::object server_info_;

 private:
  struct pending {
    explicit pending(const detail::strand_type& s) : timer(s) {}
    asio::steady_timer timer;
    std::string method;
    std::optional<json::object> result;
    std::optional<mcp_error> error;
    std::string progress;  // the last progress notification, for a timeout's message
  };

  std::string prefix() const { return detail::server_prefix(config_.name); }
  // Not coroutines: g++ 12 destroys a defaulted argument of a coroutine
  // twice, so the untraced form builds the empty context here.
  asio::awaitable<json::object> request(std::string method, json::object params, bool with_progress = false) {
    return traced_request(std::move(method), std::move(params), with_progress, telemetry::span_context{});
  }
  asio::awaitable<json::object> traced_request(std::string method, json::object params, bool with_progress,
                                               telemetry::span_context trace);
  void notify(std::string_view method, json::object params);
  void on_message(std::string_view text);
  void on_response(const json::object& message);
  void on_server_request(const json::object& message);
  void on_notification(const json::object& message);
  void fail_all(const mcp_error& error);
  void fail(std::int64_t id, const mcp_error& error);
  void violation(const std::string& what);
  asio::awaitable<void> initialize();

  std::unique_ptr<detail::transport> transport_;
  std::int64_t next_id_ = 1;
  std::map<std::int64_t, std::shared_ptr<pending>> pending_;
  std::optional<mcp_error> broken_;  // set once: every later request fails with it
  bool closed_ = false;
  std::optional<std::vector<tool_description>> tools_;
  bool tools_stale_ = true;
};

asio::awaitable<void> client::impl::start() {
  if (!is_valid_server_name(config_.name))
    throw mcp_error(mcp_errc::not_configured, "MCP server name " + quote(config_.name) + " must be 1 to 64 of [A-Za-z0-9_.-]");
  if (config_.command.empty() == config_.url.empty())
    throw mcp_error(mcp_errc::not_configured, prefix() + "needs exactly one of a command (stdio) or a URL (HTTP)");
  transport_ = config_.is_stdio() ? detail::make_stdio_transport(config_, strand_, logger_)
                                  : detail::make_http_transport(config_, strand_, logger_);
  std::weak_ptr<impl> weak = weak_from_this();
  transport_->start({
      .on_message = [weak](std::string_view text) { if (auto s = weak.lock()) s->on_message(text); },
      .on_request_failed = [weak](std::int64_t id, const mcp_error& e) { if (auto s = weak.lock()) s->fail(id, e); },
      .on_fatal = [weak](const mcp_error& e) { if (auto s = weak.lock()) s->fail_all(e); },
      // Answered (or failed) counts as no longer waiting, though the
      // request's coroutine has yet to resume and forget it: a stream stops
      // being read as soon as its answer is in.
      .is_pending = [weak](std::int64_t id) {
        auto s = weak.lock();
        if (!s) return false;
        const auto it = s->pending_.find(id);
        return it != s->pending_.end() && !it->second->result && !it->second->error;
      },
  });
  std::exception_ptr failure;
  try {
    co_await initialize();
  } catch (...) {
    failure = std::current_exception();
  }
  if (failure) {
    kill();  // nothing is left running: a half-started server is stopped at once
    std::rethrow_exception(failure);
  }
}

asio::awaitable<void> client::impl::initialize() {
  json::object params;
  params["protocolVersion"] = latest_protocol_version;
  params["capabilities"] = json::object{};
  params["clientInfo"] = json::object{{"name", "switchboard"}, {"version", "0.1.0"}};
  const json::object result = co_await request("initialize", params);
  const std::string version = string_or_empty(result, "protocolVersion");
  if (version != latest_protocol_version && version != oldest_protocol_version) {
    throw mcp_error(mcp_errc::unsupported_version,
                    prefix() + "speaks protocol revision " + quote(version, 40) + "; this client speaks " +
                        std::string(latest_protocol_version) + " and " + std::string(oldest_protocol_version));
  }
  version_ = version;
  if (const auto* info = result.if_contains("serverInfo"); info && info->is_object()) server_info_ = info->get_object();
  transport_->set_protocol_version(version_);
  notify("notifications/initialized", {});
  logger_->debug("{}initialized (revision {}, {})", prefix(), version_, quote(json::serialize(server_info_), 200));
}

asio::awaitable<json::object> client::impl::traced_request(std::string method, json::object params,
                                                           bool with_progress, telemetry::span_context trace) {
  if (closed_) throw mcp_error(mcp_errc::closed, prefix() + "the client is closed");
  if (broken_) throw *broken_;
  auto self = shared_from_this();
  const std::int64_t id = next_id_++;
  auto p = std::make_shared<pending>(strand_);
  p->method = method;
  p->timer.expires_after(config_.request_timeout);
  pending_.emplace(id, p);
  if (with_progress) params["_meta"] = json::object{{"progressToken", id}};
  json::object message{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}};
  if (!params.empty() || method == "initialize") message["params"] = std::move(params);
  transport_->send(json::serialize(message), id, trace);

  co_await p->timer.async_wait(use_tuple);
  pending_.erase(id);
  if (p->result) co_return std::move(*p->result);
  if (p->error) throw *p->error;
  // Neither answered nor failed: cancelled by the caller, or the deadline.
  const bool cancelled = (co_await asio::this_coro::cancellation_state).cancelled() != asio::cancellation_type::none;
  if (!closed_ && !broken_) {
    json::object params;
    params["requestId"] = id;
    params["reason"] = cancelled ? "cancelled by the client" : "timed out";
    notify("notifications/cancelled", std::move(params));
    transport_->abandon(id);
  }
  if (cancelled) throw boost::system::system_error(asio::error::operation_aborted);
  throw mcp_error(mcp_errc::timeout, prefix() + method + " timed out after " +
                                         std::to_string(config_.request_timeout.count()) + " ms" +
                                         (p->progress.empty() ? "" : " (last progress: " + p->progress + ")"));
}

void client::impl::notify(std::string_view method, json::object params) {
  if (closed_ || !transport_) return;
  json::object message{{"jsonrpc", "2.0"}, {"method", method}};
  if (!params.empty()) message["params"] = std::move(params);
  transport_->send(json::serialize(message), std::nullopt, {});
}

void client::impl::fail(std::int64_t id, const mcp_error& error) {
  const auto it = pending_.find(id);
  if (it == pending_.end() || it->second->result || it->second->error) return;
  it->second->error = error;
  it->second->timer.cancel();
}

void client::impl::fail_all(const mcp_error& error) {
  if (!broken_) {
    broken_ = error;
    if (!closed_) logger_->warn("{}", error.what());
  }
  for (const auto& [id, p] : pending_) fail(id, error);
}

void client::impl::violation(const std::string& what) {
  fail_all(mcp_error(mcp_errc::protocol_error, prefix() + what));
}

void client::impl::on_message(std::string_view text) {
  if (closed_) return;
  boost::system::error_code ec;
  json::value v = json::parse(text, ec, {}, protocol::untrusted_parse_options());
  if (ec) return violation("sent invalid JSON (" + ec.message() + "): " + quote(text, 120));
  if (auto why = protocol::check_untrusted_value(v)) return violation("sent a message refused: " + *why);
  const auto* o = v.if_object();
  if (!o) return violation("sent a JSON-RPC message that is not an object: " + quote(text, 120));
  const auto* rpc = o->if_contains("jsonrpc");
  if (!rpc || !rpc->is_string() || rpc->get_string() != "2.0")
    return violation("sent a message without \"jsonrpc\": \"2.0\": " + quote(text, 120));
  if (const auto* method = o->if_contains("method")) {
    if (!method->is_string()) return violation("sent a message whose method is not a string");
    if (o->contains("id")) return on_server_request(*o);
    return on_notification(*o);
  }
  if (o->contains("id") && (o->contains("result") || o->contains("error"))) return on_response(*o);
  violation("sent a message that is neither a request, a notification nor a response: " + quote(text, 120));
}

void client::impl::on_response(const json::object& message) {
  const auto& idv = message.at("id");
  const auto it = idv.is_int64() ? pending_.find(idv.get_int64()) : pending_.end();
  if (it == pending_.end()) {
    logger_->debug("{}answered a request it was not asked (or no longer waited for): id {}", prefix(),
                   quote(json::serialize(idv), 40));
    return;
  }
  auto& p = *it->second;
  if (p.result || p.error) return;
  if (const auto* error = message.if_contains("error")) {
    const auto* e = error->if_object();
    const int code = e && e->contains("code") && e->at("code").is_int64() ? static_cast<int>(e->at("code").get_int64()) : 0;
    const std::string text = e ? string_or_empty(*e, "message") : std::string();
    p.error = mcp_error(mcp_errc::server_error,
                        prefix() + p.method + " failed: " + quote(text, 300) + " (JSON-RPC error " + std::to_string(code) + ")",
                        code);
  } else if (const auto* result = message.at("result").if_object()) {
    p.result = *result;
  } else {
    p.error = mcp_error(mcp_errc::protocol_error, prefix() + "answered " + p.method + " with a result that is not an object");
  }
  p.timer.cancel();
}

// The client offers no capabilities (sampling, roots, elicitation): a
// server's request is refused, except ping, which every party answers.
void client::impl::on_server_request(const json::object& message) {
  const auto& id = message.at("id");
  if (!id.is_int64() && !id.is_string()) return violation("sent a request whose id is neither a number nor a string");
  const std::string method(message.at("method").get_string());
  json::object reply{{"jsonrpc", "2.0"}, {"id", id}};
  if (method == "ping") {
    reply["result"] = json::object{};
  } else {
    logger_->debug("{}asked for {}, which this client does not offer", prefix(), quote(method, 80));
    reply["error"] = json::object{{"code", method_not_found}, {"message", "Method not found: " + method}};
  }
  transport_->send(json::serialize(reply), std::nullopt, {});
}

void client::impl::on_notification(const json::object& message) {
  const auto method = message.at("method").get_string();
  const auto* params_value = message.if_contains("params");
  const json::object empty;
  const auto& params = params_value && params_value->is_object() ? params_value->get_object() : empty;
  if (method == "notifications/tools/list_changed") {
    tools_stale_ = true;
    logger_->debug("{}its tool list changed: re-listed on next use", prefix());
  } else if (method == "notifications/progress") {
    // Logged and kept for a timeout's message; progress never extends a
    // deadline, so a server cannot keep a call alive by chattering.
    const auto* token = params.if_contains("progressToken");
    const auto it = token && token->is_int64() ? pending_.find(token->get_int64()) : pending_.end();
    std::string progress = json::serialize(params.contains("progress") ? params.at("progress") : json::value{});
    if (const auto* total = params.if_contains("total")) progress += "/" + json::serialize(*total);
    if (const auto* text = params.if_contains("message"); text && text->is_string())
      progress += " " + std::string(text->get_string());
    if (progress.size() > 200) progress.resize(200);
    if (it != pending_.end()) it->second->progress = progress;
    logger_->debug("{}progress {}", prefix(), quote(progress));
  } else if (method == "notifications/message") {
    logger_->debug("{}log: {}", prefix(), quote(json::serialize(params), 500));
  } else {
    logger_->debug("{}notification {}", prefix(), quote(method, 80));
  }
}

asio::awaitable<std::vector<tool_description>> client::impl::list_tools() {
  if (tools_ && !tools_stale_) co_return *tools_;
  tools_stale_ = false;  // a list_changed arriving while we list marks it stale again
  std::vector<tool_description> out;
  std::string cursor;
  for (std::size_t page = 0;; ++page) {
    if (page >= max_tool_pages)
      throw mcp_error(mcp_errc::too_many_tools, prefix() + "tools/list went on for more than " +
                                                    std::to_string(max_tool_pages) + " pages");
    json::object params;
    if (!cursor.empty()) params["cursor"] = cursor;
    const json::object result = co_await request("tools/list", std::move(params));
    const auto* tools = result.if_contains("tools");
    if (!tools || !tools->is_array())
      throw mcp_error(mcp_errc::protocol_error, prefix() + "answered tools/list without a \"tools\" array");
    for (const auto& t : tools->get_array()) {
      std::string why;
      if (auto parsed = parse_tool(t, why)) out.push_back(std::move(*parsed));
      else logger_->warn("{}tools/list: skipped {}", prefix(), why);
      if (out.size() > max_tools)
        throw mcp_error(mcp_errc::too_many_tools, prefix() + "lists more than " + std::to_string(max_tools) + " tools");
    }
    cursor = string_or_empty(result, "nextCursor");
    if (cursor.empty()) break;
  }
  tools_ = out;
  co_return out;
}

asio::awaitable<call_result> client::impl::call_tool(std::string tool, json::value arguments,
                                                    telemetry::span_context trace) {
  if (!arguments.is_object())
    throw mcp_error(mcp_errc::protocol_error, prefix() + "the arguments of " + quote(tool) + " must be a JSON object");
  json::object params;
  params["name"] = tool;
  params["arguments"] = std::move(arguments);
  auto call = traced_request("tools/call", std::move(params), /*with_progress=*/true, std::move(trace));
  const json::object result = co_await std::move(call);
  call_result out;
  if (const auto* e = result.if_contains("isError"); e && e->is_bool()) out.is_error = e->get_bool();
  if (const auto* s = result.if_contains("structuredContent"); s && !s->is_null()) out.structured = *s;
  if (const auto* c = result.if_contains("content")) {
    if (!c->is_array())
      throw mcp_error(mcp_errc::protocol_error, prefix() + "answered tools/call with a \"content\" that is not an array");
    out.content = c->get_array();
  }
  for (const auto& block : out.content) {
    if (!block.is_object()) continue;
    const auto& b = block.get_object();
    if (!out.text.empty()) out.text.push_back('\n');
    const auto* text = b.if_contains("text");
    if (string_or_empty(b, "type") == "text" && text && text->is_string()) out.text += text->get_string();
    else out.text += summarize_block(b);
  }
  co_return out;
}

asio::awaitable<void> client::impl::close() {
  if (closed_) co_return;
  closed_ = true;
  auto self = shared_from_this();
  for (const auto& [id, p] : pending_)
    if (!p->result && !p->error) {
      p->error = mcp_error(mcp_errc::closed, prefix() + "the client was closed during " + p->method);
      p->timer.cancel();
    }
  if (transport_) co_await transport_->close();
}

// The public face: every operation hops onto the strand and back. The
// operation is made into a named awaitable first: g++ 12 destroys some
// temporaries of a co_await expression twice (a lambda capturing a
// shared_ptr released it twice), so none is left in one.

asio::awaitable<std::shared_ptr<client>> client::connect(server_config config, std::shared_ptr<spdlog::logger> logger) {
  auto strand = asio::make_strand(co_await asio::this_coro::executor);
  auto i = std::make_shared<impl>(std::move(config), strand, std::move(logger));
  auto op = i->start();
  co_await asio::co_spawn(strand, std::move(op), asio::use_awaitable);
  co_return std::shared_ptr<client>(new client(std::move(i)));
}

client::client(std::shared_ptr<impl> impl) : impl_(std::move(impl)) {}

client::~client() { impl_->kill(); }

const server_config& client::config() const noexcept { return impl_->config_; }
const std::string& client::protocol_version() const noexcept { return impl_->version_; }
const json::object& client::server_info() const noexcept { return impl_->server_info_; }

asio::awaitable<std::vector<tool_description>> client::list_tools() {
  auto i = impl_;
  auto op = i->list_tools();
  co_return co_await asio::co_spawn(i->strand_, std::move(op), asio::use_awaitable);
}

asio::awaitable<call_result> client::call_tool(std::string tool, json::value arguments) {
  return call_tool(std::move(tool), std::move(arguments), telemetry::span_context{});
}

asio::awaitable<call_result> client::call_tool(std::string tool, json::value arguments,
                                              telemetry::span_context trace) {
  auto i = impl_;
  auto op = i->call_tool(std::move(tool), std::move(arguments), std::move(trace));
  co_return co_await asio::co_spawn(i->strand_, std::move(op), asio::use_awaitable);
}

asio::awaitable<void> client::ping() {
  auto i = impl_;
  auto op = i->ping();
  co_await asio::co_spawn(i->strand_, std::move(op), asio::use_awaitable);
}

asio::awaitable<void> client::close() {
  auto i = impl_;
  auto op = i->close();
  co_await asio::co_spawn(i->strand_, std::move(op), asio::use_awaitable);
}

}  // namespace switchboard::mcp
