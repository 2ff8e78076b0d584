// The in-memory tool journal and the approval pause's exception.
#include <switchboard/agents/tool_journal.hpp>

namespace switchboard::agents {

namespace {

std::string pending_summary(const std::vector<pending_tool_call>& calls) {
  std::string names;
  for (const auto& c : calls) names += (names.empty() ? "" : ", ") + c.tool;
  return std::to_string(calls.size()) + " tool call(s) need the user's approval: " + names;
}

}  // namespace

boost::asio::awaitable<void> memory_tool_journal::append(boost::json::object record) {
  records_.push_back(std::move(record));
  co_return;
}

approval_required::approval_required(std::vector<pending_tool_call> calls)
    : std::runtime_error(pending_summary(calls)), calls_(std::move(calls)) {}

}  // namespace switchboard::agents
