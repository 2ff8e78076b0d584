#!/usr/bin/env bash
# Smoke run of the orchestrator benchmark (CI: proves it runs, never times it).
#   bench/orchestrator/smoke.sh <build-dir>
set -euo pipefail
build="${1:?usage: smoke.sh <build-dir>}"
exe="$build/bench/orchestrator/switchboard_orchestrator_bench"
[[ -x "$exe" ]] || { echo "no $exe (benchmarks not built)"; exit 0; }
"$exe" --benchmark_min_time=0.01 --in_flight=500 >/dev/null
load="$build/bench/orchestrator/switchboard_workflow_load_bench"
[[ -x "$load" ]] && "$load" --benchmark_min_time=0.01 --benchmark_filter='nodes:10000$' >/dev/null
echo "orchestrator bench: ok"
