#!/usr/bin/env bash
# valgrind.sh: runs the CMocka unit-test binaries of build/ under valgrind's memcheck, each with
# --leak-check=full --error-exitcode=1: any invalid read or write, use of uninitialised memory,
# or leak of the project's memory fails the script. scripts/valgrind.supp silences only leaks
# that belong to third-party libraries (each entry says why); never add project code to it.
# Only the test processes themselves are checked, not the bellows processes some tests start
# (those run under AddressSanitizer in build-asan/). Builds build/ first if needed.
#   scripts/valgrind.sh              every suite (about 6 minutes on 2 cores)
#   scripts/valgrind.sh --fast       every suite but coll (about 3.5 minutes; scripts/test.sh)
#   scripts/valgrind.sh dataset cli  the named suites (tests/test_NAME.c)
# Logs: build/valgrind/NAME.log (valgrind's report, empty when clean) and NAME.out (the test's).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/test_units ] || scripts/setup.sh

all=(layers models resnet dataset optim trainer units policies plugin trace cli cli_results interrupt coll compress compress_cost timeline driver sweep reproduce workload)
# conv_fast is not in the list: its shapes and thread checks take 78 s under valgrind, and its
# memory is checked under AddressSanitizer (build-asan/); scripts/valgrind.sh conv_fast runs it.
if [ "${1:-}" = --fast ]; then
  # test_coll alone takes 150 s under valgrind; the collectives also run under it in
  # test_compress and test_driver
  suites=()
  for s in "${all[@]}"; do [ "$s" = coll ] || suites+=("$s"); done
elif [ $# -gt 0 ]; then
  suites=("$@")
else
  suites=("${all[@]}")
fi
mkdir -p build/valgrind
failed=()
t_all=$(date +%s)
for s in "${suites[@]}"; do
  t0=$(date +%s)
  # OpenBLAS: one thread (no pool threads to track) and kernels valgrind can run (no AVX-512).
  # BELLOWS_VALGRIND: tests may shorten what only real threads or speed can check.
  if (cd build && OPENBLAS_NUM_THREADS=1 OPENBLAS_CORETYPE=Haswell BELLOWS_VALGRIND=1 \
      valgrind --quiet --leak-check=full --error-exitcode=1 --num-callers=30 \
        --suppressions=../scripts/valgrind.supp --log-file="valgrind/$s.log" \
        "./test_$s" >"valgrind/$s.out" 2>&1); then
    echo "valgrind: $s clean ($(( $(date +%s) - t0 )) s)"
  else
    echo "valgrind: $s FAILED ($(( $(date +%s) - t0 )) s); build/valgrind/$s.log says:"
    tail -60 "build/valgrind/$s.log"
    tail -20 "build/valgrind/$s.out"
    failed+=("$s")
  fi
done
echo "valgrind: ${#suites[@]} suites in $(( $(date +%s) - t_all )) s"
if [ ${#failed[@]} -gt 0 ]; then
  echo "valgrind: errors or leaks in: ${failed[*]}" >&2
  exit 1
fi
