// The A2A server (a2a_endpoint.hpp): routes, JSON-RPC dispatch, and the
// methods but the streams (a2a_stream.cpp); the tasks in flight in this
// process are a2a_flights (a2a_endpoint_impl.hpp).
#include "a2a_endpoint_impl.hpp"

#include <boost/json/parse.hpp>
#include <spdlog/spdlog.h>

#include <charconv>
#include <optional>

namespace switchboard::server {

namespace asio = boost::asio;
namespace json = boost::json;
namespace orch = switchboard::orchestrator;

asio::awaitable<json::value> a2a_endpoint::impl::list(const a2a_agent& agent, const json::object& params) {
  std::size_t page_size = default_page_size;
  if (const auto* size = params.if_contains("pageSize"); size && !size->is_null()) {
    const auto n = size->is_number() ? size->to_number<double>() : -1;
    if (n < 1 || n > static_cast<double>(max_page_size))
      throw rpc_failure{a2a::code::invalid_params, "params.pageSize must be 1 to 100"};
    page_size = static_cast<std::size_t>(n);
  }
  std::string wanted_state;
  if (const auto* s = params.if_contains("status"); s && !s->is_null() && !(s->is_string() && s->get_string().empty())) {
    if (!s->is_string() || !a2a::run_status_of(s->get_string()))
      throw rpc_failure{a2a::code::invalid_params, "params.status must be a TaskState name (TASK_STATE_...)"};
    wanted_state = s->get_string();
  }
  if (const auto* c = params.if_contains("contextId"); c && c->is_string() && !c->get_string().empty() &&
                                                         c->get_string() != agent.workflow)
    co_return json::object{{"tasks", json::array{}}, {"nextPageToken", ""}, {"pageSize", page_size}, {"totalSize", 0}};
  orch::list_request request;
  request.workflow_name = agent.workflow;
  request.limit = page_size;
  if (const auto* token = params.if_contains("pageToken"); token && token->is_string())
    request.cursor = token->get_string();
  orch::run_page page;
  try {
    auto listing = store->list(request);
    page = co_await std::move(listing);
  } catch (const std::exception& e) {
    throw rpc_failure{a2a::code::invalid_params, std::string("cannot list the tasks: ") + e.what()};
  }
  json::array tasks;
  for (const auto& run : page.runs) {
    if (!wanted_state.empty() && a2a::task_state(run.status) != wanted_state) continue;
    auto finding = find(run.workflow_id);
    const auto state = co_await std::move(finding);
    if (state) tasks.push_back(a2a::task_of(*state));
  }
  const auto count = tasks.size();
  co_return json::object{{"tasks", std::move(tasks)},
                         {"nextPageToken", page.next_cursor},
                         {"pageSize", page_size},
                         {"totalSize", count}};
}


// SendStreamingMessage and SubscribeToTask: the Task first, then a
// statusUpdate per step while it works, then (completed) the artifact and
// the last statusUpdate; the stream ends when the task is terminal or
// interrupted (input required).
net::server_response a2a_endpoint::impl::card(const a2a_agent& agent, const net::server_request& request) const {
  const auto host_header = request.header("host");
  const std::string host = host_header ? std::string(*host_header) : "127.0.0.1";
  json::object schema;
  for (const auto& t : tools->list_tools())
    if (t.name == agent.workflow) schema = t.input_schema;
  auto r = json_response(a2a::agent_card({.name = agent.workflow,
                                          .description = agent.description,
                                          .input_schema = std::move(schema),
                                          .rpc_url = (tls ? "https://" : "http://") + host + std::string(prefix) +
                                                     agent.workflow,
                                          .bearer_auth = bearer_auth}));
  r.headers.emplace_back("Cache-Control", "max-age=300");
  return r;
}

asio::awaitable<net::server_response> a2a_endpoint::impl::rpc(const a2a_agent& agent, net::server_request& request) {
  boost::system::error_code ec;
  const json::value message = json::parse(request.body, ec, {}, protocol::untrusted_parse_options());
  if (ec) co_return json_response(a2a::error_response(nullptr, a2a::code::parse_error, "malformed JSON: " + ec.message()));
  const auto* o = message.if_object();
  const auto* method = o ? o->if_contains("method") : nullptr;
  const auto* id_ptr = o ? o->if_contains("id") : nullptr;
  const json::value id = id_ptr && (id_ptr->is_string() || id_ptr->is_number()) ? *id_ptr : json::value();
  if (!o || !method || !method->is_string() || !id_ptr || !(id_ptr->is_string() || id_ptr->is_number()))
    co_return json_response(a2a::error_response(id, a2a::code::invalid_request,
                                                "one JSON-RPC 2.0 request: {jsonrpc, id (string or number), method, params}"));
  const std::string name(method->get_string());
  if (const auto refused = version_refused(request))
    co_return json_response(a2a::error_response(id, refused->code, refused->message));
  static const json::object no_params;
  const auto* p = o->if_contains("params");
  if (p && !p->is_object() && !p->is_null())
    co_return json_response(a2a::error_response(id, a2a::code::invalid_params, "params must be an object"));
  const json::object& params = p && p->is_object() ? p->get_object() : no_params;
  try {
    json::value result;
    if (name == "SendMessage") {
      auto sending = send(agent, params);
      result = co_await std::move(sending);
    } else if (name == "SendStreamingMessage" || name == "SubscribeToTask") {
      auto streaming = stream(agent, stream_framing{id, false}, params, name == "SubscribeToTask");
      co_return co_await std::move(streaming);
    } else if (name == "GetTask") {
      auto getting = get(agent, params);
      result = co_await std::move(getting);
    } else if (name == "ListTasks") {
      auto listing = list(agent, params);
      result = co_await std::move(listing);
    } else if (name == "CancelTask") {
      auto cancelling = cancel(agent, params);
      result = co_await std::move(cancelling);
    } else if (name.find("PushNotificationConfig") != std::string::npos) {
      throw rpc_failure{a2a::code::push_notification_not_supported, "push notifications are not supported"};
    } else if (name == "GetExtendedAgentCard") {
      throw rpc_failure{a2a::code::extended_card_not_configured, "there is no extended agent card"};
    } else {
      throw rpc_failure{a2a::code::method_not_found, "no method '" + name + "'"};
    }
    co_return json_response(a2a::result_response(id, std::move(result)));
  } catch (const rpc_failure& e) {
    co_return json_response(a2a::error_response(id, e.code, e.message));
  } catch (const std::exception& e) {
    spdlog::warn("A2A: {} on agent '{}': {}", name, agent.workflow, e.what());
    co_return json_response(a2a::error_response(id, a2a::code::internal_error, e.what()));
  }
}

namespace {

// A task route of the HTTP+JSON binding: /tasks/{id}[:cancel|:subscribe].
struct task_route {
  std::string id;
  std::string_view action;  // "", "cancel", "subscribe"
};
std::optional<task_route> task_route_of(std::string_view route) {
  constexpr std::string_view tasks = "/tasks/";
  if (!route.starts_with(tasks)) return std::nullopt;
  std::string_view rest = route.substr(tasks.size());
  if (rest.empty() || rest.find('/') != std::string_view::npos) return std::nullopt;
  task_route out;
  if (const auto colon = rest.rfind(':'); colon != std::string_view::npos) {
    out.action = rest.substr(colon + 1);
    rest = rest.substr(0, colon);
    if (out.action != "cancel" && out.action != "subscribe") return std::nullopt;
  }
  out.id = std::string(rest);
  return out;
}

json::object id_params(const std::string& task_id) { return json::object{{"id", task_id}}; }

// ListTasks' parameters from the query (contextId, status, pageSize, pageToken).
json::object list_params_of(const net::server_request& request) {
  json::object params;
  for (const char* name : {"contextId", "status", "pageToken"}) {
    if (auto value = request.query_parameter(name)) params[name] = *value;
  }
  if (auto size = request.query_parameter("pageSize")) {
    int n = 0;
    const auto [end, ec] = std::from_chars(size->data(), size->data() + size->size(), n);
    if (ec != std::errc() || end != size->data() + size->size())
      throw rpc_failure{a2a::code::invalid_params, "pageSize must be an integer from 1 to 100"};
    params["pageSize"] = n;
  }
  return params;
}

}  // namespace

asio::awaitable<net::server_response> a2a_endpoint::impl::rest(const a2a_agent& agent, net::server_request& request,
                                                               std::string_view route) {
  if (const auto refused = version_refused(request)) co_return rest_failure(*refused);
  const bool post = request.method == "POST";
  try {
    json::object body;
    if (post && !request.body.empty()) {
      boost::system::error_code ec;
      json::value parsed = json::parse(request.body, ec, {}, protocol::untrusted_parse_options());
      if (ec || !parsed.is_object())
        throw rpc_failure{a2a::code::invalid_request, ec ? "malformed JSON: " + ec.message() : "the body must be a JSON object"};
      body = std::move(parsed.get_object());
    }
    if (route == "/message:send" && post) {
      auto sending = send(agent, body);
      const json::value sent = co_await std::move(sending);
      co_return rest_response(sent.as_object());
    }
    if (route == "/message:stream" && post) {
      auto streaming = stream(agent, stream_framing{nullptr, true}, body, false);
      co_return co_await std::move(streaming);
    }
    if (route == "/tasks" && request.method == "GET") {
      // Named: the coroutine keeps a reference to it until it is awaited.
      const json::object list_params = list_params_of(request);
      auto listing = list(agent, list_params);
      const json::value listed = co_await std::move(listing);
      co_return rest_response(listed.as_object());
    }
    if (route == "/extendedAgentCard")
      throw rpc_failure{a2a::code::extended_card_not_configured, "there is no extended agent card"};
    if (route.find("/pushNotificationConfigs") != std::string_view::npos)
      throw rpc_failure{a2a::code::push_notification_not_supported, "push notifications are not supported"};
    const auto task = task_route_of(route);
    if (!task) co_return net::error_response(404, "no such A2A path: " + std::string(route));
    json::object params = id_params(task->id);
    if (task->action.empty() && request.method == "GET") {
      if (auto history = request.query_parameter("historyLength")) params["historyLength"] = *history == "0" ? 0 : 1;
      auto getting = get(agent, params);
      const json::value got = co_await std::move(getting);
      co_return rest_response(got.as_object());
    }
    if (task->action == "cancel" && post) {
      auto cancelling = cancel(agent, params);
      const json::value cancelled = co_await std::move(cancelling);
      co_return rest_response(cancelled.as_object());
    }
    if (task->action == "subscribe" && (post || request.method == "GET")) {
      auto streaming = stream(agent, stream_framing{nullptr, true}, params, true);
      co_return co_await std::move(streaming);
    }
    co_return net::error_response(405, "method " + request.method + " is not allowed on " + std::string(route));
  } catch (const rpc_failure& e) {
    co_return rest_failure(e);
  } catch (const std::exception& e) {
    spdlog::warn("A2A: {} {} on agent '{}': {}", request.method, route, agent.workflow, e.what());
    co_return rest_failure(rpc_failure{a2a::code::internal_error, e.what()});
  }
}

a2a_endpoint::a2a_endpoint(asio::any_io_executor executor, std::shared_ptr<host::workflow_tools> tools,
                           std::vector<a2a_agent> agents, std::shared_ptr<orch::checkpoint_store> store,
                           bool bearer_auth, bool tls, std::chrono::milliseconds heartbeat)
    : impl_(std::make_shared<impl>(std::move(executor))) {
  impl_->tools = std::move(tools);
  impl_->agents = std::move(agents);
  impl_->store = std::move(store);
  impl_->bearer_auth = bearer_auth;
  impl_->tls = tls;
  impl_->heartbeat = heartbeat;
}

a2a_endpoint::~a2a_endpoint() { close_all(); }

void a2a_endpoint::close_all() {
  std::map<std::string, std::shared_ptr<a2a_flight>> open;
  {
    std::lock_guard lock(impl_->mutex);
    open = impl_->flights;
  }
  for (auto& [id, f] : open) f->stop(mcp::stop_reason::session_closed);  // interrupted: resumable
}

bool a2a_endpoint::serves(std::string_view path) noexcept {
  return path == well_known_card || path.starts_with(prefix);
}

bool a2a_endpoint::is_card_path(std::string_view path) noexcept {
  return path == well_known_card || (path.starts_with(prefix) && path.ends_with(well_known_card));
}

asio::awaitable<net::server_response> a2a_endpoint::handle(net::server_request& request) {
  std::string_view path = request.path;
  if (path == well_known_card) {
    if (impl_->agents.size() != 1) {
      std::string paths;
      for (const auto& a : impl_->agents) paths += " " + std::string(prefix) + a.workflow + std::string(well_known_card);
      co_return net::error_response(404, "several agents are served: their cards are at" + paths);
    }
    if (request.method != "GET") co_return net::error_response(405, "GET the agent card");
    co_return impl_->card(impl_->agents.front(), request);
  }
  path.remove_prefix(prefix.size());
  const auto slash = path.find('/');
  const std::string_view name = path.substr(0, slash);
  const std::string_view rest = slash == std::string_view::npos ? std::string_view{} : path.substr(slash);
  const auto* agent = impl_->agent_named(name);
  if (!agent) co_return net::error_response(404, "no A2A agent '" + std::string(name) + "' (a served workflow's name)");
  if (rest == well_known_card) {
    if (request.method != "GET") co_return net::error_response(405, "GET the agent card");
    co_return impl_->card(*agent, request);
  }
  if (!rest.empty() && rest != "/") {
    auto answering = impl_->rest(*agent, request, rest);
    co_return co_await std::move(answering);
  }
  if (request.method != "POST") {
    auto r = net::error_response(405, "POST JSON-RPC requests to /a2a/" + agent->workflow);
    r.headers.emplace_back("Allow", "POST");
    co_return r;
  }
  auto answering = impl_->rpc(*agent, request);
  co_return co_await std::move(answering);
}

}  // namespace switchboard::server
