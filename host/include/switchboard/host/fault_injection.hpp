// A testing hook for crash tests of programs built on the host library:
// a store that kills its own process right after a chosen committed write,
// so a test can stop a run at every commit point and resume it.
//
// Never for production use. A program enables it only on request (the
// command line does when SWITCHBOARD_FAULT_KILL_AFTER_WRITES=N is set).
//
// Thread-safety: as the store it wraps; the count of writes is not
// synchronized, so use it from one run at a time.
#pragma once

#include <switchboard/orchestrator/checkpoint_store.hpp>

#include <memory>

namespace switchboard::host {

// `inner`, whose process raises SIGKILL right after the Nth write `inner`
// committed (create, claim or save; N = `writes` >= 1).
std::shared_ptr<orchestrator::checkpoint_store> kill_after_writes(
    std::shared_ptr<orchestrator::checkpoint_store> inner, long writes);

}  // namespace switchboard::host
