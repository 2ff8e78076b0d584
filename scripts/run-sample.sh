#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine, builds the `switchboard` tool and runs the
# sample family-scheduling workflow: the four sample requests, then a second
# booking of the same vehicle, which the calendar catches. Each booking waits
# for the user's approval; the script gives it with `switchboard resume ID
# --approve`. Extra arguments go to `switchboard run` (for example --input
# "Dinner with grandma on Sunday at 6pm" or --json); at a terminal it then
# asks "Approve? [y/N]" before the calendar changes.
#
# Offline by default (rule-based parser, resolution and query agents); set
# OPENAI_BASE_URL / OPENAI_API_KEY (or pass --model) for the LLM-backed ones.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# shellcheck source=scripts/progress.sh
source "$root/scripts/progress.sh"

# What is installed and built is said as it happens; a second run has
# nothing to install or build and starts the sample at once.
"$root/scripts/setup.sh"
if [[ ! -f "$root/build/build.ninja" ]]; then
  cmake -S "$root" -B "$root/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
build_with_progress "$root/build" switchboard_cli switchboard_scheduling_plugin

sample="$root/examples/scheduling"
switchboard="$root/build/bin/switchboard"

# With arguments: one run in your own state directory (the default, or
# SWITCHBOARD_STATE_DIR), so the resume commands it prints work afterwards.
if [[ $# -gt 0 ]]; then
  exec "$switchboard" run "$sample/workflow.json" "$@"
fi

# The tour runs in a state directory of its own, removed at the end.
state_dir="$(mktemp -d)"
trap 'rm -rf "$state_dir"' EXIT
export SWITCHBOARD_STATE_DIR="$state_dir"

banner() {
  echo
  echo "────────────────────────────────────────────────────────────────────────"
  echo "\$ $*"
  echo "────────────────────────────────────────────────────────────────────────"
}

# Runs one request. The sample's bookings wait for the user's approval
# (exit code 4, the pending calendar change printed); at a terminal
# `switchboard run` would ask "Approve? [y/N]", here standard input is not
# one, so the script approves the way a person or a script would later:
# `switchboard resume ID --approve`.
# A request with several events pauses once per booking.
run() {
  banner "switchboard run examples/scheduling/workflow.json $*"
  local output="$state_dir/last-run.txt" status=0
  "$switchboard" run "$sample/workflow.json" "$@" </dev/null | tee "$output" || status=${PIPESTATUS[0]}
  local id
  while [[ $status -eq 4 ]]; do
    id="$(sed -n 's/^workflow id: //p' "$output" | tail -n 1)"
    banner "switchboard resume $id --workflow examples/scheduling/workflow.json --approve"
    status=0
    "$switchboard" resume "$id" --workflow "$sample/workflow.json" --approve </dev/null | tee "$output" ||
      status=${PIPESTATUS[0]}
  done
}

# The household's calendar lives in the state directory (a SQLite file the
# runs share); --reset restores the shipped seed data, so every run of this
# script starts from the same calendar.
# 1. A clear request: parsed, scheduled, resources and a driver checked; the
#    booking waits for approval, then is written.
run --reset --input "Soccer practice for Maya on Saturday 2-4pm, she needs the minivan"
# 2. A request that collides with an existing booking: routed to resolution.
run --input "Dentist appointment for Leo on Tuesday 4-5pm, he needs the minivan"
# 3. A vague request: low confidence pauses for clarification, the answer resumes it.
run --input "Piano lesson for Leo sometime next week" --answer "Wednesday 5-6pm"
# 4. A question: routed to the query agent.
run --input "When is everyone free on Sunday?"
# 5. The minivan again, for the same Saturday afternoon, in another run: the
#    booking from run 1 is a conflict, resolved with the sedan and the other parent.
run --input "Swimming for Leo on Saturday 2-4pm, he needs the minivan"
# 6. And the calendar says so.
run --input "Is the minivan free on Saturday afternoon?"
