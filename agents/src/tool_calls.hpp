// The calls of the tool loop and of call_tool: each one validated,
// approved, journaled before it acts, timed, and replayed from the journal
// when the step runs again (tool_journal.hpp). Internal; tool_loop.cpp runs
// the turns around them.
#pragma once

#include "tool_loop.hpp"

#include <switchboard/agents/agent_context.hpp>
#include <switchboard/agents/tool_journal.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/json/object.hpp>

#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace switchboard::agents::detail {

// One call of a turn: the model's call, the tool message answering it and
// its record for context.tool_calls, or the approval it waits for. Written
// by that call's coroutine only.
struct call_slot {
  const tool_call* call = nullptr;
  chat_message message;
  boost::json::object record;
  std::optional<pending_tool_call> pending;  // set: waits for approval, not answered
};

// A call is named by its round and id: some models reuse ids across turns.
std::string call_key(int round, std::string_view id);

// Reading a journal record (checkpointed, so untrusted): a missing or
// mistyped field throws std::runtime_error naming the agent ("malformed").
[[noreturn]] void malformed(const std::string& agent, const std::string& what);
const boost::json::value& field(const boost::json::object& record, std::string_view key, const std::string& agent);
std::string string_field(const boost::json::object& record, std::string_view key, const std::string& agent);
int round_field(const boost::json::object& record, const std::string& agent);

// What the journal holds for this call, by round (turns) and by call.
class replay_index {
 public:
  // Throws std::runtime_error (malformed) for a record it cannot read.
  replay_index(std::vector<boost::json::object> records, const std::string& agent);
  const boost::json::object* turn(int round) const { return find(turns_, round); }
  const boost::json::object* result(const std::string& key) const { return find(results_, key); }
  const boost::json::object* approval(const std::string& key) const { return find(approvals_, key); }
  bool started(const std::string& key) const { return started_.contains(key); }

 private:
  template <class Map, class Key>
  static const boost::json::object* find(const Map& map, const Key& key) {
    auto it = map.find(key);
    return it == map.end() ? nullptr : it->second;
  }
  std::vector<boost::json::object> records_;  // the index points into it
  std::map<int, const boost::json::object*> turns_;
  std::map<std::string, const boost::json::object*, std::less<>> results_, approvals_;
  std::set<std::string, std::less<>> started_;
};

// What every call of the loop shares.
struct loop_scope {
  const tool_loop_settings& settings;
  agent_context& context;
  tool_journal& journal;
  const replay_index& replay;
};

// Runs the calls of one turn concurrently (validated, approved, journaled,
// timed, replayed where recorded) and waits for all of them.
boost::asio::awaitable<void> run_calls(const loop_scope& scope, int round, std::chrono::steady_clock::duration timeout,
                                       std::vector<call_slot>& slots);

}  // namespace switchboard::agents::detail
