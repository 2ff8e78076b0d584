// The transport settings of the HTTP model clients (openai_model,
// anthropic_model) are the network layer's: where the server is, how long to
// wait, how to retry, how to trust TLS peers, how many connections to keep
// (net/http_options.hpp). Named here so the model layer's users need not know
// where they live.
#pragma once

#include <switchboard/net/http_options.hpp>

namespace switchboard::models {

using net::http_options;
using net::retry_event;
using net::retry_policy;

}  // namespace switchboard::models
