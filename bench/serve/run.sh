#!/usr/bin/env bash
# `switchboard serve` under load, side by side with the LangGraph JS dev
# server (bench/serve/langgraph), driven by the same load generator over the
# same API. Builds (Release), starts each server on a free port (never a
# fixed one), runs the matrix REPS times alternating the servers, and prints
# the median of every metric as Markdown tables (docs/performance.md, section
# "Serving", explains the method).
#
#   bench/serve/run.sh                      everything, 3 repetitions
#   SERVERS="switchboard" bench/serve/run.sh     one server only
#   SMOKE=1 bench/serve/run.sh              tiny counts, Switchboard only, no timing (smoke.sh)
#
#   BUILD_DIR     build directory (default <repo>/build-release)
#   SKIP_BUILD=1  use the binaries already in BUILD_DIR
#   SERVERS       any of: switchboard (memory store), switchboard-sqlite,
#                 langgraph-js (default: all three)
#   CASES         any of: wait-1 wait-100 wait-1000 stream-1 stream-100
#                 stream-1000 hold park (default: all)
#   REPS          repetitions of the matrix (default 3)
#   SCALE         multiplies the run counts (0.2 for a quick look)
#   THREADS       switchboard serve --threads (default 2, its default)
#   JS_WORKERS    the dev server's --n-jobs-per-worker for the throughput
#                 cases (default 10, its default)
#   K             streams / parked runs of the memory cases (default 1000)
#
# Every measurement appends one JSON line to $BUILD_DIR/bench/serve/results.jsonl
# (with the server, the case, the repetition and the load average before it).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${BUILD_DIR:-$root/build-release}"
smoke="${SMOKE:-0}"
reps="${REPS:-3}"
scale="${SCALE:-1}"
threads="${THREADS:-2}"
js_workers="${JS_WORKERS:-10}"
k="${K:-1000}"
if [[ "$smoke" == 1 ]]; then
  servers="${SERVERS:-switchboard switchboard-sqlite}"
  reps=1
  k="${K:-20}"
else
  servers="${SERVERS:-switchboard switchboard-sqlite langgraph-js}"
fi
cases="${CASES:-wait-1 wait-100 wait-1000 stream-1 stream-100 stream-1000 hold park}"
langgraph_dir="$root/bench/serve/langgraph"

if [[ "${SKIP_BUILD:-0}" != 1 && "$smoke" != 1 ]]; then
  echo "== build (Release) in $build" >&2
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$build" -j 2 --target switchboard_cli bench_serve_plugin bench_serve_load >&2
fi
switchboard="$build/bin/switchboard"
load="$build/bench/serve/bench_serve_load"
for bin in "$switchboard" "$load" "$build/lib/switchboard/plugins/bench_serve.so"; do
  [[ -e "$bin" ]] || { echo "bench/serve: $bin is missing; build the benchmarks first" >&2; exit 1; }
done
if [[ "$smoke" != 1 ]]; then
  command -v jq >/dev/null || { echo "bench/serve: run.sh needs jq (apt-get install jq)" >&2; exit 1; }
fi
if [[ " $servers " == *" langgraph-js "* ]]; then
  command -v node >/dev/null || { echo "bench/serve: langgraph-js needs node" >&2; exit 1; }
  if [[ ! -f "$langgraph_dir/node_modules/.package-lock.json" ||
        "$langgraph_dir/package-lock.json" -nt "$langgraph_dir/node_modules/.package-lock.json" ]]; then
    echo "== npm ci in bench/serve/langgraph" >&2
    (cd "$langgraph_dir" && npm ci --no-audit --no-fund --loglevel=error) >&2
  fi
fi

# 1,000 connections in each direction at once, plus the servers' own files.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
if (( $(ulimit -n) < 2 * k + 256 )); then
  echo "bench/serve: open-file limit $(ulimit -n) is too low for K=$k (ulimit -n $((2 * k + 256)))" >&2
  exit 1
fi

results_dir="$build/bench/serve"
mkdir -p "$results_dir"
results="$results_dir/results.jsonl"
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

