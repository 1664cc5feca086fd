#!/usr/bin/env bash
# run_replay.sh: replay throughput. A synthetic 10,000-step trace (the mlp's layers, 64 workers)
# is replayed with the analytic collectives under `sync` across SCENARIOS bandwidths (default
# 4), two at a time; prints the wall time per scenario and the time 100 scenarios would take.
#   tests/perf/run_replay.sh [STEPS] [SCENARIOS]
set -euo pipefail
cd "$(dirname "$0")/../.."
steps=${1:-10000}
n=${2:-4}
cmake --build build --target bellows >/dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
/usr/bin/python3 tests/perf/make_trace.py "$tmp/t.jsonl" "$steps" 64
bws=$(seq -s, 1 "$n" | sed 's/\([0-9]*\)/\1Gbps/g')
start=$(date +%s.%N)
build/bellows sweep --trace "$tmp/t.jsonl" --workers 64 --collectives analytic --bandwidth "$bws" \
  --policies sync --target-accuracy 0.5 --no-plots --quiet -j 2 --out "$tmp/sweep" >/dev/null
end=$(date +%s.%N)
awk -v s="$start" -v e="$end" -v n="$n" -v st="$steps" 'BEGIN {
  w = e - s; printf "%d scenarios x %d steps x 64 workers (analytic): %.1f wall s, %.2f s per scenario; 100 scenarios: ~%.0f s (target 10 s)\n", n, st, w, w / n, 100 * w / n }'
