// The rules every checkpoint store applies, written once so each backend
// refuses the same requests with the same messages: malformed saves,
// claims of runs that are owned, finished or moved on, stale saves; and the
// status and cursor arithmetic every backend shares.
#pragma once

#include <switchboard/orchestrator/checkpoint_store.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace switchboard::orchestrator::detail {

// The system clock when `clock` is empty.
store_clock or_system_clock(store_clock clock);

// Throws checkpoint_error when `run` has an empty workflow id or name or a
// negative step.
void check_save_request(const save_request& run);

// What create() refuses beyond check_save_request: a status other than
// running, an empty owner.
void check_new_run(const save_request& run);

// The status a reader sees: interrupted for a running run whose lease
// expired before `now`.
workflow_status effective_status(workflow_status stored_status, system_time lease_expires, system_time now);

// Throws claim_error when `request` may not claim `stored` (nullopt: no
// such run) at `now`. `stored.status` is the stored status.
void check_claim(std::string_view store_name, const std::optional<run_summary>& stored,
                 const claim_request& request, system_time now);

// Throws claim_error (stale_fence) or checkpoint_error (stale step, unknown
// run) when `run` may not replace `stored`.
void check_save(std::string_view store_name, const std::optional<run_summary>& stored, const save_request& run);

[[noreturn]] void throw_exists(std::string_view store_name, const run_summary& stored);

// Whether list_request `request` selects `run` (whose status is the
// effective one), cursor aside.
bool selects(const list_request& request, const run_summary& run);

// A list cursor is the save order of the last run of a page: the next page
// holds runs saved before it. parse_cursor throws checkpoint_error naming
// the store on text no store of this kind made.
std::string make_cursor(std::int64_t save_order);
std::optional<std::int64_t> parse_cursor(std::string_view store_name, std::string_view cursor);

// The checkpoint a load or claim returns: the summary's fields, the head
// and the whole journal.
checkpoint checkpoint_of(run_summary summary, std::string state_json, std::vector<std::string> journal);

// "2026-11-24T22:09:19Z"
std::string format_utc(system_time t);

}  // namespace switchboard::orchestrator::detail
