// The rules every checkpoint store applies, written once so each backend
// refuses the same requests with the same messages: malformed checkpoints,
// claims of runs that are owned, finished or moved on, stale saves.
#pragma once

#include <switchboard/orchestrator/checkpoint_store.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace switchboard::orchestrator::detail {

// Throws checkpoint_error when `cp` has an empty workflow id or name, a
// negative step, or an unknown status.
void check_checkpoint(const checkpoint& cp);

// What create() refuses beyond check_checkpoint: a status other than
// running, an empty owner.
void check_new_run(const checkpoint& cp);

// The status a reader sees: "interrupted" for a running run whose lease
// expired before `now`.
std::string effective_status(std::string_view stored_status, system_time lease_expires, system_time now);

// Throws claim_error when `request` may not claim `stored` (nullopt: no
// such run) at `now`. `stored.status` is the stored status.
void check_claim(std::string_view store_name, const std::optional<run_summary>& stored,
                 const claim_request& request, system_time now);

// Throws claim_error (stale_fence) or checkpoint_error (stale step, unknown
// run) when `cp` may not replace `stored`.
void check_save(std::string_view store_name, const std::optional<run_summary>& stored, const checkpoint& cp);

[[noreturn]] void throw_exists(std::string_view store_name, const run_summary& stored);

// "2026-11-24T22:09:19Z"
std::string format_utc(system_time t);

}  // namespace switchboard::orchestrator::detail
