#!/usr/bin/env bash
# Short run of bench/serve to prove it still works: `switchboard serve`
# (memory and SQLite stores) with a few runs of every case — wait and
# stream, streams open on held runs, parked runs; then 1-3 servers on one
# PostgreSQL (many_hubs.sh). Fails only when a run
# fails (or a program cannot start), never on timing. The LangGraph JS
# side is a manual run (run.sh), never installed here.
# Usage: bench/serve/smoke.sh <build dir>
set -euo pipefail
build="${1:?usage: bench/serve/smoke.sh <build dir>}"
here="$(dirname "${BASH_SOURCE[0]}")"
BUILD_DIR="$build" SMOKE=1 bash "$here/run.sh"
# Servers sharing one PostgreSQL (a private one the script starts), a few runs each.
BUILD_DIR="$build" SMOKE=1 bash "$here/many_hubs.sh"
