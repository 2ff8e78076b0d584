#!/usr/bin/env bash
# Short run of bench/serve to prove it still works: `switchboard serve`
# (memory and SQLite stores) with a few runs of every case — wait and
# stream, streams open on held runs, parked runs. Fails only when a run
# fails (or a program cannot start), never on timing. The LangGraph JS
# side is a manual run (run.sh), never installed here.
# Usage: bench/serve/smoke.sh <build dir>
set -euo pipefail
build="${1:?usage: bench/serve/smoke.sh <build dir>}"
BUILD_DIR="$build" SMOKE=1 exec bash "$(dirname "${BASH_SOURCE[0]}")/run.sh"
