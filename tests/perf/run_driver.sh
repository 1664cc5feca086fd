#!/usr/bin/env bash
# run_driver.sh: share of wall time outside the models' math, and steps per wall second, for
# the default scenario (mlp, 10Gbps star, PowerSGD) at 16 workers, one epoch, per policy; and of
# that share, what the compressors' own math took (encoding, decoding and error feedback on the
# real gradients, which a real job runs on its GPUs too), what the policies' math on the real
# gradients took (Accordion's per-layer norms and the epoch's running sum of the gradients, which
# its real job also computes every step), and what is left: the simulator's own cost (SimGrid, the
# collectives' messages and in-memory sums, the shared replica's update and check, the policies'
# decisions, bookkeeping); also with the policies' math counted in it (own+pol).
#   tests/perf/run_driver.sh [WORKERS] [EPOCHS]   (defaults 16 and 1)
set -euo pipefail
cd "$(dirname "$0")/../.."
workers=${1:-16}
epochs=${2:-1}
cmake --build build --target bench_driver >/dev/null
field() { sed -n "s/.*$1=\([^ ]*\).*/\1/p"; }
printf "%-16s %-9s %6s %7s %7s %7s %7s %8s %8s %8s %8s\n" policy backend steps wall_s model_s comp_s pol_s \
  outside own own+pol steps/s
for p in sync static:level=1 accordion cpsgd:period=8; do
 for b in transfer analytic; do
  line=$(build/bench_driver "$p" "$workers" "$epochs" "$b")
  printf "%-16s %-9s %6s %7s %7s %7s %7s %7.1f%% %7.1f%% %7.1f%% %8s\n" "$p" "$b" \
    "$(echo "$line" | field steps)" "$(echo "$line" | field wall_s)" \
    "$(echo "$line" | field model_s)" "$(echo "$line" | field compress_s)" \
    "$(echo "$line" | field policy_s)" \
    "$(echo "$line" | field outside_share | awk '{print 100*$1}')" \
    "$(echo "$line" | field own_share | awk '{print 100*$1}')" \
    "$(echo "$line" | field own_with_policy_share | awk '{print 100*$1}')" \
    "$(echo "$line" | field steps_per_s)"
 done
done
echo "(outside: wall time not in forward, backward, optimiser or evaluation; own: nor in the"
echo " compressors' math (comp_s) nor the policies' (pol_s); own+pol: the policies' math counted"
echo " as the simulator's; $workers workers, one compute thread; target <= 10%)"
