#!/usr/bin/env bash
# valgrind.sh: runs the CMocka unit-test binaries of build/ under valgrind's memcheck, each with
# --leak-check=full --error-exitcode=1: any invalid read or write, use of uninitialised memory,
# or leak of the project's memory fails the script. scripts/valgrind.supp silences only leaks
# that belong to third-party libraries (each entry says why); never add project code to it.
# Only the test processes themselves are checked, not the bellows processes some tests start
# (those run under AddressSanitizer in build-asan/). Builds build/ first if needed.
#   scripts/valgrind.sh              every suite, VALGRIND_JOBS (default: the cores) at a time
#   scripts/valgrind.sh --fast       every suite but coll, coll_time and coll_toy, the end-to-end
#                                    ones on one case each (fast_case below; scripts/test.sh)
#   scripts/valgrind.sh dataset cli  the named suites (tests/test_NAME.c)
# Logs: build/valgrind/NAME.log (valgrind's report, empty when clean) and NAME.out (the test's).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/test_units ] || scripts/setup.sh

all=(coll_ps driver compress_methods policies_periodic cli_results exec reproduce islands
  dataset says_what compress diloco costs_limits driver_policies coll_tag compress_cost models
  sweep_priced coll coll_time cli cli_runs policies policies_accordion sweep trace trace_replay
  trace_v2 layers resnet optim trainer units pool plugin interrupt timeline workload
  python_absent figures inputs leftovers outputs flags costs scenario sched schedules cluster
  cluster_file coll_toy notes plots plugin_end sweep_lists plots_written fuzz_found
  price_workers)
# conv_fast is not in the list: its shapes and thread checks take 78 s under valgrind, and its
# memory is checked under AddressSanitizer (build-asan/); scripts/valgrind.sh conv_fast runs it.
# Suites that only start bellows processes (clitest.h's bw()) and read what they write: valgrind
# would check the harness alone, while the bellows they start run natively (and under
# AddressSanitizer in build-asan/). --fast leaves one out only while its object file calls none
# of the project's libraries (nm: none of its undefined symbols is defined in build/libbw_*.a);
# once it does, it runs under valgrind again.
spawn_only="cli cli_runs sweep cluster cluster_file notes interrupt leftovers figures plots scenario plugin_end
  plots_written outputs sweep_lists price_workers fuzz_found"
project_syms=$(nm --defined-only -g build/libbw_*.a 2>/dev/null | awk 'NF == 3 {print $3}' | sort -u)
calls_project() {
  local o="build/CMakeFiles/test_$1.dir/tests/test_$1.c.o"
  [ -f "$o" ] || return 0 # not found: assume it does, and run it
  [ "$(nm -u "$o" | awk '{print $2}' | sort -u | comm -12 - <(echo "$project_syms") | wc -l)" != 0 ]
}
# --fast runs the end-to-end suites, whose cases each simulate whole runs in a child with a
# SimGrid engine of its own (valgrind translates SimGrid's start-up again in each: about 1 s a
# run, beside the 4 s of a suite's start with SimGrid and ns-3 loaded), on one case or pattern
# (cmocka's filter) that goes through their code. Whole, the seven took 179 CPU seconds under
# valgrind here (compress 42, coll_ps 34, driver 34, sched 26, islands 23, driver_policies 11,
# diloco 10); on these cases 70 (driver 14, compress 7, islands 8, diloco 7, driver_policies 6,
# coll_ps 23, sched 6; measured one at a time, user + sys, 2026-11-28). coll_ps' cases are two
# now, run one after the other: the sums in rank order on a star (coll_ps.c's pushes and pulls of a whole call)
# and the partitioned call (coll_ps_parts.c's cuts, on a fat-tree and a hierarchical cluster,
# colocated servers and servers of their own); the exact sums and means for 1 to 6 workers, on
# the same code, took 19 of the 38 CPU seconds the three sum cases took (each alone).
# cli_results has one too:
# its three cost-band cases, the ones that call the project's code in the test process (costs,
# cost_band, the driver's fast replay); its other cases only start bellows, natively under
# valgrind (17.1 CPU s whole, 7.1 on these). Every
# case of theirs runs under AddressSanitizer + UBSan (build-asan/) and natively;
# `scripts/valgrind.sh driver` runs a whole suite under valgrind.
declare -A fast_case=(
  [driver]="test_sync_*"                                   # sync, replicas, ring formula
  [driver_policies]="test_cpsgd_*"                         # periodic averaging
  [compress]="test_contract_error_feedback_*"              # every compressor, encode to decode
  [islands]="test_diloco_wan_bytes_are_the_closed_form"    # islands, the outer step, the WAN
  [diloco]="test_one_outer_step_on_the_replicas_mean"      # DiLoCo's outer optimiser
  [coll_ps]="test_ps_sums_in_rank_order_bit_for_bit test_ps_p*_exact_sum" # sums: whole, cut
  [sched]="test_bytescheduler_preempts_at_partition_boundaries" # the scheduled engine
  [cli_results]="test_*band*"                               # its cases that call the project
)
fast=0
if [ "${1:-}" = --fast ]; then
  fast=1
  # test_coll (split into test_coll and test_coll_time) alone took 150 s under valgrind, and
  # test_coll_toy (a table entry, 10 s) runs the same collectives' code; the collectives also
  # run under valgrind in test_coll_tag and the cases above
  suites=()
  for s in "${all[@]}"; do
    [ "$s" = coll ] || [ "$s" = coll_time ] || [ "$s" = coll_toy ] && continue
    if [[ " $(echo $spawn_only) " == *" $s "* ]] && ! calls_project "$s"; then continue; fi
    suites+=("$s")
  done
