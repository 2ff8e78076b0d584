#include "langgraph_api.hpp"

#include "ids.hpp"
#include "json_fields.hpp"
#include "wire.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <set>

namespace switchboard::server {

namespace asio = boost::asio;
namespace json = boost::json;
namespace orch = switchboard::orchestrator;

namespace {

using segments = std::vector<std::string>;

segments split_path(std::string_view path) {
  segments out;
  std::size_t start = 0;
  while (start <= path.size()) {
    const auto slash = path.find('/', start);
    const auto end = slash == std::string_view::npos ? path.size() : slash;
    if (end > start) out.emplace_back(path.substr(start, end - start));
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return out;
}

net::server_response json_response(const json::value& body, int status = 200) {
  net::server_response r;
  r.status = status;
  r.body = json::serialize(body);
  return r;
}

net::server_response empty_response(int status) {
  net::server_response r;
  r.status = status;
  return r;
}

json::object body_object(const net::server_request& request) {
  if (request.body.empty()) return {};
  boost::system::error_code ec;
  auto parsed = json::parse(request.body, ec);
  if (ec) throw api_error(400, "the request body is not JSON: " + ec.message());
  if (parsed.is_null()) return {};
  if (!parsed.is_object()) throw api_error(422, "the request body must be a JSON object");
  return std::move(parsed.get_object());
}

std::size_t size_of(const json::object& o, std::string_view key, std::size_t fallback) {
  const auto* v = o.if_contains(key);
  if (v && v->is_int64() && v->get_int64() >= 0) return static_cast<std::size_t>(v->get_int64());
  return fallback;
}

std::size_t query_size(const net::server_request& request, std::string_view key, std::size_t fallback) {
  const auto v = request.query_parameter(key);
  if (!v) return fallback;
  std::size_t n = 0;
  const auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
  if (ec != std::errc{} || end != v->data() + v->size())
    throw api_error(422, std::string(key) + " must be a non-negative integer");
  return n;
}

// metadata filters: every key given must be equal.
bool contains(const json::object& metadata, const json::object& filter) {
  for (const auto& [key, value] : filter) {
    const auto* v = metadata.if_contains(key);
    if (!v || *v != value) return false;
  }
  return true;
}

template <class T>
json::array page(const std::vector<T>& all, std::size_t offset, std::size_t limit) {
  json::array out;
  for (std::size_t i = offset; i < all.size() && out.size() < limit; ++i) out.push_back(to_wire(all[i]));
  return out;
}

net::server_response paged(json::array items, std::size_t total, std::size_t offset) {
  auto r = json_response(items);
  r.headers.emplace_back("X-Pagination-Total", std::to_string(total));
  if (offset + items.size() < total)
    r.headers.emplace_back("X-Pagination-Next", std::to_string(offset + items.size()));
  return r;
}

// stream_mode: a string, a list of strings, or (in a GET query) a JSON list.
std::vector<std::string> modes_of(const json::value* v) {
  std::vector<std::string> out;
  if (!v || v->is_null()) return {"values"};
  if (v->is_string()) {
    const std::string_view text = v->get_string();
    if (text.starts_with("[")) {
      boost::system::error_code ec;
      const auto parsed = json::parse(text, ec);
      if (!ec) return modes_of(&parsed);
    }
    out.emplace_back(text);
  } else if (v->is_array()) {
    for (const auto& m : v->get_array())
      if (m.is_string()) out.emplace_back(m.get_string());
  } else {
    throw api_error(422, "stream_mode must be a string or a list of strings");
  }
  static const std::set<std::string, std::less<>> known{"values", "updates", "custom", "debug", "messages",
                                                         "messages-tuple", "events", "tasks", "checkpoints"};
  for (const auto& m : out)
    if (!known.contains(m)) throw api_error(422, "unknown stream_mode '" + m + "'");
  return out;
}

bool wanted(std::string_view name, const std::vector<std::string>& modes) {
  if (name == "metadata" || name == "error") return true;
  return std::ranges::find(modes, name) != modes.end();
}

std::int64_t last_event_id(const net::server_request& request) {
  const auto header = request.header("last-event-id");
  if (!header || header->empty()) return 0;
  std::int64_t n = 0;
  const auto [end, ec] = std::from_chars(header->data(), header->data() + header->size(), n);
  if (ec != std::errc{} || end != header->data() + header->size())
    throw api_error(422, "Last-Event-ID must be an event id this server sent");
  return std::max<std::int64_t>(n, 0);  // "-1": from the start
}

// A run in one of these statuses adds nothing more to its stream.
bool has_ended(std::string_view status) {
  return status == "success" || status == "error" || status == "timeout" || status == "interrupted";
}

std::string run_location(const run_record& run) { return "/threads/" + run.thread_id + "/runs/" + run.run_id; }

}  // namespace

asio::awaitable<net::server_response> langgraph_api::handle(net::server_request& request) {
  try {
    co_return co_await route(request);
  } catch (const api_error& e) {
    co_return net::error_response(e.status(), e.what());
  }
}

asio::awaitable<net::server_response> langgraph_api::route(net::server_request& request) {
  const auto p = split_path(request.path);
  const auto& m = request.method;
  const auto n = p.size();
  auto is = [&](std::size_t i, std::string_view s) { return i < n && p[i] == s; };

  if (m == "GET" && n == 1 && is(0, "ok")) co_return json_response(json::object{{"ok", true}});
  if (m == "GET" && n == 1 && is(0, "info"))
    co_return json_response(json::object{{"version", "0.1.0"},
                                         {"server", "switchboard"},
                                         {"flags", json::object{{"assistants", true}, {"crons", false},
                                                                {"langsmith", false}}}});
  // Servers sharing a store: every answer includes what the others
  // committed before this request arrived.
  if (runs_.shares_runs()) co_await records_.sync();
  if (is(0, "assistants")) {
    if (m == "POST" && n == 1) co_return co_await create_assistant(request);
    if (m == "POST" && n == 2 && is(1, "search")) co_return search_assistants(request);
    if (m == "GET" && n == 2) {
      auto& w = runs_.workflow_of(p[1]);
      if (auto a = records_.assistant(p[1])) co_return json_response(to_wire(*a));
      co_return json_response(to_wire(*records_.assistant(system_assistant_id(w.graph_id))));
    }
  }
  if (is(0, "threads")) {
    if (m == "POST" && n == 1) co_return co_await create_thread(request);
    if (m == "POST" && n == 2 && is(1, "search")) co_return search_threads(request);
    if (n >= 2 && p[1] != "search") {
      const auto& tid = p[1];
      if (n == 2 && m == "GET") {
        const auto t = records_.thread(tid);
        if (!t) throw api_error(404, "Thread " + tid + " not found");
        co_return json_response(to_wire(*t));
      }
      if (n == 2 && m == "DELETE") co_return co_await delete_thread(tid);
      if (n == 3 && is(2, "state") && m == "GET") co_return co_await thread_state(tid);
      if (n == 3 && is(2, "state") && m == "POST") {
        auto body = body_object(request);  // g++ 12: named before co_await
        const auto checkpoint = co_await runs_.update_state(tid, std::move(body));
        co_return json_response(checkpoint);
      }
      if (n == 3 && is(2, "history") && (m == "POST" || m == "GET")) co_return co_await thread_history(tid, request);
      if (n == 3 && is(2, "runs") && m == "POST") co_return co_await create_run(tid, request, "background");
      if (n == 3 && is(2, "runs") && m == "GET") co_return list_runs(tid, request);
      if (n == 4 && is(2, "runs") && m == "POST" && (is(3, "wait") || is(3, "stream")))
        co_return co_await create_run(tid, request, p[3]);
      if (n >= 4 && is(2, "runs")) {
        const auto& rid = p[3];
        if (n == 4 && m == "GET") {
          const auto r = records_.run(rid);
          if (!r || r->thread_id != tid) throw api_error(404, "Run " + rid + " not found");
          co_return json_response(to_wire(*r));
        }
        if (n == 4 && m == "DELETE") co_return co_await delete_run(tid, rid);
        if (n == 5 && is(4, "join") && m == "GET") co_return join(tid, rid);
        if (n == 5 && is(4, "stream") && m == "GET") co_return join_stream(tid, rid, request);
        if (n == 5 && is(4, "cancel") && m == "POST") co_return co_await cancel_run(tid, rid, request);
      }
    }
  }
  if (is(0, "runs") && m == "POST" && (n == 1 || (n == 2 && (is(1, "wait") || is(1, "stream"))))) {
    // Stateless: a thread of its own.
    const auto thread_id = random_uuid();  // g++ 12: named before co_await
    const std::string mode = n == 1 ? "background" : p[1];  // a std::string temporary otherwise, seen as a string_view
    co_return co_await create_run(thread_id, request, mode);
  }
  throw api_error(404, "no route " + m + " " + request.path);
}

asio::awaitable<net::server_response> langgraph_api::create_assistant(const net::server_request& request) {
  auto body = body_object(request);
  const auto graph = text_field(body, "graph_id");
  if (graph.empty()) throw api_error(422, "graph_id is required");
  auto& w = runs_.workflow_of(graph);
  auto id = text_field(body, "assistant_id");
  if (id.empty()) id = random_uuid();
  if (!is_uuid(id)) throw api_error(422, "assistant_id must be a UUID");
  if (auto existing = records_.assistant(id)) {
    if (text_field(body, "if_exists") == "do_nothing") co_return json_response(to_wire(*existing));
    throw api_error(409, "Assistant " + id + " already exists");
  }
  assistant_record a;
  a.assistant_id = id;
  a.graph_id = w.graph_id;
  a.name = text_field(body, "name");
  if (a.name.empty()) a.name = w.graph_id;
  a.description = text_field(body, "description");
  for (auto [key, slot] : {std::pair{"config", &a.config}, {"context", &a.context}, {"metadata", &a.metadata}})
    if (const auto* v = body.if_contains(key); v && v->is_object()) *slot = v->get_object();
  a.created_at = a.updated_at = now_iso8601();
  co_await records_.save(a);
  co_return json_response(to_wire(a));
}

net::server_response langgraph_api::search_assistants(const net::server_request& request) {
  const auto body = body_object(request);
  const auto graph = text_field(body, "graph_id");
  json::object filter;
  if (const auto* v = body.if_contains("metadata"); v && v->is_object()) filter = v->get_object();
  std::vector<assistant_record> found;
  for (auto& a : records_.assistants()) {
    auto metadata = a.metadata;
    if (a.system) metadata["created_by"] = "system";
    if ((graph.empty() || a.graph_id == graph) && contains(metadata, filter)) found.push_back(std::move(a));
  }
  std::ranges::sort(found, std::greater<>{}, &assistant_record::created_at);
  const auto offset = size_of(body, "offset", 0);
  return paged(page(found, offset, size_of(body, "limit", 10)), found.size(), offset);
}

asio::awaitable<net::server_response> langgraph_api::create_thread(const net::server_request& request) {
  auto body = body_object(request);
  auto id = text_field(body, "thread_id");
  if (id.empty()) id = random_uuid();
  if (!is_uuid(id)) throw api_error(422, "thread_id must be a UUID");
  if (auto existing = records_.thread(id)) {
    if (text_field(body, "if_exists") == "do_nothing") co_return json_response(to_wire(*existing));
    throw api_error(409, "Thread " + id + " already exists");
  }
  thread_record t;
  t.thread_id = id;
  t.created_at = t.updated_at = now_iso8601();
  if (const auto* v = body.if_contains("metadata"); v && v->is_object()) t.metadata = v->get_object();
  if (const auto* v = body.if_contains("supersteps"); v && !v->is_null())
    throw api_error(422, "supersteps are not supported");
  co_await records_.save(t);
  co_return json_response(to_wire(t));
}

net::server_response langgraph_api::search_threads(const net::server_request& request) {
  const auto body = body_object(request);
  const auto status = text_field(body, "status");
  json::object filter;
  if (const auto* v = body.if_contains("metadata"); v && v->is_object()) filter = v->get_object();
  std::vector<thread_record> found;
  for (auto& t : records_.threads())
    if ((status.empty() || t.status == status) && contains(t.metadata, filter)) found.push_back(std::move(t));
  std::ranges::sort(found, std::greater<>{}, &thread_record::created_at);
  const auto offset = size_of(body, "offset", 0);
  return paged(page(found, offset, size_of(body, "limit", 10)), found.size(), offset);
}

asio::awaitable<net::server_response> langgraph_api::delete_thread(const std::string& thread_id) {
  if (!records_.thread(thread_id)) throw api_error(404, "Thread " + thread_id + " not found");
  if (runs_.thread_active(thread_id)) throw api_error(409, "Thread " + thread_id + " has a run pending or running");
  for (const auto& r : records_.runs_of(thread_id)) co_await runs_.feed().erase(r.run_id);
  co_await records_.erase_thread(thread_id);
  co_return empty_response(204);
}

asio::awaitable<net::server_response> langgraph_api::thread_state(const std::string& thread_id) {
  const auto t = records_.thread(thread_id);
  if (!t) throw api_error(404, "Thread " + thread_id + " not found");
  const auto state = co_await runs_.state_of(*t);
  co_return json_response(server::thread_state(*t, state));
}

asio::awaitable<net::server_response> langgraph_api::thread_history(const std::string& thread_id,
                                                                    const net::server_request& request) {
  const auto t = records_.thread(thread_id);
  if (!t) throw api_error(404, "Thread " + thread_id + " not found");
  const auto body = request.method == "POST" ? body_object(request) : json::object{};
  const auto limit = request.method == "POST" ? size_of(body, "limit", 10) : query_size(request, "limit", 10);
  const auto state = co_await runs_.state_of(*t);
  if (!state) co_return json_response(json::array{});
  co_return json_response(server::thread_history(*t, *state, limit));
}

asio::awaitable<net::server_response> langgraph_api::create_run(std::string thread_id,
                                                                const net::server_request& request,
                                                                std::string_view mode) {
  auto body = body_object(request);
  const auto modes = modes_of(body.if_contains("stream_mode"));
  const bool stateless = request.path.starts_with("/runs");
  if (stateless) body["if_not_exists"] = "create";
  const bool cancel_on_disconnect = text_field(body, "on_disconnect") == "cancel";
  // The caller's trace (W3C Trace Context) continues in the run's spans.
  // g++ 12: named before co_await (README, "Development").
  std::string traceparent(request.header("traceparent").value_or(std::string_view{}));
  std::string tracestate(request.header("tracestate").value_or(std::string_view{}));
  const auto run = co_await runs_.create(thread_id, std::move(body), std::move(traceparent), std::move(tracestate));
  net::server_response r;
  if (mode == "stream") r = stream_of(run, modes, 0, cancel_on_disconnect);
  else if (mode == "wait") r = result_of(run);
  else r = json_response(to_wire(run));
  r.headers.emplace_back("Content-Location", run_location(run));
  if (mode == "stream") r.headers.emplace_back("Location", run_location(run) + "/stream");
  co_return r;
}

net::server_response langgraph_api::list_runs(const std::string& thread_id, const net::server_request& request) {
  if (!records_.thread(thread_id)) throw api_error(404, "Thread " + thread_id + " not found");
  auto all = records_.runs_of(thread_id);
  std::ranges::reverse(all);  // newest first
  if (const auto status = request.query_parameter("status"))
    std::erase_if(all, [&](const run_record& r) { return r.status != *status; });
  const auto offset = query_size(request, "offset", 0);
  return json_response(page(all, offset, query_size(request, "limit", 10)));
}

net::server_response langgraph_api::join_stream(const std::string& thread_id, const std::string& run_id,
                                                const net::server_request& request) {
  const auto run = records_.run(run_id);
  if (!run || run->thread_id != thread_id) throw api_error(404, "Run " + run_id + " not found");
  json::value mode = nullptr;
  if (const auto q = request.query_parameter("stream_mode")) mode = json::string(*q);
  auto modes = mode.is_null() ? std::vector<std::string>{} : modes_of(&mode);
  if (modes.empty()) {  // the modes the run was created with
    const auto* created = run->kwargs.if_contains("stream_mode");
    modes = modes_of(created);
  }
  const auto cancel = request.query_parameter("cancel_on_disconnect");
  return stream_of(*run, std::move(modes), last_event_id(request), cancel && (*cancel == "1" || *cancel == "true"));
}

net::server_response langgraph_api::join(const std::string& thread_id, const std::string& run_id) {
  const auto run = records_.run(run_id);
  if (!run || run->thread_id != thread_id) throw api_error(404, "Run " + run_id + " not found");
  return result_of(*run);
}

asio::awaitable<net::server_response> langgraph_api::cancel_run(const std::string& thread_id,
                                                                const std::string& run_id,
                                                                const net::server_request& request) {
  const auto wait = request.query_parameter("wait");
  const bool waits = wait && (*wait == "1" || *wait == "true");
  const auto action = request.query_parameter("action").value_or("interrupt");  // g++ 12: named before co_await
  co_await runs_.cancel(thread_id, run_id, action, waits);
  co_return empty_response(waits ? 204 : 202);
}

asio::awaitable<net::server_response> langgraph_api::delete_run(const std::string& thread_id,
                                                                const std::string& run_id) {
  const auto run = records_.run(run_id);
  if (!run || run->thread_id != thread_id) throw api_error(404, "Run " + run_id + " not found");
  if (run->status == "pending" || run->status == "running")
    throw api_error(409, "Run " + run_id + " is " + run->status + "; cancel it first");
  co_await records_.erase_run(run_id);
  co_await runs_.feed().erase(run_id);
  co_return empty_response(204);
}

namespace {

// The SSE frames of `events` the client asked for, up to the run's end
// record (`ended` then); `after` moves past each event.
std::string sse_frames(const std::vector<orch::feed_event>& events, const std::vector<std::string>& modes,
                       std::int64_t& after, bool& ended) {
  std::string frames;
  for (const auto& e : events) {
    after = e.position;
    const auto record = split_record(e.event);
    if (record.name == end_of_run) {
      ended = true;
      break;
    }
    if (!wanted(record.name, modes)) continue;
    frames += "event: ";
    frames += record.name;
    frames += "\ndata: ";
    frames += record.data;
    frames += "\nid: ";
    frames += std::to_string(e.position);
    frames += "\n\n";
  }
  return frames;
}

}  // namespace

// After a wait that brought nothing: nullopt while the run goes on (a
// heartbeat is due); once it has ended, what its feed holds after `after`
// (its events were all kept before it ended; nothing means the client asked
// from past the end, a stale Last-Event-ID), and nothing for a run gone.
// Reads the run's status alone: a whole record in this frame would make it
// a large block, which Asio's frame recycling then hands to a frame that
// lives as long as the stream.
asio::awaitable<std::optional<std::vector<orch::feed_event>>> langgraph_api::left_after_end(std::string run_id,
                                                                                           std::int64_t after) {
  const auto status = records_.run_status(run_id);
  if (!status) co_return std::vector<orch::feed_event>{};
  if (!has_ended(*status)) co_return std::nullopt;
  co_return co_await runs_.feed().read(run_id, after, 256);
}

// Server-sent events from the run's feed, from position `after` on, until
// the run's end record; a comment every heartbeat while nothing comes. The
// stream's frame is small (it lives as long as the stream): a run's record
// is read in left_after_end, frames are built in sse_frames.
net::server_response langgraph_api::stream_of(const run_record& run, std::vector<std::string> modes,
                                              std::int64_t after, bool cancel_on_disconnect) {
  net::server_response r;
  r.headers = {{"Content-Type", "text/event-stream"}, {"Cache-Control", "no-cache"}};
  // The thread only for a cancel on disconnect: the lambda lives as long as the stream.
  auto thread_id = cancel_on_disconnect ? run.thread_id : std::string();
  r.stream = [this, run_id = run.run_id, thread_id = std::move(thread_id), modes = std::move(modes), after,
              cancel_on_disconnect](net::response_stream& out) mutable -> asio::awaitable<void> {
    bool client_gone = false;
    for (bool ended = false; !ended && !client_gone;) {
      auto waiting = runs_.feed().wait(run_id, after, 256, heartbeat_);
      auto events = co_await std::move(waiting);
      if (events.empty()) {
        auto checking = left_after_end(run_id, after);
        auto left = co_await std::move(checking);
        if (!left) {
          client_gone = !co_await out.write(": heartbeat\n\n");
          continue;
        }
        if (left->empty()) break;
        events = std::move(*left);
      }
      const auto frames = sse_frames(events, modes, after, ended);
      if (!frames.empty()) client_gone = !co_await out.write(frames);
    }
    if (client_gone && cancel_on_disconnect) co_await cancel_for_gone_client(thread_id, run_id);
  };
  return r;
}

// A client gone from a stream asked with cancel_on_disconnect: its run is
// interrupted (unless it ended meanwhile).
asio::awaitable<void> langgraph_api::cancel_for_gone_client(std::string thread_id, std::string run_id) {
  try {
    const std::string action = "interrupt";  // g++ 12: named before co_await
    co_await runs_.cancel(thread_id, run_id, action, false);
  } catch (const api_error&) {
    // it ended meanwhile
  }
}

// The run's last values once it has ended ({"__error__": ...} for a
// failed run), with a newline every second before it so proxies keep the
// connection (JSON allows the whitespace).
net::server_response langgraph_api::result_of(const run_record& run) {
  net::server_response r;
  r.headers = {{"Content-Type", "application/json"}};
  r.stream = [this, run_id = run.run_id](net::response_stream& out) -> asio::awaitable<void> {
    // g++ 12: named before co_await
    std::function<asio::awaitable<bool>()> keep_alive = [&out]() -> asio::awaitable<bool> {
      co_return co_await out.write("\n");
    };
    const bool ended = co_await runs_.wait_for_end(run_id, std::chrono::seconds(1), std::move(keep_alive));
    // Ended on another server: its record, written before the end, is read here.
    if (ended && runs_.shares_runs()) co_await records_.sync();
    const auto finished = records_.run(run_id);
    if (!ended && finished) co_return;  // the client has gone
    if (!finished) {  // rolled back
      co_await out.write(R"({"__error__":{"error":"RunRolledBack","message":"the run was cancelled and removed"}})");
      co_return;
    }
    const std::string body = json::serialize(finished->result);  // g++ 12: named before co_await
    co_await out.write(body);
  };
  return r;
}

}  // namespace switchboard::server
