// How long the checkpoint store takes to write: a store that measures the
// one it wraps, for a process's metrics (workflow_metrics.hpp).
//
//   switchboard.store.operation.duration  histogram s: each create, save
//                                         and claim, by
//                                         switchboard.store.operation and,
//                                         when it failed, error.type
//
// Every call is passed on unchanged (what it returns or throws); reads,
// renewals and deletions are passed on unmeasured.
//
// Thread-safety: as the wrapped store's.
#pragma once

#include <switchboard/orchestrator/checkpoint_store.hpp>
#include <switchboard/telemetry/metrics.hpp>

#include <memory>
#include <vector>

namespace switchboard::host {

// The buckets of switchboard.store.operation.duration, in seconds: from
// 100 µs (a save to memory or to SQLite without a sync) to 10 s.
const std::vector<double>& store_duration_buckets();

std::shared_ptr<orchestrator::checkpoint_store> measured_store(std::shared_ptr<orchestrator::checkpoint_store> store,
                                                               const std::shared_ptr<telemetry::meter>& meter);

}  // namespace switchboard::host
