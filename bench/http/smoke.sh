#!/usr/bin/env bash
# A short, untimed run of the HTTP load program: proves it still works.
set -euo pipefail
build="${1:?usage: smoke.sh BUILD_DIR}"
exe="$build/bench/http/switchboard_http_load"
[[ -x "$exe" ]] || { echo "http_load not built; skipped"; exit 0; }
"$exe" --requests 500 --concurrency 16
