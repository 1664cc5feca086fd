#!/usr/bin/env bash
# test.sh: the test command (README, CI). Sets up and builds with warnings as errors, runs every
# test with ctest, runs the unit-test binaries under valgrind (all but test_coll and
# test_coll_time, the slowest, and those that only start bellows processes: scripts/valgrind.sh
# --fast), then builds with AddressSanitizer +
# UBSan and runs every test again but those labelled once (scripts, packaging, data and docs:
# CMakeLists.txt). Tests and valgrind's suites run as many at a time as there are cores.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh --werror --tests
echo "== tests (build/) =="
(cd build && ctest --output-on-failure -V -j "$(nproc)")

echo "== unit tests under valgrind (build/) =="
scripts/valgrind.sh --fast

scripts/setup.sh --sanitize --werror
echo "== tests under AddressSanitizer + UBSan (build-asan/) =="
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
(cd build-asan && ctest --output-on-failure -V -j "$(nproc)" -LE once)  # once: build/ ran them
