#!/usr/bin/env bash
# run_coll.sh: wall time per simulated ring allreduce at 8, 64 and 256 workers with the
# transfer-level and analytic backends, beside, in the same run, bare SimGrid transfers (same ring
# pattern, no payload) and the ring's reduction alone without SimGrid (memory: the sums of the
# real floats in the ring's order, stored to every rank, as coll_sum.c does them: the floor of any
# ring that returns the real sums). Prints the collective layer's overhead over bare transfers,
# over bare transfers plus that floor (the layer's own cost), the ring with its sums on a pool of
# 2 threads, the analytic backend's speed-up, and the ring's messages alone without data (replay:
# what a run simulates after its mirror did the sums) over bare transfers. Each figure is the
# best of ROUNDS runs (the machines are shared: the fastest run is the one least disturbed).
#   tests/perf/run_coll.sh [FLOATS] [ROUNDS]   (defaults 262144 and 3)
set -euo pipefail
cd "$(dirname "$0")/../.."
floats=${1:-262144}
rounds=${2:-3}
cmake --build build --target bench_coll >/dev/null
field() { sed -n "s/.*$1=\([^ ]*\).*/\1/p"; }
# best MODE WORKERS ITERATIONS [THREADS]: the output line of the fastest of the rounds
best() {
  for _ in $(seq "$rounds"); do build/bench_coll "$1" "$2" "$3" "$floats" "${4:-1}"; done |
    while read -r line; do echo "$(echo "$line" | field wall_s)	$line"; done |
    sort -g | head -1 | cut -f2-
}
printf "%-8s %10s %13s %13s %13s %10s %13s %13s %11s %11s %13s %12s\n" workers iterations \
       bare_us/xfer memory_us/xfer ring_us/xfer over_bare over_bare+mem ring_2thr_us ring_ms/op \
       analytic_x replay_us/xfer replay/bare
for cfg in "8 200" "64 40" "256 8"; do
  set -- $cfg
  bare=$(best bare "$1" "$2")
  mem=$(best memory "$1" "$2")
  ring=$(best ring "$1" "$2")
  ring2=$(best ring "$1" "$2" 2)
  ana=$(best analytic "$1" "$(( $2 * 5 ))")
  rep=$(best replay "$1" "$2")
  awk -v p="$1" -v it="$2" -v b="$(echo "$bare" | field per_transfer_us)" \
      -v m="$(echo "$mem" | field per_transfer_us)" \
      -v r="$(echo "$ring" | field per_transfer_us)" -v rop="$(echo "$ring" | field per_allreduce_ms)" \
      -v r2="$(echo "$ring2" | field per_transfer_us)" \
      -v aop="$(echo "$ana" | field per_allreduce_ms)" \
      -v rp="$(echo "$rep" | field per_transfer_us)" 'BEGIN {
    printf "%-8d %10d %13.2f %13.2f %13.2f %9.0f%% %12.0f%% %13.2f %11.3f %10.0fx %13.2f %11.0f%%\n",
           p, it, b, m, r, 100 * (r / b - 1), 100 * (r / (b + m) - 1), r2, rop, rop / aop, rp,
           100 * (rp / b - 1) }'
done
echo "(payload: $floats floats per allreduce; the ring's messages carry sizes, its sums are done"
echo " once in memory in the ring's order; replay: the messages alone, as a run replays them after"
echo " its mirror did the sums; best of $rounds runs each)"
