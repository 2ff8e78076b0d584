#!/usr/bin/env bash
# Servers sharing one PostgreSQL (docs/scaling.md): throughput and latency of
# four-step runs with 1, 2 and 3 `switchboard serve` processes on one
# database, next to one server on SQLite; the database connections they use;
# the dead tuples the runs leave. Starts its own PostgreSQL
# (scripts/postgres-test-server.sh: a private server on a free port, fsync
# off — it measures the hubs and the protocol, not the disk) and removes it.
# Prints a Markdown table; docs/performance.md ("Many hubs") has the numbers.
#
#   bench/serve/many_hubs.sh               1, 2, 3 hubs and SQLite
#   HUBS="2" SOAK_S=600 bench/serve/many_hubs.sh   two hubs for ten minutes:
#                                          dead tuples and connections after
#   SMOKE=1 bench/serve/many_hubs.sh       a few runs of each, never timed
#
#   BUILD_DIR    build directory (default <repo>/build-release)
#   SKIP_BUILD=1 use the binaries already in BUILD_DIR
#   HUBS         hub counts to measure (default "1 2 3")
#   RUNS         runs per measurement (default 3000), CONCURRENCY (default 100)
#   SOAK_S       keep loading for this many seconds per hub count (default 0:
#                one measurement)
#   SQLITE=0     leave out the SQLite baseline
#   SERVE_ARGS   more options for every `switchboard serve` ("--threads 1")
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${BUILD_DIR:-$root/build-release}"
smoke="${SMOKE:-0}"
hubs_list="${HUBS:-1 2 3}"
runs="${RUNS:-3000}"
concurrency="${CONCURRENCY:-100}"
soak_s="${SOAK_S:-0}"
with_sqlite="${SQLITE:-1}"
warmup=100
if [[ "$smoke" == 1 ]]; then
  runs=30 concurrency=10 warmup=0 soak_s=0
fi
if [[ "${SKIP_BUILD:-0}" != 1 && "$smoke" != 1 ]]; then
  echo "== build (Release) in $build" >&2
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$build" -j 2 --target switchboard_cli bench_serve_plugin bench_serve_load >&2
fi
switchboard="$build/bin/switchboard"
load="$build/bench/serve/bench_serve_load"
for bin in "$switchboard" "$load" "$build/lib/switchboard/plugins/bench_serve.so"; do
  [[ -e "$bin" ]] || { echo "many_hubs: $bin is missing; build the benchmarks first" >&2; exit 1; }
done

