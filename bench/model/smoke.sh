#!/usr/bin/env bash
# Smoke run of the model benchmark (CI: proves it runs, never times it).
#   bench/model/smoke.sh <build-dir>
set -euo pipefail
build="${1:?usage: smoke.sh <build-dir>}"
exe="$build/bench/model/switchboard_model_bench"
[[ -x "$exe" ]] || { echo "no $exe (benchmarks not built)"; exit 0; }
"$exe" --benchmark_min_time=0.01 >/dev/null
echo "model bench: ok"
