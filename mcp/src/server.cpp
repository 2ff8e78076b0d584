// The MCP server session (server.hpp): JSON-RPC dispatch, the lifecycle,
// tools/list and tools/call, cancellation, progress and elicitation. Every
// member runs on the session's strand.
#include <switchboard/mcp/server.hpp>

#include <switchboard/protocol/limits.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>

namespace switchboard::mcp {

namespace asio = boost::asio;
namespace json = boost::json;

json::object text_result(std::string text, bool is_error) {
  json::object result{{"content", json::array{json::object{{"type", "text"}, {"text", std::move(text)}}}}};
  if (is_error) result["isError"] = true;
  return result;
}

json::object structured_result(std::string text, json::object structured, bool is_error) {
  json::object result = text_result(std::move(text), is_error);
  result["structuredContent"] = std::move(structured);
  return result;
}

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

const json::object* object_member(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v ? v->if_object() : nullptr;
}

bool is_valid_id(const json::value& id) { return id.is_string() || id.is_int64() || id.is_uint64(); }

// A client that declared elicitation without naming a mode supports the
// form mode; one that names modes must list "form".
bool declares_form_elicitation(const json::object& capabilities) {
  const auto* elicitation = object_member(capabilities, "elicitation");
  if (!elicitation) return false;
  return elicitation->empty() || elicitation->contains("form");
}

// A short excerpt of what the client sent, for an error message.
std::string excerpt(std::string_view text, std::size_t max = 80) {
  std::string out;
  for (char c : text.substr(0, max)) out += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? '?' : c;
  return text.size() > max ? out + "..." : out;
}

class session_impl;

// One answer the session waits for (elicitation/create).
struct pending_reply {
  explicit pending_reply(const asio::any_io_executor& executor) : timer(executor) {
    timer.expires_at(asio::steady_timer::time_point::max());
  }
  void resolve(elicitation_reply reply) {
    if (value) return;
    value = std::move(reply);
    timer.cancel();
  }
  asio::steady_timer timer;
  std::optional<elicitation_reply> value;
};

class call_state final : public tool_call, public std::enable_shared_from_this<call_state> {
 public:
  call_state(std::weak_ptr<session_impl> session, json::value id, std::string key,
             std::optional<json::value> progress_token, asio::any_io_executor executor)
      : session_(std::move(session)), id_(std::move(id)), key_(std::move(key)),
        progress_token_(std::move(progress_token)), executor_(std::move(executor)) {}

  bool can_elicit() const noexcept override;
  asio::awaitable<elicitation_reply> elicit(std::string message, json::object requested_schema) override;
  void progress(std::string message) override;
  void on_stop(std::function<void(stop_reason)> handler) override {
    stop_handler_ = std::move(handler);
    if (stopped_ && stop_handler_) stop_handler_(*stopped_);
  }

  void stop(stop_reason reason) {
    if (stopped_) return;
    stopped_ = reason;
    for (auto& reply : replies_) reply->resolve({"cancel", {}});
    if (stop_handler_) stop_handler_(reason);
  }

  const json::value& id() const noexcept { return id_; }
  const std::string& key() const noexcept { return key_; }
  std::optional<stop_reason> stopped() const noexcept { return stopped_; }

 private:
  std::weak_ptr<session_impl> session_;
  json::value id_;
  std::string key_;  // the serialized id
  std::optional<json::value> progress_token_;
  asio::any_io_executor executor_;
  std::int64_t progress_count_ = 0;
  std::optional<stop_reason> stopped_;
  std::function<void(stop_reason)> stop_handler_;
  std::vector<std::shared_ptr<pending_reply>> replies_;
};

class session_impl final : public server_session {
 public:
  session_impl(asio::any_io_executor executor, std::shared_ptr<tool_provider> provider, server_info info,
               send_function send, server_limits limits, std::shared_ptr<spdlog::logger> logger)
      : executor_(std::move(executor)), provider_(std::move(provider)), info_(std::move(info)),
        send_(std::move(send)), limits_(limits), logger_(logger ? std::move(logger) : spdlog::default_logger()),
        idle_(executor_) {}

  void receive(std::string_view text) override;
  void receive_oversized(std::size_t bytes_seen) override {
    if (closed_) return;
    logger_->warn("MCP server: dropped a message of more than {} bytes", bytes_seen);
    send_error(nullptr, rpc_code::invalid_request,
               "message larger than " + std::to_string(limits_.max_message_bytes) + " bytes");
  }
  void close() override;
  asio::awaitable<void> calls_finished() override;
  std::size_t calls_in_flight() const noexcept override { return calls_.size(); }
  bool client_can_elicit() const noexcept override { return client_elicits_; }

