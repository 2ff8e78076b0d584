#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine, builds Switchboard and runs the whole
# test suite, then the library suites (protocol, net, models, agents, mcp,
# orchestrator, host, server, the PostgreSQL store) again under
# AddressSanitizer + UBSan.
#
#   scripts/test.sh               everything
#   SWITCHBOARD_SKIP_SANITIZE=1   skip the sanitizer pass
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
jobs="$(nproc)"

# shellcheck source=scripts/progress.sh
source "$root/scripts/progress.sh"
trap print_phase_times EXIT

phase "setup (Debian packages, PostgreSQL, unpacked dependencies)"
"$root/scripts/setup.sh"

# The Node.js packages of the tests, each pinned by its package-lock.json,
# need the machine's Node.js and npm: the MCP tests' peers (tests/mcp_peers:
# the reference server and the SDK), the LangGraph SDK suite that drives
# `switchboard serve` (tests/langgraph_sdk), the page's browser tests
# (tests/web: playwright-core) and the OTLP receiver that decodes the
# exporter's traces with the OpenTelemetry protocol definitions
# (tests/otlp_receiver), the A2A client that drives serve's A2A server
# (tests/a2a_peers: @a2a-js/sdk). npm ci runs again only when the lockfile is
# newer than the installed tree; the tests fail (they do not skip) when
# node_modules is missing.
for node_dir in "$root/tests/mcp_peers" "$root/tests/langgraph_sdk" "$root/tests/web" "$root/tests/otlp_receiver" "$root/tests/a2a_peers"; do
  if [[ ! -f "$node_dir/node_modules/.package-lock.json" || "$node_dir/package-lock.json" -nt "$node_dir/node_modules/.package-lock.json" ]]; then
    phase "test packages (npm ci in ${node_dir#"$root"/})"
    (cd "$node_dir" && npm ci --no-audit --no-fund --loglevel=error)
  fi
done

# Optimised as users build it, with line tables only (-g1): enough for
# backtraces and a debugger's file:line, and full -g costs 20-30 % more
# compile time on this code (g++ 12, Asio coroutines). A plain RelWithDebInfo
# configure elsewhere keeps full debug info.
phase "build (RelWithDebInfo, -g1; about 15 minutes on 2 cores from nothing)"
cmake -S "$root" -B "$root/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" >/dev/null
cmake --build "$root/build" -j "$jobs"

phase "tests"
ctest --test-dir "$root/build" --output-on-failure -j "$jobs" --timeout 300

if [[ -n "$(ls "$root"/bench/*/smoke.sh 2>/dev/null)" ]]; then
  phase "benchmark smoke runs"
  for smoke in "$root"/bench/*/smoke.sh; do
    bash "$smoke" "$root/build"
  done
fi

if [[ "${SWITCHBOARD_SKIP_SANITIZE:-0}" != 1 ]]; then
  phase "build under AddressSanitizer + UBSan (Debug)"
  # -O0 -g1: line tables are all the sanitizers' reports need. -O1 would
  # run the tests faster but compiles 2x slower with ASan (measured).
  # Each suite runs as 4 GoogleTest shards rather than one process per test
  # (SWITCHBOARD_TEST_SHARDS, tests/CMakeLists.txt): a sanitized executable
  # takes about 0.3 s to start.
  cmake -S "$root" -B "$root/build-asan" -G Ninja -DCMAKE_BUILD_TYPE=Debug \
        "-DCMAKE_CXX_FLAGS_DEBUG=-g1" \
        -DSWITCHBOARD_SANITIZE=ON -DSWITCHBOARD_BUILD_BENCH=OFF -DSWITCHBOARD_TEST_SHARDS=4 >/dev/null
  sanitized_suites=()
  for module in protocol net telemetry models agents mcp a2a orchestrator host server; do
    [[ -d "$root/tests/$module" ]] && sanitized_suites+=("switchboard_${module}_tests")
  done
  labels=$(IFS='|'; echo "${sanitized_suites[*]}" | sed -e 's/switchboard_//g' -e 's/_tests//g')
  # The PostgreSQL store (label postgres; its fixture starts a private server).
  if [[ -d "$root/tests/stores" ]]; then
    sanitized_suites+=(switchboard_postgres_store_tests)
    labels+="|postgres"
  fi
  cmake --build "$root/build-asan" -j "$jobs" --target "${sanitized_suites[@]}"
  phase "tests under AddressSanitizer + UBSan"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir "$root/build-asan" --output-on-failure -j "$jobs" --timeout 600 -L "^(${labels})$"
fi
