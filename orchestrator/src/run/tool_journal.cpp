// The step's tool journal: saved record by record, refused once the step ended.

#include "tool_journal.hpp"

#include <switchboard/orchestrator/crash_point.hpp>

#include <boost/json/serialize.hpp>

#include <stdexcept>

namespace switchboard::orchestrator::detail {

namespace json = boost::json;

step_records::step_records(std::int64_t step, std::vector<json::object> kept, std::optional<journal_target> target)
    : step_(step), target_(std::move(target)) {
  for (auto& record : kept) {
    const auto* s = record.if_contains("step");
    if (s && s->is_int64() && s->get_int64() == step_) records_.push_back(std::move(record));
  }
}

std::vector<json::object> step_records::of(std::string_view agent) const {
  std::lock_guard lock(mutex_);
  std::vector<json::object> out;
  for (const auto& record : records_) {
    const auto* a = record.if_contains("agent");
    if (a && a->is_string() && a->get_string() == agent) out.push_back(record);
  }
  return out;
}

boost::asio::awaitable<void> step_records::append(std::string agent, json::object record) {
  record["step"] = step_;
  record["agent"] = std::move(agent);
  std::optional<save_request> cp;
  std::shared_ptr<checkpoint_store> store;
  {
    std::lock_guard lock(mutex_);
    if (closed_) {
      throw std::runtime_error("step " + std::to_string(step_) +
                               " has ended (given up or stopped); its tool calls are no longer recorded or made");
    }
    if (target_) {
      cp = target_->header;
      store = target_->store;
    }
  }
  if (cp) {
    const auto* kind = record.if_contains("kind");
    const bool result = kind != nullptr && kind->is_string() && kind->get_string() == "result";
    if (result) crash_point("tool.effect_made");
    cp->journal.push_back(json::serialize(json::object{{"tool_records", json::array{record}}}));
    co_await store->save(std::move(*cp));
    if (result) crash_point("tool.result_recorded");
  }
  std::lock_guard lock(mutex_);
  records_.push_back(std::move(record));
}

void step_records::close() {
  std::lock_guard lock(mutex_);
  closed_ = true;
}

std::vector<json::object> step_records::all() const {
  std::lock_guard lock(mutex_);
  return records_;
}

boost::asio::awaitable<void> agent_tool_journal::append(json::object record) {
  co_await records_->append(agent_, std::move(record));
}

}  // namespace switchboard::orchestrator::detail
