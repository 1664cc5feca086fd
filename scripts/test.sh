#!/usr/bin/env bash
# test.sh: the test command (README, CI). Sets up and builds with warnings as errors, runs every
# test with ctest, runs the unit-test binaries under valgrind (scripts/valgrind.sh --fast: the
# unit suites whole, those whose every case simulates whole runs on one case each, the slowest
# collectives suites left out; all of them run whole in the two ctest passes), then builds with
# AddressSanitizer + UBSan and runs every test again
# but those labelled once (scripts, packaging, data and docs: CMakeLists.txt). Tests and
# valgrind's suites run as many at a time as there are cores, the longest first (ctest's COST,
# CMakeLists.txt). At the end (or on a failure) a table gives each phase's wall and CPU seconds.
# A test's CPU seconds (COST): run it alone with its ctest command and environment and count
# user + sys of it and its children (getrusage(RUSAGE_CHILDREN)); on a shared machine wall
# time says little. Per suite under valgrind: /usr/bin/time -f %U+%S around valgrind.sh's line.
set -euo pipefail
cd "$(dirname "$0")/.."

# ---- each phase's time: wall seconds and the CPU seconds of its processes (bash's times) ----
PHASES=()
times_file=$(mktemp)
children_cpu() { # CPU=user + sys seconds of this shell's finished children (bash's times, run
  times >"$times_file" # in this shell, never in a $(...) subshell, which would count its own)
  CPU=$(awk 'NR == 2 { n = 0
    for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); n += a[1] * 60 + a[2] }
    printf "%.1f", n }' "$times_file")
}
phase() { # phase NAME COMMAND...: runs it, records its times, returns its status
  local name=$1 t0 c0 c1 rc=0
  shift
  t0=$(date +%s.%N)
  children_cpu
  c0=$CPU
  "$@" || rc=$?
  children_cpu
  c1=$CPU
  PHASES+=("$(awk -v n="$name" -v t0="$t0" -v t1="$(date +%s.%N)" -v c0="$c0" -v c1="$c1" \
    -v rc="$rc" 'BEGIN { printf "%-34s %8.0f %8.0f  %s", n, t1 - t0, c1 - c0, rc ? "FAILED" : "ok" }')")
  return $rc
}
print_phases() {
  [ ${#PHASES[@]} -gt 0 ] || return 0
  echo "== phases (wall s, CPU s of its processes on $(nproc) cores) =="
  printf '%-34s %8s %8s  %s\n' phase wall cpu status
  printf '%s\n' "${PHASES[@]}"
  printf '%s\n' "${PHASES[@]}" | awk '{ w += $(NF - 2); c += $(NF - 1) }
    END { printf "%-34s %8.0f %8.0f\n", "all", w, c }'
}
trap 'print_phases; rm -f "$times_file"' EXIT

ctest_all() { # ctest_all DIR [ARGS]: every test of DIR, as many at a time as there are cores
  local dir=$1
  shift
  (cd "$dir" && ctest --output-on-failure -V -j "$(nproc)" "$@")
}

phase "setup: packages, build/" scripts/setup.sh --werror --tests
echo "== tests (build/) =="
phase "tests (build/)" ctest_all build

echo "== unit tests under valgrind (build/) =="
phase "valgrind (unit suites)" scripts/valgrind.sh --fast

phase "setup: build-asan/" scripts/setup.sh --sanitize --werror
echo "== tests under AddressSanitizer + UBSan (build-asan/) =="
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
phase "tests (build-asan/, but once)" ctest_all build-asan -LE once # once: build/ ran them
