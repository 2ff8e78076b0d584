#include "server_metrics.hpp"

#include "ids.hpp"

#include <set>
#include <sstream>

namespace switchboard::server {

namespace orch = switchboard::orchestrator;

namespace {

std::string escaped(std::string_view value) {
  std::string out;
  for (const char c : value) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out.push_back(c);
  }
  return out;
}

class page {
 public:
  void family(std::string_view name, std::string_view type, std::string_view help) {
    out_ << "# HELP " << name << ' ' << help << "\n# TYPE " << name << ' ' << type << '\n';
  }
  void sample(std::string_view name, std::initializer_list<std::pair<std::string_view, std::string_view>> labels,
              double value) {
    out_ << name;
    if (labels.size() > 0) {
      out_ << '{';
      bool first = true;
      for (const auto& [k, v] : labels) {
        out_ << (first ? "" : ",") << k << "=\"" << escaped(v) << '"';
        first = false;
      }
      out_ << '}';
    }
    out_ << ' ' << value << '\n';
  }
  void sample(std::string_view name, const std::map<std::string, std::string>& labels, double value) {
    out_ << name;
    if (!labels.empty()) {
      out_ << '{';
      bool first = true;
      for (const auto& [k, v] : labels) {
        out_ << (first ? "" : ",") << k << "=\"" << escaped(v) << '"';
        first = false;
      }
      out_ << '}';
    }
    out_ << ' ' << value << '\n';
  }
  std::string text() const { return out_.str(); }

 private:
  std::ostringstream out_;
};

std::string_view outcome_of(orch::event_kind kind) {
  switch (kind) {
    case orch::event_kind::workflow_completed: return "completed";
    case orch::event_kind::workflow_failed: return "failed";
    case orch::event_kind::workflow_cancelled: return "cancelled";
    case orch::event_kind::workflow_interrupted: return "interrupted";
    case orch::event_kind::paused: return "awaiting_clarification";
    case orch::event_kind::approval_requested: return "awaiting_approval";
    default: return {};
  }
}

std::string bucket_text(double bound) {
  std::ostringstream s;
  s << bound;
  return s.str();
}

}  // namespace

std::string route_label(std::string_view path) {
  static const std::set<std::string, std::less<>> words{"ok", "info", "metrics", "assistants", "threads", "runs",
                                                        "search", "state", "history", "wait", "stream", "join", "mcp",
                                                        "cancel", "a2a", ".well-known", "agent-card.json"};
  std::string out;
  std::size_t start = 0;
  while (start < path.size()) {
    const auto slash = path.find('/', start);
    const auto end = slash == std::string_view::npos ? path.size() : slash;
    const auto segment = path.substr(start, end - start);
    if (!segment.empty()) out += words.contains(segment) ? "/" + std::string(segment) : std::string("/{id}");
    start = end + 1;
  }
  return out.empty() ? "/" : out;
}

void server_metrics::on_event(const orch::event& e) noexcept {
  try {
    std::scoped_lock lock(mutex_);
    const std::string workflow(e.workflow_name);
    if (const auto outcome = outcome_of(e.kind); !outcome.empty()) ++runs_[{workflow, std::string(outcome)}];
    if (e.kind == orch::event_kind::step_completed || e.kind == orch::event_kind::step_failed) {
      auto& h = steps_[{workflow, std::string(e.node)}];
      const double seconds = std::chrono::duration<double>(e.duration).count();
      for (std::size_t i = 0; i < step_buckets.size(); ++i)
        if (seconds <= step_buckets[i]) ++h.buckets[i];
      ++h.count;
      h.sum += seconds;
      if (e.kind == orch::event_kind::step_failed) ++step_failures_[{workflow, std::string(e.node)}];
      tokens_[{workflow, "input"}] += static_cast<std::uint64_t>(std::max<std::int64_t>(e.tokens.prompt_tokens, 0));
      tokens_[{workflow, "output"}] +=
          static_cast<std::uint64_t>(std::max<std::int64_t>(e.tokens.completion_tokens, 0));
    }
    if (e.kind == orch::event_kind::tool_called && e.tool_call) {
      const auto* tool = e.tool_call->if_contains("tool");
      const auto* replayed = e.tool_call->if_contains("replayed");
      const auto* is_error = e.tool_call->if_contains("is_error");
      const std::string outcome = replayed && replayed->is_bool() && replayed->get_bool() ? "replayed"
                                  : is_error && is_error->is_bool() && is_error->get_bool() ? "error"
                                                                                             : "ok";
      ++tool_calls_[{tool && tool->is_string() ? std::string(tool->get_string()) : std::string("?"), outcome}];
    }
  } catch (...) {
    // a lost count is better than a lost event
  }
}