url=""
start_server() {  # server [js workers]
  local server=$1 log="$work/server.log"
  : >"$work/server.out"
  case "$server" in
    switchboard | switchboard-sqlite)
      local store=memory
      [[ "$server" == switchboard-sqlite ]] && { rm -rf "$work/db"; mkdir "$work/db"; store="sqlite:$work/db/runs.db"; }
      "$switchboard" serve "$root/bench/serve/workflow" "$root/bench/serve/workflow/park.json" \
        --listen 127.0.0.1:0 --store "$store" --threads "$threads" >"$work/server.out" 2>"$log" &
      ;;
    langgraph-js)
      rm -rf "$langgraph_dir/.langgraph_api"  # the dev server's files: every start is a fresh one
      (cd "$langgraph_dir" && LANGGRAPH_CLI_NO_ANALYTICS=1 LANGSMITH_TRACING=false LANGCHAIN_TRACING_V2=false \
         exec node server.mjs 0 "${2:-$js_workers}" >"$work/server.out" 2>"$log") &
      ;;
    *) echo "unknown server $server" >&2; exit 2 ;;
  esac
  server_pid=$!
  for _ in $(seq 600); do
    grep -q '^listening on ' "$work/server.out" && break
    kill -0 "$server_pid" 2>/dev/null || { cat "$log" >&2; echo "bench/serve: $server did not start" >&2; exit 1; }
    sleep 0.05
  done
  url="$(grep -o '^listening on http://[0-9.]*:[0-9]*' "$work/server.out" | sed 's/^listening on //')"
  [[ -n "$url" ]] || { cat "$log" >&2; echo "bench/serve: $server printed no address" >&2; exit 1; }
}

count() { awk -v n="$1" -v s="$scale" 'BEGIN { v = int(n * s); print (v < 1 ? 1 : v) }'; }

# Runs per measurement: the LangGraph JS server and the SQLite store are
# slower, so they get fewer runs for a similar wall time (per-run numbers do
# not depend on the count).
runs_for() {  # server concurrency
  if [[ "$smoke" == 1 ]]; then
    case "$2" in 1) echo 10 ;; *) echo 40 ;; esac
    return
  fi
  case "$1:$2" in
    langgraph-js:1) count 40 ;;
    langgraph-js:100) count 1000 ;;
    langgraph-js:1000) count 3000 ;;
    switchboard-sqlite:1) count 300 ;;
    switchboard-sqlite:100) count 3000 ;;
    switchboard-sqlite:1000) count 6000 ;;
    *:1) count 1000 ;;
    *:100) count 10000 ;;
    *:1000) count 20000 ;;
  esac
}

