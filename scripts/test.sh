#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine, builds Switchboard and runs the whole
# test suite, then the protocol/agents/orchestrator tests again under
# AddressSanitizer + UBSan.
#
#   scripts/test.sh               everything
#   SWITCHBOARD_SKIP_SANITIZE=1   skip the sanitizer pass
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
jobs="$(nproc)"

"$root/scripts/setup.sh"

echo "== build (RelWithDebInfo)"
cmake -S "$root" -B "$root/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$root/build" -j "$jobs"

echo "== tests"
ctest --test-dir "$root/build" --output-on-failure -j "$jobs" --timeout 300

if [[ -n "$(ls "$root"/bench/*/smoke.sh 2>/dev/null)" ]]; then
  echo "== benchmark smoke runs (not timed)"
  for smoke in "$root"/bench/*/smoke.sh; do
    bash "$smoke" "$root/build"
  done
fi

if [[ "${SWITCHBOARD_SKIP_SANITIZE:-0}" != 1 ]]; then
  echo "== tests under AddressSanitizer + UBSan"
  cmake -S "$root" -B "$root/build-asan" -G Ninja -DCMAKE_BUILD_TYPE=Debug \
        -DSWITCHBOARD_SANITIZE=ON -DSWITCHBOARD_BUILD_BENCH=OFF >/dev/null
  sanitized_suites=()
  for module in protocol agents orchestrator; do
    [[ -d "$root/tests/$module" ]] && sanitized_suites+=("switchboard_${module}_tests")
  done
  cmake --build "$root/build-asan" -j "$jobs" --target "${sanitized_suites[@]}"
  labels=$(IFS='|'; echo "${sanitized_suites[*]}" | sed -e 's/switchboard_//g' -e 's/_tests//g')
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir "$root/build-asan" --output-on-failure -j "$jobs" --timeout 600 -L "^(${labels})$"
fi
