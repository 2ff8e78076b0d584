#include "server_metrics.hpp"

#include "ids.hpp"

#include <set>
#include <sstream>

namespace switchboard::server {

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

// Samples of the metrics sources that an OpenTelemetry instrument counts
// too (host::process_metrics): on /metrics once, under the instrument's name.
bool covered_by_instruments(std::string_view name) {
  static const std::set<std::string, std::less<>> covered{
      "switchboard_workflows_total",       // switchboard_workflow_runs_total
      "switchboard_agent_calls_total",     // switchboard_workflow_steps_total
      "switchboard_agent_seconds_count",   // switchboard_workflow_step_duration_seconds
      "switchboard_agent_seconds_sum",
      "switchboard_parse_total",           // switchboard_parser_outcomes_total
      "switchboard_parse_failed_total",
      "switchboard_parse_stage_count",     // switchboard_parser_stage_time_seconds_total
      "switchboard_parse_stage_seconds_sum",
      "switchboard_model_requests_total",  // gen_ai_client_operation_duration_seconds
      "switchboard_model_errors_total",
      "switchboard_model_tokens_total",    // gen_ai_client_token_usage
  };
  return covered.contains(name);
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

void server_metrics::count_request(std::string_view method, std::string_view route, int status) {
  std::scoped_lock lock(mutex_);
  ++requests_[{std::string(method), std::string(route), status}];
}

std::string server_metrics::render(std::size_t open_streams, const std::map<std::string, std::int64_t>& waiting,
                                   const std::vector<labelled_source>& sources) const {
  page p;
  {
    std::scoped_lock lock(mutex_);
    p.family("switchboard_serve_http_requests_total", "counter", "HTTP requests by method, route and status.");
    for (const auto& [key, n] : requests_)
      p.sample("switchboard_serve_http_requests_total",
               {{"method", std::get<0>(key)}, {"route", std::get<1>(key)}, {"code", std::to_string(std::get<2>(key))}},
               static_cast<double>(n));
  }
  p.family("switchboard_serve_open_streams", "gauge", "Event streams open now.");
  p.sample("switchboard_serve_open_streams", {}, static_cast<double>(open_streams));
  p.family("switchboard_serve_waiting_runs", "gauge", "Runs waiting for a person, by what they wait for.");
  for (const auto& [kind, n] : waiting) p.sample("switchboard_serve_waiting_runs", {{"kind", kind}}, static_cast<double>(n));

  // The hubs', parsers' and models' own samples, one family per name.
  std::map<std::string, std::vector<protocol::metric_sample>> families;
  for (const auto& [workflow, source] : sources)
    for (auto& s : source->collect()) {
      if (covered_by_instruments(s.name)) continue;
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
