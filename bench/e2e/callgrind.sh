#!/usr/bin/env bash
# Instructions per workflow, counted by callgrind in the client process only
# (concurrency 1): the before/after number that the machine's load does not
# move. Each program runs twice, with N and 2N workflows; the difference
# divided by N leaves out start-up and warm-up.
#
#   bench/e2e/callgrind.sh [build dir]     (default <repo>/build-release)
#   N=500 bench/e2e/callgrind.sh           workflows in the shorter run
#
# Prints one line per program: "over HTTP: 261,447 instructions per workflow".
set -euo pipefail

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

per_workflow() {  # label command... (the workflow count is appended)
  local label=$1; shift
  local once twice
  once=$(instructions "$@" --workflows "$n")
  twice=$(instructions "$@" --workflows $((2 * n)))
  printf '%s: %s instructions per workflow\n' "$label" \
    "$(echo $(((twice - once) / n)) | sed -E ':a; s/([0-9])([0-9]{3})($|,)/\1,\2\3/; ta')"
}

"$server_bin" --port 0 --latency-ms 0 >"$work/port" 2>"$work/server.log" &
server_pid=$!
for _ in $(seq 200); do
  [[ -s "$work/port" ]] && break
  sleep 0.05
done
port="$(head -n1 "$work/port")"
[[ "$port" =~ ^[0-9]+$ ]] || { cat "$work/server.log" >&2; exit 1; }

per_workflow "over HTTP" "$load_bin" --base-url "http://127.0.0.1:$port/v1" --concurrency 1 --warmup 0
per_workflow "in-process" "$inprocess_bin" --concurrency 1 --warmup 0
