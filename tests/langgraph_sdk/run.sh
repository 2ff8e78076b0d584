#!/usr/bin/env bash
# Runs the LangGraph SDK suite: `switchboard serve` on the scheduling sample,
# driven by @langchain/langgraph-sdk (pinned in package-lock.json) with node's
# own test runner.
#
#   tests/langgraph_sdk/run.sh [--bin SWITCHBOARD] [TEST_FILE...]
#
# It starts one server on a free loopback port with state of its own (a
# temporary SWITCHBOARD_STATE_DIR and sqlite store), waits until GET /ok
# answers, runs the test files (all *.test.mjs by default) with the server's
# URL in SWITCHBOARD_URL and the binary in SWITCHBOARD_BIN (the tests that kill
# and restart a server start their own), stops the server and exits with
# node's status. The binary defaults to $SWITCHBOARD_BIN, else build/bin/switchboard;
# node to $SWITCHBOARD_NODE, else the one on PATH. node_modules comes from
# `npm ci` here (scripts/test.sh runs it).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
bin="${SWITCHBOARD_BIN:-$root/build/bin/switchboard}"
node="${SWITCHBOARD_NODE:-node}"

files=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --bin) bin="$2"; shift 2 ;;
    *) files+=("$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"); shift ;;
  esac
done
if [[ ${#files[@]} -eq 0 ]]; then
  files=("$here"/tests/*.test.mjs)
fi

if [[ ! -x "$bin" ]]; then
  echo "run.sh: no switchboard binary at $bin (build it, or pass --bin)" >&2
  exit 2
fi
if [[ ! -d "$here/node_modules/@langchain/langgraph-sdk" ]]; then
  echo "run.sh: $here/node_modules is missing: run 'npm ci' there (scripts/test.sh does)" >&2
  exit 2
fi
bin="$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")"

tmp="$(mktemp -d)"
server_pid=""
drain_pid=""
cleanup() {
  if [[ -n "$server_pid" ]]; then
    # SIGTERM, then SIGKILL if it is still there after 20 s (--grace is 10 s).
    kill -TERM "$server_pid" 2>/dev/null || true
    local i
    for ((i = 0; i < 200; i++)); do
      kill -0 "$server_pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$server_pid" 2>/dev/null; then
      echo "run.sh: switchboard serve (pid $server_pid) outlived SIGTERM by 20 s: SIGKILL" >&2
      kill -KILL "$server_pid" 2>/dev/null || true
    fi
    wait "$server_pid" 2>/dev/null || true
  fi
  if [[ -n "$drain_pid" ]]; then
    wait "$drain_pid" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The server's standard output through a FIFO: its first line says where it
# listens; the rest is drained into a file so the server never blocks on it.
mkfifo "$tmp/stdout"
env -u OPENAI_API_KEY -u ANTHROPIC_API_KEY -u OPENAI_BASE_URL -u ANTHROPIC_BASE_URL \
    -u SWITCHBOARD_MODEL -u SWITCHBOARD_PROVIDER -u SWITCHBOARD_OUTPUT_MODE \
    -u SWITCHBOARD_SCHEMA_PATH -u SWITCHBOARD_PLUGIN_PATH -u SWITCHBOARD_PROMPT_PATH \
    SWITCHBOARD_STATE_DIR="$tmp" \
    "$bin" serve "$root/examples/scheduling/workflow.json" --listen 127.0.0.1:0 \
    --store "sqlite:$tmp/runs.db" >"$tmp/stdout" 2>"$tmp/server.log" &
server_pid=$!
exec 3<"$tmp/stdout"
line=""
if ! IFS= read -r -t 60 line <&3; then
  echo "run.sh: switchboard serve printed no first line; its standard error:" >&2
  cat "$tmp/server.log" >&2
  exit 1
fi
cat <&3 >"$tmp/server.out" &
drain_pid=$!
exec 3<&-
if [[ ! "$line" =~ ^listening\ on\ (http://127\.0\.0\.1:([0-9]+))/?$ ]]; then
  echo "run.sh: unexpected first line from switchboard serve: $line" >&2
  exit 1
fi
url="${BASH_REMATCH[1]}"

# GET /ok, polled (the server may print its address before it answers).
if ! "$node" "$here/lib/wait_ok.mjs" "$url" 30000; then
  echo "run.sh: $url/ok never answered; the server's standard error:" >&2
  cat "$tmp/server.log" >&2
  exit 1
fi

echo "run.sh: switchboard serve at $url (pid $server_pid); running ${#files[@]} test file(s)"
status=0
(cd "$here" && SWITCHBOARD_URL="$url" SWITCHBOARD_BIN="$bin" "$node" --test "${files[@]}") || status=$?

if ! kill -0 "$server_pid" 2>/dev/null; then
  echo "run.sh: the shared server died during the tests; its standard error:" >&2
  cat "$tmp/server.log" >&2
  server_pid=""
  [[ $status -eq 0 ]] && status=1
elif [[ $status -ne 0 ]]; then
  echo "run.sh: the shared server's standard error (last 50 lines):" >&2
  tail -n 50 "$tmp/server.log" >&2
fi
exit "$status"