  // For call_state.
  const asio::any_io_executor& executor() const noexcept { return executor_; }
  bool closed() const noexcept { return closed_; }
  std::int64_t next_request_id() noexcept { return next_request_id_++; }
  void expect_reply(std::int64_t id, std::shared_ptr<pending_reply> reply) { replies_[id] = std::move(reply); }
  void forget_reply(std::int64_t id) { replies_.erase(id); }
  void send(const json::value& message, const json::value& related_request) {
    if (!closed_) send_(json::serialize(message), related_request);
  }

 private:
  void handle_request(const json::value& id, std::string_view method, const json::object& params);
  void handle_notification(std::string_view method, const json::object& params);
  void handle_response(const json::object& message);
  json::object initialize(const json::object& params);
  json::object list_tools() const;
  void start_call(const json::value& id, const json::object& params);
  asio::awaitable<void> run_call(std::shared_ptr<call_state> call, std::string name, json::object arguments);

  void send_result(const json::value& id, json::object result) {
    send(json::object{{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}}, id);
  }
  void send_error(const json::value& id, int code, std::string message) {
    logger_->debug("MCP server: answering with error {}: {}", code, message);
    send(json::object{{"jsonrpc", "2.0"},
                      {"id", id},
                      {"error", json::object{{"code", code}, {"message", std::move(message)}}}},
         id);
  }

