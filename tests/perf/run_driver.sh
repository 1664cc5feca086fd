#!/usr/bin/env bash
# run_driver.sh: share of wall time outside the models' math, and steps per wall second, for
# the default scenario (mlp, 10Gbps star, PowerSGD) at 16 workers, one epoch, per policy.
#   tests/perf/run_driver.sh [WORKERS] [EPOCHS]   (defaults 16 and 1)
set -euo pipefail
cd "$(dirname "$0")/../.."
workers=${1:-16}
epochs=${2:-1}
cmake --build build --target bench_driver >/dev/null
field() { sed -n "s/.*$1=\([^ ]*\).*/\1/p"; }
printf "%-22s %-9s %8s %7s %9s %9s %9s %10s\n" policy backend workers steps wall_s model_s outside steps/s
for p in sync static:level=1 accordion cpsgd:period=8; do
 for b in transfer analytic; do
  line=$(build/bench_driver "$p" "$workers" "$epochs" "$b")
  printf "%-22s %-9s %8s %7s %9s %9s %8.1f%% %10s\n" "$p" "$b" "$workers" "$(echo "$line" | field steps)" \
    "$(echo "$line" | field wall_s)" "$(echo "$line" | field model_s)" \
    "$(echo "$line" | field outside_share | awk '{print 100*$1}')" \
    "$(echo "$line" | field steps_per_s)"
 done
done
echo "(outside: wall time not spent in forward, backward, optimiser or evaluation; target <= 10%)"
