#!/usr/bin/env bash
# Runs the protocol benchmarks briefly to prove they work; the numbers of a
# smoke run mean nothing. Usage: bench/protocol/smoke.sh <build dir>
set -euo pipefail
"$1/bench/protocol/bench_protocol_parse" --benchmark_min_time=0.01 >/dev/null
"$1/bench/protocol/bench_protocol_validate" --benchmark_min_time=0.01 >/dev/null
echo "bench/protocol: ok"
