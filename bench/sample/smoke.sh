#!/usr/bin/env bash
# Smoke run of the sample benchmark (CI: proves it runs, never times it).
#   bench/sample/smoke.sh <build-dir>
set -euo pipefail
build="${1:?usage: smoke.sh <build-dir>}"
exe="$build/bench/sample/switchboard_sample_bench"
[[ -x "$exe" ]] || { echo "no $exe (benchmarks not built)"; exit 0; }
"$exe" --benchmark_min_time=0.01 >/dev/null
echo "sample bench: ok"
