#!/usr/bin/env bash
# /metrics as Prometheus reads it: `switchboard serve` on the sample runs a
# request to its approval pause, its page passes `promtool check metrics`,
# and a real Prometheus server scrapes it and answers a query over it.
#
#   prometheus_test.sh SWITCHBOARD_BIN PROMETHEUS_BIN_DIR SAMPLE_WORKFLOW
set -euo pipefail

switchboard=$1 prom_dir=$2 sample=$3
work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

fail() {
  echo "FAIL: $*" >&2
  for log in "$work"/*.log; do echo "--- $log" >&2; tail -20 "$log" >&2; done
  exit 1
}

# Polls `command` until it succeeds; the limit only guards against a hang.
wait_for() {
  local what=$1
  shift
  for _ in $(seq 1 600); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.1
  done
  fail "timed out waiting for $what"
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

SWITCHBOARD_STATE_DIR="$work/state" "$switchboard" serve "$sample" --listen 127.0.0.1:0 \
  --store "sqlite:$work/runs.db" >"$work/serve.out" 2>"$work/serve.log" &
pids+=($!)
wait_for "the server to listen" grep -q '^listening on ' "$work/serve.out"
url=$(sed -n 's/^listening on //p' "$work/serve.out")

thread=$(curl -sf -X POST "$url/threads" -d '{}' | python3 -c 'import json,sys; print(json.load(sys.stdin)["thread_id"])')
curl -sf -X POST "$url/threads/$thread/runs/wait" \
  -d '{"assistant_id":"family_scheduling","input":{"request":"Soccer practice for Maya on Saturday 2-4pm, she needs the minivan","now":"2026-11-23T09:00"}}' \
  >"$work/wait.json"
grep -q '"type":"approval"' "$work/wait.json" || fail "the run did not pause for approval: $(head -c 300 "$work/wait.json")"

curl -sf "$url/metrics" >"$work/metrics.txt"
"$prom_dir/promtool" check metrics <"$work/metrics.txt" || fail "promtool check metrics refused the page"
grep -q 'switchboard_serve_waiting_runs{kind="approval"} 1' "$work/metrics.txt" ||
  fail "the waiting approval is not counted"
grep -q 'switchboard_serve_http_requests_total{method="POST",route="/threads/{id}/runs/wait",code="200"} 1' \
  "$work/metrics.txt" || fail "the request is not counted by route"

prom_port=$(free_port)
host_port=${url#http://}
cat >"$work/prometheus.yml" <<YAML
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: switchboard
    static_configs:
      - targets: ["$host_port"]
YAML
"$prom_dir/prometheus" --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/tsdb" \
  --web.listen-address="127.0.0.1:$prom_port" >"$work/prometheus.log" 2>&1 &
pids+=($!)

query() {
  curl -sf "http://127.0.0.1:$prom_port/api/v1/query" \
    --data-urlencode 'query=switchboard_serve_waiting_runs{kind="approval"}' |
    python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; sys.exit(0 if r and r[0]["value"][1]=="1" else 1)'
}
wait_for "Prometheus to scrape the server" query
echo "ok: promtool accepts /metrics and Prometheus scraped it"
