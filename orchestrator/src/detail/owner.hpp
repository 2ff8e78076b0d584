// Owner ids of hubs in a checkpoint store, and whether the process behind
// one is still alive.
#pragma once

#include <string>
#include <string_view>

namespace switchboard::orchestrator::detail {

// "host:pid:start-time" of this process; the start time (clock ticks since
// boot, from /proc) tells a live process from a later one with the same pid.
const std::string& this_process_owner_id();

// True when `owner` is an id of this_process_owner_id()'s form, of this
// host, whose process no longer exists. False when unknown (another host,
// another form): only the lease then tells.
bool owner_is_dead_on_this_host(std::string_view owner);

}  // namespace switchboard::orchestrator::detail
