// Small helpers shared by the provider wire formats. Internal.
#pragma once

#include <switchboard/net/http_header.hpp>

#include <switchboard/models/chat_model.hpp>
#include <switchboard/models/http_options.hpp>
#include <switchboard/models/model_error.hpp>
#include <switchboard/net/error.hpp>
#include <switchboard/net/http_client.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/json/object.hpp>

#include <cstdint>
#include <exception>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace switchboard::models::detail {

// The headers a model request sends: `base`, and when the request's trace
// context is valid, W3C traceparent (and tracestate when it has one) after
// them. Untraced requests (tracing off) return `base` itself and allocate
// nothing. The result points into `storage`, which must outlive the request.
struct trace_headers {
  std::string traceparent;
  std::vector<net::http_header> headers;
};
std::span<const net::http_header> with_trace(std::span<const net::http_header> base,
                                             const telemetry::span_context& trace, trace_headers& storage);

// request_model if set, else default_model; throws not_configured naming the provider.
std::string model_or_default(const std::string& request_model, const std::string& default_model,
                             std::string_view provider);

// A name providers accept for a schema/tool: [A-Za-z0-9_-]{1,64}; "" -> "structured_output".
std::string schema_name_or_default(std::string_view name);

// The body as a JSON object, or model_error(invalid_response) naming the
// provider. A UTF-8 byte order mark before the JSON is skipped and invalid
// UTF-8 inside strings is accepted (Boost.JSON's allow_invalid_utf8).
// Allocates from `storage` (a caller's monotonic buffer: a response is read
// once and dropped). `secrets`: the request's headers, see invalid_response.
boost::json::object parse_response_object(std::string_view body, std::string_view provider,
                                          boost::json::storage_ptr storage = {},
                                          std::span<const net::http_header> secrets = {});

// An operation that throws `error` when awaited: a request that fails before
// it is sent (rendering it) still fails where the caller awaits it.
boost::asio::awaitable<chat_result> failed_completion(std::exception_ptr error);

// model_error(invalid_response): "<provider>: unexpected response: <what>
// (body starts: '<excerpt>')". The excerpt goes through redaction.hpp's
// excerpt(): redacted for every secret header of `secrets` (pass the
// request's headers) and for credential-shaped text, control characters
// escaped, 120 bytes at most.
model_error invalid_response(std::string_view provider, std::string_view what, std::string_view body,
                             std::span<const net::http_header> secrets = {});

// The model layer's error for a failure of the network layer: the model_errc
// of the same name (not_configured for invalid_options), and the same
// message, HTTP status, server message and retryability.
model_error model_error_of(const net::net_error& error);

// An HTTP client for `provider`'s base URL; options the network layer
// refuses are model_error(not_configured).
net::http_client make_http_client(http_options options, std::string provider);

std::string string_field(const boost::json::object& obj, std::string_view key);
std::int64_t int_field(const boost::json::object& obj, std::string_view key);

}  // namespace switchboard::models::detail
