#!/usr/bin/env bash
# run_cluster.sh: what several jobs in one engine cost (issue 30), measured side by side. Four
# jobs of 16 workers (the mlp on all of Fashion-MNIST, EPOCHS epochs, transfer-level rings; sync,
# PowerSGD rank 2, Accordion and ADPSGD, seeds 1-4) spread over a 64-GPU fat-tree (leaves of 8,
# uplinks oversubscribed 2:1, 10 Gbps / 5 us), in rounds that alternate:
#   cluster   bellows cluster --alone none: the four jobs in one engine, one process
#   alone     each job as bellows run of the same flags on a 16-GPU fat-tree of its own, one after
#             another (the sum of their wall times)
# and the ratio cluster / alone, which the issue wants at most 1; also, once, the whole command
# with --alone run (the jobs together, then each alone on its GPUs, 2 processes at a time).
#   tests/perf/run_cluster.sh [ROUNDS] [EPOCHS]     (default 3 rounds, 2 epochs)
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-3}
epochs=${2:-2}
cmake --build build --target bellows >/dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
B=build/bellows
fabric='"topology": "fat-tree", "leaf_size": 8, "oversubscription": 2, "bandwidth": "10Gbps",
  "latency": "5us"'
names=(sync powersgd accordion adpsgd)
policies=(sync static:level=2 accordion adpsgd)
compressors=(none powersgd powersgd none)
jobs=""
for i in 0 1 2 3; do
  jobs+="${jobs:+, }{\"name\": \"${names[$i]}\", \"workers\": 16, \"epochs\": $epochs,
    \"policy\": \"${policies[$i]}\", \"compressor\": \"${compressors[$i]}\", \"seed\": $((i + 1))}"
done
echo "{$fabric, \"placement\": \"spread\", \"jobs\": [$jobs]}" >"$tmp/four.json"

timed() { # COMMAND... -> wall seconds
  local start end
  start=$(date +%s.%N)
  "$@" >/dev/null
  end=$(date +%s.%N)
  echo "$end - $start" | bc -l
}

echo "# $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg); $(date -u +%F)"
echo "# 4 jobs x 16 workers, mlp, $epochs epochs, 64-GPU fat-tree (leaves of 8, 2:1 uplinks)"
for r in $(seq "$rounds"); do
  c=$(timed $B cluster "$tmp/four.json" --out "$tmp/c$r" --alone none)
  sum=0
  parts=""
  for i in 0 1 2 3; do
    t=$(timed $B run --workers 16 --topology fat-tree --leaf-size 8 --oversubscription 2 \
      --bandwidth 10Gbps --latency 5us --epochs "$epochs" --policy "${policies[$i]}" \
      --compressor "${compressors[$i]}" --seed $((i + 1)) --quiet --out "$tmp/r$r-$i")
    sum=$(echo "$sum + $t" | bc -l)
    parts+=$(printf ' %.2f' "$t")
  done
  printf 'round %d: cluster %6.2f s, alone %6.2f s (%s), cluster / alone %.3f\n' "$r" "$c" \
    "$sum" "${parts# }" "$(echo "$c / $sum" | bc -l)"
done
w=$(timed $B cluster "$tmp/four.json" --out "$tmp/whole" --alone run --jobs 2)
printf 'whole command with --alone run (5 simulations, 2 at a time): %.2f s\n' "$w"
