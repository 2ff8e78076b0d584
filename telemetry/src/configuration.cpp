#include <switchboard/telemetry/configuration.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <vector>

namespace switchboard::telemetry {
namespace {

// The spec: an empty value is the same as an unset one.
std::optional<std::string> read(const environment_lookup& lookup, std::string_view name) {
  std::optional<std::string> value = lookup(name);
  if (value && value->empty()) return std::nullopt;
  return value;
}

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

std::string upper(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::toupper(c); });
  return out;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  return text;
}

[[noreturn]] void reject(std::string_view name, std::string_view value, std::string_view expected) {
  throw configuration_error(std::string(name) + "=\"" + std::string(value) + "\" is not valid: expected " +
                            std::string(expected));
}

bool read_bool(const environment_lookup& lookup, std::string_view name) {
  const std::optional<std::string> value = read(lookup, name);
  if (!value) return false;
  const std::string normalized = lower(trim(*value));
  if (normalized == "true") return true;
  if (normalized == "false") return false;
  reject(name, *value, "true or false");
}

std::optional<std::uint64_t> read_positive(const environment_lookup& lookup, std::string_view name) {
  const std::optional<std::string> value = read(lookup, name);
  if (!value) return std::nullopt;
  const std::string_view text = trim(*value);
  std::uint64_t number = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || number == 0 ||
      number > 86'400'000)
    reject(name, *value, "a positive whole number (at most 86400000)");
  return number;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::optional<std::string> percent_decode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out.push_back(text[i]);
      continue;
    }
    if (i + 2 >= text.size()) return std::nullopt;
    const int high = hex_digit(text[i + 1]);
    const int low = hex_digit(text[i + 2]);
    if (high < 0 || low < 0) return std::nullopt;
    out.push_back(static_cast<char>(high * 16 + low));
    i += 2;
  }
  return out;
}

struct key_value {
  std::string key;
  std::string value;
};

// "k1=v1,k2=v2": the W3C Baggage-like list that both OTEL_EXPORTER_OTLP_HEADERS
// and OTEL_RESOURCE_ATTRIBUTES use. `secret_values`: an error names the
// entry by its key (or its position), never by its value.
std::vector<key_value> read_key_values(std::string_view name, std::string_view list, bool secret_values) {
  std::vector<key_value> out;
  std::size_t position = 0;
  for (bool more = true; more;) {
    ++position;
    const std::size_t comma = list.find(',');
    more = comma != std::string_view::npos;
    const std::string_view entry = trim(list.substr(0, comma));
    list = more ? list.substr(comma + 1) : std::string_view();
    if (entry.empty()) continue;
    const std::size_t equals = entry.find('=');
    const std::string_view key = trim(entry.substr(0, std::min(equals, entry.size())));
    if (equals == std::string_view::npos || key.empty()) {
      const std::string shown = secret_values ? "" : " (\"" + std::string(entry) + "\")";
      throw configuration_error(std::string(name) + ": entry " + std::to_string(position) + shown +
                                " is not key=value" + (secret_values ? " (the entry is not shown: it may hold a key)" : ""));
    }
    const std::optional<std::string> value = percent_decode(trim(entry.substr(equals + 1)));
    if (!value)
      throw configuration_error(std::string(name) + ": the value of \"" + std::string(key) +
                                "\" has a malformed %-escape" + (secret_values ? " (the value is not shown)" : ""));
    out.push_back(key_value{std::string(key), *value});
  }
  return out;
}

void check_url(std::string_view name, const std::string& url) {
  const std::string scheme = lower(url.substr(0, url.find("://")));
  if (url.find("://") == std::string::npos || (scheme != "http" && scheme != "https") ||
      url.size() <= scheme.size() + 3)
    reject(name, url, "an http:// or https:// URL");
}

