#!/usr/bin/env bash
# Short run of the end-to-end benchmark to prove it still works: a few
# hundred workflows over HTTP against the loopback bench server. Fails only
# when a workflow fails (or a program cannot start), never on timing.
# Usage: bench/e2e/smoke.sh <build dir>
set -euo pipefail

build="${1:?usage: bench/e2e/smoke.sh <build dir>}"
server_bin="$build/bench/e2e/bench_e2e_server"
load_bin="$build/bench/e2e/bench_e2e_load"
for bin in "$server_bin" "$load_bin"; do
  [[ -x "$bin" ]] || { echo "bench/e2e: $bin is missing; build the benchmarks first" >&2; exit 1; }
done

work="$(mktemp -d)"
server_pid=""
cleanup() {
  [[ -n "$server_pid" ]] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

"$server_bin" --port 0 --latency-ms 1 >"$work/port" 2>"$work/server.log" &
server_pid=$!
for _ in $(seq 100); do
  [[ -s "$work/port" ]] && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$work/server.log" >&2; exit 1; }
  sleep 0.05
done
port="$(head -n1 "$work/port")"
[[ "$port" =~ ^[0-9]+$ ]] || { echo "bench/e2e: the server printed no port" >&2; cat "$work/server.log" >&2; exit 1; }

run_load() {
  if ! "$load_bin" --base-url "http://127.0.0.1:$port/v1" "$@" >>"$work/load.json" 2>"$work/load.log"; then
    echo "bench/e2e: workflows failed (bench_e2e_load $*):" >&2
    cat "$work/load.log" "$work/server.log" >&2
    exit 1
  fi
}
# Every rung of the output ladder: the server must answer each validly.
run_load --workflows 300 --concurrency 16
run_load --workflows 20 --concurrency 4 --output-mode json_object
run_load --workflows 20 --concurrency 4 --output-mode prompt_schema
# Traced: every span exported to the server's /v1/traces (the load program
# fails on a dropped or failed span; here at least one must have gone out).
run_load --workflows 20 --concurrency 4 --trace
grep -Eq '^  spans +[1-9][0-9]* exported, 0 dropped, 0 failed' "$work/load.log" ||
  { echo "bench/e2e: --trace exported no span:" >&2; cat "$work/load.log" >&2; exit 1; }
echo "bench/e2e: ok ($(head -n1 "$work/load.json" | grep -o '"workflows_per_s":[0-9.Ee+-]*'))"
