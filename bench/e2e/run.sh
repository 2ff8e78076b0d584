#!/usr/bin/env bash
# Builds the end-to-end benchmark (Release) and runs the cases of the
# performance issue, each RUNS times, then prints the median of every metric
# per case as a Markdown table (docs/performance.md explains the method).
#
#   bench/e2e/run.sh                  every case, 3 runs each
#   CASES="1 3" bench/e2e/run.sh      some cases
#
#   BUILD_DIR       build directory (default <repo>/build-release)
#   RUNS            runs per case (default 3)
#   SCALE           multiplies the workflow counts (0.1 for a quick look)
#   CLIENT_THREADS  threads of the load program (default 1)
#   SERVER_THREADS  threads of the bench server (default 1)
#   SKIP_BUILD=1    use the binaries already in BUILD_DIR
#
# Every run appends one JSON line to $BUILD_DIR/bench/e2e/results.jsonl
# (with the case number and the load average when it started).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${BUILD_DIR:-$root/build-release}"
runs="${RUNS:-3}"
scale="${SCALE:-1}"
cases="${CASES:-1 2 3 4 5}"
client_threads="${CLIENT_THREADS:-1}"
server_threads="${SERVER_THREADS:-1}"

if [[ "${SKIP_BUILD:-0}" != 1 ]]; then
  echo "== build (Release) in $build" >&2
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$build" -j "$(nproc)" --target bench_e2e_server bench_e2e_load bench_e2e_inprocess >&2
fi

server_bin="$build/bench/e2e/bench_e2e_server"
load_bin="$build/bench/e2e/bench_e2e_load"
inprocess_bin="$build/bench/e2e/bench_e2e_inprocess"
results="$build/bench/e2e/results.jsonl"
work="$(mktemp -d)"
server_pid=""

stop_server() {
  if [[ -n "$server_pid" ]]; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    server_pid=""
  fi
}
trap 'stop_server; rm -rf "$work"' EXIT

start_server() {  # latency_ms
  "$server_bin" --port 0 --latency-ms "$1" --threads "$server_threads" >"$work/port" 2>"$work/server.log" &
  server_pid=$!
  for _ in $(seq 200); do
    [[ -s "$work/port" ]] && break
    sleep 0.05
  done
  port="$(head -n1 "$work/port")"
  [[ "$port" =~ ^[0-9]+$ ]] || { cat "$work/server.log" >&2; exit 1; }
}

count() { awk -v n="$1" -v s="$scale" 'BEGIN { v = int(n * s); print (v < 1 ? 1 : v) }'; }

record() {  # case json
  local load
  load="$(cut -d' ' -f1-3 /proc/loadavg)"
  jq -c --argjson case "$1" --arg load "$load" '. + {case: $case, loadavg_before: $load}' <<<"$2" | tee -a "$results"
}

# case latency_ms concurrency workflows warmup
http_case() {
  local n="$1" latency="$2" concurrency="$3" workflows warmup
  workflows="$(count "$4")"
  warmup="$(count "$5")"
  echo "== case $n: latency $latency ms, concurrency $concurrency, $workflows workflows x $runs runs" >&2
  start_server "$latency"
  for _ in $(seq "$runs"); do
    local load_avg out
    load_avg="$(cut -d' ' -f1-3 /proc/loadavg)"
    out="$("$load_bin" --base-url "http://127.0.0.1:$port/v1" --latency-ms "$latency" \
            --concurrency "$concurrency" --workflows "$workflows" --warmup "$warmup" \
            --threads "$client_threads")" || echo "case $n: some workflows failed (see above)" >&2
    [[ -n "$out" ]] && record "$n" "$out" >/dev/null
    echo "   load average before: $load_avg" >&2
  done
  stop_server
}

inprocess_case() {
  local workflows
  workflows="$(count 200000)"
  echo "== case 5: in-process (native agents, no HTTP) x $runs runs" >&2
  for _ in $(seq "$runs"); do  # CPU per workflow: agents answer at once
    record 5 "$("$inprocess_bin" --concurrency 1 --workflows "$workflows" --warmup 1000)" >/dev/null
  done
  for _ in $(seq "$runs"); do  # memory: 10,000 workflows waiting in their agents
    record 5 "$("$inprocess_bin" --concurrency 10000 --agent-latency-ms 50 --workflows "$(count 100000)" \
                --warmup 0)" >/dev/null
  done
}

: >"$work/this_run.jsonl"
for c in $cases; do
  before=$(wc -l <"$results" 2>/dev/null || echo 0)
  case "$c" in
    1) http_case 1 0 1 3000 200 ;;
    2) http_case 2 0 64 20000 2000 ;;
    3) http_case 3 50 1000 30000 2000 ;;
    4) http_case 4 50 10000 40000 0 ;;
    5) inprocess_case ;;
    *) echo "unknown case $c" >&2; exit 2 ;;
  esac
  tail -n +"$((before + 1))" "$results" >>"$work/this_run.jsonl"
done

echo
echo "Median of $runs run(s) per case (client = the load process only):"
echo
echo "| case | latency | concurrency | workflows/s | p50 ms | p99 ms | client CPU µs/workflow | peak RSS MiB | KiB per in-flight workflow | failures |"
echo "|---|---|---|---|---|---|---|---|---|---|"
jq -rs '
  def median: sort | .[(length - 1) / 2 | floor];
  group_by([.case, .concurrency]) | .[] |
  "| \(.[0].case) | \(.[0].latency_ms // "-") | \(.[0].concurrency) | \(map(.workflows_per_s) | median | floor) | " +
  "\(map(.p50_ms) | median * 100 | round / 100) | \(map(.p99_ms) | median * 100 | round / 100) | " +
  "\(map(.cpu_us_per_workflow) | median * 10 | round / 10) | \(map(.peak_rss_kib) | median / 1024 | floor) | " +
  "\(map(.rss_per_inflight_kib) | median * 100 | round / 100) | \(map(.failed_workflows) | add) |"
' "$work/this_run.jsonl"