// OTEL_EXPORTER_OTLP_{TRACES,METRICS}_ENDPOINT as is; else the base
// endpoint with /v1/{traces,metrics} appended, as the spec says for the
// per-signal path.
std::optional<std::string> read_endpoint(const environment_lookup& lookup, std::string_view signal = "traces") {
  const std::string signal_variable = "OTEL_EXPORTER_OTLP_" + upper(signal) + "_ENDPOINT";
  if (std::optional<std::string> own = read(lookup, signal_variable)) {
    check_url(signal_variable, *own);
    return own;
  }
  std::optional<std::string> base = read(lookup, "OTEL_EXPORTER_OTLP_ENDPOINT");
  if (!base) return std::nullopt;
  check_url("OTEL_EXPORTER_OTLP_ENDPOINT", *base);
  std::string url = *base;
  if (!url.empty() && url.back() == '/') url.pop_back();
  return url + "/v1/" + std::string(signal);
}

void check_protocol(const environment_lookup& lookup, std::string_view name) {
  const std::optional<std::string> value = read(lookup, name);
  if (value && trim(*value) != "http/json")
    reject(name, *value, "http/json (the only OTLP protocol Switchboard sends)");
}

double read_ratio(const environment_lookup& lookup) {
  const std::optional<std::string> value = read(lookup, "OTEL_TRACES_SAMPLER_ARG");
  if (!value) return 1.0;
  const std::string text(trim(*value));
  char* end = nullptr;
  const double ratio = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !(ratio >= 0.0 && ratio <= 1.0))
    reject("OTEL_TRACES_SAMPLER_ARG", *value, "a number from 0 to 1");
  return ratio;
}

telemetry::sampler read_sampler(const environment_lookup& lookup) {
  telemetry::sampler out;
  const std::optional<std::string> value = read(lookup, "OTEL_TRACES_SAMPLER");
  if (!value) return out;
  std::string name = lower(trim(*value));
  out.parent_based = name.starts_with("parentbased_");
  if (out.parent_based) name.erase(0, std::string_view("parentbased_").size());
  if (name == "always_on") {
    out.root = sampler_kind::always_on;
  } else if (name == "always_off") {
    out.root = sampler_kind::always_off;
  } else if (name == "traceidratio") {
    out.root = sampler_kind::trace_id_ratio;
    out.ratio = read_ratio(lookup);
  } else {
    reject("OTEL_TRACES_SAMPLER", *value,
           "always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off or "
           "parentbased_traceidratio");
  }
  return out;
}

void set_attribute(telemetry::resource& target, std::string key, std::string value) {
  auto same = std::find_if(target.attributes.begin(), target.attributes.end(),
                           [&](const attribute& existing) { return existing.key == key; });
  if (same != target.attributes.end())
    same->value = std::move(value);
  else
    target.attributes.push_back(attribute{std::move(key), std::move(value)});
}

telemetry::resource read_resource(const environment_lookup& lookup, std::string_view default_service_name) {
  telemetry::resource out;
  set_attribute(out, "service.name", std::string(default_service_name));
  set_attribute(out, "telemetry.sdk.name", "switchboard");
  set_attribute(out, "telemetry.sdk.language", "cpp");
  if (std::optional<std::string> list = read(lookup, "OTEL_RESOURCE_ATTRIBUTES"))
    for (key_value& entry : read_key_values("OTEL_RESOURCE_ATTRIBUTES", *list, false))
      set_attribute(out, std::move(entry.key), std::move(entry.value));
  if (std::optional<std::string> service = read(lookup, "OTEL_SERVICE_NAME"))
    set_attribute(out, "service.name", std::string(trim(*service)));
  return out;
}

