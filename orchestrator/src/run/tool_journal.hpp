// The tool journal of the step in flight (agents/tool_journal.hpp), kept by
// the run: each record is saved to the store before the tool loop acts on
// it, so a crash never loses a call that was made. Internal.
//
// step_records is shared by the run and the journals it hands to the
// step's agent calls: a call given up at its deadline may outlive the step
// (and the run), and once the step is closed its appends are refused, so a
// late call can neither act nor write into the next step.
//
// Thread-safety: step_records is guarded by a mutex (a blocking agent's
// call runs on the hub's pool).
#pragma once

#include <switchboard/agents/tool_journal.hpp>
#include <switchboard/orchestrator/checkpoint_store.hpp>

#include <boost/json/object.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace switchboard::orchestrator::detail {

// Where appends are saved: the run's checkpoint as it stood when the step
// began (status running, the step before this one, the node to run again),
// carrying the run's fence. None without a store.
struct journal_target {
  std::shared_ptr<checkpoint_store> store;
  save_request header;  // journal empty; one record is added per append
};

class step_records {
 public:
  // `step`: the step in flight; `kept`: records of earlier runs of it.
  step_records(std::int64_t step, std::vector<boost::json::object> kept, std::optional<journal_target> target);

  std::vector<boost::json::object> of(std::string_view agent) const;
  // Saves `record` (with "step" and "agent" added), then keeps it. Throws
  // checkpoint_error / claim_error from the store, or std::runtime_error
  // once the step is closed.
  boost::asio::awaitable<void> append(std::string agent, boost::json::object record);
  // The step ended: later appends are refused.
  void close();
  // Every record of the step, in the order kept.
  std::vector<boost::json::object> all() const;
  // Each append was saved to a store (there was a journal target).
  bool journaled() const noexcept { return target_.has_value(); }

 private:
  mutable std::mutex mutex_;
  const std::int64_t step_;
  std::vector<boost::json::object> records_;
  std::optional<journal_target> target_;
  bool closed_ = false;
};

// The journal one agent's call sees: its own records of the step.
class agent_tool_journal final : public agents::tool_journal {
 public:
  agent_tool_journal(std::shared_ptr<step_records> records, std::string agent)
      : records_(std::move(records)), agent_(std::move(agent)) {}
  std::vector<boost::json::object> records() const override { return records_->of(agent_); }
  boost::asio::awaitable<void> append(boost::json::object record) override;

 private:
  std::shared_ptr<step_records> records_;
  std::string agent_;
};

}  // namespace switchboard::orchestrator::detail
