#!/usr/bin/env bash
# run_sweep.sh: train once, price the rest (issue 28), measured side by side. The README's sweep
# (4 policies, one seed, 5 epochs of the mlp on all of Fashion-MNIST, analytic collectives, two
# runs at a time) against a compare of the same 4 policies on one scenario, in rounds that
# alternate the commands so that both see the same machine:
#   compare          the 4 policies at 10Gbps / 5us: 4 trainings
#   sweep 3x3        bandwidth 1,10,100Gbps x latency 1,10,100us: 4 trainings, 32 priced
#   sweep 8x8        8 bandwidths x 8 latencies: 4 trainings, 252 priced
# and for each sweep its ratio to the round's compare, its two phases (the sweep's last line:
# training, pricing), and per priced scenario: the wall time of the pricing phase x the runs at a
# time / the priced scenarios, and the fast replay's share of it (the mean of the priced runs'
# summary.json wall_s: the replay from the trace, in the run's process, against what the rest
# costs: the fork, the scenario's flags, its three result files, sweep.csv rewritten).
#   tests/perf/run_sweep.sh [ROUNDS] [EXTRA,...]     (default 2 rounds, no extra)
# Extras, each once after the rounds: `each`, the 3x3 sweep with --train-each (36 trainings, and
# its sweep.csv compared with the priced one's); `big`, a 16x16 grid (1020 priced scenarios:
# how the cost of a priced scenario grows with the grid); `transfer`, the compare and the 3x3
# sweep at the transfer level (the priced runs on the actors).
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-2}
extra=${2:-}
cmake --build build --target bellows >/dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
B=build/bellows
common="--policies sync,static:level=2,accordion,adpsgd --epochs 5 --lr-schedule step
  --lr-decay-epochs 3,4 --seed 1 --no-plots --quiet"
g3="--bandwidth 1Gbps,10Gbps,100Gbps --latency 1us,10us,100us"
g8="--bandwidth 1Gbps,2Gbps,5Gbps,10Gbps,20Gbps,40Gbps,100Gbps,200Gbps
  --latency 1us,2us,5us,10us,20us,50us,100us,200us"

timed() { # OUT COMMAND... -> wall seconds (the command's stdout in OUT.txt)
  local out=$1 start end
  shift
  start=$(date +%s.%N)
  "$@" >"$out.txt"
  end=$(date +%s.%N)
  echo "$end - $start" | bc -l
}

# the priced runs' mean wall_s (all but the first point's runs, which trained)
replay_s() { # SWEEP_DIR FIRST_POINT_FOLDER
  find "$1/runs" -name summary.json -not -path "*/$2/*" -exec grep -h '"wall_s"' {} + |
    awk -F': ' '{s += $2; n++} END {printf "%.4f", s / n}'
}

report() { # NAME DIR WALL COMPARE_WALL PRICED [FIRST_BANDWIDTH FIRST_LATENCY]
  local line train price per share first=bandwidth-${6:-1Gbps}_latency-${7:-1us}
  line=$(grep '^# wrote' "$2.txt")
  train=$(echo "$line" | sed -n 's/.*: \([0-9.]*\) training.*/\1/p')
  price=$(echo "$line" | sed -n 's/.*, \([0-9.]*\) pricing.*/\1/p')
  per=$(echo "$price * 2 / $5" | bc -l)
  share=$(echo "$(replay_s "$2" "$first") / $per" | bc -l)
  printf '%-10s %7.1f s  %5.2fx compare   training %5.1f s, pricing %5.1f s: %6.1f ms a priced scenario, the fast replay %4.1f%% of it\n' \
    "$1" "$3" "$(echo "$3 / $4" | bc -l)" "$train" "$price" "$(echo "$per * 1000" | bc -l)" \
    "$(echo "$share * 100" | bc -l)"
}

echo "# $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg); $(date -u +%F)"
for r in $(seq 1 "$rounds"); do
  # shellcheck disable=SC2086
  c=$(timed "$tmp/c$r" $B compare $common --collectives analytic --jobs 2 --out "$tmp/c$r")
  # shellcheck disable=SC2086
  s3=$(timed "$tmp/s3-$r" $B sweep $common --collectives analytic $g3 -j 2 --out "$tmp/s3-$r")
  # shellcheck disable=SC2086
  s8=$(timed "$tmp/s8-$r" $B sweep $common --collectives analytic $g8 -j 2 --out "$tmp/s8-$r")
  printf 'round %d: compare %.1f s\n' "$r" "$c"
  report "  3x3" "$tmp/s3-$r" "$s3" "$c" 32
  report "  8x8" "$tmp/s8-$r" "$s8" "$c" 252
done
has() { case ",$extra," in *",$1,"*) return 0 ;; esac; return 1; }
if has big; then
  g16="--bandwidth $(seq -s, 1 16 | sed 's/\([0-9]*\)/\1Gbps/g') --latency $(seq -s, 1 16 | sed 's/\([0-9]*\)/\1us/g')"
  # shellcheck disable=SC2086
  s16=$(timed "$tmp/s16" $B sweep $common --collectives analytic $g16 -j 2 --out "$tmp/s16")
  printf 'the 16x16 grid, after the last round:\n'
  report " 16x16" "$tmp/s16" "$s16" "$c" 1020 1Gbps 1us
fi
if has each; then
  # shellcheck disable=SC2086
  e=$(timed "$tmp/e" $B sweep $common --collectives analytic $g3 -j 2 --train-each --out "$tmp/e")
  printf 'the 3x3 sweep with --train-each: %.1f s (%.2fx the last compare)\n' "$e" \
    "$(echo "$e / $c" | bc -l)"
  cmp "$tmp/e/sweep.csv" "$tmp/s3-$rounds/sweep.csv" && echo "  and the same sweep.csv"
fi
if has transfer; then
  # shellcheck disable=SC2086
  c=$(timed "$tmp/ct" $B compare $common --jobs 2 --out "$tmp/ct")
  # shellcheck disable=SC2086
  t=$(timed "$tmp/t" $B sweep $common $g3 -j 2 --out "$tmp/t")
  printf 'transfer level: compare %.1f s, the 3x3 sweep %.1f s (%.2fx): %s\n' "$c" "$t" \
    "$(echo "$t / $c" | bc -l)" "$(grep '^# wrote' "$tmp/t.txt")"
fi
