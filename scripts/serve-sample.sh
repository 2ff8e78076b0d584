#!/usr/bin/env bash
# Serves the sample scheduling workflow over the LangGraph Agent Server API
# (docs/serving.md): builds what it needs on a fresh Debian 12 machine, then
# runs `switchboard serve examples/scheduling` in the foreground until
# Ctrl-C. Runs and the household's calendar are kept in your state directory
# (SWITCHBOARD_STATE_DIR, or ~/.local/state/switchboard).
#
#   scripts/serve-sample.sh                      listens on 127.0.0.1:2024
#   scripts/serve-sample.sh --listen 127.0.0.1:0 a free port (printed)
#
# Then, from another terminal:
#   curl -s -X POST localhost:2024/threads/$(uuidgen)/runs/wait \
#     -d '{"assistant_id":"family_scheduling","if_not_exists":"create",
#          "input":{"request":"Soccer practice for Maya on Saturday 2-4pm, she needs the minivan"}}'
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

echo "== setting up (scripts/setup.sh)"
"$root/scripts/setup.sh" >/dev/null
echo "== building switchboard and the sample's plugin (the first build takes 10-20 minutes on 2 cores)"
cmake -S "$root" -B "$root/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$root/build" -j "$(nproc)" --target switchboard_cli switchboard_scheduling_plugin

echo "== serving the sample: open the address below in a browser (Ctrl-C stops)"
exec "$root/build/bin/switchboard" serve "$root/examples/scheduling" "$@"