measure() {  # server case rep
  local server=$1 c=$2 rep=$3 out load_avg args=() concurrency
  load_avg="$(cut -d' ' -f1-3 /proc/loadavg)"
  case "$c" in
    wait-* | stream-*)
      concurrency="${c#*-}"
      [[ "$smoke" == 1 && "$concurrency" -gt 10 ]] && concurrency=10
      args=(--runs "$(runs_for "$server" "${c#*-}")" --concurrency "$concurrency")
      args+=(--warmup "$([[ "$smoke" == 1 ]] && echo 2 || echo $((concurrency < 100 ? 20 : concurrency)))")
      [[ "$c" == stream-* ]] && args+=(--stream)
      start_server "$server"
      ;;
    hold)
      # Every held run must be running, not queued: the dev server runs at
      # most --n-jobs-per-worker at once.
      args=(--mode hold --runs "$k" --hold-ms "$([[ "$smoke" == 1 ]] && echo 1500 || echo 30000)" --warmup 20)
      start_server "$server" $((k + 10))
      ;;
    park)
      # Warmed up at the measured concurrency, as the throughput cases are:
      # the high-water mark of 100 runs in flight is reached once, before
      # the first sample, and is not counted as memory the parked runs keep.
      concurrency="$([[ "$smoke" == 1 ]] && echo 5 || echo 100)"
      args=(--mode park --graph bench_serve_park --runs "$k" --concurrency "$concurrency" --warmup "$concurrency")
      start_server "$server"
      ;;
    *) echo "unknown case $c" >&2; exit 2 ;;
  esac
  [[ "$smoke" == 1 ]] || echo "== $server $c (rep $rep, load $load_avg)" >&2
  [[ "$smoke" == 1 ]] && args+=(--settle-ms 50)
  if ! out="$("$load" --url "$url" --server-pid "$server_pid" --label "$server" "${args[@]}" 2>"$work/load.log")"; then
    cat "$work/load.log" >&2
    echo "bench/serve: $server $c: runs failed; the server's log ends:" >&2
    tail -n 20 "$work/server.log" >&2
    # A smoke run fails; a measurement keeps its numbers with the failures
    # counted (a server that drops runs under load is a result too).
    if [[ "$smoke" == 1 || -z "$out" ]]; then
      stop_server
      exit 1
    fi
  else
    [[ "$smoke" == 1 ]] || cat "$work/load.log" >&2
  fi
  stop_server
  if [[ "$smoke" == 1 ]]; then  # CI's machine need not have jq
    echo "$out" >>"$work/this_run.jsonl"
    return
  fi
  jq -c --arg server "$server" --arg case "$c" --argjson rep "$rep" --arg load "$load_avg" \
    '. + {server: $server, case: $case, rep: $rep, loadavg_before: $load}' <<<"$out" | tee -a "$results" >>"$work/this_run.jsonl"
}

: >"$work/this_run.jsonl"
for rep in $(seq "$reps"); do
  for c in $cases; do
    for s in $servers; do  # alternating: each case runs on every server before the next
      measure "$s" "$c" "$rep"
    done
  done
done

if [[ "$smoke" == 1 ]]; then
  echo "bench/serve: ok ($(wc -l <"$work/this_run.jsonl") measurements, no failures)"
  exit 0
fi

echo
echo "Median of $reps repetition(s) (server CPU = the server process's utime + stime per run; RSS growth = what it keeps per finished run):"
echo
echo "| server | case | runs | runs/s | p50 ms | p99 ms | server CPU µs/run | client CPU µs/run | server RSS after MiB | RSS growth KiB/run | failed runs (all reps) |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
jq -rs '
  def median: sort | .[(length - 1) / 2 | floor];
  map(select(.mode == "runs")) | group_by([.case, .server]) | .[] |
  "| \(.[0].server) | \(.[0].case) | \(.[0].runs) | \(map(.runs_per_s) | median | floor) | " +
  "\(map(.p50_ms) | median * 10 | round / 10) | \(map(.p99_ms) | median * 10 | round / 10) | " +
  "\(map(.server_cpu_us_per_run) | median | round) | \(map(.client_cpu_us_per_run) | median | round) | " +
  "\(map(.server_rss_after_kib) | median / 1024 | round) | \(map(.rss_growth_per_run_kib) | median * 10 | round / 10) | " +
  "\(map(.failed) | add) |"
' "$work/this_run.jsonl"
echo
echo "| server | memory case | K | server RSS before MiB | KiB per item | KiB per item, second half | failed (all reps) |"
echo "|---|---|---|---|---|---|---|"
jq -rs '
  def median: sort | .[(length - 1) / 2 | floor];
  map(select(.mode != "runs")) | group_by([.case, .server]) | .[] |
  "| \(.[0].server) | \(if .[0].mode == "hold" then "open stream (run held in flight)" else "parked run (waiting for a person)" end) | " +
  "\(.[0].runs) | \(map(.server_rss_before_kib) | median / 1024 | round) | " +
  "\(map(if .mode == "hold" then .rss_per_open_stream_kib else .rss_growth_per_run_kib end) | median * 10 | round / 10) | " +
  "\(map(if .mode == "hold" then .rss_per_open_stream_second_half_kib else .rss_growth_per_run_second_half_kib end) | median * 10 | round / 10) | " +
  "\(map(.failed) | add) |"
' "$work/this_run.jsonl"
