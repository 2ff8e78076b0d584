#include <switchboard/telemetry/prometheus.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace switchboard::telemetry {
namespace {

std::string sanitize(std::string_view name) {
  std::string out;
  out.reserve(name.size());
  for (char c : name) {
    const bool allowed = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == ':';
    out.push_back(allowed ? c : '_');
  }
  if (!out.empty() && out.front() >= '0' && out.front() <= '9') out.insert(out.begin(), '_');
  return out;
}

// The specification's unit words; an annotation in braces, "1" and an
// unknown unit add nothing.
std::string_view unit_suffix(std::string_view unit) {
  if (unit == "s") return "seconds";
  if (unit == "ms") return "milliseconds";
  if (unit == "By") return "bytes";
  return "";
}

std::string format_number(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.17g", value);
  // The shortest form that reads back the same, so "0.01" stays "0.01".
  for (int precision = 1; precision < 17; ++precision) {
    char shorter[32];
    std::snprintf(shorter, sizeof shorter, "%.*g", precision, value);
    if (std::strtod(shorter, nullptr) == value) return shorter;
  }
  return buffer;
}

void append_escaped(std::string& out, std::string_view value) {
  for (char c : value) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out.push_back(c);
  }
}

std::string labels(const metric_attributes& attributes, std::string_view le = {}) {
  if (attributes.empty() && le.empty()) return "";
  std::string out = "{";
  bool first = true;
  for (const auto& [key, value] : attributes) {
    if (!first) out.push_back(',');
    first = false;
    out += sanitize(key);
    out += "=\"";
    append_escaped(out, value);
    out.push_back('"');
  }
  if (!le.empty()) {
    if (!first) out.push_back(',');
    out += "le=\"";
    out += le;
    out.push_back('"');
  }
  out.push_back('}');
  return out;
}

void render_histogram(std::string& out, const std::string& name, const metric_data& metric) {
  for (const metric_point& point : metric.points) {
    std::uint64_t cumulative = 0;
    for (std::size_t i = 0; i < point.bucket_counts.size(); ++i) {
      cumulative += point.bucket_counts[i];
      const std::string le = i < metric.bounds.size() ? format_number(metric.bounds[i]) : "+Inf";
      out += name + "_bucket" + labels(point.attributes, le) + " " + std::to_string(cumulative) + "\n";
    }
    out += name + "_sum" + labels(point.attributes) + " " + format_number(point.sum) + "\n";
    out += name + "_count" + labels(point.attributes) + " " + std::to_string(point.count) + "\n";
  }
}

}  // namespace

std::string prometheus_name(const instrument_description& description, instrument_kind kind) {
  std::string name = sanitize(description.name);
  const std::string_view suffix = unit_suffix(description.unit);
  if (!suffix.empty() && !name.ends_with("_" + std::string(suffix))) name += "_" + std::string(suffix);
  if (kind == instrument_kind::counter && !name.ends_with("_total")) name += "_total";
  return name;
}

std::string render_prometheus(std::span<const metric_data> metrics) {
  std::string out;
  for (const metric_data& metric : metrics) {
    const std::string name = prometheus_name(metric.description, metric.kind);
    // Text format 0.0.4 names a counter's family with its _total.
    const std::string& family = name;
    std::string help = metric.description.description;
    for (char& c : help)
      if (c == '\n') c = ' ';
    out += "# HELP " + family + " " + help + "\n";
    const char* type = metric.kind == instrument_kind::counter     ? "counter"
                       : metric.kind == instrument_kind::histogram ? "histogram"
                                                                   : "gauge";
    out += "# TYPE " + family + " " + type + "\n";
    if (metric.kind == instrument_kind::histogram) {
      render_histogram(out, name, metric);
      continue;
    }
    for (const metric_point& point : metric.points)
      out += name + labels(point.attributes) + " " + format_number(point.value) + "\n";
  }
  return out;
}

}  // namespace switchboard::telemetry