void server_metrics::count_request(std::string_view method, std::string_view route, int status) {
  std::scoped_lock lock(mutex_);
  ++requests_[{std::string(method), std::string(route), status}];
}

std::string server_metrics::render(const std::map<std::string, std::int64_t>& waiting,
                                   const std::vector<labelled_source>& sources) const {
  page p;
  {
    std::scoped_lock lock(mutex_);
    p.family("switchboard_serve_runs_total", "counter", "Hub runs that stopped, by workflow and outcome.");
    for (const auto& [key, n] : runs_) p.sample("switchboard_serve_runs_total", {{"workflow", key.first}, {"outcome", key.second}}, static_cast<double>(n));
    p.family("switchboard_serve_step_seconds", "histogram", "Agent steps by workflow and node, and how long each took.");
    for (const auto& [key, h] : steps_) {
      for (std::size_t i = 0; i < step_buckets.size(); ++i) {
        const auto le = bucket_text(step_buckets[i]);
        p.sample("switchboard_serve_step_seconds_bucket", {{"workflow", key.first}, {"node", key.second}, {"le", le}},
                 static_cast<double>(h.buckets[i]));
      }
      p.sample("switchboard_serve_step_seconds_bucket", {{"workflow", key.first}, {"node", key.second}, {"le", "+Inf"}},
               static_cast<double>(h.count));
      p.sample("switchboard_serve_step_seconds_sum", {{"workflow", key.first}, {"node", key.second}}, h.sum);
      p.sample("switchboard_serve_step_seconds_count", {{"workflow", key.first}, {"node", key.second}},
               static_cast<double>(h.count));
    }
    p.family("switchboard_serve_step_failures_total", "counter", "Agent steps that failed, by workflow and node.");
    for (const auto& [key, n] : step_failures_)
      p.sample("switchboard_serve_step_failures_total", {{"workflow", key.first}, {"node", key.second}}, static_cast<double>(n));
    p.family("switchboard_serve_tool_calls_total", "counter", "Tool calls by tool and outcome (ok, error, replayed).");
    for (const auto& [key, n] : tool_calls_)
      p.sample("switchboard_serve_tool_calls_total", {{"tool", key.first}, {"outcome", key.second}}, static_cast<double>(n));
    p.family("switchboard_serve_model_tokens_total", "counter", "Model tokens used by agent steps, by workflow and kind.");
    for (const auto& [key, n] : tokens_)
      p.sample("switchboard_serve_model_tokens_total", {{"workflow", key.first}, {"kind", key.second}}, static_cast<double>(n));
    p.family("switchboard_serve_http_requests_total", "counter", "HTTP requests by method, route and status.");
    for (const auto& [key, n] : requests_)
      p.sample("switchboard_serve_http_requests_total",
               {{"method", std::get<0>(key)}, {"route", std::get<1>(key)}, {"code", std::to_string(std::get<2>(key))}},
               static_cast<double>(n));
  }
  p.family("switchboard_serve_open_streams", "gauge", "Event streams open now.");
  p.sample("switchboard_serve_open_streams", {}, static_cast<double>(open_streams_.load()));
  p.family("switchboard_serve_waiting_runs", "gauge", "Runs waiting for a person, by what they wait for.");
  for (const auto& [kind, n] : waiting) p.sample("switchboard_serve_waiting_runs", {{"kind", kind}}, static_cast<double>(n));

  // The hubs', parsers' and models' own samples, one family per name.
  std::map<std::string, std::vector<protocol::metric_sample>> families;
  for (const auto& [workflow, source] : sources)
    for (auto& s : source->collect()) {
      s.labels["workflow"] = workflow;
      families[s.name].push_back(std::move(s));
    }
  for (const auto& [name, samples] : families) {
    // A counter's name ends in _total; other cumulative values are untyped.
    const bool counter = samples.front().type == protocol::metric_sample::kind::counter;
    const auto type = !counter ? "gauge" : name.ends_with("_total") ? "counter" : "untyped";
    p.family(name, type, "Switchboard's own metric (docs/serving.md).");
    for (const auto& s : samples) p.sample(name, s.labels, s.value);
  }
  return p.text();
}

}  // namespace switchboard::server
