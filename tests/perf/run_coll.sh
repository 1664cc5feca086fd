#!/usr/bin/env bash
# run_coll.sh: wall time per simulated ring allreduce at 8, 64 and 256 workers with the
# transfer-level and analytic backends, and bare SimGrid transfers (same ring pattern, no
# payload) in the same run; prints the collective layer's overhead over bare transfers and the
# analytic backend's speed-up.   tests/perf/run_coll.sh [FLOATS]   (default 262144)
set -euo pipefail
cd "$(dirname "$0")/../.."
floats=${1:-262144}
cmake --build build --target bench_coll >/dev/null
field() { sed -n "s/.*$1=\([^ ]*\).*/\1/p"; }
printf "%-8s %10s %14s %14s %16s %14s %12s\n" workers iterations bare_us/xfer ring_us/xfer \
       ring_overhead ring_ms/op analytic_x
for cfg in "8 200" "64 10" "256 2"; do
  set -- $cfg
  bare=$(build/bench_coll bare "$1" "$2" "$floats")
  ring=$(build/bench_coll ring "$1" "$2" "$floats")
  ana=$(build/bench_coll analytic "$1" "$(( $2 * 20 ))" "$floats")
  awk -v p="$1" -v it="$2" -v b="$(echo "$bare" | field per_transfer_us)" \
      -v r="$(echo "$ring" | field per_transfer_us)" -v rop="$(echo "$ring" | field per_allreduce_ms)" \
      -v aop="$(echo "$ana" | field per_allreduce_ms)" 'BEGIN {
    printf "%-8d %10d %14.2f %14.2f %15.0f%% %14.3f %11.0fx\n", p, it, b, r, 100 * (r / b - 1), rop, rop / aop }'
done
echo "(payload: $floats floats per allreduce; the ring moves real copies and adds them)"
