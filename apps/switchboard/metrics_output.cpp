// Prometheus text exposition for the `switchboard` tool (see metrics_output.hpp).
#include "metrics_output.hpp"

#include <switchboard/protocol/terminal_text.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <iostream>
#include <map>
#include <stdexcept>

namespace switchboard::cli {

namespace sp = switchboard::protocol;

namespace {

// What each family counts. A family not listed gets a generic line: a
// source added later still renders valid text.
const std::map<std::string_view, std::string_view>& help_texts() {
  static const std::map<std::string_view, std::string_view> texts{
      {"switchboard_parse_total", "Structured-output parses, by outcome (direct, extracted, repaired, failed)."},
      {"switchboard_parse_failed_total", "Failed structured-output parses, by reason code."},
      {"switchboard_parse_stage_seconds_sum", "Time spent in each stage of the structured-output parser."},
      {"switchboard_parse_stage_count", "Runs of each stage of the structured-output parser."},
      {"switchboard_model_requests_total", "Calls that reached the model's provider, by outcome."},
      {"switchboard_model_errors_total", "Failed model calls, by error code."},
      {"switchboard_model_retries_total", "Requests the HTTP client sent again after 429, 5xx, a timeout or a lost connection."},
      {"switchboard_model_tokens_total", "Tokens the provider reported, by kind (prompt, completion)."},
      {"switchboard_model_cache_requests_total", "Model calls the response cache answered (hit) or passed on (miss)."},
      {"switchboard_model_cache_store_hits_total", "Cache hits answered from the on-disk store."},
      {"switchboard_model_cache_evictions_total", "Cache entries dropped, by cause (capacity, expired)."},
      {"switchboard_model_cache_entries", "Entries in the response cache's memory."},
      {"switchboard_agent_calls_total", "Agent calls, by agent and outcome."},
      {"switchboard_agent_seconds_sum", "Time spent in agent calls, by agent."},
      {"switchboard_agent_seconds_count", "Timed agent calls, by agent."},
      {"switchboard_route_total", "Routes taken, by node and target."},
      {"switchboard_workflows_total", "Workflow runs, by status."},
      {"switchboard_failures_total", "Step failures, by error type."},
      {"switchboard_clarification_rate", "Runs paused for clarification per run started."},
  };
  return texts;
}

std::string metric_name(std::string_view name) {
  std::string out;
  for (const char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == ':';
    out.push_back(ok ? c : '_');
  }
  if (out.empty() || (out.front() >= '0' && out.front() <= '9')) out.insert(out.begin(), '_');
  return out;
}

std::string label_name(std::string_view name) {
  std::string out = metric_name(name);
  std::replace(out.begin(), out.end(), ':', '_');  // colons are for metric names only
  return out;
}

// Terminal-safe first (controls become visible escapes; LF and TAB stay),
// then the format's escapes.
std::string label_value(std::string_view value) {
  const std::string safe = sp::escape_for_terminal(value, sp::line_breaks::keep);
  std::string out;
  out.reserve(safe.size());
  for (const char c : safe) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out.push_back(c);
  }
  return out;
}

std::string help_text(std::string_view text) {
  std::string out;
  for (const char c : text) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else out.push_back(c);
  }
  return out;
}

std::string number(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char buffer[64];
  // Counters are whole numbers: print them so (2, not 2e+00), exactly up to 2^53.
  if (value == std::trunc(value) && std::fabs(value) < 9007199254740992.0) {
    const auto end = std::to_chars(buffer, buffer + sizeof buffer, static_cast<long long>(value)).ptr;
    return std::string(buffer, end);
  }
  const auto end = std::to_chars(buffer, buffer + sizeof buffer, value).ptr;
  return std::string(buffer, end);
}

std::string sample_line(const std::string& name, const sp::metric_sample& sample) {
  std::string line = name;
  if (!sample.labels.empty()) {
    line += '{';
    bool first = true;
    for (const auto& [key, value] : sample.labels) {
      if (!first) line += ',';
      first = false;
      line += label_name(key) + "=\"" + label_value(value) + '"';
    }
    line += '}';
  }
  return line + ' ' + number(sample.value) + '\n';
}

}  // namespace

std::string render_prometheus(std::span<const sp::metric_sample> samples) {
  // Families in first-seen order; the format wants each family's lines together.
  std::vector<std::string> order;
  std::map<std::string, std::vector<const sp::metric_sample*>> families;
  for (const auto& s : samples) {
    const std::string name = metric_name(s.name);
    auto [it, inserted] = families.try_emplace(name);
    if (inserted) order.push_back(name);
    it->second.push_back(&s);
  }
  std::string out;
  for (const auto& name : order) {
    const auto& members = families[name];
    const auto help = help_texts().find(name);
    out += "# HELP " + name + ' ' +
           help_text(help != help_texts().end() ? help->second : std::string_view("Switchboard metric.")) + '\n';
    out += "# TYPE " + name + (members.front()->type == sp::metric_sample::kind::gauge ? " gauge\n" : " counter\n");
    for (const auto* s : members) out += sample_line(name, *s);
  }
  return out;
}

std::string render_prometheus(std::span<const sp::metrics_source* const> sources) {
  std::vector<sp::metric_sample> all;
  for (const auto* source : sources) {
    if (!source) continue;
    auto samples = source->collect();
    all.insert(all.end(), std::make_move_iterator(samples.begin()), std::make_move_iterator(samples.end()));
  }
  return render_prometheus(std::span<const sp::metric_sample>(all));
}

void write_metrics(std::string_view destination, std::string_view text) {
  if (destination == "-") {
    std::cerr << text << std::flush;
    return;
  }
  const std::string target(destination);
  const std::string temp = target + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
  const auto fail = [&](const std::string& path) {
    const std::string why = std::strerror(errno);
    ::unlink(temp.c_str());
    throw std::runtime_error("cannot write metrics to '" + path + "': " + why);
  };
  if (fd < 0) fail(temp);
  std::string_view rest = text;
  while (!rest.empty()) {
    const ssize_t n = ::write(fd, rest.data(), rest.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      fail(temp);
    }
    rest.remove_prefix(static_cast<std::size_t>(n));
  }
  if (::close(fd) != 0) fail(temp);
  if (::rename(temp.c_str(), target.c_str()) != 0) fail(target);
}

}  // namespace switchboard::cli
