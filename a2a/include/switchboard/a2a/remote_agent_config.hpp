// How to reach one remote A2A agent the hub calls as a spoke: its agent
// card (or its JSON-RPC endpoint), the schema its answers must satisfy, and
// the bounds the client holds it to. Built from a workflow file's
// "a2a_agents" entry (from_json) or by hand.
//
// The configuration comes from the invoker (a workflow file), never from a
// remote agent or a stored run.
//
// Thread-safety: value types and pure functions.
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <chrono>
#include <cstddef>
#include <map>
#include <string>
#include <string_view>

namespace switchboard::a2a {

// Bounds on what a remote agent may send (docs/interop.md, "Limits").
inline constexpr std::size_t max_response_bytes = std::size_t{4} << 20;  // one JSON-RPC answer or card
inline constexpr std::size_t max_question_bytes = 16 * 1024;            // a question passed on to the user
inline constexpr std::size_t max_agent_name_length = 64;

struct remote_agent_config {
  // [A-Za-z0-9_.-]{1,64}: the agent's name in the registry, which nodes use.
  std::string name;
  // The agent card (http(s)://host/.well-known/agent-card.json): its first
  // JSON-RPC interface of protocol 1.0 is called. It must be on the card's
  // own origin, since the headers go along.
  std::string card_url;
  // Or the JSON-RPC endpoint itself; the card is then not fetched.
  std::string url;
  // name@version of the schema the answer's data must satisfy.
  std::string output_schema;
  // For a coordinator choosing agents; default "remote A2A agent <name>".
  std::string description;
  // Sent with every request (an Authorization header, for instance); kept
  // out of every message and log line.
  std::map<std::string, std::string> headers;
  // Every request ends by this deadline, its retries included (a reply
  // waits for the remote task to stop again up to this long, then the task
  // is polled).
  std::chrono::milliseconds request_timeout{60'000};
  // While the remote task works, it is polled with GetTask: first after
  // 50 ms, the wait doubling up to this.
  std::chrono::milliseconds poll_interval{2'000};
  // TLS: verify the remote's certificate (always on unless a test turns it off).
  bool verify_peer = true;
};

// True for [A-Za-z0-9_.-]{1,64}.
bool is_valid_agent_name(std::string_view name) noexcept;

// Parses a workflow file's entry: {"card": URL} or {"url": URL}, with
// "output_schema" (required), optional "description", "headers",
// "timeout_ms", "poll_ms". Unknown keys are refused. Throws
// std::invalid_argument whose message starts with the offending field
// ("output_schema: expected name@version"), for the caller to prefix with
// the file.
remote_agent_config from_json(std::string name, const boost::json::value& entry);
// The entry from_json() reads back (only what differs from the defaults).
boost::json::object to_json(const remote_agent_config& config);

}  // namespace switchboard::a2a
