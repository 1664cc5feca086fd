#!/usr/bin/env bash
# run_workload.sh: what a workload profile costs in wall time. The same 64-worker run (mlp
# dynamics, analytic collectives, one epoch) with and without --workload resnet50 (161 tensors,
# costed layer by layer with DDP buckets on a stream actor per worker), alternated REPEATS times
# so that both see the same machine; prints each pair and the ratio of the medians
# (target <= 1.5).
#   tests/perf/run_workload.sh [WORKERS] [REPEATS] [POLICY]   (defaults 64, 3, sync)
set -euo pipefail
cd "$(dirname "$0")/../.."
workers=${1:-64}
repeats=${2:-3}
policy=${3:-sync}
cmake --build build --target bellows >/dev/null
common=(run --workers "$workers" --batch 4 --epochs 1 --collectives analytic --policy "$policy"
        --compressor powersgd --quiet --compute-threads 1)
wall() {
  local t0 t1
  t0=$(date +%s.%N)
  build/bellows "${common[@]}" "$@" >/dev/null
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { print b / a }'; }
plain=() profiled=()
printf "%-8s %12s %12s %8s\n" repeat plain_s resnet50_s ratio
for i in $(seq "$repeats"); do
  a=$(wall)
  b=$(wall --workload resnet50)
  plain+=("$a"); profiled+=("$b")
  printf "%-8s %12.3f %12.3f %8.3f\n" "$i" "$a" "$b" "$(ratio "$a" "$b")"
done
median() { printf "%s\n" "$@" | sort -g | awk '{v[NR]=$1} END {print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }
ma=$(median "${plain[@]}"); mb=$(median "${profiled[@]}")
printf "median   %12.3f %12.3f %8.3f   (%d workers, policy %s; target <= 1.5)\n" "$ma" "$mb" \
  "$(ratio "$ma" "$mb")" "$workers" "$policy"
