// Conversions between the PostgreSQL store's rows and the store types:
// nanosecond times, the run summary columns, the journal as a text array,
// the store's clock as a statement parameter. No state.
#pragma once

#include "pg_connection.hpp"

#include <switchboard/orchestrator/checkpoint_store.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace switchboard::stores::postgres {

using orchestrator::checkpoint_error;
using orchestrator::run_summary;
using orchestrator::system_time;

inline std::int64_t to_nanoseconds(system_time t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

inline system_time from_nanoseconds(std::int64_t ns) {
  return system_time(std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::nanoseconds(ns)));
}

inline param int_param(std::int64_t value) { return std::to_string(value); }

// The caller's clock as the parameter SWITCHBOARD_PG_NOW reads, or NULL
// (the server's clock) when it gave none.
inline param now_param(const orchestrator::store_clock& clock) {
  if (!clock) return std::nullopt;
  return int_param(to_nanoseconds(clock()));
}

inline constexpr const char* summary_columns =
    "workflow_id, workflow_name, status, step, owner, lease_expires_ns, fence, updated_at_ns";
inline constexpr int summary_column_count = 8;

// Reads the summary columns (in summary_columns' order, starting at column
// `first`) of `row`. A status no build ever wrote is refused, not guessed at.
inline run_summary read_summary(const result& rows, int row, int first = 0) {
  run_summary s;
  s.workflow_id = rows.text(row, first);
  s.workflow_name = rows.text(row, first + 1);
  const std::string status = rows.text(row, first + 2);
  const auto parsed = orchestrator::parse_workflow_status(status);
  if (!parsed) {
    throw checkpoint_error("workflow '" + s.workflow_id + "' has an unknown stored status '" + status.substr(0, 64) +
                           "'");
  }
  s.status = *parsed;
  s.step = rows.int64(row, first + 3);
  s.owner = rows.text(row, first + 4);
  s.lease_expires = from_nanoseconds(rows.int64(row, first + 5));
  s.fence = rows.int64(row, first + 6);
  s.updated_at = from_nanoseconds(rows.int64(row, first + 7));
  return s;
}

// A PostgreSQL array literal of texts ({"a","b\"c"}), so a save appends
// its whole journal in one statement.
inline std::string text_array(const std::vector<std::string>& texts) {
  std::string out = "{";
  for (const auto& text : texts) {
    if (out.size() > 1) out += ',';
    out += '"';
    for (const char c : text) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    out += '"';
  }
  out += '}';
  return out;
}

}  // namespace switchboard::stores::postgres
