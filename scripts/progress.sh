# What the setup and test scripts say while they work, sourced by them:
#
#   phase NAME              starts a named phase (and ends the one before);
#                           the times of all phases print when the script
#                           exits, failed or not, so the budget is visible
#   build_with_progress DIR TARGET...
#                           builds quietly, one line per tenth of the work,
#                           the whole log (and its end on a failure) kept in
#                           DIR/last-build.log
#
# A first build compiles for 12-20 minutes on a 2-core machine; without a
# word it cannot be told from a hang.

phase_names=()
phase_seconds=()
phase_started_at=""

finish_phase() {
  if [[ -n "$phase_started_at" ]]; then
    phase_seconds+=($((SECONDS - phase_started_at)))
    phase_started_at=""
  fi
}

phase() {
  finish_phase
  phase_names+=("$1")
  phase_started_at=$SECONDS
  echo "== $1"
}

print_phase_times() {
  local status=$?
  finish_phase
  if [[ ${#phase_seconds[@]} -gt 0 ]]; then
    echo
    echo "== phase times"
    local i
    for i in "${!phase_seconds[@]}"; do
      printf '%6d s  %s\n' "${phase_seconds[$i]}" "${phase_names[$i]}"
    done
    printf '%6d s  total\n' "$SECONDS"
  fi
  return "$status"
}

build_with_progress() {
  local dir="$1"
  shift
  local log="$dir/last-build.log"
  mkdir -p "$dir"
  echo "build: ${*} (a first build takes 12-20 minutes on 2 cores; later runs rebuild only what changed)"
  local shown=-1 line done total tenth
  set +e
  cmake --build "$dir" -j "$(nproc)" --target "$@" 2>&1 | tee "$log" | while IFS= read -r line; do
    if [[ "$line" =~ ^\[([0-9]+)/([0-9]+)\] ]]; then
      done=${BASH_REMATCH[1]}
      total=${BASH_REMATCH[2]}
      tenth=$((done * 10 / total))
      if [[ $done -gt 0 && $tenth -gt $shown ]]; then
        shown=$tenth
        echo "build: $done of $total steps ($((tenth * 10)) %)"
      fi
    elif [[ "$line" == "ninja: no work to do." ]]; then
      echo "build: up to date"
    fi
  done
  local status=${PIPESTATUS[0]}
  set -e
  if [[ $status -ne 0 ]]; then
    echo "build: FAILED; the end of $log:" >&2
    grep -E -A12 '^FAILED:|error:' "$log" | head -n 60 >&2 || tail -n 40 "$log" >&2
    return "$status"
  fi
}
