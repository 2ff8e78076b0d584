#!/usr/bin/env bash
# Smoke run of the durable-run benchmark (CI: proves it runs, never times it).
#   bench/durable/smoke.sh <build-dir>
set -euo pipefail
build="${1:?usage: smoke.sh <build-dir>}"
exe="$build/bench/durable/switchboard_durable_bench"
[[ -x "$exe" ]] || { echo "no $exe (benchmarks not built)"; exit 0; }
"$exe" --benchmark_min_time=0.01 --repeats=1 --input_mb=1 >/dev/null
echo "durable bench: ok"
