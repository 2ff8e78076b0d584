#!/usr/bin/env bash
# Takes the pictures of the page in docs/serving.md again: runs the browser
# tests (tests/web/page.test.mjs) with SWITCHBOARD_SCREENSHOTS_DIR set, so the
# test of the run list and the approval saves docs/images/page-*.png. Without
# that variable (ctest, CI) the tests write no file of the repository.
#
#   scripts/page-screenshots.sh [BUILD_DIR]     default: build
#
# Needs a build of switchboard and the sample's plugin in BUILD_DIR, npm ci in
# tests/web and Debian's chromium (scripts/test.sh sets all of these up).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)"

cmake --build "$build" --target switchboard_cli switchboard_scheduling_plugin
SWITCHBOARD_BIN="$build/bin/switchboard" \
SWITCHBOARD_SAMPLE="$root/examples/scheduling/workflow.json" \
SWITCHBOARD_SCREENSHOTS_DIR="$root/docs/images" \
  node --test --test-reporter=spec "$root/tests/web/page.test.mjs"
ls -l "$root"/docs/images/page-*.png