  asio::any_io_executor executor_;
  std::shared_ptr<tool_provider> provider_;
  server_info info_;
  send_function send_;
  server_limits limits_;
  std::shared_ptr<spdlog::logger> logger_;
  asio::steady_timer idle_;
  bool initialized_ = false;
  bool closed_ = false;
  bool client_elicits_ = false;
  std::int64_t next_request_id_ = 1;
  std::map<std::string, std::shared_ptr<call_state>> calls_;
  std::map<std::int64_t, std::shared_ptr<pending_reply>> replies_;
};

bool call_state::can_elicit() const noexcept {
  const auto session = session_.lock();
  return session && session->client_can_elicit() && !session->closed();
}

asio::awaitable<elicitation_reply> call_state::elicit(std::string message, json::object requested_schema) {
  const auto session = session_.lock();
  if (!session || stopped_ || !can_elicit()) co_return elicitation_reply{"cancel", {}};
  const std::int64_t id = session->next_request_id();
  auto reply = std::make_shared<pending_reply>(executor_);
  session->expect_reply(id, reply);
  replies_.push_back(reply);
  session->send(json::object{
      {"jsonrpc", "2.0"},
      {"id", id},
      {"method", "elicitation/create"},
      {"params", json::object{{"message", std::move(message)}, {"requestedSchema", std::move(requested_schema)}}}},
      id_);
  auto wait = reply->timer.async_wait(use_tuple);
  co_await std::move(wait);
  session->forget_reply(id);
  std::erase(replies_, reply);
  co_return reply->value ? std::move(*reply->value) : elicitation_reply{"cancel", {}};
}

void call_state::progress(std::string message) {
  if (!progress_token_) return;
  // Inline when called on the session's strand: a progress line must not
  // come after the call's result.
  asio::dispatch(executor_, [self = shared_from_this(), message = std::move(message)] {
    const auto session = self->session_.lock();
    if (!session || self->stopped_) return;
    ++self->progress_count_;
    session->send(json::object{{"jsonrpc", "2.0"},
                               {"method", "notifications/progress"},
                               {"params", json::object{{"progressToken", *self->progress_token_},
                                                       {"progress", self->progress_count_},
                                                       {"message", message}}}},
                  self->id_);
  });
}

void session_impl::receive(std::string_view text) {
  if (closed_) return;
  if (text.size() > limits_.max_message_bytes) return receive_oversized(text.size());
  boost::system::error_code ec;
  json::value message = json::parse(text, ec, {}, protocol::untrusted_parse_options());
  if (ec) {
    return send_error(nullptr, rpc_code::parse_error,
                      "malformed JSON (or nested deeper than " + std::to_string(protocol::max_json_depth) +
                          " levels): " + ec.message() + " in '" + excerpt(text) + "'");
  }
  if (message.is_array())
    return send_error(nullptr, rpc_code::invalid_request, "batches are not supported: send one message at a time");
  const auto* o = message.if_object();
  if (!o) return send_error(nullptr, rpc_code::invalid_request, "a JSON-RPC message must be an object");
  const auto* version = o->if_contains("jsonrpc");
  const auto* id = o->if_contains("id");
  const json::value reply_id = id && is_valid_id(*id) ? *id : json::value(nullptr);
  if (!version || !version->is_string() || version->get_string() != "2.0")
    return send_error(reply_id, rpc_code::invalid_request, "\"jsonrpc\" must be \"2.0\"");
  const auto* method = o->if_contains("method");
  if (!method) {
    if (id && (o->contains("result") || o->contains("error"))) return handle_response(*o);
    return send_error(reply_id, rpc_code::invalid_request, "a message needs a \"method\" (or is a response)");
  }
  if (!method->is_string()) return send_error(reply_id, rpc_code::invalid_request, "\"method\" must be a string");
  const auto* params = o->if_contains("params");
  static const json::object no_params;
  if (params && !params->is_object()) {
    if (!id) return;  // a notification is never answered
    return send_error(reply_id, rpc_code::invalid_params, "\"params\" must be an object");
  }
  const json::object& p = params ? params->get_object() : no_params;
  if (!id) return handle_notification(method->get_string(), p);
  if (!is_valid_id(*id))
    return send_error(nullptr, rpc_code::invalid_request, "\"id\" must be a string or an integer");
  handle_request(*id, method->get_string(), p);
}

void session_impl::handle_request(const json::value& id, std::string_view method, const json::object& params) {
  if (method == "ping") return send_result(id, {});
  if (method == "initialize") {
    if (initialized_) return send_error(id, rpc_code::invalid_request, "the session is already initialized");
    const auto* version = params.if_contains("protocolVersion");
    if (!version || !version->is_string())
      return send_error(id, rpc_code::invalid_params, "initialize needs \"protocolVersion\" (a string)");
    return send_result(id, initialize(params));
  }
  if (!initialized_)
    return send_error(id, rpc_code::invalid_request, "the session is not initialized: send initialize first");
  if (method == "tools/list") return send_result(id, list_tools());
  if (method == "tools/call") return start_call(id, params);
  send_error(id, rpc_code::method_not_found, "method '" + excerpt(method) + "' not found");
}

json::object session_impl::initialize(const json::object& params) {
  const std::string_view asked = params.at("protocolVersion").get_string();
  const auto known = std::ranges::find(server_protocol_versions, asked);
  const std::string_view version = known != server_protocol_versions.end() ? *known : server_protocol_versions[0];
  if (const auto* capabilities = object_member(params, "capabilities"))
    client_elicits_ = declares_form_elicitation(*capabilities);
  initialized_ = true;
  logger_->info("MCP server: a client initialized (protocol {}, elicitation {})", version,
                client_elicits_ ? "offered" : "not offered");
  json::object result{{"protocolVersion", version},
                      {"capabilities", json::object{{"tools", json::object{{"listChanged", false}}}}},
                      {"serverInfo", json::object{{"name", info_.name}, {"version", info_.version}}}};
  if (!info_.instructions.empty()) result["instructions"] = info_.instructions;
  return result;
}

json::object session_impl::list_tools() const {
  json::array tools;
  for (auto& t : provider_->list_tools()) {
    json::object tool{{"name", t.name}, {"description", t.description}, {"inputSchema", std::move(t.input_schema)}};
    if (!t.title.empty()) tool["title"] = t.title;
    if (t.output_schema) tool["outputSchema"] = std::move(*t.output_schema);
    if (!t.annotations.empty()) tool["annotations"] = std::move(t.annotations);
    tools.push_back(std::move(tool));
  }
  return json::object{{"tools", std::move(tools)}};
}

void session_impl::start_call(const json::value& id, const json::object& params) {
  const auto* name = params.if_contains("name");
  if (!name || !name->is_string())
    return send_error(id, rpc_code::invalid_params, "tools/call needs \"name\" (a string)");
  const auto tools = provider_->list_tools();
  if (std::ranges::find(tools, std::string_view(name->get_string()), &exposed_tool::name) == tools.end())
    return send_error(id, rpc_code::invalid_params, "unknown tool '" + excerpt(name->get_string()) + "'");
  const auto* arguments = params.if_contains("arguments");
  if (arguments && !arguments->is_object() && !arguments->is_null())
    return send_error(id, rpc_code::invalid_params, "\"arguments\" must be an object");
  std::string key = json::serialize(id);
  if (calls_.contains(key))
    return send_error(id, rpc_code::invalid_request, "request id " + excerpt(key) + " is already in use");
  if (calls_.size() >= limits_.max_calls_in_flight)
    return send_error(id, rpc_code::server_busy,
                      "too many calls in flight (at most " + std::to_string(limits_.max_calls_in_flight) + ")");
  std::optional<json::value> token;
  if (const auto* meta = object_member(params, "_meta")) {
    if (const auto* t = meta->if_contains("progressToken"); t && is_valid_id(*t)) token = *t;
  }
  auto call = std::make_shared<call_state>(std::static_pointer_cast<session_impl>(shared_from_this()), id, key,
                                           std::move(token), executor_);
  calls_.emplace(std::move(key), call);
  json::object args = arguments && arguments->is_object() ? arguments->get_object() : json::object{};
  asio::co_spawn(executor_, run_call(std::move(call), std::string(name->get_string()), std::move(args)),
                 asio::detached);
}

asio::awaitable<void> session_impl::run_call(std::shared_ptr<call_state> call, std::string name,
                                             json::object arguments) {
  const auto self = shared_from_this();  // the session outlives its calls
  json::object result;
  std::optional<std::string> failure;
  try {
    auto running = provider_->call_tool(name, std::move(arguments), *call);
    result = co_await std::move(running);
  } catch (const std::exception& e) {
    failure = e.what();
  }
  calls_.erase(call->key());
  idle_.cancel();
  // A request the client cancelled is not answered (the spec's rule).
  if (call->stopped() == stop_reason::cancelled) co_return;
  if (failure) {
    logger_->warn("MCP server: tool '{}' failed: {}", name, *failure);
    co_return send_error(call->id(), rpc_code::internal_error, "tool '" + name + "' failed: " + *failure);
  }
  send_result(call->id(), std::move(result));
}

void session_impl::handle_notification(std::string_view method, const json::object& params) {
  if (method == "notifications/cancelled") {
    const auto* request = params.if_contains("requestId");
    if (!request || !is_valid_id(*request)) return;
    const auto it = calls_.find(json::serialize(*request));
    if (it == calls_.end()) return;  // finished already, or never known: nothing to do
    logger_->info("MCP server: the client cancelled request {}", it->first);
    const auto call = it->second;
    call->stop(stop_reason::cancelled);
    return;
  }
  // notifications/initialized, roots/list_changed, progress: nothing to do.
  logger_->debug("MCP server: notification {}", excerpt(method));
}

void session_impl::handle_response(const json::object& message) {
  const auto& id = message.at("id");
  const auto it = id.is_int64() ? replies_.find(id.get_int64()) : replies_.end();
  if (it == replies_.end()) {
    logger_->debug("MCP server: a response to no request we sent ({})", excerpt(json::serialize(id)));
    return;
  }
  const auto reply = it->second;
  const auto* result = object_member(message, "result");
  if (!result) {
    logger_->warn("MCP server: the client answered elicitation/create with an error: {}",
                  excerpt(json::serialize(message.contains("error") ? message.at("error") : json::value())));
    return reply->resolve({"cancel", {}});
  }
  const auto* action = result->if_contains("action");
  const std::string_view a = action && action->is_string() ? std::string_view(action->get_string()) : "";
  if (a != "accept" && a != "decline" && a != "cancel") {
    logger_->warn("MCP server: an elicitation answer with no valid action: taken as cancel");
    return reply->resolve({"cancel", {}});
  }
  const auto* content = object_member(*result, "content");
  reply->resolve({std::string(a), a == "accept" && content ? *content : json::object{}});
}

void session_impl::close() {
  if (closed_) return;
  closed_ = true;
  std::vector<std::shared_ptr<call_state>> calls;
  for (auto& [key, call] : calls_) calls.push_back(call);
  for (auto& call : calls) call->stop(stop_reason::session_closed);
  for (auto& [id, reply] : replies_) reply->resolve({"cancel", {}});
}

asio::awaitable<void> session_impl::calls_finished() {
  const auto self = shared_from_this();
  while (!calls_.empty()) {
    idle_.expires_at(asio::steady_timer::time_point::max());
    auto wait = idle_.async_wait(use_tuple);
    co_await std::move(wait);
  }
}

}  // namespace

std::shared_ptr<server_session> server_session::make(asio::any_io_executor executor,
                                                     std::shared_ptr<tool_provider> provider, server_info info,
                                                     send_function send, server_limits limits,
                                                     std::shared_ptr<spdlog::logger> logger) {
  return std::make_shared<session_impl>(std::move(executor), std::move(provider), std::move(info), std::move(send),
                                        limits, std::move(logger));
}

}  // namespace switchboard::mcp