void read_batch_limits(const environment_lookup& lookup, otlp_exporter_options& options) {
  if (auto delay = read_positive(lookup, "OTEL_BSP_SCHEDULE_DELAY"))
    options.schedule_delay = std::chrono::milliseconds(*delay);
  if (auto size = read_positive(lookup, "OTEL_BSP_MAX_QUEUE_SIZE")) options.max_queue_size = *size;
  if (auto size = read_positive(lookup, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE")) options.max_export_batch_size = *size;
  if (options.max_export_batch_size > options.max_queue_size)
    throw configuration_error("OTEL_BSP_MAX_EXPORT_BATCH_SIZE=" + std::to_string(options.max_export_batch_size) +
                              " is larger than the queue (OTEL_BSP_MAX_QUEUE_SIZE=" +
                              std::to_string(options.max_queue_size) + ")");
}

}  // namespace

environment_lookup process_environment() {
  return [](std::string_view name) -> std::optional<std::string> {
    const char* value = std::getenv(std::string(name).c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

tracing_configuration tracing_configuration_from(const environment_lookup& lookup,
                                                 std::string_view default_service_name) {
  tracing_configuration out;
  // Every variable is read and checked even when tracing ends up off: a
  // typo should not wait for the day tracing is turned on.
  const bool disabled = read_bool(lookup, "OTEL_SDK_DISABLED");
  bool exporter_none = false;
  if (std::optional<std::string> exporter = read(lookup, "OTEL_TRACES_EXPORTER")) {
    const std::string name = lower(trim(*exporter));
    if (name != "otlp" && name != "none") reject("OTEL_TRACES_EXPORTER", *exporter, "otlp or none");
    exporter_none = name == "none";
  }
  check_protocol(lookup, "OTEL_EXPORTER_OTLP_PROTOCOL");
  check_protocol(lookup, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL");
  std::optional<std::string> endpoint = read_endpoint(lookup);
  if (std::optional<std::string> headers = read(lookup, "OTEL_EXPORTER_OTLP_HEADERS"))
    for (key_value& entry : read_key_values("OTEL_EXPORTER_OTLP_HEADERS", *headers, true))
      out.exporter.headers.emplace_back(std::move(entry.key), std::move(entry.value));
  if (auto timeout = read_positive(lookup, "OTEL_EXPORTER_OTLP_TIMEOUT"))
    out.exporter.timeout = std::chrono::milliseconds(*timeout);
  read_batch_limits(lookup, out.exporter);
  out.sampler = read_sampler(lookup);
  out.exporter.resource = read_resource(lookup, default_service_name);
  if (endpoint) out.exporter.endpoint = std::move(*endpoint);
  out.enabled = !disabled && !exporter_none && !out.exporter.endpoint.empty();
  return out;
}

metrics_configuration metrics_configuration_from(const environment_lookup& lookup,
                                                 std::string_view default_service_name) {
  metrics_configuration out;
  const bool disabled = read_bool(lookup, "OTEL_SDK_DISABLED");
  bool exporter_none = false;
  if (std::optional<std::string> exporter = read(lookup, "OTEL_METRICS_EXPORTER")) {
    const std::string name = lower(trim(*exporter));
    if (name != "otlp" && name != "none") reject("OTEL_METRICS_EXPORTER", *exporter, "otlp or none");
    exporter_none = name == "none";
  }
  check_protocol(lookup, "OTEL_EXPORTER_OTLP_PROTOCOL");
  check_protocol(lookup, "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL");
  std::optional<std::string> endpoint = read_endpoint(lookup, "metrics");
  otlp_exporter_options& otlp = out.exporter.otlp;
  // The signal's own headers and timeout win over the shared ones.
  for (const char* name : {"OTEL_EXPORTER_OTLP_METRICS_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS"}) {
    std::optional<std::string> headers = read(lookup, name);
    if (!headers) continue;
    for (key_value& entry : read_key_values(name, *headers, true))
      otlp.headers.emplace_back(std::move(entry.key), std::move(entry.value));
    break;
  }
  if (auto timeout = read_positive(lookup, "OTEL_EXPORTER_OTLP_TIMEOUT")) otlp.timeout = std::chrono::milliseconds(*timeout);
  if (auto timeout = read_positive(lookup, "OTEL_EXPORTER_OTLP_METRICS_TIMEOUT"))
    otlp.timeout = std::chrono::milliseconds(*timeout);
  if (auto interval = read_positive(lookup, "OTEL_METRIC_EXPORT_INTERVAL"))
    out.exporter.interval = std::chrono::milliseconds(*interval);
  otlp.resource = read_resource(lookup, default_service_name);
  if (endpoint) otlp.endpoint = std::move(*endpoint);
  out.enabled = !disabled && !exporter_none && !otlp.endpoint.empty();
  return out;
}

}  // namespace switchboard::telemetry