elif [ $# -gt 0 ]; then
  suites=("$@")
else
  suites=("${all[@]}")
fi
mkdir -p build/valgrind
jobs=${VALGRIND_JOBS:-$(nproc)}
# One suite under valgrind; its verdict in build/valgrind/NAME.status (the longest suites come
# first in the list, by their --fast CPU seconds of 2026-11-28, so that two at a time finish
# together: islands and diloco, 33 s, had been last).
one() {
  local s=$1 t0 pats=("") k log=""
  t0=$(date +%s)
  [ "$fast" = 1 ] && [ -n "${fast_case[$s]:-}" ] && read -ra pats <<<"${fast_case[$s]}"
  # OpenBLAS: one thread (no pool threads to track) and kernels valgrind runs fast: Sandybridge's
  # (AVX, no FMA). Valgrind emulates each lane of an FMA instruction by a call into its own code,
  # which made the Haswell kernels' sgemm most of test_driver's 156 s. The suites compare runs
  # with each other, never with figures of the pinned Haswell kernels (blas_cpu.h), so their
  # last bits do not matter here (all 56 suites pass so); ctest keeps Haswell everywhere.
  # GLIBC_TUNABLES: libm's functions without FMA, for the same reason (a test's reference that
  # calls pow 2 million times took 38 of test_policies_periodic's 39 s).
  # BELLOWS_VALGRIND: tests may shorten what only real threads or speed can check.
  # Several patterns (fast_case): the suite once for each, NAME.log and NAME.out, then NAME.2.*
  for k in "${!pats[@]}"; do
    log=$s$([ "$k" = 0 ] || echo ".$((k + 1))")
    (cd build && OPENBLAS_NUM_THREADS=1 OPENBLAS_CORETYPE=Sandybridge BELLOWS_VALGRIND=1 \
      GLIBC_TUNABLES=glibc.cpu.hwcaps=-FMA \
      valgrind --quiet --leak-check=full --error-exitcode=1 --num-callers=30 \
        --suppressions=../scripts/valgrind.supp --log-file="valgrind/$log.log" \
        "./test_$s" ${pats[$k]:+"${pats[$k]}"} >"valgrind/$log.out" 2>&1) || break
    log=""
  done
  if [ -z "$log" ]; then
    echo "valgrind: $s${pats[0]:+ (${pats[*]})} clean ($(( $(date +%s) - t0 )) s)"
    echo clean >"build/valgrind/$s.status"
  else
    echo "valgrind: $s FAILED ($(( $(date +%s) - t0 )) s); build/valgrind/$log.log says:"
    tail -60 "build/valgrind/$log.log"
    tail -20 "build/valgrind/$log.out"
    echo failed >"build/valgrind/$s.status"
  fi
}
t_all=$(date +%s)
for s in "${suites[@]}"; do
  rm -f "build/valgrind/$s.status"
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  one "$s" &
done
wait
failed=()
for s in "${suites[@]}"; do
  [ "$(cat "build/valgrind/$s.status" 2>/dev/null)" = clean ] || failed+=("$s")
done
echo "valgrind: ${#suites[@]} suites in $(( $(date +%s) - t_all )) s, $jobs at a time"
if [ ${#failed[@]} -gt 0 ]; then
  echo "valgrind: errors or leaks in: ${failed[*]}" >&2
  exit 1
fi
