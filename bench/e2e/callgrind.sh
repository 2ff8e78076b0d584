#!/usr/bin/env bash
# Instructions per workflow, counted by callgrind in the client process only
# (concurrency 1): the before/after number that the machine's load does not
# move. Each program runs twice, with N and 2N workflows; the difference
# divided by N leaves out start-up and warm-up.
#
#   bench/e2e/callgrind.sh [--trace] [build dir]   (default <repo>/build-release)
#   N=500 bench/e2e/callgrind.sh                   workflows in the shorter run
#
# Prints one line per program: "over HTTP: 261,447 instructions per workflow".
# --trace: each program also with --trace (every span exported to the bench
# server's /v1/traces; the exporter's thread is counted too), then the
# ratio on/off and the exporter's counts of the longer traced run.
set -euo pipefail

trace=0
if [[ "${1:-}" == "--trace" ]]; then
  trace=1
  shift
fi
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:-$root/build-release}"
n="${N:-500}"
server_bin="$build/bench/e2e/bench_e2e_server"
load_bin="$build/bench/e2e/bench_e2e_load"
inprocess_bin="$build/bench/e2e/bench_e2e_inprocess"
for bin in "$server_bin" "$load_bin" "$inprocess_bin"; do
  [[ -x "$bin" ]] || { echo "callgrind.sh: $bin is missing; build the benchmarks (Release) first" >&2; exit 1; }
done
command -v valgrind >/dev/null || { echo "callgrind.sh: valgrind is not installed" >&2; exit 1; }

work="$(mktemp -d)"
server_pid=""
cleanup() {
  [[ -n "$server_pid" ]] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

instructions() {  # command... -> total instructions executed
  valgrind --tool=callgrind --callgrind-out-file="$work/out" "$@" >"$work/stdout" 2>"$work/stderr" ||
    { cat "$work/stderr" >&2; exit 1; }
  grep -m1 '^summary:' "$work/out" | awk '{print $2}'
}

grouped() { echo "$1" | sed -E ':a; s/([0-9])([0-9]{3})($|,)/\1,\2\3/; ta'; }

per_workflow_count=0
per_workflow() {  # label command... (the workflow count is appended)
  local label=$1; shift
  local once twice
  once=$(instructions "$@" --workflows "$n")
  twice=$(instructions "$@" --workflows $((2 * n)))
  per_workflow_count=$(((twice - once) / n))
  printf '%s: %s instructions per workflow\n' "$label" "$(grouped "$per_workflow_count")"
}

# label command...: off, on (--trace ...) and the ratio, with the exporter's
# line of the traced run of 2N workflows.
off_and_on() {
  local label=$1 off on; shift
  local -a plain=() traced=()
  while [[ $# -gt 0 && "$1" != "--" ]]; do plain+=("$1"); shift; done
  shift
  traced=("${plain[@]}" "$@")
  per_workflow "$label, tracing off" "${plain[@]}"
  off=$per_workflow_count
  per_workflow "$label, tracing on" "${traced[@]}"
  on=$per_workflow_count
  grep -m1 '^  spans ' "$work/stderr" | sed "s/^  spans */$label, exporter (2N run): /"
  awk -v on="$on" -v off="$off" -v l="$label" 'BEGIN { printf "%s: on/off %.4f (%+.1f %%)\n", l, on / off, (on / off - 1) * 100 }'
}

"$server_bin" --port 0 --latency-ms 0 >"$work/port" 2>"$work/server.log" &
server_pid=$!
for _ in $(seq 200); do
  [[ -s "$work/port" ]] && break
  sleep 0.05
done
port="$(head -n1 "$work/port")"
[[ "$port" =~ ^[0-9]+$ ]] || { cat "$work/server.log" >&2; exit 1; }

if [[ $trace == 1 ]]; then
  off_and_on "over HTTP" "$load_bin" --base-url "http://127.0.0.1:$port/v1" --concurrency 1 --warmup 0 -- --trace
  off_and_on "in-process" "$inprocess_bin" --concurrency 1 --warmup 0 -- \
    --trace --otlp-endpoint "http://127.0.0.1:$port"
else
  per_workflow "over HTTP" "$load_bin" --base-url "http://127.0.0.1:$port/v1" --concurrency 1 --warmup 0
  per_workflow "in-process" "$inprocess_bin" --concurrency 1 --warmup 0
fi
