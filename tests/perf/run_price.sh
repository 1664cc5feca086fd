#!/usr/bin/env bash
# run_price.sh: memory and wall time of a replay priced at scale (--price-workers): the sample
# trace (the mlp on 8 workers, 1,170 steps) replayed under sync on a fat-tree with the analytic
# collectives, unpriced (its own 8 GPUs) and priced at 4,096, 16,384 and 65,536 GPUs, alternated
# ROUNDS times in one run; each figure the median, and its ratio to the unpriced replay's.
#   tests/perf/run_price.sh [ROUNDS] [EXTRA FLAGS...]   (default 5)
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-5}
shift || true
cmake --build build --target bellows >/dev/null
trace=traces/samples/mlp-sync-8w.jsonl.gz
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sizes=(0 4096 16384 65536)
for _ in $(seq "$rounds"); do
  for n in "${sizes[@]}"; do
    price=()
    [ "$n" -gt 0 ] && price=(--price-workers "$n")
    rm -rf "$tmp/out"
    /usr/bin/time -f "%e %M" -o "$tmp/t" build/bellows replay --trace "$trace" \
      --topology fat-tree --collectives analytic --policies sync --no-plots --quiet \
      --out "$tmp/out" "${price[@]}" "$@" >/dev/null
    cat "$tmp/t" >>"$tmp/$n"
    grep -o '"sim_time_s": [0-9.e+-]*' "$tmp/out/seed-1/1-sync/summary.json" | head -1 |
      awk '{print $2}' >"$tmp/sim$n"
  done
done
median() { sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
printf "%-9s %9s %9s %10s %10s %14s\n" gpus wall_s x8 peak_MiB x8 simulated_s
w0=$(cut -d' ' -f1 "$tmp/0" | median)
m0=$(cut -d' ' -f2 "$tmp/0" | median)
for n in "${sizes[@]}"; do
  w=$(cut -d' ' -f1 "$tmp/$n" | median)
  m=$(cut -d' ' -f2 "$tmp/$n" | median)
  awk -v n="$n" -v w="$w" -v m="$m" -v w0="$w0" -v m0="$m0" -v s="$(cat "$tmp/sim$n")" 'BEGIN {
    printf "%-9s %9.3f %8.2fx %10.1f %9.2fx %14.6g\n", n == 0 ? "8 (own)" : n, w, w / w0,
           m / 1024, m / m0, s }'
done
echo "(the replay's whole process, /usr/bin/time; medians of $rounds rounds, alternated;"
echo " target at 65,536 GPUs: at most 2 GB and 60 s)"