work="$(mktemp -d)"
pg_state="$work/postgres"
server_pids=()
monitor_pid=""
stop_servers() {
  for pid in "${server_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${server_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  server_pids=()
}
cleanup() {
  stop_servers
  [[ -n "$monitor_pid" ]] && kill "$monitor_pid" 2>/dev/null || true
  bash "$root/scripts/postgres-test-server.sh" stop "$pg_state" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

bash "$root/scripts/postgres-test-server.sh" start "$pg_state" >&2
base_url="$(cat "$pg_state/url")"
sql() { psql -X -q -t -A -d "$1" -c "$2"; }

# A schema of its own per measurement: every hub count starts from empty tables.
url_for_schema() {
  sql "$base_url" "DROP SCHEMA IF EXISTS $1 CASCADE; CREATE SCHEMA $1" >/dev/null
  echo "$base_url&options=-csearch_path%3D$1"
}

start_servers() {  # count store
  local i
  for ((i = 0; i < $1; i++)); do
    # shellcheck disable=SC2086  # SERVE_ARGS is a list of options
    "$switchboard" serve "$root/bench/serve/workflow" --listen 127.0.0.1:0 --store "$2" ${SERVE_ARGS:-} \
      >"$work/server$i.out" 2>"$work/server$i.log" &
    server_pids+=($!)
  done
  urls=()
  for ((i = 0; i < $1; i++)); do
    for _ in $(seq 600); do
      grep -q '^listening on ' "$work/server$i.out" && break
      kill -0 "${server_pids[$i]}" 2>/dev/null || { cat "$work/server$i.log" >&2; echo "many_hubs: a server did not start" >&2; exit 1; }
      sleep 0.05
    done
    urls+=("$(grep -o '^listening on http://[0-9.]*:[0-9]*' "$work/server$i.out" | sed 's/^listening on //')")
  done
}

# The most connections to the database seen while the load ran (sampled every second:
# psql is a Perl wrapper here, and sampling faster took 5 % of the two cores).
start_monitor() {
  : >"$work/connections"
  (while true; do
     sql "$base_url" "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()" \
       >>"$work/connections" 2>/dev/null || true
     sleep 1
   done) &
  monitor_pid=$!
}
stop_monitor() {
  kill "$monitor_pid" 2>/dev/null || true
  wait "$monitor_pid" 2>/dev/null || true
  monitor_pid=""
  # Less this monitor's own connection.
  sort -n "$work/connections" | tail -1 | awk '{ print $1 - 1 }'
}

measure() {  # label -> one JSON line per load run in $work/report
  local args=() i
  for ((i = 0; i < ${#urls[@]}; i++)); do args+=(--url "${urls[$i]}" --server-pid "${server_pids[$i]}"); done
  "$load" "${args[@]}" --graph bench_serve --runs "$runs" --concurrency "$concurrency" --warmup "$warmup" \
    --label "$1" >>"$work/report"
}

# The q-quantile (0.99) of the servers' saves, in ms, from their /metrics
# (switchboard_store_operation_duration_seconds, buckets summed over the
# servers, interpolated inside the bucket as Prometheus' histogram_quantile
# does). Counts every save since the servers started, the warm-up's too.
save_quantile() {  # q
  local url
  for url in "${urls[@]}"; do curl -s "$url/metrics"; done |
    awk -v q="$1" -F'[{}]' '
      /^switchboard_store_operation_duration_seconds_bucket\{switchboard_store_operation="save",le="/ {
        match($2, /le="[^"]*"/); le = substr($2, RSTART + 4, RLENGTH - 5)
        split($3, v, " "); count[le] += v[1]; if (!(le in seen)) { seen[le] = 1; order[n++] = le }
      }
      END {
        if (n == 0) { print "-"; exit }
        total = count["+Inf"]; if (total == 0) { print "-"; exit }
        rank = q * total; below = 0; lower = 0
        for (i = 0; i < n; i++) {
          le = order[i]
          if (count[le] >= rank) {
            if (le == "+Inf") { printf "> %g\n", lower * 1000; exit }
            printf "%.2f\n", (lower + (le - lower) * (rank - below) / (count[le] - below)) * 1000; exit
          }
          below = count[le]; lower = le
        }
      }'
}

rows=()
run_case() {  # label hubs store schema
  local label=$1 hubs=$2 store=$3 schema=$4
  : >"$work/report"
  start_servers "$hubs" "$store"
  [[ -n "$schema" ]] && start_monitor
  local started=$SECONDS
  measure "$label"
  while (( SECONDS - started < soak_s )); do warmup=0 measure "$label"; done
  local connections="-" dead="-" live="-" save_p50 save_p99
  save_p50="$(save_quantile 0.5)"
  save_p99="$(save_quantile 0.99)"
  if [[ -n "$schema" ]]; then
    connections="$(stop_monitor)"
    sql "$base_url" "ANALYZE" >/dev/null  # fresh statistics for the counts below
    dead="$(sql "$base_url" "SELECT coalesce(sum(n_dead_tup), 0) FROM pg_stat_user_tables WHERE schemaname = '$schema'")"
    live="$(sql "$base_url" "SELECT coalesce(sum(n_live_tup), 0) FROM pg_stat_user_tables WHERE schemaname = '$schema'")"
    echo "== $label, $hubs hubs: dead / live tuples and autovacuums by table" >&2
    sql "$base_url" "SELECT relname, n_dead_tup, n_live_tup, autovacuum_count FROM pg_stat_user_tables
                     WHERE schemaname = '$schema' ORDER BY relname" >&2
  fi
  stop_servers
  [[ "$smoke" == 1 ]] && return  # bench_serve_load failed the script if a run failed
  rows+=("$(jq -s -r --arg hubs "$hubs" --arg c "$connections" --arg d "$dead" --arg l "$live" \
    --arg s50 "$save_p50" --arg s99 "$save_p99" '
    (map(.runs) | add) as $n |
    "| \(.[0].label) | \($hubs) | \($n) | \((map(.runs_per_s) | add / length) | floor) | \(.[-1].p50_ms * 100 | round / 100) | \(.[-1].p99_ms * 100 | round / 100) | \($s50) / \($s99) | \((map(.server_cpu_us_per_run) | add / length) | floor) | \($c) | \($d) / \($l) |"' \
    "$work/report")")
}

[[ "$smoke" == 1 ]] || command -v jq >/dev/null || { echo "many_hubs: needs jq (apt-get install jq)" >&2; exit 1; }
for hubs in $hubs_list; do
  schema="bench_hubs_$hubs"
  run_case "postgres" "$hubs" "$(url_for_schema "$schema")" "$schema"
done
if [[ "$with_sqlite" == 1 ]]; then
  mkdir -p "$work/sqlite"
  run_case "sqlite" 1 "sqlite:$work/sqlite/runs.db" ""
fi

[[ "$smoke" == 1 ]] && { echo "many_hubs: smoke run passed" >&2; exit 0; }
echo "| store | hubs | runs | runs/s | p50 ms | p99 ms | save p50 / p99 ms | server CPU µs/run (all hubs) | max DB connections | dead / live tuples |"
echo "|---|---|---|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
