#!/usr/bin/env bash
# run_pai.sh: 64 jobs on a 4,096-GPU fat-tree. The synthetic sample in Alibaba PAI's 2020 trace
# format (sim/cluster/examples/pai-sample/: 64 GPU jobs of 8 to 128 GPUs, 2,656 in all, the mlp
# trained on each job's GPUs and its steps priced as resnet50, bert-base or vgg16) made a cluster
# file by sim/cluster/pai_to_cluster.py, then `bellows cluster --alone none` (the jobs together in
# one engine) against the same jobs one after another (each a cluster file of its own, alone on
# the same fat-tree), in one run: the wall times, peak memory and their ratio.
# PRICE P > 0: a job of more than P GPUs trains on P workers, priced at its GPUs (pai_to_cluster.py
# --price, bellows cluster's price_workers: the closed forms and its ring's flows on the uplinks).
#   tests/perf/run_pai.sh [JOBS] [TIME_SCALE] [STEPS] [PRICE]   (defaults 64, 0.001, 4, 0)
set -euo pipefail
cd "$(dirname "$0")/../.."
jobs=${1:-64}
scale=${2:-0.001}
steps=${3:-4}
price=()
[ "${4:-0}" -gt 0 ] && price=(--price "$4")
cmake --build build --target bellows >/dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
/usr/bin/python3 sim/cluster/pai_to_cluster.py sim/cluster/examples/pai-sample --jobs "$jobs" \
  --time-scale "$scale" --steps "$steps" "${price[@]}" -o "$tmp/all.json"
/usr/bin/python3 - "$tmp" <<'PY'
import json, sys
d = json.load(open(f"{sys.argv[1]}/all.json"))
for k, job in enumerate(d["jobs"]):
    one = dict(d, jobs=[dict(job, start_s=0)])
    json.dump(one, open(f"{sys.argv[1]}/one{k:03d}.json", "w"))
gpus = sum(j.get("price_workers", j["workers"]) for j in d["jobs"])
print(f"{len(d['jobs'])} jobs, {gpus} GPUs of {d['workers']}, "
      f"{sum(j['workers'] for j in d['jobs'])} workers")
PY
/usr/bin/time -f "%e %M" -o "$tmp/t.all" build/bellows cluster "$tmp/all.json" --alone none \
  --jobs 1 --out "$tmp/all" >/dev/null
seq_s=0
seq_kb=0
for f in "$tmp"/one*.json; do
  rm -rf "$tmp/one"
  /usr/bin/time -f "%e %M" -o "$tmp/t.one" build/bellows cluster "$f" --alone none --jobs 1 \
    --out "$tmp/one" >/dev/null
  read -r w kb <"$tmp/t.one"
  seq_s=$(echo "$seq_s + $w" | bc)
  [ "$kb" -gt "$seq_kb" ] && seq_kb=$kb
done
read -r all_s all_kb <"$tmp/t.all"
awk -v a="$all_s" -v am="$all_kb" -v s="$seq_s" -v sm="$seq_kb" 'BEGIN {
  printf "%-28s %10s %12s\n", "", "wall_s", "peak_MiB"
  printf "%-28s %10.1f %12.0f\n", "together (one engine)", a, am / 1024
  printf "%-28s %10.1f %12.0f\n", "one after another (sum, max)", s, sm / 1024
  printf "%-28s %9.2fx %11.2fx\n", "together / one after another", a / s, am / sm }'
echo "(target: the 64 jobs together in at most 10 minutes on this machine)"
