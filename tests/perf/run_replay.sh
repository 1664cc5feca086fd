#!/usr/bin/env bash
# run_replay.sh: replay throughput. A synthetic trace (make_trace.py: the mlp's layers, 64
# workers) is replayed under `sync` with the analytic collectives, two runs at a time:
#   1. the fast engine (--replay-engine fast) on STEPS steps across SCENARIOS scenarios (a
#      bandwidth x latency grid), the whole sweep timed: the figure against the 10 s target for
#      100 scenarios of 10,000 steps;
#   2. side by side on a shorter trace (SHORT steps, 2 scenarios), the actors
#      (--replay-engine actors) and the fast engine, per scenario, and their ratio.
#   tests/perf/run_replay.sh [STEPS] [SCENARIOS] [SHORT]      (defaults 10000 100 1000)
set -euo pipefail
cd "$(dirname "$0")/../.."
steps=${1:-10000}
n=${2:-100}
short=${3:-1000}
cmake --build build --target bellows >/dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# SCENARIOS points as a grid of at most 10 bandwidths x latencies (a sweep axis holds <= 64)
grid() { # N -> "--bandwidth LIST --latency LIST"
  local total=$1 nb nl
  nb=$(( total < 10 ? total : 10 ))
  nl=$(( (total + nb - 1) / nb ))
  echo "--bandwidth $(seq -s, 1 "$nb" | sed 's/\([0-9]*\)/\1Gbps/g') --latency $(seq -s, 1 "$nl" | sed 's/\([0-9]*\)/\1us/g')"
}

sweep() { # TRACE ENGINE N OUT -> wall seconds, runs
  local start end
  start=$(date +%s.%N)
  # shellcheck disable=SC2046
  build/bellows sweep --trace "$1" --workers 64 --collectives analytic $(grid "$3") \
    --policies sync --target-accuracy 0.5 --replay-engine "$2" --no-plots --quiet -j 2 \
    --out "$4" >/dev/null
  end=$(date +%s.%N)
  echo "$start $end $(($(wc -l <"$4/sweep.csv") - 1))"
}

/usr/bin/python3 tests/perf/make_trace.py "$tmp/long.jsonl" "$steps" 64
/usr/bin/python3 tests/perf/make_trace.py "$tmp/short.jsonl" "$short" 64

read -r s e runs < <(sweep "$tmp/long.jsonl" fast "$n" "$tmp/fast")
fast_per=$(awk -v s="$s" -v e="$e" -v n="$runs" 'BEGIN { print (e - s) / n }')
awk -v s="$s" -v e="$e" -v n="$runs" -v st="$steps" 'BEGIN {
  w = e - s
  printf "fast engine: %d scenarios x %d steps x 64 workers (analytic, sync, 2 at a time): %.2f wall s, %.3f s per scenario", n, st, w, w / n
  if (n == 100 && st == 10000) printf "; target 10 s for 100: %s\n", w <= 10 ? "met" : "MISSED"
  else printf "; 100 scenarios: ~%.1f s (target 10 s)\n", 100 * w / n }'

read -r as ae aruns < <(sweep "$tmp/short.jsonl" actors 2 "$tmp/short-actors")
read -r fs fe fruns < <(sweep "$tmp/short.jsonl" fast 2 "$tmp/short-fast")
awk -v as="$as" -v ae="$ae" -v an="$aruns" -v fs="$fs" -v fe="$fe" -v fn="$fruns" -v st="$short" \
    -v long="$steps" -v fl="$fast_per" 'BEGIN {
  a = (ae - as) / an; f = (fe - fs) / fn
  printf "side by side, %d steps x 64 workers, 2 scenarios each: actors %.3f s per scenario, fast %.4f s per scenario (start-up included): fast is %.0fx faster\n", st, a, f, a / f
  printf "actors at %d steps, extrapolated linearly: ~%.0f s per scenario, %.0fx the fast engine'"'"'s %.3f s\n", long, a * long / st, a * long / st / fl, fl }'
