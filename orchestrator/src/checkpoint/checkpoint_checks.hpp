// Input checks every checkpoint store applies before it touches its storage,
// so each backend refuses the same bad checkpoints with the same message.
#pragma once

#include <switchboard/orchestrator/checkpoint_store.hpp>

#include <cstdint>
#include <string_view>

namespace switchboard::orchestrator::detail {

// Throws checkpoint_error when `cp` has an empty workflow id or name, a
// negative step, or a status that is not one of the five workflow statuses.
void check_checkpoint(const checkpoint& cp);

// Throws checkpoint_error naming `store_name`, the workflow and both steps.
[[noreturn]] void throw_stale_step(std::string_view store_name, const checkpoint& cp,
                                   std::int64_t stored_step);

}  // namespace switchboard::orchestrator::detail
