#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine, builds the `switchboard` tool and runs the
# sample family-scheduling workflow. Extra arguments go to `switchboard run`
# (for example --input "Dinner with grandma on Sunday at 6pm" or --json).
#
# Offline by default (rule-based parser, resolution and query agents); set
# OPENAI_BASE_URL / OPENAI_API_KEY (or pass --model) for the LLM-backed ones.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

"$root/scripts/setup.sh" >/dev/null
cmake -S "$root" -B "$root/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$root/build" -j "$(nproc)" --target switchboard_cli >/dev/null

sample="$root/examples/scheduling"
state_dir="$(mktemp -d)"
trap 'rm -rf "$state_dir"' EXIT
export SWITCHBOARD_STATE_DIR="$state_dir"

if [[ $# -gt 0 ]]; then
  exec "$root/build/bin/switchboard" run "$sample/workflow.json" "$@"
fi

run() {
  echo
  echo "────────────────────────────────────────────────────────────────────────"
  echo "\$ switchboard run examples/scheduling/workflow.json $*"
  echo "────────────────────────────────────────────────────────────────────────"
  "$root/build/bin/switchboard" run "$sample/workflow.json" "$@" || true
}

# 1. A clear request: parsed, scheduled, resources checked, auto-confirmed.
run --input "Soccer practice for Maya on Saturday 2-4pm, she needs the minivan"
# 2. A request that collides with an existing booking: routed to resolution.
run --input "Dentist appointment for Leo on Tuesday 4-5pm, he needs the minivan"
# 3. A vague request: low confidence pauses for clarification, the answer resumes it.
run --input "Piano lesson for Leo sometime next week" --answer "Wednesday 5-6pm"
# 4. A question: routed to the query agent.
run --input "When is everyone free on Sunday?"
