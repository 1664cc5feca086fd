#!/usr/bin/env bash
# run_schedules.sh: what the communication schedules buy on a communication-bound job, the
# README's table (Schedules): VGG-16 (--workload vgg16) on 8 V100s, one per node, a 10 Gbps /
# 5 us star, the default cost profile (pytorch-v100), sync; every schedule's steady step (steps 5
# to the one before the last, of 24) in simulated seconds, its throughput in images a second
# over all workers, and its speed-up over fifo (DDP, bellows' default). Ring allreduce on the
# analytic backend (its closed form: one collective at a time per worker, as NCCL's stream);
# parameter servers at the transfer level (partitions in flight share the links). Simulated
# time does not depend on the machine: the figures are the same on any host.
#   tests/perf/run_schedules.sh [BATCH...] [-- MODEL]   (defaults 32 64 -- vgg16)
set -euo pipefail
cd "$(dirname "$0")/../.."
batches=() model=vgg16
while [ $# -gt 0 ]; do
  if [ "$1" = "--" ]; then model=$2; break; fi
  batches+=("$1"); shift
done
[ ${#batches[@]} -gt 0 ] || batches=(32 64)
cmake --build build --target bellows >/dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# one run; prints "step_s img_s partitions"
measure() {
  local batch=$1; shift
  build/bellows run --workload "$model" --workers 8 --bandwidth 10Gbps --latency 5us --gpu V100 \
    --batch "$batch" --epochs 1 --train-samples $((batch * 8 * 24)) --test-samples 200 --quiet \
    "$@" --out "$tmp/run" --force >/dev/null
  python3 - "$tmp/run" "$batch" <<'PY'
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1] + "/steps.csv")))
end = [float(r["end_s"]) for r in rows]
step = (end[-2] - end[4]) / (len(end) - 6)
s = json.load(open(sys.argv[1] + "/summary.json"))
print("%.4f %.0f %s" % (step, 8 * int(sys.argv[2]) / step, s["scenario"].get("partitions_per_step", "-")))
PY
}

row() { # label batch fifo_step args...
  local label=$1 batch=$2 base=$3; shift 3
  read -r step img parts < <(measure "$batch" "$@")
  printf "| %s | %s | %s | %s | %s | %.2fx |\n" "$batch" "$label" "$step" "$img" "$parts" \
    "$(awk -v a="$base" -v b="$step" 'BEGIN { print a / b }')"
}

echo "model $model, 8 x V100 (pytorch-v100 costs), 10 Gbps / 5 us star, sync"
echo
echo "| batch/GPU | schedule (allreduce) | step (s) | img/s | partitions/step | vs fifo |"
echo "|---|---|---|---|---|---|"
for b in "${batches[@]}"; do
  read -r fifo _ _ < <(measure "$b" --collectives analytic --schedule fifo)
  row "fifo (ring, DDP)" "$b" "$fifo" --collectives analytic --schedule fifo
  row "fifo, --overlap layer (ring)" "$b" "$fifo" --collectives analytic --overlap layer
  for s in bytescheduler bytescheduler:credit=1 p3 p3:slice=4096000 tictac; do
    row "$s (ring)" "$b" "$fifo" --collectives analytic --schedule "$s"
  done
  row "fifo (ps, 8 colocated, DDP)" "$b" "$fifo" --allreduce ps
  for s in fifo bytescheduler bytescheduler:credit=16 p3; do
    row "$s (ps, 8 colocated)" "$b" "$fifo" --allreduce ps --schedule "$s" --overlap layer
  done
  row "bytescheduler:credit=16 (ps, 8 own hosts)" "$b" "$fifo" --allreduce ps --ps-hosts own \
    --schedule bytescheduler:credit=16
done
